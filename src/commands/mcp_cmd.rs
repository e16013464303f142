//! `zhi mcp`: the settings and roots the server is started with; the server is `crate::mcp`.

use super::Ctx;
use crate::cli::McpArgs;
use crate::config::Overrides;
use crate::exit::{Exit, ExitError};

pub(super) fn run(ctx: &Ctx, a: McpArgs) -> Result<Exit, ExitError> {
    let roots =
        crate::mcp::Roots::new(&a.roots, &ctx.cwd).map_err(|e| ExitError::usage(e.to_string()))?;
    // The settings are those a child run in the first root reads.
    let in_root = Ctx {
        global: ctx.global.clone(),
        cwd: roots.first().to_path_buf(),
    };
    let config = in_root.config(Overrides::default())?;
    let exe = std::env::current_exe()
        .map_err(|e| ExitError::usage(msg!("cannot find zhi's own binary: {e}")))?;
    let opts = crate::mcp::Options {
        roots,
        exe,
        config_file: ctx.global.config.as_ref().map(|f| ctx.cwd.join(f)),
        default_output: config.run.output_dir.clone(),
        budget_tokens: config.run.mcp_budget_tokens,
        prices: config.models.prices.clone(),
    };
    crate::mcp::serve(opts).map_err(|e| ExitError::new(Exit::TempFail, msg!("zhi mcp: {e}")))?;
    Ok(Exit::Success)
}
