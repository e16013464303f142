//! One skill file → one validated [`Skill`], or an error naming the file and the reason.
//!
//! Lenient where the spec says warn (unknown fields, out-of-range `max_turns`), strict where a
//! wrong value would change what runs (missing fields, bad names, bad types). The file is
//! parsed by serde into [`SkillFields`]: the fields a skill has, each as written, and the keys
//! no field takes, collected for a warning. Each field is then checked here, so a wrong value
//! is named in words a skill author can act on.

use super::{
    ArgSpec, ArgType, Chunking, DEFAULT_MAX_TURNS, GroundingRule, InputSpec, MAX_TURNS_RANGE,
    OutputSpec, SchemaSpec, Skill, SkillSource,
};
use crate::small_file::present;
use serde::Deserialize;
use serde_norway::{Mapping, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// A skill that loaded, with what the user should hear about it.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub skill: Skill,
    /// Problems that did not stop the skill from loading (unknown fields, clamped values).
    pub warnings: Vec<String>,
    /// Problems `zhi skills validate` reports as errors although a run tolerates them.
    pub strict_errors: Vec<String>,
}

/// A skill file that cannot be used. `file` is the path (or `builtin:NAME`).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct LoadError {
    pub file: String,
    pub reason: String,
}

/// The fields of a skill file (or of a SKILL.md's front matter), each as written: `None` when
/// left out, a null value when written empty.
#[derive(Deserialize)]
struct SkillFields {
    #[serde(default, deserialize_with = "present")]
    name: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    description: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    model: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    system_prompt: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    tools: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    max_turns: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    input: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    output: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    chunking: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    steps: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    escalate: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    instruction: Option<Value>,
    /// Keys no field takes: each is a warning.
    #[serde(flatten)]
    unknown: Mapping,
}

/// `escalate:`: the models a failing step of this skill is asked of, in order
/// (docs/escalation.md#the-ladder): `MODEL`, `MODEL@BASE_URL`, or `{model, base_url}`. A
/// skill names no key: a rung on another server takes its key from the settings' entry for it.
fn parse_escalate(v: &Option<Value>) -> Result<Vec<String>, String> {
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Sequence(items)) => items,
        Some(_) => return Err(msg!("field `escalate` must be a list of models")),
    };
    let mut out = Vec::new();
    for item in items {
        let entry = match item {
            Value::String(s) if !s.trim().is_empty() => s.trim().to_string(),
            Value::Mapping(m) => {
                let get = |k: &str| {
                    m.get(Value::String(k.into()))
                        .and_then(Value::as_str)
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                };
                let model =
                    get("model").ok_or_else(|| msg!("an entry of `escalate` has no `model`"))?;
                match get("base_url") {
                    Some(url) => format!("{model}@{url}"),
                    None => model.to_string(),
                }
            }
            _ => {
                return Err(msg!(
                    "each entry of `escalate` must be a model name or a mapping with `model`"
                ));
            }
        };
        out.push(entry);
    }
    Ok(out)
}

/// `input:`.
#[derive(Deserialize)]
struct InputFields {
    #[serde(default, deserialize_with = "present")]
    description: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    args: Option<Value>,
    #[serde(flatten)]
    unknown: Mapping,
}

/// One entry of `input.args`.
#[derive(Deserialize)]
struct ArgFields {
    #[serde(default, deserialize_with = "present")]
    name: Option<Value>,
    #[serde(default, rename = "type", deserialize_with = "present")]
    kind: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    required: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    default: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    description: Option<Value>,
    #[serde(flatten)]
    unknown: Mapping,
}

/// `output:` in its mapping form.
#[derive(Deserialize)]
struct OutputFields {
    #[serde(default, deserialize_with = "present")]
    description: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    files: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    language: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    schema: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    grounding: Option<Value>,
    #[serde(flatten)]
    unknown: Mapping,
}

/// The fields of a YAML mapping, and its keys that are not strings.
fn fields<T: for<'de> Deserialize<'de>>(map: Mapping) -> Result<(T, Vec<Value>), String> {
    crate::small_file::fields(map).map_err(|e| yaml_error(&e))
}

/// A field left out or written empty.
fn absent(v: &Option<Value>) -> bool {
    v.as_ref().is_none_or(Value::is_null)
}

