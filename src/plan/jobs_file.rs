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

use super::PlanError;
use super::error::JobsFileProblem;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// One entry of a jobs file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobsEntry {
    pub skill: String,
    #[serde(alias = "input")]
    #[serde(deserialize_with = "one_or_many")]
    pub inputs: Vec<String>,
    #[serde(default)]
    pub args: BTreeMap<String, serde_norway::Value>,
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// The wrapped form, `jobs: [...]`. Its shape is told apart from a bare list before it is
/// deserialised, not by an untagged enum: an untagged enum's error is "data did not match any
/// variant", which names neither the field nor the line that is wrong.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wrapped {
    jobs: Vec<JobsEntry>,
}

/// `inputs: docs/` or `inputs: [docs/, "*.md"]`.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct Inputs;
    impl<'de> serde::de::Visitor<'de> for Inputs {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an input path or a list of input paths")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(vec![v.to_string()])
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(s) = seq.next_element::<String>()? {
                out.push(s);
            }
            Ok(out)
        }
    }
    d.deserialize_any(Inputs)
}

/// The largest jobs file read: room for tens of thousands of entries.
pub(super) const MAX_JOBS_FILE_BYTES: u64 = 16 << 20;

impl JobsEntry {
    /// Arguments as strings (numbers and booleans written as YAML scalars).
    pub(crate) fn string_args(&self) -> Result<BTreeMap<String, String>, PlanError> {
        self.args
            .iter()
            .map(|(k, v)| {
                let s = match v {
                    serde_norway::Value::String(s) => s.clone(),
                    serde_norway::Value::Number(n) => n.to_string(),
                    serde_norway::Value::Bool(b) => b.to_string(),
                    _ => {
                        return Err(PlanError::JobsFileArgument {
                            arg: k.clone(),
                            skill: self.skill.clone(),
                        });
                    }
                };
                Ok((k.clone(), s))
            })
            .collect()
    }
}

/// Read and check a jobs file.
///
/// Read as any small file a person hands zhi ([`crate::small_file`]): a FIFO or a folder given
/// as `--jobs` is refused at once, never read.
pub(crate) fn read_jobs_file(path: &Path) -> Result<Vec<JobsEntry>, PlanError> {
    let bad = |problem: JobsFileProblem| PlanError::JobsFile {
        path: path.to_path_buf(),
        problem,
    };
    let entries = entries(path).map_err(bad)?;
    if entries.is_empty() {
        return Err(bad(JobsFileProblem::NoJobs));
    }
    if let Some((i, e)) = entries
        .iter()
        .enumerate()
        .find(|(_, e)| e.inputs.is_empty())
    {
        return Err(bad(JobsFileProblem::NoInputs {
            entry: i + 1,
            skill: e.skill.clone(),
        }));
    }
    Ok(entries)
}

/// The entries of a jobs file, in either shape.
fn entries(path: &Path) -> Result<Vec<JobsEntry>, JobsFileProblem> {
    let syntax = |source: serde_norway::Error| JobsFileProblem::Syntax {
        message: source.to_string(),
        source,
    };
    let bytes = crate::small_file::read(path, MAX_JOBS_FILE_BYTES)?;
    let text = String::from_utf8(bytes)?;
    crate::small_file::check_yaml_nesting(&text)?;
    let shape: serde_norway::Value = serde_norway::from_str(&text).map_err(syntax)?;
    // Deserialised again from the text, not from `shape`, so that errors carry their line.
    match shape {
        serde_norway::Value::Mapping(m) => {
            // The parser names no line for an unknown key of the top mapping; find it here.
            if let Some(key) = m.keys().find(|k| k.as_str() != Some("jobs")) {
                let key = key
                    .as_str()
                    .map_or_else(|| format!("{key:?}"), str::to_string);
                let line = text
                    .lines()
                    .position(|l| l.starts_with(&format!("{key}:")))
                    .map(|i| i + 1);
                return Err(JobsFileProblem::UnknownField { key, line });
            }
            Ok(serde_norway::from_str::<Wrapped>(&text)
                .map_err(syntax)?
                .jobs)
        }
        serde_norway::Value::Sequence(_) => {
            serde_norway::from_str::<Vec<JobsEntry>>(&text).map_err(|source| {
                // `.[1].inputs: …` reads better as `[1].inputs: …`.
                let msg = source.to_string();
                JobsFileProblem::Syntax {
                    message: msg.strip_prefix('.').map(str::to_string).unwrap_or(msg),
                    source,
                }
            })
        }
        serde_norway::Value::Null => Ok(Vec::new()),
        _ => Err(JobsFileProblem::Shape),
    }
}
