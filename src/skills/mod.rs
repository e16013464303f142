//! Skills: YAML-defined agents (a system prompt, tools, a turn limit, input arguments).
//!
//! This room loads skill files, validates them one by one (`load`), discovers them in their
//! three places (`discover`), and checks the graph of nested skills (`graph`). It decides
//! nothing about running: a [`Skill`] is plain, validated data that the agent reads.

mod discover;
mod graph;
pub(crate) mod load;
pub(crate) mod name;
mod preamble;
pub(crate) mod schema;
pub(crate) mod steps;

pub(crate) use discover::{SKILL_MD, SkillSet, discover, unknown_skill};
pub use discover::{SkillSource, builtin_sources};
pub(crate) use graph::MAX_NESTING;
pub use load::{LoadError, Loaded, load_str};
pub(crate) use preamble::{language_of, names_chinese, system_prompt};
pub(crate) use schema::{GroundingRule, SchemaSpec};
pub(crate) use steps::{Step, StepRun};

use serde::Serialize;
use sha2::{Digest, Sha256};

/// The tools a skill may list besides other skills' names (docs/sandbox.md#tools).
pub(crate) const BUILTIN_TOOLS: &[&str] =
    &["file_read", "file_write", "file_list", "ocr", "web_fetch"];

/// How a skill names a tool of an MCP server in `tools`: `mcp:SERVER/TOOL`
/// (docs/mcp.md#skills-that-call-mcp-tools).
pub(crate) const MCP_TOOL_PREFIX: &str = "mcp:";

/// A tool of an MCP server that a skill lists: the server's name in the settings' `mcp:` and
/// the tool's name on that server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct McpTool<'a> {
    pub server: &'a str,
    pub tool: &'a str,
}

impl<'a> McpTool<'a> {
    /// `mcp:SERVER/TOOL`: a server's name (letters, digits, `_`, `-`) and a tool's name (no
    /// blanks or control characters, at most 128 characters).
    pub(crate) fn parse(entry: &'a str) -> Option<McpTool<'a>> {
        let (server, tool) = entry.strip_prefix(MCP_TOOL_PREFIX)?.split_once('/')?;
        let server_ok = !server.is_empty()
            && server.len() <= 64
            && server
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let tool_ok = !tool.is_empty()
            && tool.len() <= 128
            && !tool.chars().any(|c| c.is_control() || c.is_whitespace());
        (server_ok && tool_ok).then_some(McpTool { server, tool })
    }
}

/// Default turn limit when a skill sets none.
pub(crate) const DEFAULT_MAX_TURNS: u32 = 15;
/// Allowed turn limits.
pub(crate) const MAX_TURNS_RANGE: std::ops::RangeInclusive<u32> = 1..=50;
/// The model a skill runs on when neither it, the config nor a flag names one.
pub(crate) const DEFAULT_MODEL: &str = "glm-4-flash";

/// A validated skill.
#[derive(Debug, Clone, Serialize)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub model: Option<String>,
    pub system_prompt: String,
    pub tools: Vec<String>,
    pub max_turns: u32,
    pub(crate) input: InputSpec,
    pub(crate) output: Option<OutputSpec>,
    pub chunking: Chunking,
    /// A workflow's steps (docs/skills.md#workflows); empty for other skills.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) steps: Vec<Step>,
    /// Where the skill came from.
    pub source: SkillSource,
    /// sha256 of the skill file's bytes (with its schema file's): see
    /// [`Skill::content_hash`], which adds an Agent Skill's folder.
    pub file_hash: String,
    /// The folder of an Agent Skill (`SKILL.md`), with what its jobs may read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) folder: Option<SkillFolder>,
    /// `escalate:`: this skill's ladder (`MODEL` or `MODEL@BASE_URL`), over the settings'
    /// (docs/escalation.md#the-ladder).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub escalate: Vec<String>,
    /// `instruction:`: the short task a direct request opens with, the document's text after
    /// it, in one user message and without a system prompt (docs/skills.md#direct-mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instruction: Option<String>,
    /// `instruction:` as a mapping: the instruction for a document in a language (`chinese`),
    /// by the lowercase name [`language_of`] gives; [`Skill::instruction`] is its `default`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(crate) instruction_in: std::collections::BTreeMap<String, String>,
}

