//! Command-line definitions (clap derive) and nothing else: raw flags as the user typed them.
//! Validation and defaults live in `config`, so there is one place that decides a setting.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

/// Run LLM skills over whole folders of documents.
///
/// zhi applies a skill (a YAML file: a prompt, its arguments, the files it must leave) to every
/// document under the inputs: once per document, as one request, as fixed steps, or as an agent
/// loop with tools, concurrently and rate-limited. Originals are never modified, every write
/// stays inside the output folder, and every run leaves a manifest saying what happened to
/// each document.
#[derive(Debug, Parser)]
#[command(name = "zhi", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Flags every command takes.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// More output: -v shows each job's turns and tool calls, -vv debug logs
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Only errors and the final summary
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Read settings from this file instead of ./zhi.yaml and ~/.config/zhi/config.yaml
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Machine-readable JSON on stdout; human output goes to stderr
    #[arg(long, global = true)]
    pub json: bool,

    /// No progress bar or progress lines
    #[arg(long, global = true)]
    pub no_progress: bool,

    /// When to use colors (NO_COLOR is honoured)
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a skill over files, folders (recursive) and quoted globs ('docs/**/*.pdf')
    #[command(after_help = RUN_EXAMPLES)]
    Run(RunArgs),

    /// Check a run before it runs: the jobs it would do, which are cached or will fail and why,
    /// and the prompt tokens it would send; nothing is sent
    ///
    /// Plan refuses (exit 2) what run would refuse before sending anything: an unknown skill
    /// or argument, a schema that cannot be read, --audit without a ladder, a token limit no
    /// request fits. It takes run's flags, so the same command line can be given to both; the
    /// flags that only matter while running (budgets, --strict, --submit, …) are accepted and
    /// not listed here.
    #[command(after_help = PLAN_EXAMPLES)]
    #[command(
        mut_arg("concurrency", |a| a.hide(true)),
        mut_arg("rpm", |a| a.hide(true)),
        mut_arg("timeout", |a| a.hide(true)),
        mut_arg("max_failures", |a| a.hide(true)),
        mut_arg("fail_fast", |a| a.hide(true)),
        mut_arg("budget_tokens", |a| a.hide(true)),
        mut_arg("budget_cost", |a| a.hide(true)),
        mut_arg("strict", |a| a.hide(true)),
        mut_arg("audit_seed", |a| a.hide(true)),
        mut_arg("target", |a| a.hide(true)),
        mut_arg("confidence", |a| a.hide(true)),
        mut_arg("allow_web", |a| a.hide(true)),
        mut_arg("submit", |a| a.hide(true)),
        mut_arg("agent_jobs", |a| a.hide(true)),
        mut_arg("rows", |a| a.hide(true)),
        mut_arg("records", |a| a.hide(true)),
    )]
    Plan(RunArgs),

    /// Print the text the pipeline would give the model for FILE
    Extract {
        /// The document (text, PDF, docx, pptx, xlsx, xls, ods, or an image)
        file: PathBuf,
        /// OCR engine for images and scanned pages
        #[arg(long, value_enum, value_name = "ENGINE")]
        ocr: Option<crate::config::OcrChoice>,
    },

    /// List, show, validate and create skills
    #[command(subcommand)]
    Skills(SkillsCommand),

    /// Show the resolved configuration
    #[command(subcommand)]
    Config(ConfigCommand),

    /// Summarize a run, or merge the manifests of several runs and shards into one
    #[command(subcommand)]
    Manifest(ManifestCommand),

    /// The output folder's batches (`run --submit batch`): how they are, or cancel them
    #[command(subcommand)]
    Batch(BatchCommand),

    /// Write a run's report: one self-contained HTML file (counts, failures, charts of
    /// durations and tokens, a sortable table of jobs, links to outputs and transcripts)
    ///
    /// The report needs no network to be viewed and is written in zhi's language (ZHI_LANGUAGE,
    /// else LANG). Its path is printed on stdout.
    #[command(after_help = REPORT_EXAMPLES)]
    Report {
        /// A run id in the output folder (a unique prefix will do), or the path of a run
        /// folder, its results.jsonl, or an output folder [default: the latest run in the
        /// output folder]
        run: Option<String>,

        /// Output folder whose runs to look in [default: zhi-output, env ZHI_OUTPUT_DIR]
        #[arg(short, long, value_name = "DIR")]
        output: Option<PathBuf>,

        /// Write the report to FILE [default: report.html in the run's folder,
        /// <DIR>/.zhi/runs/<RUN>/report.html]
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },

    /// The output folder's state: every job's latest record by status and skill, the failed
    /// ones with their reasons, inputs that are gone, tokens and cost to date
    #[command(after_help = STATUS_EXAMPLES)]
    Status {
        /// Output folder [default: zhi-output, env ZHI_OUTPUT_DIR]
        #[arg(value_name = "OUT")]
        out: Option<PathBuf>,

        /// One CSV row per job on stdout (job, skill, input, status, error, outputs, run)
        #[arg(long, conflicts_with = "json")]
        csv: bool,
    },

    /// Remove old runs' records and transcripts that no job's state needs; outputs are never
    /// touched
    #[command(after_help = PRUNE_EXAMPLES)]
    Prune(PruneArgs),

    /// Serve skills, plans, runs and results to an agent over MCP (Model Context Protocol)
    ///
    /// An MCP server on stdin and stdout: an agent lists the skills, plans a run, starts it in
    /// the background, follows its progress and reads its outputs and tables.
    /// Every input and output path the agent names must be inside a root (--root, repeatable;
    /// default the current folder). See docs/mcp.md.
    #[command(after_help = MCP_EXAMPLES)]
    Mcp(McpArgs),

    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell)
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions {
        /// The shell to complete zhi's commands and flags in
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },

    /// Print zhi's man page (roff) on stdout, or write one page per command into a folder
    Man {
        /// Write zhi.1, zhi-run.1, zhi-skills-list.1, … into this folder (`--out` is
        /// accepted too, as before)
        #[arg(long, value_name = "DIR", alias = "out")]
        dir: Option<PathBuf>,
    },
}