/// Parse and validate one skill file's bytes.
pub fn load_str(bytes: &[u8], source: SkillSource) -> Result<Loaded, LoadError> {
    let file = source.label();
    let fail = |reason: String| LoadError {
        file: file.clone(),
        reason,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(fail(msg!(
            "empty file: a skill needs at least name, description, system_prompt and tools"
        )));
    }
    if bytes.contains(&0) {
        return Err(fail(msg!(
            "binary file (contains NUL bytes), not a YAML skill"
        )));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| fail(msg!("not UTF-8 text ({e}); skill files must be UTF-8 YAML")))?;
    // The parser's time grows with the square of the nesting depth: refuse deep files first.
    crate::small_file::check_yaml_nesting(text).map_err(|e| fail(e.to_string()))?;
    let value: Value = serde_norway::from_str(text).map_err(|e| fail(yaml_error(&e)))?;
    let Value::Mapping(map) = value else {
        return Err(fail(msg!(
            "expected a YAML mapping of skill fields, found {}",
            value_kind(&value)
        )));
    };
    let (f, odd): (SkillFields, _) = fields(map).map_err(fail)?;
    let mut warnings: Vec<String> = (f.unknown.keys().filter_map(Value::as_str))
        .map(|k| format!("unknown field `{k}` ignored"))
        .collect();
    warnings.extend(odd.iter().map(|k| format!("non-string key {k:?} ignored")));
    let content_hash = hex::encode(Sha256::digest(bytes));
    load_fields(f, source, content_hash, warnings)
}

/// Load an Agent Skill (docs/skills.md#agent-skills-skillmd): `SKILL.md`'s YAML front matter
/// between `---` lines, then the instructions in Markdown, which become the system prompt. `name`
/// and `description` are required; without `tools` the skill reads only what it is given (plus
/// `file_read` when the folder has references or assets to read), and without `output` it declares
/// `response.md`, so an instructions-only skill runs as one direct request. The format's other
/// fields (`license`, `compatibility`, `metadata`, `allowed-tools`) are known and not used;
/// front matter no format defines warns, never fails. `content_hash` is the hash of the
/// whole folder.
pub(crate) fn load_skill_md(
    bytes: &[u8],
    source: SkillSource,
    content_hash: String,
    has_resources: bool,
) -> Result<Loaded, LoadError> {
    let file = source.label();
    let fail = |reason: String| LoadError {
        file: file.clone(),
        reason,
    };
    if bytes.contains(&0) {
        return Err(fail(msg!(
            "binary file (contains NUL bytes), not a SKILL.md"
        )));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| fail(msg!("not UTF-8 text ({e}); SKILL.md must be UTF-8")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (front, body) = split_front_matter(text).ok_or_else(|| {
        fail(msg!("no front matter: SKILL.md must start with a `---` line, the YAML fields (name, description), and a closing `---` line"))
    })?;
    crate::small_file::check_yaml_nesting(front).map_err(|e| fail(e.to_string()))?;
    let value: Value = if front.trim().is_empty() {
        Value::Mapping(Mapping::new())
    } else {
        serde_norway::from_str(front).map_err(|e| fail(msg!("front matter: {}", yaml_error(&e))))?
    };
    let Value::Mapping(map) = value else {
        return Err(fail(msg!(
            "the front matter must be a YAML mapping of fields, found {}",
            value_kind(&value)
        )));
    };
    let mut warnings = Vec::new();
    // The body is the system prompt: a `system_prompt` in the front matter is not one.
    if map.contains_key("system_prompt") {
        warnings.push(msg!("unknown front-matter field `system_prompt` ignored"));
    }
    let mut map = map;
    take_format_fields(&mut map, &mut warnings);
    let (mut f, odd): (SkillFields, _) = fields(map).map_err(fail)?;
    for k in f.unknown.keys().filter_map(Value::as_str) {
        warnings.push(msg!("unknown front-matter field `{k}` ignored"));
    }
    warnings.extend(odd.iter().map(|k| format!("non-string key {k:?} ignored")));
    for (k, v) in [("name", &f.name), ("description", &f.description)] {
        if absent(v) {
            return Err(fail(msg!("missing required front-matter field `{k}`")));
        }
    }
    if body.trim().is_empty() {
        return Err(fail(msg!(
            "no instructions: the Markdown after the front matter is the skill's prompt"
        )));
    }
    f.system_prompt = Some(Value::String(body.trim().to_string()));
    if absent(&f.tools) {
        let tools = if has_resources {
            vec![Value::String("file_read".into())]
        } else {
            Vec::new()
        };
        f.tools = Some(Value::Sequence(tools));
    }
    if absent(&f.output) {
        let mut output = Mapping::new();
        output.insert(
            Value::String("files".into()),
            Value::Sequence(vec![Value::String("response.md".into())]),
        );
        f.output = Some(Value::Mapping(output));
    }
    load_fields(f, source, content_hash, warnings)
}

/// The fields the Agent Skills format defines beyond `name` and `description`: known, so
/// never "unknown", and not used by zhi (`allowed-tools` pre-approves tools in agents that ask
/// before using one; zhi's tools are the skill's `tools`). Each is taken out of `map`; one of
/// the wrong shape warns.
const FORMAT_FIELDS: [&str; 4] = ["license", "compatibility", "metadata", "allowed-tools"];

fn take_format_fields(map: &mut Mapping, warnings: &mut Vec<String>) {
    for key in FORMAT_FIELDS {
        let Some(v) = map.remove(key) else { continue };
        match (key, &v) {
            (_, Value::Null)
            | ("metadata", Value::Mapping(_))
            | ("allowed-tools", Value::Sequence(_))
            | ("license" | "allowed-tools", Value::String(_)) => {}
            ("compatibility", Value::String(s)) if s.chars().count() <= 500 => {}
            ("compatibility", Value::String(_)) => warnings.push(msg!(
                "front-matter field `compatibility` is longer than 500 characters; ignored"
            )),
            ("metadata", _) => warnings.push(msg!(
                "front-matter field `metadata` should be a mapping; ignored"
            )),
            _ => warnings.push(msg!(
                "front-matter field `{key}` should be a string; ignored"
            )),
        }
    }
}

/// The front matter and the body of a Markdown file that starts with a `---` line.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    None
}

/// A required string field.
fn required_text(k: &str, v: &Option<Value>) -> Result<String, String> {
    match v {
        None | Some(Value::Null) => Err(msg!("missing required field `{k}`")),
        Some(Value::String(s)) if s.trim().is_empty() => Err(msg!("field `{k}` is empty")),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Err(msg!(
            "field `{k}` must be a string, found {}",
            value_kind(v)
        )),
    }
}

/// An optional string field.
fn optional_text(k: &str, v: &Option<Value>) -> Result<Option<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(msg!(
            "field `{k}` must be a string, found {}",
            value_kind(v)
        )),
    }
}