/// An Agent Skill's folder: `SKILL.md`, and optionally `references/`, `assets/`, `scripts/`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SkillFolder {
    pub root: std::path::PathBuf,
    /// Files under `references/` and `assets/` that `file_read` may read: (name as the model
    /// sees it, e.g. `references/style.md`; path).
    pub resources: Vec<(String, std::path::PathBuf)>,
    /// Files under `scripts/` (never run: there is no shell).
    pub scripts: Vec<String>,
    /// The resources' texts when they are all text and small enough
    /// ([`INLINE_RESOURCES_BYTES`] in all) to go with the instructions: the skill then stays
    /// direct, one request a document, instead of reading them in the agent loop.
    #[serde(skip)]
    pub inline: Option<Vec<(String, String)>>,
    /// Each resource's file as the walk saw it: a job reads a resource only while its path
    /// still names that file (a link swapped in mid-run is never followed).
    #[serde(skip)]
    pub stamps: std::collections::BTreeMap<std::path::PathBuf, crate::small_file::Stamp>,
    /// Every file of the folder (relative path, size), for [`SkillFolder::hash`].
    #[serde(skip)]
    pub files: std::sync::Arc<Vec<(String, u64)>>,
    #[serde(skip)]
    pub hash: std::sync::Arc<std::sync::OnceLock<String>>,
}

impl SkillFolder {
    /// The hash over every file's path and content, computed the first time it is asked.
    pub(crate) fn hash(&self) -> &str {
        self.hash
            .get_or_init(|| discover::folder_hash(&self.root, &self.files))
    }
}

/// How much resource text an Agent Skill may carry in its prompt and stay direct.
pub(crate) const INLINE_RESOURCES_BYTES: u64 = 16 * 1024;

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct InputSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub args: Vec<ArgSpec>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct OutputSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The files a successful job must leave (docs/skills.md#declared-outputs). A name may hold
    /// `{arg}` placeholders, filled from the job's arguments (`reformatted.{format}`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The language the outputs are written in, when the skill fixes it (`"{to}"` for a
    /// translation). A language zhi knows by name or code is checked by its script.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// The JSON Schema of an extraction skill's answer (docs/extract.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaSpec>,
    /// What a value found nowhere in the document does to the job.
    #[serde(skip_serializing_if = "is_flag")]
    pub grounding: GroundingRule,
}

fn is_flag(g: &GroundingRule) -> bool {
    *g == GroundingRule::Flag
}

/// Extensions of declared outputs that direct mode can write from a plain answer.
pub(crate) const DIRECT_EXTS: &[&str] = &["md", "txt", "csv", "json"];

/// One input argument of a skill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ArgSpec {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ArgType,
    pub required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum ArgType {
    File,
    Directory,
    String,
    Number,
    Boolean,
}

impl ArgType {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "file" => ArgType::File,
            "directory" | "dir" => ArgType::Directory,
            "string" => ArgType::String,
            "number" => ArgType::Number,
            "boolean" | "bool" => ArgType::Boolean,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What happens to a document longer than the model's budget (docs/documents.md#chunking-modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum Chunking {
    /// Fail the job with `too_large`.
    #[default]
    None,
    /// Run on each chunk and concatenate the outputs in order.
    Map,
    /// Run on each chunk, then once more over the chunk results.
    MapReduce,
}

