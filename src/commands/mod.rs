//! One handler per subcommand: turn resolved settings into what the user sees. Handlers print;
//! the pipeline rooms never do.

mod batch_cmd;
mod config_cmd;
mod exit_of;
mod extract_cmd;
mod help_cmd;
mod manifest_cmd;
mod mcp_cmd;
mod prune_cmd;
mod report_cmd;
mod run_cmd;
mod skills_cmd;
mod status_cmd;
mod table;

use table::display_width;

use crate::cli::{Cli, Command, GlobalArgs};
use crate::config::{Config, Overrides};
use crate::exit::{Exit, ExitError};
use std::path::PathBuf;

/// What every handler gets: the global flags, the working folder and the environment.
pub(crate) struct Ctx {
    pub global: GlobalArgs,
    pub cwd: PathBuf,
}

impl Ctx {
    /// Settings for this invocation, with the given command-line overrides.
    pub(crate) fn config(&self, mut ov: Overrides) -> Result<Config, ExitError> {
        ov.config_file = self.global.config.clone();
        let c = Config::resolve(&ov, &|k| std::env::var(k).ok(), &self.cwd)?;
        crate::i18n::set_lang(c.ui.language);
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

    /// The key's warnings (docs/config.md#the-api-key), said by the commands that send it.
    pub(crate) fn warn_key(&self, c: &Config) {
        for w in &c.key_warnings {
            self.warn(w);
        }
    }

    /// The settings files a later command may read besides any folder's `zhi.yaml`: the
    /// user's (when the settings say where it is), and the one `--config` names. No output
    /// folder, report or merge may take their place.
    pub(crate) fn settings_files(&self, config: Option<&Config>) -> Vec<PathBuf> {
        let user = config
            .and_then(|c| c.config_dir.as_deref())
            .map(crate::config::user_file);
        let given = self.global.config.as_deref().map(|f| self.cwd.join(f));
        user.into_iter().chain(given).collect()
    }

    /// Print a warning unless `-q`.
    pub(crate) fn warn(&self, msg: &str) {
        if !self.global.quiet {
            crate::i18n::warning(msg);
        }
    }
}

/// The output folder a command about its runs means (`OUT`, else the settings'), which must
/// hold runs: `zhi status` and `zhi prune`.
pub(super) fn output_folder_with_runs(
    ctx: &Ctx,
    out: Option<PathBuf>,
) -> Result<PathBuf, ExitError> {
    let config = ctx.config(Overrides {
        output_dir: out,
        ..Overrides::default()
    })?;
    let out = ctx.cwd.join(&config.run.output_dir);
    if !out.join(".zhi").join("runs").is_dir() {
        return Err(ExitError::usage(msg!(
            "{} has no runs yet (they are kept in .zhi/runs/)",
            out.display()
        )));
    }
    Ok(out)
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
        .map_err(|e| ExitError::usage(msg!("cannot read the current folder: {e}")))?;
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
        Command::Status { out, csv } => status_cmd::run(&ctx, out, csv),
        Command::Prune(a) => prune_cmd::run(&ctx, a),
        Command::Mcp(a) => mcp_cmd::run(&ctx, a),
        Command::Completions { shell } => help_cmd::completions(shell),
        Command::Man { dir } => help_cmd::man(&ctx, dir.as_deref()),
    }
}

/// Print rows as aligned columns (by display width: CJK text counts double), fitted to the
/// terminal (`COLUMNS` first; not fitted when stdout is no terminal) by wrapping the widest
/// columns at words.
pub(crate) fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    let fits = vec![table::Fit::Wrap; headers.len()];
    print_table_fitted(headers, &fits, rows, &[]);
}

/// [`print_table`] with how each column gives way ([`table::Fit`]) and a note under a row.
pub(crate) fn print_table_fitted(
    headers: &[&str],
    fits: &[table::Fit],
    rows: &[Vec<String>],
    notes: &[Option<String>],
) {
    // Cells come from servers and files (batch ids and statuses, skill names): one printable
    // line each.
    let clean = |c: &String| crate::sanitize::one_line(c);
    let rows: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(clean).collect()).collect();
    let notes: Vec<Option<String>> = notes.iter().map(|n| n.as_ref().map(clean)).collect();
    for line in table::render_fitted(headers, fits, &rows, &notes, table::width()) {
        println!("{line}");
    }
}

