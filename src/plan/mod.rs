//! Inputs → jobs. The planner expands paths, folders and globs into one job per document (or
//! per folder for directory skills), gives each a stable id, resolves arguments, and filters
//! shards. It never talks to the network and never writes.

mod args;
pub(crate) mod cache;
mod error;
mod expand;
pub(crate) mod index;
mod jobs_file;
mod output;
mod shard;
pub(crate) mod store;

pub(crate) use args::{parse_arg, resolve_args};
pub(crate) use error::PlanError;
pub(crate) use expand::{ExpandOptions, expand};
pub(crate) use jobs_file::read_jobs_file;
pub(crate) use output::{Forbidden, check_output_folder, forbidden};
pub(crate) use shard::{Shard, shard_from_env};
pub(crate) use store::{Plan, Selection};

use crate::error::JobError;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Hash `tag`, then `key=value`: how ids and cache keys take in named parts.
pub(crate) fn hash_pair(h: &mut Sha256, tag: &[u8], key: &str, value: &str) {
    h.update(tag);
    h.update(key.as_bytes());
    h.update(b"=");
    h.update(value.as_bytes());
}

/// A stable job id: the first 16 hex digits of sha256 over the skill, the input path and the
/// arguments. The same job has the same id in every run and every shard. Held inline (no
/// allocation): a plan of a million jobs holds a million of them, and the sets that dedupe it
/// as many again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct JobId([u8; 16]);