const STATUS_EXAMPLES: &str = "Examples:
  zhi status                          # ./zhi-output at a glance
  zhi status /srv/zhi-output --csv > state.csv
  zhi --json status | jq '.failed[].input'";

const PRUNE_EXAMPLES: &str = "Examples:
  zhi prune --keep-last 7 --dry-run   # what would go
  zhi prune --keep-last 7             # keep the last 7 runs whole
  zhi prune /srv/zhi-output --older-than 30d";

/// `zhi prune`.
#[derive(Debug, clap::Args)]
pub(crate) struct PruneArgs {
    /// Output folder [default: zhi-output, env ZHI_OUTPUT_DIR]
    #[arg(value_name = "OUT")]
    pub out: Option<PathBuf>,

    /// Keep the last N runs whole; older ones keep only what a job's state needs
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..),
          required_unless_present = "older_than")]
    pub keep_last: Option<u64>,

    /// Prune runs that started longer ago than DURATION (30d, 12h, 90m)
    #[arg(long, value_name = "DURATION", value_parser = crate::flags::duration_ago)]
    pub older_than: Option<std::time::Duration>,

    /// Say what would be removed, and remove nothing
    #[arg(long)]
    pub dry_run: bool,
}

const PLAN_EXAMPLES: &str = "Examples:
  zhi plan summarize reports/                 # what `zhi run summarize reports/` would do
  zhi plan invoice-to-excel invoices/ --exclude '*.bin'
  zhi --json plan --jobs jobs.yaml --shard 2/4 # one JSON object per job
  zhi -v plan summarize docs/                 # and how the token estimate is made";