/// The languages a document is told to be in (`language_of`), the keys an `instruction:`
/// mapping may give besides `default`.
const INSTRUCTION_LANGUAGES: [&str; 5] = ["english", "chinese", "japanese", "korean", "russian"];

/// `instruction:`, a string, or a mapping of `default` and document languages to strings
/// (docs/skills.md#one-message-a-skills-instruction): the default and the others by language.
fn parse_instruction(
    v: &Option<Value>,
) -> Result<(Option<String>, BTreeMap<String, String>), String> {
    let text = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let Some(Value::Mapping(m)) = v else {
        return Ok((
            optional_text("instruction", v)?.and_then(|s| text(&s)),
            BTreeMap::new(),
        ));
    };
    let mut default = None;
    let mut by_language = BTreeMap::new();
    for (k, v) in m {
        let (Value::String(k), Value::String(v)) = (k, v) else {
            return Err(msg!(
                "field `instruction` maps `default` and languages to texts, found {}",
                value_kind(v)
            ));
        };
        let key = k.trim().to_lowercase();
        if key == "default" {
            default = text(v);
        } else if INSTRUCTION_LANGUAGES.contains(&key.as_str()) {
            if let Some(v) = text(v) {
                by_language.insert(key, v);
            }
        } else {
            return Err(msg!(
                "field `instruction` has the key `{key}`: give `default` and any of {list}",
                key = k,
                list = INSTRUCTION_LANGUAGES.join(", ")
            ));
        }
    }
    if default.is_none() {
        return Err(msg!(
            "field `instruction` gives no `default`: the instruction for a document in any other language"
        ));
    }
    Ok((default, by_language))
}