impl JobId {
    pub(crate) fn new(skill: &str, input: &str, args: &BTreeMap<String, String>) -> JobId {
        let mut h = Sha256::new();
        h.update(b"zhi-job-v1\0");
        h.update(skill.as_bytes());
        h.update(b"\0");
        h.update(input.as_bytes());
        for (k, v) in args {
            hash_pair(&mut h, b"\0", k, v);
        }
        let mut hex = [0u8; 16];
        // Eight bytes of the digest are sixteen hex digits.
        let _ = hex::encode_to_slice(&h.finalize()[..8], &mut hex);
        JobId(hex)
    }
    /// The id as the number its 16 hex digits are (how sets of ids hold it).
    pub(crate) fn key(&self) -> u64 {
        crate::manifest::job_key(self.as_str())
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only ever hex digits (ASCII).
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl Serialize for JobId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a job of a plan will do, as `zhi plan` says it (`pending`, `cached`, `will-fail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum PlanStatus {
    /// It will be sent to the model.
    Pending,
    /// Its outputs are there, made under the same cache key: it costs nothing.
    Cached,
    /// A problem known at planning time fails it without a request.
    WillFail,
}

impl PlanStatus {
    /// The status of a job, what fails it before its first request ([`preflight`]) and its
    /// cache status known.
    pub fn of(failure: Option<&JobError>, cache: &cache::JobCache) -> Self {
        if failure.is_some() {
            PlanStatus::WillFail
        } else if cache.cached {
            PlanStatus::Cached
        } else {
            PlanStatus::Pending
        }
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl std::fmt::Display for PlanStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What fails a job before its first request, known before the run: a problem found while
/// planning (a missing paired file, a broken link), else a job folder that is not what zhi
/// wrote there ([`cache::conflict`], `output_conflict`). `zhi run` fails the job with it and
/// sends nothing; `zhi plan` says `will-fail` with it (docs/cli.md#zhi-plan).
pub(crate) fn preflight(
    layout: &crate::layout::OutputLayout,
    job: &Job,
    cache: &cache::JobCache,
) -> Option<JobError> {
    match &job.problem {
        Some(problem) => Some(JobError::clone(problem)),
        None if cache.cached => None,
        None => cache::conflict(layout, job, cache),
    }
}

/// One unit of work: a skill applied to one document (or folder).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Job {
    pub id: JobId,
    /// The skill's name, shared by every job of it.
    pub skill: std::sync::Arc<str>,
    /// The primary input as the user and the model see it (relative to the current folder
    /// when under it, else relative to the parent of the root it was found under).
    pub input: String,
    /// The primary input's path on disk.
    pub path: PathBuf,
    /// Whether the primary input is a folder (directory skills).
    pub is_dir: bool,
    /// Arguments, defaults applied and file templates expanded.
    pub args: BTreeMap<String, String>,
    /// Further input files named by file-type arguments: (argument, display path, path).
    pub extra_inputs: Vec<(String, String, PathBuf)>,
    /// The job's folder relative to the output folder: `<skill>/<input>`.
    pub output_rel: PathBuf,
    /// A problem known at planning time (a missing paired file, a broken link): the job is
    /// planned, and fails with this error without reaching the model. Boxed: rare, and the
    /// plan holds a job for every document.
    pub problem: Option<Box<JobError>>,
}

impl Job {
    /// The file an argument names: a file-type argument's resolved path, else the value as a
    /// path.
    pub(crate) fn arg_path(&self, name: &str) -> Option<PathBuf> {
        self.extra_inputs
            .iter()
            .find(|(a, _, _)| a == name)
            .map(|(_, _, p)| p.clone())
            .or_else(|| {
                self.args
                    .get(name)
                    .filter(|v| !v.trim().is_empty())
                    .map(PathBuf::from)
            })
    }

    /// Every input the job may read: the primary and the file arguments.
    pub(crate) fn input_paths(&self) -> impl Iterator<Item = (&str, &std::path::Path)> {
        std::iter::once((self.input.as_str(), self.path.as_path())).chain(
            self.extra_inputs
                .iter()
                .map(|(_, d, p)| (d.as_str(), p.as_path())),
        )
    }
}

/// The output folder of a job: `<skill>/<display path>`, with `..` and root components
/// removed so it always stays inside the output folder.
pub(crate) fn output_rel(skill: &str, display: &str) -> PathBuf {
    // Sized once: the plan holds one of these a job.
    let mut p = PathBuf::with_capacity(skill.len() + display.len() + 8);
    p.push(skill);
    for part in display.split('/') {
        match part {
            "" | "." | ".." => {}
            // A component named like zhi's own folder gets a suffix so it cannot collide.
            ".zhi" => p.push("_zhi"),
            other => p.push(other),
        }
    }
    p
}

/// What to plan: one skill over some inputs (a jobs file is several of these).
#[derive(Debug, Clone)]
pub(crate) struct PlanRequest {
    pub skill: String,
    pub inputs: Vec<String>,
    pub args: BTreeMap<String, String>,
    pub expand: ExpandOptions,
}

/// Plan the jobs of several requests: expand, resolve arguments, give ids, dedupe (the same
/// skill, input and arguments reached twice is one job). Usage errors (unknown skill, bad
/// arguments, inputs that do not exist, no inputs at all) fail the whole plan.
///
/// A large plan goes to a file as it is made ([`store`]): what is held of it while planning is
/// a few digests a job, to dedupe it and to tell its job folders apart.
pub(crate) fn build(
    requests: &[PlanRequest],
    skills: &crate::skills::SkillSet,
    cwd: &std::path::Path,
    output_dir: &std::path::Path,
) -> Result<Plan, PlanError> {
    let mut jobs = store::PlanWriter::new();
    let spill = |e: std::io::Error| PlanError::Spill(e.to_string());
    // The ids planned, and each job's folder (one folder, one job) by a digest and the
    // position of its job: 8 and 16 bytes a job, not a copy of each id and folder. Held for
    // the jobs that could meet another: all of them when the plan has more than one request
    // or input, follows links, plans folders or walks a folder that holds the current one;
    // else only those [`may_clash`] names.
    let mut ids: std::collections::HashSet<u64> = Default::default();
    let mut folders: std::collections::HashMap<u64, u32> = Default::default();
    let several = requests.len() > 1;
    for req in requests {
        let skill = skills
            .get(&req.skill)
            .ok_or_else(|| PlanError::UnknownSkill {
                name: req.skill.clone(),
                hint: crate::suggest::did_you_mean(&req.skill, skills.names()),
            })?;
        args::check_args(skill, &req.args)?;
        let crowded = several
            || req.inputs.len() > 1
            || req.expand.follow_links
            // The current folder is laid out under its own name, beside its subfolders.
            || skill.takes_directory()
            || req
                .inputs
                .iter()
                .any(|i| expand::holds_current_folder(i, cwd));
        let skill_name: std::sync::Arc<str> = skill.name.as_str().into();
        let mut opts = req.expand.clone();
        opts.directories = skill.takes_directory();
        expand(&req.inputs, &opts, cwd, output_dir, &mut |f| {
            let (args, extra_inputs, arg_problem) =
                resolve_args(skill, &req.args, &f.display, &f.path);
            let id = JobId::new(&skill.name, &f.display, &args);
            // The current folder itself is laid out under its own name.
            let out_display = f.out_display.as_deref().unwrap_or(&f.display);
            let rel = output_rel(
                &skill.name,
                if out_display == "." {
                    cwd.file_name().and_then(|n| n.to_str()).unwrap_or("root")
                } else {
                    out_display
                },
            );
            // A job that cannot meet another (met once, named apart) is not looked up.
            if crowded || may_clash(&rel) {
                if !ids.insert(id.key()) {
                    return Ok(());
                }
                let folder = digest(rel.as_os_str());
                if let Some(first) = folders.get(&folder) {
                    let first = jobs.get(*first as usize).map_err(spill)?;
                    return Err(PlanError::SharedOutputFolder {
                        first: first.input,
                        second: f.display,
                        folder: rel.display().to_string(),
                    });
                }
                let at = u32::try_from(jobs.len()).map_err(|_| PlanError::TooManyJobs)?;
                folders.insert(folder, at);
            }
            jobs.push(Job {
                id,
                skill: skill_name.clone(),
                output_rel: rel,
                input: f.display,
                path: f.path,
                is_dir: opts.directories,
                args,
                extra_inputs,
                problem: f.problem.or(arg_problem).map(Box::new),
            })
            .map_err(spill)
        })?;
    }
    if jobs.len() == 0 {
        return Err(PlanError::NothingMatched);
    }
    jobs.finish().map_err(spill)
}

/// Whether a job of a plan of one input of files, walked without following links, from a
/// folder that does not hold the current folder, could still share its folder with another.
/// Each document is met once there, and its folder is its shown path (which tells every name
/// apart, [`expand::shown`]) under the skill's, or the input folder's name and its path in it:
/// one way for the whole input. One change can still make two folders one: a folder named
/// `.zhi` is laid out as `_zhi`. Two jobs that clash then both have a `_zhi` in their folder.
fn may_clash(rel: &std::path::Path) -> bool {
    rel.components().any(|c| c.as_os_str() == "_zhi")
}

/// 8 bytes of sha256 over a path: how the plan tells paths apart without holding them. As
/// many as a job id has: two paths of a million share one with a chance of about 3 in 100
/// million, as two jobs share an id.
pub(crate) fn digest(path: &std::ffi::OsStr) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let digest = Sha256::digest(path.as_bytes());
    let mut key = [0u8; 8];
    key.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(key)
}

/// Refuse a per-minute token budget (`--tpm`, `tpm:`) that no request of the plan fits.
///
/// Each request is charged its estimate before it is sent, and the estimate counts the whole
/// answer the model may write (`max_output`). A budget below one request's cost once meant
/// every request waited a full minute for a bucket that could never hold it — a run that
/// crawled without a word. Checked before anything is sent, with the smallest budget that
/// works, so the user can fix it at once.
pub(crate) fn check_tpm(
    config: &crate::config::Config,
    jobs: &[Job],
    skills: &crate::skills::SkillSet,
) -> Result<(), PlanError> {
    let Some(tpm) = config.run.tpm else {
        return Ok(());
    };
    // The job whose requests cost the most, and what that is.
    let mut worst: Option<(u32, &str, String, crate::config::ModelBudget, bool)> = None;
    for job in jobs {
        let Some(skill) = skills.get(&job.skill) else {
            continue;
        };
        let model = config.models.model_for(skill.model.as_deref());
        let budget = config.models.budget(&model);
        let direct = skill.direct_output(&job.args).is_some();
        let floor = crate::chunk::request_floor(budget, direct);
        if worst.as_ref().is_none_or(|w| floor > w.0) {
            worst = Some((floor, &skill.name, model, budget, direct));
        }
    }
    match worst {
        Some((floor, skill, model, budget, direct)) if tpm.get() < floor => {
            Err(PlanError::TpmTooSmall {
                label: config.tpm_label(),
                model,
                skill: skill.to_string(),
                max_output: budget.max_output,
                prompt: if direct {
                    crate::chunk::DIRECT_PROMPT_OVERHEAD
                } else {
                    crate::chunk::PROMPT_OVERHEAD
                },
                min_document: crate::chunk::MIN_DOCUMENT_TOKENS,
                floor,
                file: match config.origins.get("tpm") {
                    Some(crate::config::Origin::File(f)) => Some(f.clone()),
                    _ => None,
                },
            })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_statuses_are_written_as_before() {
        for (status, text) in [
            (PlanStatus::Pending, "pending"),
            (PlanStatus::Cached, "cached"),
            (PlanStatus::WillFail, "will-fail"),
        ] {
            assert_eq!(status.to_string(), text);
            assert_eq!(serde_json::to_value(status).unwrap(), text);
        }
    }

    #[test]
    fn a_job_id_is_16_hex_digits_of_its_skill_input_and_arguments() {
        let args = BTreeMap::from([("to".to_string(), "english".to_string())]);
        let id = JobId::new("translate", "docs/a.md", &args);
        assert_eq!(id.as_str().len(), 16);
        assert!(id.as_str().bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(id, JobId::new("translate", "docs/a.md", &args));
        assert_ne!(id, JobId::new("translate", "docs/b.md", &args));
        assert_eq!(serde_json::to_value(id).unwrap(), id.as_str());
    }
}
