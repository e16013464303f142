//! One handler per subcommand: turn resolved settings into what the user sees. Handlers print;
//! the pipeline rooms never do.

mod batch_cmd;
mod config_cmd;
mod exit_of;
mod extract_cmd;
mod help_cmd;
mod manifest_cmd;
mod report_cmd;
mod run_cmd;
mod skills_cmd;
mod table;

use table::display_width;

use crate::cli::{Cli, Command, GlobalArgs};
use crate::config::{Config, Overrides};
use crate::exit::{Exit, ExitError};
use std::path::PathBuf;

/// What every handler gets: the global flags, the working folder and the environment.
pub struct Ctx {
    pub global: GlobalArgs,
    pub cwd: PathBuf,
}

impl Ctx {
    /// Settings for this invocation, with the given command-line overrides.
    pub fn config(&self, mut ov: Overrides) -> Result<Config, ExitError> {
        ov.config_file = self.global.config.clone();
        let c = Config::resolve(&ov, &|k| std::env::var(k).ok(), &self.cwd)?;
        crate::i18n::set_lang(match c.ui.language {
            crate::config::Language::Zh => crate::i18n::Lang::Zh,
            crate::config::Language::En => crate::i18n::Lang::En,
        });
        if let Some(hook) = LOG_LEVEL_HOOK.get()
            && c.origins.contains_key("log_level")
        {
            hook(&c.ui.log_level);
        }
        for w in &c.warnings {
            self.warn(w);
        }
        Ok(c)
    }

    /// Print a warning unless `-q`.
    pub fn warn(&self, msg: &str) {
        if !self.global.quiet {
            crate::i18n::warning(msg);
        }
    }
}

type LogLevelHook = Box<dyn Fn(&str) + Send + Sync>;
static LOG_LEVEL_HOOK: std::sync::OnceLock<LogLevelHook> = std::sync::OnceLock::new();

/// Lets the settings' `log_level` (from a config file) adjust logging once it is known; set by
/// `main` only when neither a flag nor `ZHI_LOG_LEVEL` chose a level.
pub fn set_log_level_hook(hook: LogLevelHook) {
    let _ = LOG_LEVEL_HOOK.set(hook);
}

/// Run the parsed command line.
pub fn dispatch(cli: Cli) -> Result<Exit, ExitError> {
    let cwd = std::env::current_dir()
        .map_err(|e| ExitError::usage(format!("cannot read the current folder: {e}")))?;
    let ctx = Ctx {
        global: cli.global,
        cwd,
    };
    match cli.command {
        Command::Run(a) => run_cmd::run(&ctx, a),
        Command::Plan(a) => run_cmd::plan(&ctx, a),
        Command::Extract { file, ocr } => extract_cmd::run(&ctx, &file, ocr),
        Command::Skills(cmd) => skills_cmd::run(&ctx, cmd),
        Command::Config(cmd) => config_cmd::run(&ctx, cmd),
        Command::Manifest(cmd) => manifest_cmd::run(&ctx, cmd),
        Command::Batch(cmd) => batch_cmd::run(&ctx, cmd),
        Command::Report { run, output, out } => report_cmd::run(&ctx, run.as_deref(), output, out),
        Command::Completions { shell } => help_cmd::completions(shell),
        Command::Man { out } => help_cmd::man(&ctx, out.as_deref()),
    }
}

/// Print rows as aligned columns (by display width: CJK text counts double), fitted to the
/// terminal (`COLUMNS` first; 100 when stdout is no terminal) by wrapping the widest columns.
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    for line in table::render(headers, rows, table::width()) {
        println!("{line}");
    }
}

/// Print a JSON value on stdout.
pub fn print_json(v: &serde_json::Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| "null".into())
    );
}

/// The kind of extraction a job's input needs and its estimated tokens.
pub fn estimate(job: &crate::plan::Job, output_dir: &std::path::Path) -> (&'static str, u64) {
    if job.is_dir {
        let bytes: u64 = crate::plan::cache::folder_files(&job.path, output_dir)
            .iter()
            .filter_map(|f| std::fs::metadata(job.path.join(f)).ok())
            .map(|m| m.len())
            .sum();
        return ("folder", bytes / 4);
    }
    let size = std::fs::metadata(&job.path).map(|m| m.len()).unwrap_or(0);
    match crate::extract::doc_kind(&job.path) {
        Some(crate::extract::DocKind::Pdf) => ("pdf", size / 10),
        Some(crate::extract::DocKind::Office) => ("office", size / 8),
        Some(crate::extract::DocKind::Image) => ("ocr", 1_000),
        Some(crate::extract::DocKind::Text) => match std::fs::read(&job.path) {
            Ok(bytes) => (
                "text",
                crate::llm::text_tokens(&String::from_utf8_lossy(&bytes)),
            ),
            Err(_) => ("text", 0),
        },
        None => ("unsupported", 0),
    }
}
