//! Where the typed errors of settings, plans and runs become exit codes (docs/exit-codes.md):
//! the commands meet them all, and nothing below the commands needs to know a process's exit.

use crate::config::ConfigError;
use crate::exit::{Exit, ExitError};
use crate::plan::PlanError;
use crate::run::RunError;

/// Settings that cannot be resolved: a usage error, nothing ran.
impl From<ConfigError> for ExitError {
    fn from(e: ConfigError) -> Self {
        ExitError::from_error(Exit::Usage, e)
    }
}

/// A plan that cannot be made: a usage error, nothing ran.
impl From<PlanError> for ExitError {
    fn from(e: PlanError) -> Self {
        let exit = match e {
            PlanError::Spill(_) => Exit::TempFail,
            _ => Exit::Usage,
        };
        ExitError::from_error(exit, e)
    }
}

/// A run that could not start: another run holding the folder is worth trying again (75), a
/// Batch API that will not say how its batches are aborts (3), the rest are usage errors (2).
impl From<RunError> for ExitError {
    fn from(e: RunError) -> Self {
        let exit = match &e {
            RunError::InUse { .. } | RunError::LockContended { .. } => Exit::TempFail,
            RunError::BatchStatus(_) => Exit::Aborted,
            RunError::Plan(_)
            | RunError::Client(_)
            | RunError::OutputFolder { .. }
            | RunError::Create { .. }
            | RunError::WriteLock { .. }
            | RunError::LockUnjudgeable { .. }
            | RunError::Planning(_)
            | RunError::Server(_)
            | RunError::CostBudgetUnpriced { .. }
            | RunError::CostBudgetCurrencies { .. } => Exit::Usage,
        };
        ExitError::from_error(exit, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_error_ends_with_its_exit_and_its_message() {
        let in_use = RunError::InUse {
            folder: "out".into(),
            pid: 42,
            host: None,
            started: "2025-01-01T00:00:00Z".into(),
            run: "r1".into(),
        };
        let e = ExitError::from(in_use);
        assert_eq!(e.exit, Exit::TempFail);
        assert!(
            e.message.starts_with("output folder out is in use"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("never taken over"), "{}", e.message);
        assert_eq!(
            ExitError::from(RunError::BatchStatus("HTTP 401".into())).exit,
            Exit::Aborted
        );
        let create = RunError::Create {
            path: "out/.zhi/runs/r1".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        let e = ExitError::from(create);
        assert_eq!(e.exit, Exit::Usage);
        assert!(
            e.message.starts_with("cannot create out/.zhi/runs/r1: "),
            "{}",
            e.message
        );
        // The typed error stays reachable as the cause.
        assert!(std::error::Error::source(&e).is_some());
    }
}
