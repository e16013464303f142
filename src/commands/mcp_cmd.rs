//! `zhi mcp`: the settings and roots the server is started with; the server is `crate::mcp`.

use super::Ctx;
use crate::cli::McpArgs;
use crate::config::Overrides;
use crate::exit::{Exit, ExitError};

pub(super) fn run(ctx: &Ctx, a: McpArgs) -> Result<Exit, ExitError> {
    let listen = a.listen.map(listen_on).transpose()?;
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
    crate::mcp::serve(opts, listen)
        .map_err(|e| ExitError::new(Exit::TempFail, msg!("zhi mcp: {e}")))?;
    Ok(Exit::Success)
}

/// The least a bearer token given in ZHI_MCP_TOKEN may hold.
const MIN_TOKEN_CHARS: usize = 16;

/// `--listen ADDR`: a loopback address (plain HTTP carries the token in the clear), and the
/// token from ZHI_MCP_TOKEN; without it, a fresh one shown once on the terminal, never written
/// where a log would keep it.
fn listen_on(addr: std::net::SocketAddr) -> Result<crate::mcp::Listen, ExitError> {
    use std::io::IsTerminal;
    if !addr.ip().is_loopback() {
        let addr = addr.to_string();
        return Err(ExitError::usage(msg!(
            "--listen {addr}: zhi mcp serves plain HTTP, so only a loopback address is allowed (127.0.0.1 or ::1); for other machines, put a TLS proxy in front of it"
        )));
    }
    // An empty variable counts as not set, as every variable of zhi's does.
    let token = match std::env::var("ZHI_MCP_TOKEN").map(|t| t.trim().to_string()) {
        Ok(t) if t.is_empty() => Err(std::env::VarError::NotPresent),
        other => other,
    };
    let token = match token {
        Ok(t) if t.trim().chars().count() >= MIN_TOKEN_CHARS => t.trim().to_string(),
        Ok(t) => {
            let n = t.trim().chars().count();
            return Err(ExitError::usage(msg!(
                "ZHI_MCP_TOKEN holds {n} characters: a bearer token needs at least 16 (`openssl rand -hex 32` makes one)"
            )));
        }
        Err(_) if std::io::stderr().is_terminal() => {
            let t = crate::mcp::new_token()
                .map_err(|e| ExitError::new(Exit::TempFail, msg!("zhi mcp: {e}")))?;
            eprintln!(
                "{}",
                msg!("zhi mcp: no ZHI_MCP_TOKEN set; this server's token is {t}")
            );
            t
        }
        Err(_) => {
            return Err(ExitError::usage(msg!(
                "--listen needs a bearer token in ZHI_MCP_TOKEN (`openssl rand -hex 32` makes one); a token made up here would have to be printed where logs keep it"
            )));
        }
    };
    Ok(crate::mcp::Listen { addr, token })
}