/// Print a JSON value on stdout.
pub(crate) fn print_json(v: &serde_json::Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| "null".into())
    );
}

/// Tokens a page without a text layer (a scan, a photo) is counted for: about what OCR reads
/// off a full page of print.
pub(crate) const OCR_PAGE_TOKENS: u64 = 1_000;

/// What `zhi plan` says a job's input will cost (docs/cli.md#zhi-plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Estimate {
    /// How the document is read (`text`, `pdf`, `office`, `ocr`, `folder`, `unsupported`).
    pub extraction: &'static str,
    /// Estimated input tokens.
    pub tokens: u64,
    /// What the figure comes from.
    pub from: EstimatedFrom,
}

/// What an estimate was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum EstimatedFrom {
    /// The text a run will send, counted (a PDF's or office file's text layer, a text file).
    Text,
    /// The text layer, and [`OCR_PAGE_TOKENS`] for each page without one.
    TextAndPages,
    /// The file's size, when it could not be read here: a rough figure.
    Size,
    /// What the run that read it counted: the document is unchanged since (its stat says
    /// so), and is not read again.
    Record,
}

impl EstimatedFrom {
    /// The name `zhi --json plan` gives it.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// How a job's input is read, from its name alone (`text`, `pdf`, `office`, `ocr`, `folder`,
/// `unsupported`), as [`estimate`] names it.
pub(crate) fn extraction_of(job: &crate::plan::Job) -> &'static str {
    use crate::extract::DocKind;
    if job.is_dir {
        return "folder";
    }
    match crate::extract::doc_kind(&job.path) {
        Some(DocKind::Pdf) => "pdf",
        Some(DocKind::Office) => "office",
        Some(DocKind::Image) => "ocr",
        Some(DocKind::Text) => "text",
        None => "unsupported",
    }
}

/// The kind of extraction a job's input needs and its estimated tokens: text counted where it
/// can be read cheaply — text files, a PDF's text layer (no OCR), an office file's text —
/// pages without text at [`OCR_PAGE_TOKENS`] each; the file's size only when it cannot be read.
pub(crate) fn estimate(job: &crate::plan::Job, output_dir: &std::path::Path) -> Estimate {
    use crate::extract::DocKind;
    let counted = |extraction, tokens| Estimate {
        extraction,
        tokens,
        from: EstimatedFrom::Text,
    };
    if job.is_dir {
        let bytes: u64 = crate::plan::cache::folder_files(&job.path, output_dir)
            .iter()
            .filter_map(|f| std::fs::metadata(job.path.join(f)).ok())
            .map(|m| m.len())
            .sum();
        return Estimate {
            extraction: "folder",
            tokens: bytes / 4,
            from: EstimatedFrom::Size,
        };
    }
    let kind = crate::extract::doc_kind(&job.path);
    let (extraction, per_byte) = match kind {
        Some(DocKind::Pdf) => ("pdf", 10),
        Some(DocKind::Office) => ("office", 8),
        Some(DocKind::Image) => ("ocr", 0),
        Some(DocKind::Text) => {
            // Read as it is, without the encoding detection of a run: planning a large tree
            // reads every text file.
            return match std::fs::read(&job.path) {
                Ok(bytes) => counted(
                    "text",
                    crate::llm::text_tokens(&String::from_utf8_lossy(&bytes)),
                ),
                Err(_) => counted("text", 0),
            };
        }
        None => return counted("unsupported", 0),
    };
    let opts = crate::extract::ExtractOptions {
        ocr: crate::extract::OcrChoice::Off,
        ..crate::extract::ExtractOptions::default()
    };
    match crate::extract::text_layer(&job.path, &opts) {
        Ok(layer) => Estimate {
            extraction,
            tokens: crate::llm::text_tokens(&layer.text)
                + u64::from(layer.pages_without_text) * OCR_PAGE_TOKENS,
            from: if layer.pages_without_text == 0 {
                EstimatedFrom::Text
            } else {
                EstimatedFrom::TextAndPages
            },
        },
        Err(_) => {
            let size = std::fs::metadata(&job.path).map(|m| m.len()).unwrap_or(0);
            Estimate {
                extraction,
                tokens: size.checked_div(per_byte).unwrap_or(OCR_PAGE_TOKENS),
                from: EstimatedFrom::Size,
            }
        }
    }
}
