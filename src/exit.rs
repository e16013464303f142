//! Exit codes: the public contract of docs/exit-codes.md#exit-codes. Scripts, CI and cron
//! branch on these numbers, so they never change meaning.

/// How a `zhi` invocation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Every planned job succeeded, was cached or skipped by design.
    Success = 0,
    /// The run finished and at least one job failed.
    JobsFailed = 1,
    /// Usage or configuration error; nothing ran.
    Usage = 2,
    /// Aborted: authentication or quota failure, or budget reached.
    Aborted = 3,
    /// Aborted on a condition worth retrying later (rate limits, output folder locked).
    TempFail = 75,
    /// Interrupted by SIGINT.
    Interrupted = 130,
    /// Interrupted by SIGTERM.
    Terminated = 143,
}

impl Exit {
    pub fn code(self) -> u8 {
        self as u8
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e.code())
    }
}

/// An error that carries the exit code it should end the process with. The typed errors of
/// the modules (settings, plan, run) become one in `commands::exit_of`, the one place that
/// chooses their exit codes (docs/exit-codes.md).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ExitError {
    pub exit: Exit,
    pub message: String,
    /// The typed error it was made from, kept for its `source()` chain.
    #[source]
    cause: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl ExitError {
    pub(crate) fn new(exit: Exit, message: impl Into<String>) -> Self {
        ExitError {
            exit,
            message: message.into(),
            cause: None,
        }
    }

    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new(Exit::Usage, message)
    }

    /// `error` as the process's end with `exit`; its message is the error's.
    pub(crate) fn from_error(
        exit: Exit,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        ExitError {
            exit,
            message: error.to_string(),
            cause: Some(Box::new(error)),
        }
    }
}
