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
pub const MAX_JOBS_FILE_BYTES: u64 = 16 << 20;

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
///
/// Read as any small file a person hands zhi ([`crate::small_file`]): a FIFO or a folder given
/// as `--jobs` is refused at once, never read.
pub fn read_jobs_file(path: &Path) -> Result<Vec<JobsEntry>, ExitError> {
    let bad = |m: String| ExitError::usage(format!("jobs file {}: {m}", path.display()));
    let bytes =
        crate::small_file::read(path, MAX_JOBS_FILE_BYTES).map_err(|e| bad(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|e| bad(format!("not UTF-8 text ({e})")))?;
    crate::small_file::check_yaml_nesting(&text).map_err(|e| bad(e.to_string()))?;
    let shape: serde_norway::Value =
        serde_norway::from_str(&text).map_err(|e| bad(e.to_string()))?;
    // Deserialised again from the text, not from `shape`, so that errors carry their line.
    let entries = match shape {
        serde_norway::Value::Mapping(m) => {
            // The parser names no line for an unknown key of the top mapping; find it here.
            if let Some(key) = m.keys().find(|k| k.as_str() != Some("jobs")) {
                let key = key
                    .as_str()
                    .map_or_else(|| format!("{key:?}"), str::to_string);
                let line = text
                    .lines()
                    .position(|l| l.starts_with(&format!("{key}:")))
                    .map(|i| format!(" at line {}", i + 1))
                    .unwrap_or_default();
                return Err(bad(format!(
                    "unknown field `{key}`{line}; a jobs file holds `jobs:` with a list of jobs"
                )));
            }
            serde_norway::from_str::<Wrapped>(&text)
                .map_err(|e| bad(e.to_string()))?
                .jobs
        }
        serde_norway::Value::Sequence(_) => serde_norway::from_str::<Vec<JobsEntry>>(&text)
            .map_err(|e| {
                // `.[1].inputs: …` reads better as `[1].inputs: …`.
                let msg = e.to_string();
                bad(msg.strip_prefix('.').map(str::to_string).unwrap_or(msg))
            })?,
        serde_norway::Value::Null => Vec::new(),
        _ => {
            return Err(bad(
                "expected `jobs:` with a list of jobs, or a list of jobs (each with `skill` and `inputs`)"
                    .into(),
            ));
        }
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
