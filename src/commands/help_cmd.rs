//! `zhi completions SHELL` and `zhi man`: what a shell and `man` need to know of zhi, made
//! from the command-line definitions themselves, so they never drift from `--help`.

use super::Ctx;
use crate::cli::Cli;
use crate::exit::{Exit, ExitError};
use clap::CommandFactory;
use std::path::Path;

/// The completion script for `shell`, on stdout.
pub(super) fn completions(shell: clap_complete::Shell) -> Result<Exit, ExitError> {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "zhi", &mut std::io::stdout().lock());
    Ok(Exit::Success)
}

/// The man page of `zhi` on stdout; with `out`, one page per command (`zhi.1`, `zhi-run.1`,
/// `zhi-skills-list.1`, …) written into that folder.
pub(super) fn man(ctx: &Ctx, out: Option<&Path>) -> Result<Exit, ExitError> {
    let cmd = Cli::command();
    let Some(dir) = out else {
        clap_mangen::Man::new(cmd)
            .render(&mut std::io::stdout().lock())
            .map_err(|e| ExitError::usage(msg!("cannot write the man page: {e}")))?;
        return Ok(Exit::Success);
    };
    let dir = ctx.cwd.join(dir);
    std::fs::create_dir_all(&dir)
        .map_err(|e| ExitError::usage(msg!("cannot create {}: {e}", dir.display())))?;
    clap_mangen::generate_to(cmd, &dir)
        .map_err(|e| ExitError::usage(msg!("cannot write the man pages: {e}")))?;
    if !ctx.global.quiet {
        eprintln!("wrote zhi.1 and a page per command into {}", dir.display());
    }
    Ok(Exit::Success)
}