impl Chunking {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "none" => Chunking::None,
            "map" => Chunking::Map,
            "map-reduce" | "map_reduce" | "mapreduce" => Chunking::MapReduce,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl Skill {
    /// What identifies this skill's content: part of every job's cache key and of a run's
    /// manifest. The skill file's hash, and for an Agent Skill its whole folder's (computed
    /// on first use, so commands that do not need it never read the folder).
    pub(crate) fn content_hash(&self) -> String {
        match &self.folder {
            Some(folder) => {
                let mut h = Sha256::new();
                h.update(self.file_hash.as_bytes());
                h.update(b"\0folder\0");
                h.update(folder.hash().as_bytes());
                hex::encode(h.finalize())
            }
            None => self.file_hash.clone(),
        }
    }

    /// The argument that names the document a job is about: the first required `file` or
    /// `directory` argument.
    pub(crate) fn primary_arg(&self) -> Option<&ArgSpec> {
        self.input
            .args
            .iter()
            .find(|a| a.required && matches!(a.kind, ArgType::File | ArgType::Directory))
    }

    /// Whether a job of this skill is one folder rather than one file.
    pub fn takes_directory(&self) -> bool {
        self.primary_arg()
            .is_some_and(|a| a.kind == ArgType::Directory)
    }

    /// Names in `tools` that are other skills rather than builtin or MCP tools.
    pub(crate) fn nested_skill_names(&self) -> impl Iterator<Item = &str> {
        self.tools
            .iter()
            .map(String::as_str)
            .filter(|t| !BUILTIN_TOOLS.contains(t) && !t.starts_with(MCP_TOOL_PREFIX))
    }

    /// The MCP servers' tools in `tools` (`mcp:SERVER/TOOL`), in order.
    pub(crate) fn mcp_tools(&self) -> impl Iterator<Item = McpTool<'_>> {
        self.tools.iter().filter_map(|t| McpTool::parse(t))
    }

    /// The skills this one uses: those in `tools` (nested skills the model may call) and those
    /// its steps run.
    pub(crate) fn children(&self) -> impl Iterator<Item = &str> {
        self.nested_skill_names()
            .chain(self.steps.iter().filter_map(Step::skill))
    }

