//! Skills: YAML-defined agents (a system prompt, tools, a turn limit, input arguments).
//!
//! This room loads skill files, validates them one by one (`load`), discovers them in their
//! three places (`discover`), and checks the graph of nested skills (`graph`). It decides
//! nothing about running: a [`Skill`] is plain, validated data that the agent reads.

mod discover;
mod graph;
pub mod load;
mod preamble;

pub use discover::{SkillSet, SkillSource, builtin_sources, discover};
pub use graph::{GraphError, MAX_NESTING};
pub use load::{LoadError, Loaded, load_str};
pub use preamble::{LANGUAGE_PREAMBLE, system_prompt};

use serde::Serialize;

/// The tools a skill may list besides other skills' names (SPEC §7).
pub const BUILTIN_TOOLS: &[&str] = &["file_read", "file_write", "file_list", "ocr", "web_fetch"];

/// Default turn limit when a skill sets none.
pub const DEFAULT_MAX_TURNS: u32 = 15;
/// Allowed turn limits.
pub const MAX_TURNS_RANGE: std::ops::RangeInclusive<u32> = 1..=50;
/// The model a skill runs on when neither it, the config nor a flag names one.
pub const DEFAULT_MODEL: &str = "glm-4-flash";

/// A validated skill.
#[derive(Debug, Clone, Serialize)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub model: Option<String>,
    pub system_prompt: String,
    pub tools: Vec<String>,
    pub max_turns: u32,
    pub input: InputSpec,
    pub output: Option<OutputSpec>,
    pub chunking: Chunking,
    /// Where the skill came from.
    pub source: SkillSource,
    /// sha256 of the skill file's bytes: part of every job's cache key.
    pub content_hash: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct InputSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub args: Vec<ArgSpec>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OutputSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One input argument of a skill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArgSpec {
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
        match self {
            ArgType::File => "file",
            ArgType::Directory => "directory",
            ArgType::String => "string",
            ArgType::Number => "number",
            ArgType::Boolean => "boolean",
        }
    }
}

/// What happens to a document longer than the model's budget (SPEC §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
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
        match self {
            Chunking::None => "none",
            Chunking::Map => "map",
            Chunking::MapReduce => "map-reduce",
        }
    }
}

impl Skill {
    /// The argument that names the document a job is about: the first required `file` or
    /// `directory` argument.
    pub fn primary_arg(&self) -> Option<&ArgSpec> {
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

    /// Names in `tools` that are other skills rather than builtin tools.
    pub fn nested_skill_names(&self) -> impl Iterator<Item = &str> {
        self.tools
            .iter()
            .map(String::as_str)
            .filter(|t| !BUILTIN_TOOLS.contains(t))
    }

    /// Builtin tools this skill lists.
    pub fn builtin_tools(&self) -> impl Iterator<Item = &str> {
        self.tools
            .iter()
            .map(String::as_str)
            .filter(|t| BUILTIN_TOOLS.contains(t))
    }
}
