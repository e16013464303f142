//! Whether the process was told to stop. Set by the first SIGINT/SIGTERM of a run; long
//! blocking work (hashing inputs) looks at it between reads so that a signal ends the run
//! within a second, not when the work is done. The exit code it leads to is chosen in
//! [`crate::run`].

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Note that the process was told to stop.
pub(crate) fn interrupt() {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Whether the process was told to stop.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