/// The skill the fields describe (a skill file, or a SKILL.md's front matter with its body as
/// `system_prompt`).
fn load_fields(
    f: SkillFields,
    source: SkillSource,
    content_hash: String,
    mut warnings: Vec<String>,
) -> Result<Loaded, LoadError> {
    let file = source.label();
    let fail = |reason: String| LoadError {
        file: file.clone(),
        reason,
    };
    let mut strict_errors = Vec::new();
    let name = required_text("name", &f.name).map_err(fail)?;
    super::name::check_name(&name).map_err(|r| fail(msg!("invalid name `{name}`: {r}")))?;
    let description = required_text("description", &f.description).map_err(fail)?;
    let steps = match &f.steps {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => super::steps::parse(v, &mut warnings).map_err(fail)?,
    };
    // A workflow's steps carry their own instructions: its prompt is optional, and tells
    // what the skill does when another skill's model calls it as a tool.
    let system_prompt = if !steps.is_empty() && absent(&f.system_prompt) {
        description.trim().to_string()
    } else {
        required_text("system_prompt", &f.system_prompt).map_err(fail)?
    };
    let model = optional_text("model", &f.model).map_err(fail)?;
    let escalate = parse_escalate(&f.escalate).map_err(fail)?;
    let (instruction, instruction_in) = parse_instruction(&f.instruction).map_err(fail)?;
    let extraction = matches!(&f.output, Some(Value::Mapping(m)) if m.get("schema").is_some_and(|v| !v.is_null()));
    let tools = if absent(&f.tools) && (!steps.is_empty() || extraction) {
        Vec::new()
    } else {
        parse_tools(&f.tools, &mut warnings).map_err(fail)?
    };
    let max_turns =
        parse_max_turns(&f.max_turns, &mut warnings, &mut strict_errors).map_err(fail)?;
    let input = parse_input(&f.input, &mut warnings).map_err(fail)?;
    let (output, schema_bytes) =
        parse_output(&f.output, &source, &input, &mut warnings).map_err(fail)?;
    // A schema read from beside the skill is part of what the skill is.
    let content_hash = match schema_bytes {
        Some(bytes) => {
            let mut h = Sha256::new();
            h.update(content_hash.as_bytes());
            h.update(b"\0schema\0");
            h.update(&bytes);
            hex::encode(h.finalize())
        }
        None => content_hash,
    };
    let chunking = match optional_text("chunking", &f.chunking).map_err(fail)? {
        None => Chunking::None,
        Some(s) => Chunking::parse(s.trim())
            .ok_or_else(|| fail(msg!("chunking `{s}` is not one of none, map, map-reduce")))?,
    };
    Ok(Loaded {
        skill: Skill {
            name,
            description: description.trim().to_string(),
            model,
            system_prompt,
            tools,
            max_turns,
            input,
            output,
            chunking,
            steps,
            source,
            file_hash: content_hash,
            folder: None,
            escalate,
            instruction,
            instruction_in,
        },
        warnings,
        strict_errors,
    })
}

/// `tools`: tool and skill names, each once (a repeat warns).
fn parse_tools(v: &Option<Value>, warnings: &mut Vec<String>) -> Result<Vec<String>, String> {
    let items = match v {
        None | Some(Value::Null) => return Err(msg!("missing required field `tools`")),
        Some(Value::Sequence(items)) => items,
        Some(v) => {
            return Err(msg!(
                "field `tools` must be a list of names, found {}",
                value_kind(v)
            ));
        }
    };
    let mut tools: Vec<String> = Vec::new();
    for item in items {
        match item.as_str() {
            Some(t) if !t.trim().is_empty() => {
                if t.starts_with(super::MCP_TOOL_PREFIX) && super::McpTool::parse(t).is_none() {
                    return Err(msg!(
                        "`{t}` is not an MCP tool: write `mcp:SERVER/TOOL`, with the server's name from the settings' `mcp:`"
                    ));
                }
                if tools.iter().any(|x| x == t) {
                    warnings.push(msg!("tool `{t}` listed twice"));
                } else {
                    tools.push(t.to_string());
                }
            }
            _ => {
                return Err(msg!(
                    "`tools` entries must be tool or skill names, found {}",
                    value_kind(item)
                ));
            }
        }
    }
    Ok(tools)
}