const REPORT_EXAMPLES: &str = "Examples:
  zhi report                          # the latest run in ./zhi-output
  xdg-open \"$(zhi report -o out)\"     # write it and open it
  zhi report 20250101T0200 --out run.html
  ZHI_LANGUAGE=zh zhi report zhi-output/.zhi/runs/20250101T020000.000Z";

const MCP_EXAMPLES: &str = "Examples:
  claude mcp add zhi -- zhi mcp --root ~/invoices
  zhi mcp --root . --root /data/reports     # two folders the agent may use
  ZHI_MCP_TOKEN=$(openssl rand -hex 32) zhi mcp --listen 127.0.0.1:8808 --root .";

/// Flags of `zhi mcp`.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct McpArgs {
    /// A folder the agent may name inputs and output folders in, repeatable; relative paths
    /// the agent gives are taken from the first [default: the current folder]
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Serve over HTTP (MCP's streamable HTTP transport) at ADDR, a loopback address and port
    /// (`127.0.0.1:8808`; port 0 takes a free one), instead of stdin and stdout. Every request
    /// must carry `Authorization: Bearer TOKEN`, TOKEN taken from ZHI_MCP_TOKEN
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
}

const COMPLETIONS_EXAMPLES: &str = "Examples:
  zhi completions bash > ~/.local/share/bash-completion/completions/zhi
  zhi completions zsh > ~/.zfunc/_zhi        # with fpath+=(~/.zfunc) before compinit
  zhi completions fish > ~/.config/fish/completions/zhi.fish";

