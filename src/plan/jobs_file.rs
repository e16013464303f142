//! `--jobs FILE`: several skills over several inputs in one run.
//!
//! ```yaml
//! jobs:
//!   - skill: summarize
//!     inputs: [reports/]
//!   - skill: translate
//!     inputs: ["docs/**/*.md"]
//!     args: {to: english}
//!     exclude: ["drafts/**"]
//! ```
//! A top-level list of entries is accepted too. Inputs are relative to the current folder.

use crate::exit::ExitError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// One entry of a jobs file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobsEntry {
    pub skill: String,
    #[serde(alias = "input")]
    #[serde(deserialize_with = "one_or_many")]
    pub inputs: Vec<String>,
    #[serde(default)]
    pub args: BTreeMap<String, serde_norway::Value>,
    #[serde(default)]
    pub exclude: Vec<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum JobsFile {
    Wrapped { jobs: Vec<JobsEntry> },
    List(Vec<JobsEntry>),
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

impl JobsEntry {
    /// Arguments as strings (numbers and booleans written as YAML scalars).
    pub fn string_args(&self) -> Result<BTreeMap<String, String>, ExitError> {
        self.args
            .iter()
            .map(|(k, v)| {
                let s = match v {
                    serde_norway::Value::String(s) => s.clone(),
                    serde_norway::Value::Number(n) => n.to_string(),
                    serde_norway::Value::Bool(b) => b.to_string(),
                    _ => {
                        return Err(ExitError::usage(format!(
                            "jobs file: argument `{k}` of skill `{}` must be a single value",
                            self.skill
                        )));
                    }
                };
                Ok((k.clone(), s))
            })
            .collect()
    }
}

/// Read and check a jobs file.
pub fn read_jobs_file(path: &Path) -> Result<Vec<JobsEntry>, ExitError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ExitError::usage(format!("jobs file {}: cannot read: {e}", path.display())))?;
    let parsed: JobsFile = serde_norway::from_str(&text)
        .map_err(|e| ExitError::usage(format!("jobs file {}: {e}", path.display())))?;
    let entries = match parsed {
        JobsFile::Wrapped { jobs } => jobs,
        JobsFile::List(l) => l,
    };
    if entries.is_empty() {
        return Err(ExitError::usage(format!(
            "jobs file {}: no jobs",
            path.display()
        )));
    }
    for (i, e) in entries.iter().enumerate() {
        if e.inputs.is_empty() {
            return Err(ExitError::usage(format!(
                "jobs file {}: entry {} (skill `{}`) has no inputs",
                path.display(),
                i + 1,
                e.skill
            )));
        }
    }
    Ok(entries)
}