/// `max_turns`: a whole number, clamped into [`MAX_TURNS_RANGE`] with a warning (which
/// `zhi skills validate` reports as an error).
fn parse_max_turns(
    v: &Option<Value>,
    warnings: &mut Vec<String>,
    strict_errors: &mut Vec<String>,
) -> Result<u32, String> {
    let (lo, hi) = (*MAX_TURNS_RANGE.start(), *MAX_TURNS_RANGE.end());
    match v {
        None | Some(Value::Null) => Ok(DEFAULT_MAX_TURNS),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(t) if t >= i64::from(lo) && t <= i64::from(hi) => Ok(t as u32),
            Some(t) => {
                let clamped = t.clamp(i64::from(lo), i64::from(hi)) as u32;
                let msg = msg!("max_turns {t} is outside {lo}..={hi}; clamped to {clamped}");
                warnings.push(msg.clone());
                strict_errors.push(msg);
                Ok(clamped)
            }
            None => Err(msg!("max_turns must be a whole number, found {n}")),
        },
        Some(v) => Err(msg!(
            "max_turns must be a whole number, found {}",
            value_kind(v)
        )),
    }
}

/// `output`: a description, or a mapping of description, files, language, schema and
/// grounding. Returns the bytes of a schema file read from beside the skill (part of its hash).
fn parse_output(
    v: &Option<Value>,
    source: &SkillSource,
    input: &InputSpec,
    warnings: &mut Vec<String>,
) -> Result<(Option<OutputSpec>, Option<Vec<u8>>), String> {
    let m = match v {
        None | Some(Value::Null) => return Ok((None, None)),
        Some(Value::String(s)) => {
            return Ok((
                Some(OutputSpec {
                    description: Some(s.clone()),
                    ..OutputSpec::default()
                }),
                None,
            ));
        }
        Some(Value::Mapping(m)) => m,
        Some(v) => {
            return Err(msg!(
                "field `output` must be a mapping, found {}",
                value_kind(v)
            ));
        }
    };
    let (o, odd): (OutputFields, _) = fields(m.clone())?;
    for k in o.unknown.keys().filter_map(Value::as_str) {
        warnings.push(msg!("unknown field `output.{k}` ignored"));
    }
    warnings.extend(
        odd.iter()
            .map(|k| format!("non-string key {k:?} in `output` ignored")),
    );
    let (schema, schema_bytes) = parse_schema(o.schema.as_ref(), source, input)?;
    let mut files = parse_output_files(o.files.as_ref())?;
    if schema.is_some() {
        match files.as_slice() {
            [] => files.push(super::schema::EXTRACTED_FILE.to_string()),
            [one] if super::extension(one) == "json" => {}
            _ => {
                return Err(msg!(
                    "an extraction skill (`output.schema`) writes one `.json` file: leave `output.files` out (it is `extracted.json`) or name one"
                ));
            }
        }
    }
    let grounding = match o.grounding.as_ref() {
        None | Some(Value::Null) => GroundingRule::Flag,
        Some(Value::String(s)) if s == "flag" || s == "optional" => GroundingRule::Flag,
        Some(Value::String(s)) if s == "required" => GroundingRule::Required,
        Some(v) => {
            let found = match v {
                Value::String(s) => format!("`{s}`"),
                other => value_kind(other),
            };
            return Err(msg!(
                "`output.grounding` must be `flag` or `required`, found {found}"
            ));
        }
    };
    if grounding == GroundingRule::Required && schema.is_none() {
        warnings.push(msg!(
            "`output.grounding` applies to extraction skills (`output.schema`) only; ignored"
        ));
    }
    Ok((
        Some(OutputSpec {
            description: o
                .description
                .as_ref()
                .and_then(Value::as_str)
                .map(str::to_string),
            files,
            language: match &o.language {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(v) => {
                    return Err(msg!(
                        "`output.language` must be a string, found {}",
                        value_kind(v)
                    ));
                }
            },
            schema,
            grounding,
        }),
        schema_bytes,
    ))
}

