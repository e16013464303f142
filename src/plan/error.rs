//! Why a plan could not be made: an unknown skill, a bad argument, an input that is not there, a
//! jobs file that says something else than jobs, a shard out of range, a token budget no request
//! fits. Each is a usage error (exit 2, nothing ran: docs/exit-codes.md#usage-errors); the mapping
//! to the exit code lives with the exit codes ([`crate::exit`]).

use crate::small_file::{ReadError, TooDeep};
use std::path::PathBuf;

/// A failure to plan.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlanError {
    /// No skill of that name is loaded.
    #[error("{}", crate::skills::unknown_skill(name, hint))]
    UnknownSkill {
        name: String,
        /// "did you mean `summarize`?", or empty.
        hint: String,
    },

    /// `-a` without `=`.
    #[error("--arg `{0}` must be KEY=VALUE")]
    NotKeyValue(String),
    /// `-a NAME=…` for an argument the skill does not declare.
    #[error(
        "skill `{skill}` has no argument `{arg}` (its arguments: {})",
        list(known)
    )]
    NoSuchArgument {
        skill: String,
        arg: String,
        /// The skill's arguments, its input left out.
        known: Vec<String>,
    },
    /// `-a` naming the skill's primary input.
    #[error("`{0}` is the skill's input: give it as a path, not with --arg")]
    ArgumentIsTheInput(String),
    /// A value of the wrong type for its argument.
    #[error("--arg {arg}=`{value}` must be {expected}")]
    ArgumentType {
        arg: String,
        value: String,
        /// `a number`, `true or false` (translated where the error is printed).
        expected: String,
    },
    /// A required argument with no default, not given.
    #[error("skill `{skill}` needs --arg {arg}=… ({kind}{})", template_hint(.kind))]
    MissingArgument {
        skill: String,
        arg: String,
        /// The argument's type (`file`, `string`, …).
        kind: &'static str,
    },

    /// A glob that does not parse.
    #[error("glob `{input}`: {source}")]
    BadGlob {
        input: String,
        #[source]
        source: globset::Error,
    },
    /// A glob below a folder that is not there.
    #[error("glob `{input}`: folder {} does not exist", base.display())]
    GlobFolderMissing { input: String, base: PathBuf },
    /// An input path that is not there.
    #[error("input `{0}` does not exist")]
    InputMissing(String),
    /// An input inside the output folder (outputs are never inputs).
    #[error("input `{input}` is inside the output folder {}", output_dir.display())]
    InputInsideOutput { input: String, output_dir: PathBuf },
    /// An output folder that is, or lies inside, a `.zhi` folder: another output folder's
    /// records, which its `status` would count and its `prune` remove.
    #[error(
        "{} cannot be the output folder: it is, or lies inside, {}, where zhi keeps an output folder's records; name a folder outside every .zhi folder",
        output_dir.display(),
        records.display()
    )]
    OutputInRecords {
        output_dir: PathBuf,
        /// The `.zhi` folder it is in.
        records: PathBuf,
    },
    /// An output folder that is, or lies inside, the place of a settings file: a folder there
    /// stops every later command that reads it.
    #[error(
        "{} cannot be the output folder: it is, or lies inside, {}, where zhi reads a settings file (a folder there would stop every later command); name another folder",
        output_dir.display(),
        file.display()
    )]
    OutputIsSettings {
        output_dir: PathBuf,
        /// The settings file's place: a `zhi.yaml`, the user's file, `--config FILE`.
        file: PathBuf,
    },
    /// A file given to a skill that takes folders.
    #[error("input `{0}` is a file, but this skill takes folders")]
    FileForFolderSkill(String),
    /// An `--exclude` glob that does not parse.
    #[error("{flag} `{glob}`: {source}")]
    BadExclude {
        flag: &'static str,
        glob: String,
        #[source]
        source: globset::Error,
    },
    /// The `--exclude` globs together cannot be built into one matcher.
    #[error("{flag}: {source}")]
    BadExcludes {
        flag: &'static str,
        #[source]
        source: globset::Error,
    },
    /// The inputs exist but hold no document.
    #[error(
        "no inputs: nothing matched the given paths (hidden files need --hidden; the output folder is never an input)"
    )]
    NothingMatched,

    /// Two jobs would write to one folder (`../a/x.md` and `../b/x.md` are both `x.md` below
    /// the output folder): refused before either runs, naming both.
    #[error(
        "{first} and {second} would both write to {folder} in the output folder; run them with different -o folders, or run zhi from a folder that holds both so that their paths differ"
    )]
    SharedOutputFolder {
        first: String,
        second: String,
        folder: String,
    },

    /// The plan could not be kept in, or read back from, its temporary file (a full or
    /// read-only temp folder): nothing ran; worth trying again (exit 75).
    #[error(
        "cannot keep the plan in a temporary file (TMPDIR): {0}; free space there or point TMPDIR elsewhere"
    )]
    Spill(String),

    /// More jobs than one plan holds (4,294,967,295).
    #[error("more than 4294967295 jobs in one plan; split the inputs over several runs")]
    TooManyJobs,

    /// `--jobs FILE` that cannot be used.
    #[error("jobs file {}: {problem}", path.display())]
    JobsFile {
        path: PathBuf,
        #[source]
        problem: JobsFileProblem,
    },
    /// A jobs file's argument that is a list or a mapping.
    #[error("jobs file: argument `{arg}` of skill `{skill}` must be a single value")]
    JobsFileArgument { arg: String, skill: String },

    /// A shard variable (`CI_NODE_INDEX`, …) that is not a number.
    #[error("{var}=`{value}` is not a whole number")]
    ShardVariable { var: &'static str, value: String },
    /// Shard variables that name no shard.
    #[error("{vars}: shard {index} of {total} is out of range")]
    ShardOutOfRange {
        vars: &'static str,
        index: u32,
        total: u32,
    },
    /// A Kubernetes index without the number of shards: every pod would run the whole plan.
    #[error(
        "JOB_COMPLETION_INDEX is set but ZHI_SHARD_TOTAL is not: set ZHI_SHARD_TOTAL to the Job's completions (or pass --shard M/N)"
    )]
    ShardTotalMissing,
    /// Half of a pair of shard variables: the run would do the whole plan, in every process.
    #[error(
        "{set} is set but {unset} is not: half a shard specification would run the whole plan; set both, unset {set}, or pass --shard M/N"
    )]
    ShardHalf {
        set: &'static str,
        unset: &'static str,
    },
    /// A Slurm array of no tasks (Slurm never sets one).
    #[error(
        "SLURM_ARRAY_TASK_COUNT=0: an array of no tasks names no shard; check the variables the task was started with, or pass --shard M/N"
    )]
    SlurmArrayEmpty,
    /// A Slurm array task without the variables that say how big the array is.
    #[error(
        "SLURM_ARRAY_TASK_ID is set but {var} is not: zhi cannot tell which shard of how many this task is (pass --shard M/N)"
    )]
    SlurmArrayIncomplete { var: &'static str },
    /// A Slurm job array with a step or gaps: its task ids are not shards 1 to N.
    #[error(
        "SLURM_ARRAY_TASK_ID: a job array with a step or gaps ({values}) cannot be split into shards: submit a contiguous array such as --array=1-{count}, or pass --shard M/N"
    )]
    SlurmArrayNotContiguous { values: String, count: u32 },

    /// A per-minute token budget below what one request of the plan needs.
    #[error(
        "{label} is below what one request needs: a request to {model} (skill `{skill}`) reserves {max_output} tokens for its answer (max_output) and about {prompt} for its prompt, and carries at least {min_document} tokens of the document; {}, or set a smaller max_output for {model} under `models:` in the settings",
        tpm_advice(.file.as_deref(), *.floor)
    )]
    TpmTooSmall {
        /// `--tpm N` or `tpm N (config file F)`.
        label: String,
        model: String,
        skill: String,
        max_output: u32,
        /// The prompt's estimated tokens.
        prompt: u32,
        /// The fewest tokens of the document a request carries.
        min_document: u32,
        /// The smallest budget that works.
        floor: u32,
        /// The settings file that set the budget, when one did.
        file: Option<String>,
    },
}

