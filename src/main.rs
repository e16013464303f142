//! The `zhi` binary: parse, set up logging, run, map the result to an exit code.

use clap::{CommandFactory, Parser};
use std::process::ExitCode;
use zhi::cli::Cli;

// A rerun over a large archive is allocation-bound (a record read, checked and written per
// job): mimalloc spends much less time there than the system allocator. Built without
// transparent huge pages, which would cost a small run 20 MB of memory it never uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // The isolated PDF worker (docs/documents.md#pdf): the same binary, re-executed by the
    // extractor.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new("__pdf-worker")) {
        return zhi::extract::pdf_worker_main(&std::env::args_os().skip(2).collect::<Vec<_>>());
    }
    reset_sigpipe();
    let cli = parse();
    init_logging(
        cli.global.verbose,
        cli.global.quiet,
        color_enabled(cli.global.color),
    );
    match zhi::commands::dispatch(cli) {
        Ok(exit) => exit.into(),
        Err(e) => {
            zhi::i18n::error(&e.message);
            e.exit.into()
        }
    }
}

/// The command line, or clap's error and exit. A mistyped subcommand that clap finds nothing
/// near (its measure misses a short name: `rnu`) gets zhi's own suggestion (`run`).
fn parse() -> Cli {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let mut err = match Cli::try_parse() {
        Ok(cli) => return cli,
        Err(e) => e,
    };
    if err.kind() == ErrorKind::InvalidSubcommand
        && err.get(ContextKind::SuggestedSubcommand).is_none()
        && let Some(ContextValue::String(typed)) = err.get(ContextKind::InvalidSubcommand)
    {
        let typed = typed.clone();
        let args: Vec<String> = std::env::args().skip(1).collect();
        // The command the mistyped word was given to: follow the words before it.
        let mut cmd = Cli::command();
        for word in args.iter().take_while(|a| **a != typed) {
            if let Some(sub) = cmd.find_subcommand(word) {
                cmd = sub.clone();
            }
        }
        let names = cmd.get_subcommands().map(|c| c.get_name());
        let near: Vec<String> = zhi::suggest::near(&typed, names)
            .into_iter()
            .map(str::to_string)
            .collect();
        if !near.is_empty() {
            err.insert(
                ContextKind::SuggestedSubcommand,
                ContextValue::Strings(near),
            );
        }
    }
    if let Some(text) = refused(&err) {
        zhi::i18n::error(&text);
        std::process::exit(2);
    }
    // In Chinese, clap's own words are replaced (help and version are printed as they are).
    if let Some(text) = zhi::i18n::clap_message(&err) {
        eprintln!("{text}");
        std::process::exit(2);
    }
    err.exit()
}

/// A flag's value its check refused (`zhi::flags::Refused`): said as a refused setting is,
/// after the flag's name (`--rpm must be a whole number of at least 1 …`), not in clap's words.
fn refused(err: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let problem = std::error::Error::source(err)?.downcast_ref::<zhi::flags::Refused>()?;
    // `--rpm <N>`: the flag, without its value's name.
    let Some(ContextValue::String(arg)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = arg.split_whitespace().next().unwrap_or(arg);
    Some(format!("{flag} {problem}"))
}

/// Logs go to stderr through `tracing`: `-v` info (turns, tool calls), `-vv` debug; otherwise
/// `ZHI_LOG_LEVEL` (or warnings only).
fn init_logging(verbose: u8, quiet: bool, ansi: bool) {
    use tracing_subscriber::field::MakeExt;
    use tracing_subscriber::prelude::*;
    let from_flags = match (quiet, verbose) {
        (true, _) => Some("error"),
        (false, 0) => None,
        (false, 1) => Some("info"),
        (false, 2) => Some("debug"),
        _ => Some("trace"),
    };
    // The MCP library logs each request `zhi mcp` refuses (a path outside the roots) as a
    // warning, though the refusal is the answer the client gets: said only from `-v` on.
    let filter_for = |level: &str| {
        let mcp = if matches!(level, "warn" | "error") {
            "error"
        } else {
            "warn"
        };
        tracing_subscriber::EnvFilter::try_new(format!("zhi={level},rmcp::service={mcp},warn"))
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"))
    };
    let level = from_flags
        .map(str::to_string)
        .or_else(|| {
            std::env::var("ZHI_LOG_LEVEL")
                .ok()
                .filter(|v| !v.is_empty())
        })
        .unwrap_or_else(|| "warn".into());
    let (filter, handle) = tracing_subscriber::reload::Layer::new(filter_for(&level));
    // Every field (a job's file name, a model's text, a server's message) is one line of
    // printable text: a name holding an escape sequence, a BEL or a newline can neither
    // drive the terminal nor forge a log line. Messages and field names are in zhi's
    // language; the values (file names, server text) are kept, but for an error's text.
    let fields = || {
        tracing_subscriber::fmt::format::debug_fn(|w, field, value| {
            let text = zhi::sanitize::one_line(&format!("{value:?}"));
            match field.name() {
                "message" => write!(w, "{}", zhi::i18n::localize(&text)),
                "error" => write!(
                    w,
                    "{}={}",
                    zhi::i18n::field_name("error"),
                    zhi::i18n::localize(&text)
                ),
                name => write!(w, "{}={text}", zhi::i18n::field_name(name)),
            }
        })
        .delimited(" ")
    };
    let chinese = zhi::i18n::lang() == zhi::i18n::Lang::Zh;
    let english = (!chinese).then(|| {
        tracing_subscriber::fmt::layer()
            .fmt_fields(fields())
            .with_writer(std::io::stderr)
            .with_target(false)
            .with_ansi(ansi)
            .without_time()
    });
    let chinese = chinese.then(|| {
        tracing_subscriber::fmt::layer()
            .fmt_fields(fields())
            .with_writer(std::io::stderr)
            .event_format(zhi::i18n::log::ChineseLines)
    });
    if tracing_subscriber::registry()
        .with(filter)
        .with(english)
        .with(chinese)
        .try_init()
        .is_ok()
        && from_flags.is_none()
        && std::env::var_os("ZHI_LOG_LEVEL").is_none()
    {
        // A config file's `log_level` is known only once the settings are resolved.
        zhi::commands::set_log_level_hook(Box::new(move |level: &str| {
            let _ = handle.reload(filter_for(level));
        }));
    }
}

/// A closed pipe (`zhi skills list | head`) ends the process quietly, as it does for other
/// command-line tools, instead of panicking in `println!`.
fn reset_sigpipe() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Colors only on a terminal, never with NO_COLOR, unless forced with `--color always`.
fn color_enabled(choice: zhi::cli::ColorChoice) -> bool {
    use std::io::IsTerminal;
    match choice {
        zhi::cli::ColorChoice::Always => true,
        zhi::cli::ColorChoice::Never => false,
        zhi::cli::ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stderr().is_terminal()
        }
    }
}
