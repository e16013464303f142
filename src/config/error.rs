//! Why settings could not be resolved: which file or variable or flag, which setting, and why.
//! Every one of these is a usage error (exit 2, nothing ran: docs/exit-codes.md#usage-errors); the
//! mapping to the exit code lives with the exit codes ([`crate::exit`]).

use super::value::Origin;
use crate::small_file::{ReadError, TooDeep};
use std::path::PathBuf;

/// A failure to resolve the settings of an invocation.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    /// A value a setting does not take, named by where it was given.
    #[error("{}", invalid(at, setting, problem))]
    Invalid {
        /// The file, variable or flag that gave the value.
        at: Origin,
        /// The setting, dotted inside a section (`retry.max_attempts`).
        setting: String,
        /// What is wrong, as a phrase that follows the setting's name.
        problem: String,
    },
    /// `--config FILE` names nothing.
    #[error("config file {} does not exist", path.display())]
    Missing { path: PathBuf },
    /// A settings file that is no readable regular file: a folder, a FIFO, a device, too large.
    #[error("config file {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: ReadError,
    },
    /// A symbolic link to nothing where a settings file is looked for.
    #[error(
        "config file {}: is a symbolic link to nothing; remove it or point it at a settings file",
        path.display()
    )]
    DanglingLink { path: PathBuf },
    /// A settings file that is not UTF-8 text.
    #[error("config file {}: not UTF-8 text ({source})", path.display())]
    NotUtf8 {
        path: PathBuf,
        #[source]
        source: std::string::FromUtf8Error,
    },
    /// YAML nested deeper than zhi parses.
    #[error("config file {}: {source}", path.display())]
    TooDeep {
        path: PathBuf,
        #[source]
        source: TooDeep,
    },
    /// A settings file that is not YAML.
    #[error("config file {}: {source}", path.display())]
    Syntax {
        path: PathBuf,
        #[source]
        source: serde_norway::Error,
    },
    /// YAML, but not a mapping of settings.
    #[error("config file {}: expected a mapping of settings", path.display())]
    NotAMapping { path: PathBuf },
    /// No API key, and the server is not on this machine.
    #[error(
        "no API key: set {env} (export {env}=your-key), or put `api_key:` in ~/.config/zhi/config.yaml (mode 0600); \
         a local server (--base-url http://127.0.0.1:PORT/v1) needs none"
    )]
    NoKey {
        /// The variable the key is read from.
        env: String,
    },
}

impl ConfigError {
    pub(super) fn invalid(at: Origin, setting: impl Into<String>, problem: String) -> Self {
        ConfigError::Invalid {
            at,
            setting: setting.into(),
            problem,
        }
    }
}

/// `config file F: rpm must be …`, `ZHI_LOG_LEVEL: `loud` is not …`, `--rpm must be …`.
fn invalid(at: &Origin, setting: &str, problem: &str) -> String {
    match at {
        Origin::File(f) => format!("config file {f}: {setting} {problem}"),
        Origin::Env(var) => format!("{var}: {problem}"),
        Origin::Flag(flag) => format!("{flag} {problem}"),
        Origin::Default => format!("{setting} {problem}"),
    }
}