/// `output.schema`: the schema inline, a file beside the skill, or `"{arg}"` for the file a
/// job's argument names.
fn parse_schema(
    v: Option<&Value>,
    source: &SkillSource,
    input: &InputSpec,
) -> Result<(Option<SchemaSpec>, Option<Vec<u8>>), String> {
    match v {
        None | Some(Value::Null) => Ok((None, None)),
        Some(Value::String(s)) => {
            let s = s.trim();
            if let Some(arg) = s.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
                if !input.args.iter().any(|a| a.name == arg) {
                    return Err(msg!(
                        "`output.schema` names the argument `{arg}`, which `input.args` does not declare"
                    ));
                }
                return Ok((Some(SchemaSpec::Arg(arg.to_string())), None));
            }
            let Some(dir) = source.path().and_then(std::path::Path::parent) else {
                return Err(msg!(
                    "`output.schema` names the file `{s}`, but this skill is not in a folder to find it in"
                ));
            };
            let path = dir.join(s);
            let value = super::schema::read_schema_file(&path)?;
            let bytes = serde_json::to_vec(&value).unwrap_or_default();
            Ok((Some(SchemaSpec::Inline(value)), Some(bytes)))
        }
        Some(v @ Value::Mapping(_)) => {
            let value: serde_json::Value = serde_json::to_value(v)
                .map_err(|e| format!("`output.schema` cannot be read as JSON: {e}"))?;
            super::schema::check(&value).map_err(|e| format!("`output.schema`: {e}"))?;
            Ok((Some(SchemaSpec::Inline(value)), None))
        }
        Some(v) => {
            let found = value_kind(v);
            Err(msg!(
                "`output.schema` must be a JSON Schema (a mapping), a file name or `{{argument}}`, found {found}"
            ))
        }
    }
}

/// `input`: a description and the arguments; without it, one required `file`.
fn parse_input(v: &Option<Value>, warnings: &mut Vec<String>) -> Result<InputSpec, String> {
    let map = match v {
        None | Some(Value::Null) => {
            // A skill without declared arguments takes one file, like most skills do.
            return Ok(InputSpec {
                description: None,
                args: vec![ArgSpec {
                    name: "file".into(),
                    kind: ArgType::File,
                    required: true,
                    default: None,
                    description: None,
                }],
            });
        }
        Some(Value::Mapping(m)) => m,
        Some(v) => {
            return Err(msg!(
                "field `input` must be a mapping, found {}",
                value_kind(v)
            ));
        }
    };
    // Keys that are no names are ignored here without a word, as they always were.
    let (input, _): (InputFields, _) = fields(map.clone())?;
    for k in input.unknown.keys().filter_map(Value::as_str) {
        warnings.push(msg!("unknown field `input.{k}` ignored"));
    }
    let mut args: Vec<ArgSpec> = Vec::new();
    match &input.args {
        None | Some(Value::Null) => {}
        Some(Value::Sequence(items)) => {
            for (i, item) in items.iter().enumerate() {
                let arg = parse_arg(i, item, warnings)?;
                if args.iter().any(|x| x.name == arg.name) {
                    return Err(msg!(
                        "input.args: argument `{}` is declared twice",
                        arg.name
                    ));
                }
                args.push(arg);
            }
        }
        Some(v) => {
            return Err(msg!("input.args must be a list, found {}", value_kind(v)));
        }
    }
    let primary = args
        .iter()
        .any(|a| a.required && matches!(a.kind, ArgType::File | ArgType::Directory));
    if !primary {
        return Err(
            "input.args needs a required argument of type file or directory (the document each job is about)"
                .into(),
        );
    }
    let description = input
        .description
        .as_ref()
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(InputSpec { description, args })
}

