//! `zhi completions SHELL` and `zhi man`: what a shell and `man` need to know of zhi, made
//! from the command-line definitions themselves, so they never drift from `--help`. A man page
//! adds what `--help` leaves to docs/: EXIT STATUS and ENVIRONMENT (what cron and CI need),
//! and the examples under their own heading.

use super::Ctx;
use crate::exit::{Exit, ExitError};
use std::io::Write;
use std::path::Path;

/// The completion script for `shell`, on stdout.
pub(super) fn completions(shell: clap_complete::Shell) -> Result<Exit, ExitError> {
    let mut cmd = <crate::cli::Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "zhi", &mut std::io::stdout().lock());
    Ok(Exit::Success)
}

/// The man page of `zhi` on stdout; with `dir`, one page per command (`zhi.1`, `zhi-run.1`,
/// `zhi-skills-list.1`, …) written into that folder.
pub(super) fn man(ctx: &Ctx, dir: Option<&Path>) -> Result<Exit, ExitError> {
    let mut cmd =
        <crate::cli::Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    cmd.build();
    let Some(dir) = dir else {
        page(&cmd, &mut std::io::stdout().lock())
            .map_err(|e| ExitError::usage(msg!("cannot write the man page: {e}")))?;
        return Ok(Exit::Success);
    };
    let dir = ctx.cwd.join(dir);
    std::fs::create_dir_all(&dir)
        .map_err(|e| ExitError::usage(msg!("cannot create {}: {e}", dir.display())))?;
    write_pages(&cmd, &dir)
        .map_err(|e| ExitError::usage(msg!("cannot write the man pages: {e}")))?;
    if !ctx.global.quiet {
        eprintln!("wrote zhi.1 and a page per command into {}", dir.display());
    }
    Ok(Exit::Success)
}

/// `cmd`'s page and its subcommands' pages, into `dir`.
fn write_pages(cmd: &clap::Command, dir: &Path) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir)?;
    }
    let man = clap_mangen::Man::new(cmd.clone());
    let mut file = std::fs::File::create(dir.join(man.get_filename()))?;
    page(cmd, &mut file)?;
    file.flush()
}

/// One man page: clap's sections, then EXAMPLES (the help's examples), EXIT STATUS and
/// ENVIRONMENT.
fn page(cmd: &clap::Command, w: &mut dyn Write) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(w)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(w)?;
    }
    if let Some(after) = cmd.get_after_help() {
        let text = after.to_string();
        let text = text.strip_prefix("Examples:").unwrap_or(&text);
        writeln!(w, ".SH EXAMPLES\n.nf")?;
        for line in text.trim_matches('\n').lines() {
            writeln!(w, "{}", roff_text(line))?;
        }
        writeln!(w, ".fi")?;
    }
    writeln!(w, ".SH \"EXIT STATUS\"")?;
    for (code, meaning) in EXIT_STATUS {
        writeln!(w, ".TP\n\\fB{code}\\fR\n{}", roff_text(meaning))?;
    }
    writeln!(w, ".SH ENVIRONMENT")?;
    for (var, meaning) in ENVIRONMENT {
        writeln!(w, ".TP\n\\fB{}\\fR\n{}", roff_text(var), roff_text(meaning))?;
    }
    man.render_version_section(w)
}

/// Text for a roff line: backslashes and hyphens escaped, a leading dot or quote kept as text.
fn roff_text(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// docs/exit-codes.md#exit-codes, in short.
const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Every planned job succeeded, was cached, or was skipped by design.",
    ),
    (
        "1",
        "The run finished and at least one job failed; the other jobs' results are committed, and a rerun redoes only the failed ones.",
    ),
    (
        "2",
        "Usage or configuration error (a bad flag, skill, schema or setting, no API key); nothing ran. `zhi plan` exits 2 wherever `zhi run` would before sending anything.",
    ),
    (
        "3",
        "Aborted: an authentication or quota failure, a token or cost budget reached, or a batch the provider refused.",
    ),
    (
        "75",
        "Aborted on a condition worth retrying later (EX_TEMPFAIL): rate limits that outlasted every retry, the output folder locked by another run or not writable. Run again later; nothing is lost.",
    ),
    ("130", "Interrupted by SIGINT."),
    ("143", "Interrupted by SIGTERM."),
];

/// docs/config.md#environment-variables, in short.
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "ZHI_API_KEY",
        "The API key (or the variable the api_key_env setting names). Not needed for a local server.",
    ),
    (
        "ZHI_BASE_URL",
        "The API base; chat requests go to <base>/chat/completions.",
    ),
    ("ZHI_PROVIDER", "zhipu or openai."),
    ("ZHI_DEFAULT_MODEL", "The model of skills that name none."),
    ("ZHI_OUTPUT_DIR", "The output folder (default zhi-output)."),
    ("ZHI_LOG_LEVEL", "error, warn, info, debug, trace or off."),
    (
        "ZHI_LANGUAGE",
        "en or zh, for zhi's own messages; otherwise LC_ALL, LC_MESSAGES, LANG.",
    ),
    (
        "ZHI_SHARD_TOTAL",
        "With JOB_COMPLETION_INDEX, the shard; SLURM_ARRAY_TASK_ID and CI_NODE_INDEX/CI_NODE_TOTAL choose it too.",
    ),
    ("NO_COLOR", "No colours under --color auto."),
];