    /// How a job of this skill runs with its default arguments: `direct` (one request),
    /// `extract` (one request whose answer is a JSON object of its schema), `workflow` (fixed
    /// steps) or `agent` (the model chooses tools, turn by turn).
    pub(crate) fn mode(&self) -> &'static str {
        let defaults: std::collections::BTreeMap<String, String> = self
            .input
            .args
            .iter()
            .filter_map(|a| a.default.clone().map(|d| (a.name.clone(), d)))
            .collect();
        if self.is_workflow() {
            "workflow"
        } else if self.schema().is_some() {
            "extract"
        } else if self.direct_output(&defaults).is_some() {
            "direct"
        } else {
            "agent"
        }
    }

    /// The schema of an extraction skill (docs/extract.md).
    pub(crate) fn schema(&self) -> Option<&SchemaSpec> {
        self.output.as_ref().and_then(|o| o.schema.as_ref())
    }

    /// The chunking that sizes a long document's pieces: the skill's own, except that an
    /// extraction's answer is short whatever its piece, so its pieces fill the window as a
    /// map-reduce's do rather than being held to what a `map` answer can render.
    pub(crate) fn piece_sizing(&self) -> Chunking {
        match self.chunking {
            Chunking::Map if self.schema().is_some() => Chunking::MapReduce,
            other => other,
        }
    }

    /// Whether the skill runs as a workflow of fixed steps.
    pub(crate) fn is_workflow(&self) -> bool {
        !self.steps.is_empty()
    }

    /// The files a job of this skill must leave, placeholders filled from `args`.
    pub fn declared_files(&self, args: &std::collections::BTreeMap<String, String>) -> Vec<String> {
        self.output
            .iter()
            .flat_map(|o| o.files.iter())
            .map(|f| fill_template(f, args))
            .collect()
    }

    /// What the declared output is, in the skill's own words, without the file name its
    /// description may start with (`translation.md, the full translation …` → `the full
    /// translation …`).
    pub(crate) fn output_gist(&self) -> Option<String> {
        let d = self.output.as_ref()?.description.as_deref()?.trim();
        let rest = match d.split_once(", ") {
            Some((head, rest)) if !head.contains(' ') && head.contains('.') => rest,
            _ => d,
        };
        (!rest.is_empty()).then(|| rest.to_string())
    }

    /// The language this job's outputs must be in (`output.language`, placeholders filled).
    pub(crate) fn output_language(
        &self,
        args: &std::collections::BTreeMap<String, String>,
    ) -> Option<String> {
        self.output
            .as_ref()
            .and_then(|o| o.language.as_deref())
            .map(|l| fill_template(l, args))
            .filter(|l| !l.trim().is_empty() && !l.contains('{'))
    }

    /// The instruction a direct request of a job opens with, its placeholders filled:
    /// `{language}` is the output language in words (`to=zh` → `Simplified Chinese`), `{ARG}`
    /// an argument's value. `None` when the skill has none, or it names an argument the job
    /// does not have.
    pub(crate) fn direct_instruction(
        &self,
        args: &std::collections::BTreeMap<String, String>,
    ) -> Option<String> {
        self.filled(self.instruction.as_deref()?, args)
    }

    /// An instruction's placeholders filled, as [`Skill::direct_instruction`] says.
    fn filled(
        &self,
        template: &str,
        args: &std::collections::BTreeMap<String, String>,
    ) -> Option<String> {
        let mut out = String::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let close = open + rest[open..].find('}')?;
            let key = &rest[open + 1..close];
            out.push_str(&rest[..open]);
            let value = if key == "language" {
                preamble::language_name(&self.output_language(args)?)
            } else {
                args.get(key)?
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            out.push_str(&value);
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        Some(out)
    }

    /// The instruction of [`Skill::direct_instruction`] for a document whose text is `text`. A
    /// skill that answers in its document's language (no `output.language`) is asked in the
    /// document's language when its `instruction:` gives one for it; otherwise the default
    /// names that language after it when it is not English, the default's own
    /// (`… Answer in Chinese.`).
    pub(crate) fn instruction_for(
        &self,
        args: &std::collections::BTreeMap<String, String>,
        text: &str,
    ) -> Option<String> {
        let default = self.direct_instruction(args)?;
        let Some(lang) = language_of(text).filter(|_| self.output_language(args).is_none()) else {
            return Some(default);
        };
        if let Some(own) = self.instruction_in.get(&lang.to_lowercase()) {
            return self.filled(own, args);
        }
        Some(match lang {
            "English" => default,
            _ => format!("{default} Answer in {lang}."),
        })
    }

    /// The one text file a job of this skill writes from the model's plain answer, when the
    /// skill runs in direct mode: one declared text output, no nested skills, no folder input,
    /// no tool beyond reading its own inputs (which the first message already holds).
    pub(crate) fn direct_output(
        &self,
        args: &std::collections::BTreeMap<String, String>,
    ) -> Option<String> {
        if self.is_workflow() {
            return None;
        }
        let files = self.declared_files(args);
        let [file] = files.as_slice() else {
            return None;
        };
        let reads_only = self
            .tools
            .iter()
            .all(|t| matches!(t.as_str(), "file_read" | "file_write" | "file_list" | "ocr"));
        // An Agent Skill whose references or assets are too large (or not text) to go with
        // its instructions reads them with file_read, in the loop.
        if self
            .folder
            .as_ref()
            .is_some_and(|f| !f.resources.is_empty() && f.inline.is_none())
        {
            return None;
        }
        (reads_only && !self.takes_directory() && DIRECT_EXTS.contains(&extension(file).as_str()))
            .then(|| file.clone())
    }

    /// Builtin tools this skill lists.
    pub(crate) fn builtin_tools(&self) -> impl Iterator<Item = &str> {
        self.tools
            .iter()
            .map(String::as_str)
            .filter(|t| BUILTIN_TOOLS.contains(t))
    }
}

