//! One skill file → one validated [`Skill`], or an error naming the file and the reason.
//!
//! Lenient where the spec says warn (unknown fields, out-of-range `max_turns`), strict where a
//! wrong value would change what runs (missing fields, bad names, bad types).

use super::{
    ArgSpec, ArgType, Chunking, DEFAULT_MAX_TURNS, InputSpec, MAX_TURNS_RANGE, OutputSpec, Skill,
    SkillSource,
};
use serde_norway::{Mapping, Value};
use sha2::{Digest, Sha256};

const KNOWN_FIELDS: &[&str] = &[
    "name",
    "description",
    "model",
    "system_prompt",
    "tools",
    "max_turns",
    "input",
    "output",
    "chunking",
];

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

/// Parse and validate one skill file's bytes.
pub fn load_str(bytes: &[u8], source: SkillSource) -> Result<Loaded, LoadError> {
    let file = source.label();
    let fail = |reason: String| LoadError {
        file: file.clone(),
        reason,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(fail(
            "empty file: a skill needs at least name, description, system_prompt and tools".into(),
        ));
    }
    if bytes.contains(&0) {
        return Err(fail(
            "binary file (contains NUL bytes), not a YAML skill".into(),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        fail(format!(
            "not UTF-8 text ({e}); skill files must be UTF-8 YAML"
        ))
    })?;
    // The parser's time grows with the square of the nesting depth: refuse deep files first.
    crate::small_file::check_yaml_nesting(text).map_err(|e| fail(e.to_string()))?;
    let value: Value = serde_norway::from_str(text).map_err(|e| fail(yaml_error(&e)))?;
    let Value::Mapping(map) = value else {
        return Err(fail(format!(
            "expected a YAML mapping of skill fields, found {}",
            value_kind(&value)
        )));
    };

    let mut warnings = Vec::new();
    for key in map.keys() {
        match key.as_str() {
            Some(k) if KNOWN_FIELDS.contains(&k) => {}
            Some(k) => warnings.push(format!("unknown field `{k}` ignored")),
            None => warnings.push(format!("non-string key {key:?} ignored")),
        }
    }
    let content_hash = hex::encode(Sha256::digest(bytes));
    load_map(&map, source, content_hash, warnings)
}

/// The fields of a SKILL.md front matter zhi uses; the Markdown body is the system prompt.
const SKILL_MD_FIELDS: &[&str] = &[
    "name",
    "description",
    "model",
    "tools",
    "max_turns",
    "input",
    "output",
    "chunking",
];

/// Load an Agent Skill (SPEC §3): `SKILL.md`'s YAML front matter between `---` lines, then
/// the instructions in Markdown, which become the system prompt. `name` and `description`
/// are required; without `tools` the skill reads only what it is given (plus `file_read`
/// when the folder has references or assets to read), and without `output` it declares
/// `response.md`, so an instructions-only skill runs as one direct request. Unknown front
/// matter (`license`, `allowed-tools`, `metadata`) warns, never fails. `content_hash` is the
/// hash of the whole folder.
pub fn load_skill_md(
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
        return Err(fail(
            "binary file (contains NUL bytes), not a SKILL.md".into(),
        ));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| fail(format!("not UTF-8 text ({e}); SKILL.md must be UTF-8")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (front, body) = split_front_matter(text).ok_or_else(|| {
        fail("no front matter: SKILL.md must start with a `---` line, the YAML fields (name, description), and a closing `---` line".into())
    })?;
    crate::small_file::check_yaml_nesting(front).map_err(|e| fail(e.to_string()))?;
    let value: Value = if front.trim().is_empty() {
        Value::Mapping(Mapping::new())
    } else {
        serde_norway::from_str(front)
            .map_err(|e| fail(format!("front matter: {}", yaml_error(&e))))?
    };
    let Value::Mapping(mut map) = value else {
        return Err(fail(format!(
            "the front matter must be a YAML mapping of fields, found {}",
            value_kind(&value)
        )));
    };
    let mut warnings = Vec::new();
    for key in map.keys() {
        match key.as_str() {
            Some(k) if SKILL_MD_FIELDS.contains(&k) => {}
            Some(k) => warnings.push(format!("unknown front-matter field `{k}` ignored")),
            None => warnings.push(format!("non-string key {key:?} ignored")),
        }
    }
    let key = |k: &str| Value::String(k.to_string());
    for k in ["name", "description"] {
        if map.get(key(k)).is_none_or(Value::is_null) {
            return Err(fail(format!("missing required front-matter field `{k}`")));
        }
    }
    if body.trim().is_empty() {
        return Err(fail(
            "no instructions: the Markdown after the front matter is the skill's prompt".into(),
        ));
    }
    map.insert(key("system_prompt"), Value::String(body.trim().to_string()));
    if map.get(key("tools")).is_none_or(Value::is_null) {
        let tools = if has_resources {
            vec![Value::String("file_read".into())]
        } else {
            Vec::new()
        };
        map.insert(key("tools"), Value::Sequence(tools));
    }
    if map.get(key("output")).is_none_or(Value::is_null) {
        let mut output = Mapping::new();
        output.insert(
            key("files"),
            Value::Sequence(vec![Value::String("response.md".into())]),
        );
        map.insert(key("output"), Value::Mapping(output));
    }
    load_map(&map, source, content_hash, warnings)
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

/// The skill described by a YAML mapping (a skill file, or a SKILL.md's front matter with its
/// body as `system_prompt`).
fn load_map(
    map: &Mapping,
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
    let get = |k: &str| map.get(Value::String(k.to_string()));
    let req_str = |k: &str| -> Result<String, LoadError> {
        match get(k) {
            None | Some(Value::Null) => Err(fail(format!("missing required field `{k}`"))),
            Some(Value::String(s)) if s.trim().is_empty() => {
                Err(fail(format!("field `{k}` is empty")))
            }
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(fail(format!(
                "field `{k}` must be a string, found {}",
                value_kind(v)
            ))),
        }
    };
    let opt_str = |k: &str| -> Result<Option<String>, LoadError> {
        match get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(fail(format!(
                "field `{k}` must be a string, found {}",
                value_kind(v)
            ))),
        }
    };

    let name = req_str("name")?;
    check_name(&name).map_err(|r| fail(format!("invalid name `{name}`: {r}")))?;
    let description = req_str("description")?;
    let system_prompt = req_str("system_prompt")?;
    let model = opt_str("model")?;

    let tools = match get("tools") {
        None | Some(Value::Null) => return Err(fail("missing required field `tools`".into())),
        Some(Value::Sequence(items)) => {
            let mut tools = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(t) if !t.trim().is_empty() => {
                        if tools.iter().any(|x: &String| x == t) {
                            warnings.push(format!("tool `{t}` listed twice"));
                        } else {
                            tools.push(t.to_string());
                        }
                    }
                    _ => {
                        return Err(fail(format!(
                            "`tools` entries must be tool or skill names, found {}",
                            value_kind(item)
                        )));
                    }
                }
            }
            tools
        }
        Some(v) => {
            return Err(fail(format!(
                "field `tools` must be a list of names, found {}",
                value_kind(v)
            )));
        }
    };

    let max_turns = match get("max_turns") {
        None | Some(Value::Null) => DEFAULT_MAX_TURNS,
        Some(Value::Number(n)) => match n.as_i64() {
            Some(t)
                if t >= i64::from(*MAX_TURNS_RANGE.start())
                    && t <= i64::from(*MAX_TURNS_RANGE.end()) =>
            {
                t as u32
            }
            Some(t) => {
                let clamped = t.clamp(
                    i64::from(*MAX_TURNS_RANGE.start()),
                    i64::from(*MAX_TURNS_RANGE.end()),
                ) as u32;
                let msg = format!(
                    "max_turns {t} is outside {}..={}; clamped to {clamped}",
                    MAX_TURNS_RANGE.start(),
                    MAX_TURNS_RANGE.end()
                );
                warnings.push(msg.clone());
                strict_errors.push(msg);
                clamped
            }
            None => return Err(fail(format!("max_turns must be a whole number, found {n}"))),
        },
        Some(v) => {
            return Err(fail(format!(
                "max_turns must be a whole number, found {}",
                value_kind(v)
            )));
        }
    };

    let input = parse_input(get("input"), &mut warnings).map_err(fail)?;
    let output = match get("output") {
        None | Some(Value::Null) => None,
        Some(Value::Mapping(m)) => {
            for key in m.keys() {
                match key.as_str() {
                    Some("description" | "files" | "language") => {}
                    Some(k) => warnings.push(format!("unknown field `output.{k}` ignored")),
                    None => warnings.push(format!("non-string key {key:?} in `output` ignored")),
                }
            }
            Some(OutputSpec {
                description: m
                    .get(Value::String("description".into()))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                files: parse_output_files(m.get(Value::String("files".into()))).map_err(fail)?,
                language: match m.get(Value::String("language".into())) {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(v) => {
                        return Err(fail(format!(
                            "`output.language` must be a string, found {}",
                            value_kind(v)
                        )));
                    }
                },
            })
        }
        Some(Value::String(s)) => Some(OutputSpec {
            description: Some(s.clone()),
            files: Vec::new(),
            language: None,
        }),
        Some(v) => {
            return Err(fail(format!(
                "field `output` must be a mapping, found {}",
                value_kind(v)
            )));
        }
    };
    let chunking = match opt_str("chunking")? {
        None => Chunking::None,
        Some(s) => Chunking::parse(s.trim()).ok_or_else(|| {
            fail(format!(
                "chunking `{s}` is not one of none, map, map-reduce"
            ))
        })?,
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
            source,
            content_hash,
            folder: None,
        },
        warnings,
        strict_errors,
    })
}

