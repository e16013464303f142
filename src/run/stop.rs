//! Why a run stopped scheduling, what that makes of the jobs it never started, and how the run
//! ends (its status, exit code and reason). One `match` each, so a new reason to stop cannot be
//! half handled.

use crate::error::ErrorKind;
use crate::exit::Exit;
use crate::manifest::{Counts, RunStatus, Status};

/// Why scheduling stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stop {
    /// Auth or quota: exit 3, in-flight jobs cancelled.
    Abort(ErrorKind, String),
    /// Rate limits outlasted every retry: exit 75.
    RateLimited(String),
    /// `--budget-tokens` reached: exit 3, the rest skipped.
    Budget(u64),
    /// `--budget-cost` reached (the amount as given): exit 3, the rest skipped.
    CostBudget(String),
    /// `--max-failures`/`--fail-fast`: exit 1, the rest skipped.
    MaxFailures(u64),
    /// SIGINT (130) or SIGTERM (143).
    Signal(i32),
    /// The output folder cannot be written (disk full, quota, read-only), or a job's record
    /// could not be written: exit 75, the rest cancelled — every further job would be work
    /// thrown away.
    OutputUnwritable(String),
}

impl Stop {
    /// A job the run never started: skipped for limits, cancelled for aborts and signals.
    pub(super) fn not_run(stop: Option<&Stop>) -> (Status, ErrorKind, String) {
        let cancelled = |message: String| (Status::Cancelled, ErrorKind::Cancelled, message);
        let skipped = |message: String| (Status::Skipped, ErrorKind::Skipped, message);
        match stop {
            Some(Stop::Budget(n)) => skipped(format!("token budget of {n} reached")),
            Some(Stop::CostBudget(n)) => skipped(format!("cost budget of {n} reached")),
            Some(Stop::MaxFailures(n)) => {
                skipped(format!("{n} job(s) failed; --max-failures reached"))
            }
            Some(Stop::Abort(k, m)) => cancelled(format!("run aborted ({k}): {m}")),
            Some(Stop::RateLimited(m)) => cancelled(format!("run aborted: {m}")),
            Some(Stop::Signal(sig)) => cancelled(format!("interrupted by {}", signal_name(*sig))),
            Some(Stop::OutputUnwritable(m)) => cancelled(format!("not run: {m}")),
            None => skipped(msg!("not scheduled")),
        }
    }

    /// How the run ends, from why it stopped (if it did) and what its jobs came to.
    pub(super) fn outcome(
        stop: Option<&Stop>,
        counts: &Counts,
    ) -> (RunStatus, Exit, Option<String>) {
        match stop {
            // A budget reached by the very last job stopped nothing: the run completed.
            Some(Stop::Budget(_) | Stop::CostBudget(_))
                if counts.skipped == 0 && counts.cancelled == 0 =>
            {
                Stop::outcome(None, counts)
            }
            Some(Stop::CostBudget(n)) => (
                RunStatus::Aborted,
                Exit::Aborted,
                Some(format!("cost budget of {n} reached")),
            ),
            Some(Stop::Abort(k, m)) => {
                (RunStatus::Aborted, Exit::Aborted, Some(format!("{k}: {m}")))
            }
            Some(Stop::Budget(n)) => (
                RunStatus::Aborted,
                Exit::Aborted,
                Some(format!("token budget of {n} reached")),
            ),
            Some(Stop::RateLimited(m) | Stop::OutputUnwritable(m)) => {
                (RunStatus::Aborted, Exit::TempFail, Some(m.clone()))
            }
            Some(Stop::Signal(sig)) => (
                RunStatus::Interrupted,
                if *sig == libc::SIGTERM {
                    Exit::Terminated
                } else {
                    Exit::Interrupted
                },
                Some(format!("interrupted by {}", signal_name(*sig))),
            ),
            Some(Stop::MaxFailures(n)) => (
                RunStatus::CompletedWithFailures,
                Exit::JobsFailed,
                Some(format!("stopped after {n} failed job(s)")),
            ),
            None if counts.failed > 0 || counts.cancelled > 0 => {
                (RunStatus::CompletedWithFailures, Exit::JobsFailed, None)
            }
            None => (RunStatus::Completed, Exit::Success, None),
        }
    }
}

pub(super) fn signal_name(sig: i32) -> &'static str {
    if sig == libc::SIGTERM {
        "SIGTERM"
    } else {
        "SIGINT"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(failed: u64, skipped: u64) -> Counts {
        Counts {
            planned: 3,
            failed,
            skipped,
            ..Counts::default()
        }
    }

    #[test]
    fn a_budget_reached_by_the_last_job_completes_the_run() {
        let (status, exit, reason) = Stop::outcome(Some(&Stop::Budget(100)), &counts(0, 0));
        assert_eq!(
            (status, exit, reason),
            (RunStatus::Completed, Exit::Success, None)
        );
        let (status, exit, _) = Stop::outcome(Some(&Stop::Budget(100)), &counts(0, 2));
        assert_eq!((status, exit), (RunStatus::Aborted, Exit::Aborted));
    }

    #[test]
    fn each_stop_has_its_exit_code() {
        let c = counts(1, 0);
        let exit = |s: Stop| Stop::outcome(Some(&s), &c).1;
        assert_eq!(
            exit(Stop::Abort(ErrorKind::Auth, "k".into())),
            Exit::Aborted
        );
        assert_eq!(exit(Stop::RateLimited("r".into())), Exit::TempFail);
        assert_eq!(exit(Stop::OutputUnwritable("full".into())), Exit::TempFail);
        assert_eq!(exit(Stop::Signal(libc::SIGTERM)), Exit::Terminated);
        assert_eq!(exit(Stop::Signal(libc::SIGINT)), Exit::Interrupted);
        assert_eq!(exit(Stop::MaxFailures(1)), Exit::JobsFailed);
        assert_eq!(Stop::outcome(None, &c).1, Exit::JobsFailed);
        assert_eq!(Stop::outcome(None, &counts(0, 0)).1, Exit::Success);
    }

    #[test]
    fn jobs_not_run_are_skipped_for_limits_and_cancelled_for_aborts() {
        assert_eq!(Stop::not_run(Some(&Stop::Budget(5))).0, Status::Skipped);
        assert_eq!(
            Stop::not_run(Some(&Stop::MaxFailures(2))).0,
            Status::Skipped
        );
        assert_eq!(
            Stop::not_run(Some(&Stop::Signal(libc::SIGINT))).0,
            Status::Cancelled
        );
        let (_, kind, message) = Stop::not_run(Some(&Stop::OutputUnwritable("disk full".into())));
        assert_eq!(kind, ErrorKind::Cancelled);
        assert_eq!(message, "not run: disk full");
    }
}