/// The lowercase extension of a file name (`""` when it has none).
pub(crate) fn extension(name: &str) -> String {
    std::path::Path::new(name)
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

/// `{arg}` placeholders replaced by the argument's value. A value that lands in the extension
/// is turned from a format's name into its extension (`markdown` → `md`, `excel` → `xlsx`), so
/// `reformatted.{format}` with `format: markdown` is `reformatted.md`. A placeholder with no
/// argument is left as it is.
pub(crate) fn fill_template(
    name: &str,
    args: &std::collections::BTreeMap<String, String>,
) -> String {
    let mut out = String::new();
    let mut rest = name;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let key = &rest[open + 1..open + close];
        out.push_str(&rest[..open]);
        match args.get(key) {
            Some(v) => {
                let at_ext = out.ends_with('.') && rest[open + close + 1..].is_empty();
                let v: String = v
                    .trim()
                    .chars()
                    .map(|c| {
                        if c.is_alphanumeric() || c == '-' || c == '_' || c == '.' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
                out.push_str(&if at_ext { format_extension(&v) } else { v });
            }
            None => out.push_str(&rest[open..=open + close]),
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

/// A format's extension from what a person may call it.
fn format_extension(format: &str) -> String {
    let f = format.trim_start_matches('.').to_ascii_lowercase();
    match f.as_str() {
        "markdown" | "mdown" => "md",
        "text" | "plain" | "plaintext" | "plain-text" => "txt",
        "word" | "doc" => "docx",
        "excel" | "spreadsheet" | "xls" => "xlsx",
        "htm" => "html",
        "yml" => "yaml",
        other => other,
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn loaded(yaml: &str) -> Result<Skill, String> {
        load_str(yaml.as_bytes(), SkillSource::File("t.yaml".into()))
            .map(|l| l.skill)
            .map_err(|e| e.to_string())
    }

    const GIST: &str = "name: gist\ndescription: The gist\nsystem_prompt: Give the gist.\ntools: [file_read, file_write]\noutput:\n  files: [gist.md]\n";

    #[test]
    fn a_document_not_in_english_is_asked_in_its_own_instruction_or_told_its_language() {
        let en = "The board met on Monday and approved the budget for the year.";
        let zh = "第三季度营收增长百分之十二，主要来自出口。";
        let ja = "今日は会議があります。";
        let one = loaded(&format!(
            "{GIST}instruction: Give the gist of the following text.\n"
        ))
        .unwrap();
        let none = args(&[]);
        assert_eq!(
            one.instruction_for(&none, en).as_deref(),
            Some("Give the gist of the following text.")
        );
        assert_eq!(
            one.instruction_for(&none, zh).as_deref(),
            Some("Give the gist of the following text. Answer in Chinese.")
        );
        let both = loaded(&format!(
            "{GIST}instruction:\n  default: Give the gist of the following text.\n  Chinese: 总结以下文本。\n"
        ))
        .unwrap();
        assert_eq!(
            both.instruction_for(&none, zh).as_deref(),
            Some("总结以下文本。")
        );
        assert_eq!(
            both.instruction_for(&none, ja).as_deref(),
            Some("Give the gist of the following text. Answer in Japanese.")
        );
        assert_eq!(
            both.instruction_for(&none, en).as_deref(),
            Some("Give the gist of the following text.")
        );
        // A target language decides the output: the document's language is not named.
        let to = loaded(
            "name: t\ndescription: A translation\nsystem_prompt: Translate.\ntools: [file_read, file_write]\n\
             instruction: Translate the following text into {language}.\n\
             output:\n  files: [t.md]\n  language: \"{to}\"\n",
        )
        .unwrap();
        assert_eq!(
            to.instruction_for(&args(&[("to", "english")]), zh)
                .as_deref(),
            Some("Translate the following text into English.")
        );
    }

    #[test]
    fn an_instruction_mapping_needs_a_default_and_known_languages() {
        let no_default = loaded(&format!("{GIST}instruction:\n  chinese: 总结以下文本。\n"));
        assert!(no_default.unwrap_err().contains("no `default`"));
        let unknown = loaded(&format!(
            "{GIST}instruction:\n  default: Give the gist.\n  klingon: Qapla'\n"
        ));
        let why = unknown.unwrap_err();
        assert!(
            why.contains("`klingon`") && why.contains("chinese"),
            "{why}"
        );
        let not_text = loaded(&format!("{GIST}instruction: [a, b]\n"));
        assert!(not_text.unwrap_err().contains("must be a string"));
    }

    #[test]
    fn templates_fill_arguments_and_name_formats_by_extension() {
        assert_eq!(
            fill_template("reformatted.{format}", &args(&[("format", "markdown")])),
            "reformatted.md"
        );
        assert_eq!(
            fill_template("reformatted.{format}", &args(&[("format", "Word")])),
            "reformatted.docx"
        );
        assert_eq!(
            fill_template("reformatted.{format}", &args(&[("format", "csv")])),
            "reformatted.csv"
        );
        assert_eq!(
            fill_template("followup-{to}.md", &args(&[("to", "english")])),
            "followup-english.md"
        );
        // A value cannot climb out of the job folder.
        assert_eq!(
            fill_template("x-{to}.md", &args(&[("to", "../../etc")])),
            "x-.._.._etc.md"
        );
        assert_eq!(
            fill_template("a-{missing}.md", &args(&[])),
            "a-{missing}.md"
        );
        assert_eq!(fill_template("plain.md", &args(&[])), "plain.md");
    }
}
