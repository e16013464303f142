//! Why a run could not start, or could not begin its records. Each kind has its exit code,
//! chosen where every typed error becomes one ([`crate::exit`]): another run holding the
//! output folder is worth trying again later (75), a Batch API that will not answer aborts
//! (3), the rest are usage errors (2) — nothing ran.

use crate::plan::PlanError;
use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;

/// A run that could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    /// The model API client could not be built (a base URL it cannot use).
    #[error("{0}")]
    Client(String),
    /// The output folder cannot be made or used.
    #[error("cannot use output folder {}: {source}", path.display())]
    OutputFolder {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A file or folder the run needs cannot be created (its records, its lock).
    #[error("cannot create {}: {source}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The lock was made and cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    WriteLock {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Another run holds the output folder.
    #[error(
        "output folder {} is in use by another zhi run (pid {pid}{on}, started {started}, run {run}); try again when it ends{hint}",
        folder.display(),
        on = on_host(host),
        hint = if host.is_some() { other_machine() } else { String::new() }
    )]
    InUse {
        folder: PathBuf,
        pid: u32,
        /// The holder's machine, when it is not this one.
        host: Option<String>,
        started: String,
        run: String,
    },
    /// A lock file zhi cannot judge (a folder, a FIFO, a link to nothing).
    #[error(
        "lock file {} {what}; zhi cannot tell whether another run holds it: remove it and run again",
        path.display()
    )]
    LockUnjudgeable { path: PathBuf, what: String },
    /// The lock changed hands again and again while this run tried to take it.
    #[error("could not take the lock {}", path.display())]
    LockContended { path: PathBuf },
    /// The provider's Batch API would not say how the output folder's batches are.
    #[error("the Batch API refused to say how the batches are: {0}")]
    BatchStatus(String),
    /// Reading the inputs for their cache status failed (a worker that panicked).
    #[error("planning failed: {0}")]
    Planning(String),
    /// The server described itself in a way no run can hold (a context window smaller than a
    /// prompt and an answer).
    #[error("{0}")]
    Server(String),
    /// `--budget-cost` with models the run may ask that have no price: what they spend could
    /// not be counted, so the budget could not be kept (docs/escalation.md#cost).
    #[error(
        "--budget-cost cannot be kept: no price for {} (a model this run may ask), so what it spends could not be counted; set a price for each under `prices:` in zhi.yaml, or budget tokens with --budget-tokens",
        .models.join(", ")
    )]
    CostBudgetUnpriced { models: Vec<String> },
    /// `--budget-cost` over models priced in different currencies: one amount cannot add them.
    #[error(
        "--budget-cost cannot be kept: this run's models are priced in more than one currency ({}), and one amount cannot add them up; price them in one currency under `prices:` in zhi.yaml, or budget tokens with --budget-tokens",
        currencies_list(.currencies)
    )]
    CostBudgetCurrencies {
        /// Each currency and the models priced in it.
        currencies: BTreeMap<String, Vec<String>>,
    },
    /// With the server's budgets, the plan does not hold (a token budget no request fits).
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// `CNY: glm-4-flash, glm-4-plus; USD: gpt-4o`.
fn currencies_list(currencies: &BTreeMap<String, Vec<String>>) -> String {
    currencies
        .iter()
        .map(|(c, models)| format!("{c}: {}", models.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What `InUse` adds when the lock is another machine's.
fn other_machine() -> String {
    msg!(" (a lock of another machine is never taken over: remove it by hand if that run is gone)")
}

fn on_host(host: &Option<String>) -> String {
    host.as_ref()
        .map(|h| format!(" on {h}"))
        .unwrap_or_default()
}