fn parse_input(v: Option<&Value>, warnings: &mut Vec<String>) -> Result<InputSpec, String> {
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
            return Err(format!(
                "field `input` must be a mapping, found {}",
                value_kind(v)
            ));
        }
    };
    let description = map
        .get(Value::String("description".into()))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut args: Vec<ArgSpec> = Vec::new();
    match map.get(Value::String("args".into())) {
        None | Some(Value::Null) => {}
        Some(Value::Sequence(items)) => {
            for (i, item) in items.iter().enumerate() {
                let Value::Mapping(a) = item else {
                    return Err(format!(
                        "input.args[{i}] must be a mapping with name and type, found {}",
                        value_kind(item)
                    ));
                };
                let field = |k: &str| a.get(Value::String(k.into()));
                let name = field("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("input.args[{i}] has no `name`"))?
                    .to_string();
                if !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    || name.is_empty()
                {
                    return Err(format!(
                        "input.args[{i}]: argument name `{name}` may only hold letters, digits, `_` and `-`"
                    ));
                }
                if args.iter().any(|x| x.name == name) {
                    return Err(format!("input.args: argument `{name}` is declared twice"));
                }
                let kind = match field("type") {
                    None | Some(Value::Null) => ArgType::String,
                    Some(Value::String(t)) => ArgType::parse(t).ok_or_else(|| {
                        format!(
                            "input.args `{name}`: type `{t}` is not one of file, directory, string, number, boolean"
                        )
                    })?,
                    Some(v) => {
                        return Err(format!(
                            "input.args `{name}`: type must be a string, found {}",
                            value_kind(v)
                        ));
                    }
                };
                let required = match field("required") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(v) => {
                        return Err(format!(
                            "input.args `{name}`: required must be true or false, found {}",
                            value_kind(v)
                        ));
                    }
                };
                let default = match field("default") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(Value::Number(n)) => Some(n.to_string()),
                    Some(Value::Bool(b)) => Some(b.to_string()),
                    Some(v) => {
                        return Err(format!(
                            "input.args `{name}`: default must be a scalar, found {}",
                            value_kind(v)
                        ));
                    }
                };
                for k in a.keys().filter_map(Value::as_str) {
                    if !["name", "type", "required", "default", "description"].contains(&k) {
                        warnings.push(format!("input.args `{name}`: unknown field `{k}` ignored"));
                    }
                }
                args.push(ArgSpec {
                    name,
                    kind,
                    required,
                    default,
                    description: field("description")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                });
            }
        }
        Some(v) => {
            return Err(format!(
                "input.args must be a list, found {}",
                value_kind(v)
            ));
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
    Ok(InputSpec { description, args })
}