/// What is wrong with a jobs file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JobsFileProblem {
    /// Not a readable regular file (a FIFO, a folder, too large, nothing there).
    #[error(transparent)]
    Unreadable(#[from] ReadError),
    #[error("not UTF-8 text ({0})")]
    NotUtf8(#[from] std::string::FromUtf8Error),
    #[error(transparent)]
    TooDeep(#[from] TooDeep),
    /// Not YAML, or a field of the wrong shape (the message names the field and the line).
    #[error("{message}")]
    Syntax {
        message: String,
        #[source]
        source: serde_norway::Error,
    },
    /// A top-level key other than `jobs`.
    #[error(
        "unknown field `{key}`{}; a jobs file holds `jobs:` with a list of jobs",
        line.map(|l| format!(" at line {l}")).unwrap_or_default()
    )]
    UnknownField { key: String, line: Option<usize> },
    /// Neither `jobs: [...]` nor a list.
    #[error(
        "expected `jobs:` with a list of jobs, or a list of jobs (each with `skill` and `inputs`)"
    )]
    Shape,
    #[error("no jobs")]
    NoJobs,
    /// Entry `entry` (1-based) names no input.
    #[error("entry {entry} (skill `{skill}`) has no inputs")]
    NoInputs { entry: usize, skill: String },
}

fn list(known: &[String]) -> String {
    if known.is_empty() {
        msg!("none besides the input")
    } else {
        known.join(", ")
    }
}

fn template_hint(kind: &str) -> &'static str {
    if kind == "file" {
        "; a template like {dir}/{stem}.old{ext} names a file beside each input"
    } else {
        ""
    }
}

fn tpm_advice(file: Option<&str>, floor: u32) -> String {
    match file {
        Some(f) => format!("set `tpm: {floor}` or more in {f}"),
        None => format!("give --tpm {floor} or more"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_argument_the_file_and_the_fix() {
        let e = PlanError::MissingArgument {
            skill: "compare".into(),
            arg: "file2".into(),
            kind: "file",
        };
        assert_eq!(
            e.to_string(),
            "skill `compare` needs --arg file2=… (file; a template like {dir}/{stem}.old{ext} names a file beside each input)"
        );
        let e = PlanError::NoSuchArgument {
            skill: "summarize".into(),
            arg: "to".into(),
            known: vec![],
        };
        assert_eq!(
            e.to_string(),
            "skill `summarize` has no argument `to` (its arguments: none besides the input)"
        );
        let e = PlanError::JobsFile {
            path: "jobs.yaml".into(),
            problem: JobsFileProblem::UnknownField {
                key: "jbos".into(),
                line: Some(1),
            },
        };
        assert_eq!(
            e.to_string(),
            "jobs file jobs.yaml: unknown field `jbos` at line 1; a jobs file holds `jobs:` with a list of jobs"
        );
        let e = PlanError::TpmTooSmall {
            label: "tpm 100 (config file zhi.yaml)".into(),
            model: "m".into(),
            skill: "s".into(),
            max_output: 4096,
            prompt: 600,
            min_document: 128,
            floor: 4824,
            file: Some("zhi.yaml".into()),
        };
        assert!(
            e.to_string()
                .contains("; set `tpm: 4824` or more in zhi.yaml, or set a smaller max_output"),
            "{e}"
        );
    }
}