#[derive(Debug, Subcommand)]
pub(crate) enum BatchCommand {
    /// Each batch: its status at the provider (asked now when an API key is set), requests
    /// answered and failed, and whether its answers are collected
    Status {
        /// Output folder whose batches to show [default: zhi-output, env ZHI_OUTPUT_DIR]
        #[arg(short, long, value_name = "DIR")]
        output: Option<PathBuf>,

        /// API base the batches were submitted to [env ZHI_BASE_URL]
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
    },
    /// Cancel running batches (every one, or the one named); the next `zhi run` collects
    /// what they answered and does the rest again
    Cancel {
        /// A batch id (the provider's, or zhi's local one) [default: every running batch]
        batch: Option<String>,

        /// Output folder whose batches to cancel [default: zhi-output, env ZHI_OUTPUT_DIR]
        #[arg(short, long, value_name = "DIR")]
        output: Option<PathBuf>,

        /// API base the batches were submitted to [env ZHI_BASE_URL]
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum ManifestCommand {
    /// Summary of a run: counts, failures by kind, tokens, the slowest jobs, the shard
    Show {
        /// A run id in the output folder (a unique prefix will do), or the path of a run
        /// folder or an output folder [default: the latest run in the output folder]
        run: Option<String>,

        /// Output folder whose runs to look in [default: zhi-output, env ZHI_OUTPUT_DIR]
        #[arg(short, long, value_name = "DIR")]
        output: Option<PathBuf>,
    },
    /// Combine runs (shards) into one manifest: one record per job, a success beating a
    /// failure and a later record an earlier one; exit 1 if planned jobs were done by no run
    #[command(after_help = MERGE_EXAMPLES)]
    Merge {
        /// Run folders (.zhi/runs/<id>) or output folders (all of their runs)
        #[arg(required = true, value_name = "RUN")]
        runs: Vec<PathBuf>,

        /// Folder to write results.jsonl, results.csv and manifest.json into
        #[arg(short, long, value_name = "DIR", required = true)]
        output: PathBuf,
    },
}

const MERGE_EXAMPLES: &str = "Examples:
  zhi manifest merge shard-1/ shard-2/ shard-3/ -o merged/
  zhi manifest merge zhi-output/.zhi/runs/20250101T020000.000Z-shard-1-of-2 other/ -o merged/";

#[derive(Debug, Subcommand)]
pub(crate) enum SkillsCommand {
    /// List builtin and user skills (name, source, model, tools, description)
    List,
    /// Show one resolved skill, with its nested skills as a tree
    Show {
        /// Skill name
        name: String,
    },
    /// Validate skill files (default: every discovered skill); exit 2 if any is invalid
    Validate {
        /// Skill files to check; without any, every builtin and user skill is checked
        files: Vec<PathBuf>,
    },
    /// Write a commented skill template to ./.zhi/skills/NAME.yaml, or with `--format skill-md` an
    /// Agent Skill folder ./.zhi/skills/NAME/SKILL.md (never overwrites)
    New {
        /// Name of the new skill
        name: String,
        /// `yaml` (a zhi skill file) or `skill-md` (an Agent Skill folder with SKILL.md)
        #[arg(long, value_name = "FORMAT", default_value = "yaml", value_parser = ["yaml", "skill-md"])]
        format: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print the resolved settings and where each came from (the API key is redacted)
    Show,
}

const RUN_EXAMPLES: &str = "Examples:
  zhi run summarize reports/
  zhi run translate -a to=english 'docs/**/*.md'
  zhi run compare -a file2={dir}/{stem}.old{ext} contracts/
  zhi run --jobs jobs.yaml --shard 2/4
  zhi run summarize archive/ --submit batch   # half price; the same command later collects
  zhi run summarize docs/ --base-url http://127.0.0.1:8080/v1   # a local server, no key";

/// Flags of `run` and `plan`.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct RunArgs {
    /// The skill (see `zhi skills list`); omit with --jobs
    #[arg(value_name = "SKILL", required_unless_present = "jobs")]
    pub skill: Option<String>,

    /// Files, folders (walked recursively) and quoted globs
    #[arg(value_name = "INPUT")]
    pub inputs: Vec<String>,

    /// Run the jobs listed in a YAML jobs file (several skills and inputs in one run)
    #[arg(long, value_name = "FILE", conflicts_with = "skill")]
    pub jobs: Option<PathBuf>,

    /// Output folder [default: zhi-output, env ZHI_OUTPUT_DIR]
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,

    /// Skill argument KEY=VALUE, repeatable; file arguments may be templates relative to each
    /// input: {dir}, {stem}, {ext}, {name}
    #[arg(short, long = "arg", value_name = "KEY=VALUE")]
    pub args: Vec<String>,

    /// Override the skill's model
    #[arg(short, long, value_name = "NAME")]
    pub model: Option<String>,

    /// API base; requests go to <URL>/chat/completions [env ZHI_BASE_URL]
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Documents in flight: a number, or auto to adapt to rate limits [default: 4]
    #[arg(short = 'j', long, value_name = "N|auto", value_parser = crate::config::flag::concurrency)]
    pub concurrency: Option<crate::config::Concurrency>,

    /// Requests per minute, per process
    #[arg(long, value_name = "N", value_parser = crate::config::flag::per_minute)]
    pub rpm: Option<NonZeroU32>,

    /// Tokens per minute, per process
    #[arg(long, value_name = "N", value_parser = crate::config::flag::per_minute)]
    pub tpm: Option<NonZeroU32>,

    /// OCR engine for images and scanned pages
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub ocr: Option<crate::config::OcrChoice>,

    /// Skip matching paths (glob), repeatable
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,

    /// Include dot-files and dot-folders
    #[arg(long)]
    pub hidden: bool,

    /// Follow symbolic links to folders
    #[arg(long, short = 'L')]
    pub follow_links: bool,

    /// Do only shard M of N (hash:M/N, the default, or slice:M/N)
    #[arg(long, value_name = "M/N", value_parser = crate::plan::Shard::parse)]
    pub(crate) shard: Option<crate::plan::Shard>,

    /// Redo jobs even if cached
    #[arg(long)]
    pub force: bool,

    /// Read and hash every input, even those whose size and times are unchanged
    #[arg(long)]
    pub checksum: bool,

    /// At most N jobs
    #[arg(long, value_name = "N", value_parser = crate::flags::limit)]
    pub limit: Option<usize>,

    /// Stop scheduling after N failed jobs
    #[arg(long, value_name = "N", value_parser = crate::flags::max_failures)]
    pub max_failures: Option<u64>,

    /// Stop scheduling after the first failed job
    #[arg(long, conflicts_with = "max_failures")]
    pub fail_fast: bool,

    /// Stop scheduling when the tokens spent reach N
    #[arg(long, value_name = "N", value_parser = crate::flags::budget_tokens)]
    pub budget_tokens: Option<u64>,

    /// Stop scheduling when the jobs' cost (at the run's prices) reaches AMOUNT
    #[arg(long, value_name = "AMOUNT", value_parser = crate::flags::budget_cost)]
    pub budget_cost: Option<f64>,

    /// Ask a job's failing step once of a stronger model (repeatable, in order)
    #[arg(long, value_name = "MODEL[@BASE_URL]")]
    pub escalate: Vec<String>,

    /// Fail a job whose output is still doubted after the ladder, instead of keeping it
    #[arg(long)]
    pub strict: bool,

    /// Also answer a seeded random sample of N jobs (or N% of them) with the ladder's top
    /// rung, and report how often the cheap model agreed, per field
    #[arg(long, value_name = "N|N%", value_parser = crate::flags::audit)]
    pub audit: Option<crate::flags::SampleSize>,

    /// The seed of the --audit sample [default: 1]
    #[arg(long, value_name = "SEED", requires = "audit")]
    pub audit_seed: Option<u64>,

    /// With --audit: keep from the cheap model only the fields the sample shows agree with the
    /// top rung at least this share of the time (0-1, at --confidence); a skill with another
    /// field goes to the top rung for the rest of the run
    #[arg(long, value_name = "SHARE", requires = "audit", value_parser = crate::flags::target)]
    pub target: Option<f64>,

    /// With --audit: the confidence of its intervals and of --target's guarantee [default:
    /// 0.95]
    #[arg(long, value_name = "SHARE", requires = "audit", value_parser = crate::flags::confidence)]
    pub confidence: Option<f64>,

    /// Timeout of each API request, in seconds [default: 120]
    #[arg(long, value_name = "SECS", value_parser = crate::config::flag::timeout)]
    pub timeout: Option<Duration>,

    /// Give skills that list web_fetch that tool (private and local addresses are refused)
    #[arg(long)]
    pub allow_web: bool,

    /// When requests go: now (one request at a time, as they are made), or batch (the
    /// provider's Batch API at half the price, answered within 24 h; run the same command
    /// again to collect)
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = SubmitWhen::Now)]
    pub submit: SubmitWhen,

    /// With --submit batch, what to do with jobs whose skill runs the agent loop (a batch
    /// cannot carry it): refuse them (they fail with not_batchable), or run them now directly
    #[arg(long, value_enum, value_name = "WHAT", default_value_t = AgentJobs::Refuse)]
    pub agent_jobs: AgentJobs,

    /// Extraction skills: one table row per item of this array field (e.g. items), not one per
    /// document
    #[arg(long, value_name = "FIELD")]
    pub rows: Option<String>,

    /// Which jobs get a record in this run's results.jsonl and results.csv: those whose record
    /// says something new (changed), or every job, cached ones included (all)
    #[arg(long, value_enum, value_name = "WHICH", default_value_t = Records::Changed)]
    pub records: Records,
}

/// `--records`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum Records {
    /// Jobs that ran, failed or were skipped, and cached jobs whose stats changed.
    #[default]
    Changed,
    /// Every job of the run.
    All,
}

/// `--submit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum SubmitWhen {
    #[default]
    Now,
    Batch,
}

/// `--agent-jobs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum AgentJobs {
    Run,
    #[default]
    Refuse,
}