/// `^[a-zA-Z0-9][a-zA-Z0-9_-]*$`, at most 64 characters.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("empty".into());
    }
    if name.chars().count() > 64 {
        return Err("longer than 64 characters".into());
    }
    let mut chars = name.chars();
    let first = chars.next().unwrap_or(' ');
    if !first.is_ascii_alphanumeric() {
        return Err("must start with a letter or digit".into());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "character {bad:?} not allowed (letters, digits, `_` and `-` only)"
        ));
    }
    Ok(())
}

/// `output.files`: relative file names inside the job's folder, each at most once.
fn parse_output_files(v: Option<&Value>) -> Result<Vec<String>, String> {
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![Value::String(s.clone())],
        Some(Value::Sequence(items)) => items.clone(),
        Some(v) => {
            return Err(format!(
                "`output.files` must be a list of file names, found {}",
                value_kind(v)
            ));
        }
    };
    let mut files: Vec<String> = Vec::new();
    for item in &items {
        let Some(name) = item.as_str().map(str::trim) else {
            return Err(format!(
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
            return Err(format!(
                "`output.files` entry {name:?} must be a relative file name inside the job's folder (no `..`, no absolute path)"
            ));
        }
        if files.iter().any(|f| f == name) {
            return Err(format!("`output.files` names {name:?} twice"));
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

fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
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
        assert!(check_name("a-b_c9").is_ok());
        assert!(check_name("-a").is_err());
        assert!(check_name("a b").is_err());
        assert!(check_name(&"x".repeat(65)).is_err());
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
    fn yaml_errors_have_a_line() {
        let e = load("name: a\ndescription: [unclosed\n").unwrap_err();
        assert!(e.reason.contains("line"), "{e}");
    }
}