/// Entry `i` of `input.args`: `{name, type, required, default, description}`.
fn parse_arg(i: usize, item: &Value, warnings: &mut Vec<String>) -> Result<ArgSpec, String> {
    let Value::Mapping(a) = item else {
        return Err(msg!(
            "input.args[{i}] must be a mapping with name and type, found {}",
            value_kind(item)
        ));
    };
    let (a, _): (ArgFields, _) = fields(a.clone())?;
    let name = a
        .name
        .as_ref()
        .and_then(Value::as_str)
        .ok_or_else(|| format!("input.args[{i}] has no `name`"))?
        .to_string();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(msg!(
            "input.args[{i}]: argument name `{name}` may only hold letters, digits, `_` and `-`"
        ));
    }
    let kind = match &a.kind {
        None | Some(Value::Null) => ArgType::String,
        Some(Value::String(t)) => ArgType::parse(t).ok_or_else(|| {
            format!(
                "input.args `{name}`: type `{t}` is not one of file, directory, string, number, boolean"
            )
        })?,
        Some(v) => {
            return Err(msg!(
                "input.args `{name}`: type must be a string, found {}",
                value_kind(v)
            ));
        }
    };
    let required = match &a.required {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            return Err(msg!(
                "input.args `{name}`: required must be true or false, found {}",
                value_kind(v)
            ));
        }
    };
    let default = match &a.default {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        Some(v) => {
            return Err(msg!(
                "input.args `{name}`: default must be a scalar, found {}",
                value_kind(v)
            ));
        }
    };
    for k in a.unknown.keys().filter_map(Value::as_str) {
        warnings.push(msg!("input.args `{name}`: unknown field `{k}` ignored"));
    }
    Ok(ArgSpec {
        name,
        kind,
        required,
        default,
        description: a
            .description
            .as_ref()
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// `output.files`: relative file names inside the job's folder, each at most once.
fn parse_output_files(v: Option<&Value>) -> Result<Vec<String>, String> {
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![Value::String(s.clone())],
        Some(Value::Sequence(items)) => items.clone(),
        Some(v) => {
            return Err(msg!(
                "`output.files` must be a list of file names, found {}",
                value_kind(v)
            ));
        }
    };
    let mut files: Vec<String> = Vec::new();
    for item in &items {
        let Some(name) = item.as_str().map(str::trim) else {
            return Err(msg!(
                "`output.files` entries must be file names, found {}",
                value_kind(item)
            ));
        };
        let bad = name.is_empty()
            || name.starts_with('/')
            || name.starts_with('\\')
            || name.ends_with('/')
            || name
                .split(['/', '\\'])
                .any(|c| c == ".." || c == "." || c.is_empty())
            || name.chars().any(char::is_control);
        if bad {
            return Err(msg!(
                "`output.files` entry {name:?} must be a relative file name inside the job's folder (no `..`, no absolute path)"
            ));
        }
        if files.iter().any(|f| f == name) {
            return Err(msg!("`output.files` names {name:?} twice"));
        }
        files.push(name.to_string());
    }
    Ok(files)
}

fn yaml_error(e: &serde_norway::Error) -> String {
    let msg = e.to_string();
    match e.location() {
        Some(loc) if !msg.contains("line") => format!(
            "YAML syntax error at line {} column {}: {msg}",
            loc.line(),
            loc.column()
        ),
        _ => format!("YAML syntax error: {msg}"),
    }
}

fn value_kind(v: &Value) -> String {
    match v {
        Value::Null => msg!("nothing"),
        Value::Bool(_) => msg!("a boolean"),
        Value::Number(_) => msg!("a number"),
        Value::String(_) => msg!("a string"),
        Value::Sequence(_) => msg!("a list"),
        Value::Mapping(_) => msg!("a mapping"),
        Value::Tagged(_) => msg!("a tagged value"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(y: &str) -> Result<Loaded, LoadError> {
        load_str(y.as_bytes(), SkillSource::File("t.yaml".into()))
    }

    const OK: &str = "name: a\ndescription: d\nsystem_prompt: p\ntools: [file_read]\n";

    #[test]
    fn minimal_skill_gets_defaults() {
        let l = load(OK).unwrap();
        assert_eq!(l.skill.max_turns, 15);
        assert_eq!(l.skill.primary_arg().unwrap().name, "file");
        assert!(l.warnings.is_empty());
    }

    #[test]
    fn names_are_checked() {
        let e = load(&OK.replace("name: a", "name: 'bad name'")).unwrap_err();
        assert!(e.reason.contains("invalid name"), "{e}");
    }

    #[test]
    fn max_turns_clamped_with_warning() {
        let l = load(&format!("{OK}max_turns: 99\n")).unwrap();
        assert_eq!(l.skill.max_turns, 50);
        assert!(l.warnings[0].contains("clamped to 50"));
        let l = load(&format!("{OK}max_turns: 0\n")).unwrap();
        assert_eq!(l.skill.max_turns, 1);
    }

    #[test]
    fn unknown_fields_warn_at_every_level_and_odd_keys_never_fail() {
        let l = load(&format!(
            "{OK}temperature: 1\n1: x\ninput:\n  descr: x\n  args:\n    - {{name: file, type: file, required: true, colour: red, 5: y}}\noutput: {{files: [a.md], style: z, 2: y}}\n"
        ))
        .unwrap();
        assert_eq!(
            l.warnings,
            [
                "unknown field `temperature` ignored",
                "non-string key Number(1) ignored",
                "unknown field `input.descr` ignored",
                "input.args `file`: unknown field `colour` ignored",
                "unknown field `output.style` ignored",
                "non-string key Number(2) in `output` ignored",
            ]
        );
        assert_eq!(l.skill.output.unwrap().files, ["a.md"]);
    }

    #[test]
    fn yaml_errors_have_a_line() {
        let e = load("name: a\ndescription: [unclosed\n").unwrap_err();
        assert!(e.reason.contains("line"), "{e}");
    }
}
