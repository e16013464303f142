//! The run's background tasks: plain progress lines (also as soon as a request is held up),
//! signals, and rate-limit news for the slots.

use super::context::RunContext;
use super::ledger::Ledger;
use super::progress::Progress;
use super::stop::{self, Stop};
use std::sync::Arc;

/// The run's background tasks: plain progress lines, signals, rate-limit news for the slots.
pub(super) struct Watchers(Vec<tokio::task::JoinHandle<()>>);

impl Watchers {
    pub(super) fn start(
        ctx: &Arc<RunContext>,
        ledger: &Arc<Ledger>,
        progress: &Arc<Progress>,
    ) -> Watchers {
        // Plain progress lines keep coming while long jobs run (CI and cron logs).
        let ticker = {
            let progress = progress.clone();
            tokio::spawn(async move {
                let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
                loop {
                    every.tick().await;
                    progress.tick();
                }
            })
        };
        let signals = tokio::spawn(watch_signals(
            ledger.clone(),
            ctx.config.run.grace_period,
            progress.clone(),
        ));
        // A 429 on any request of the run (chat, OCR, batch) slows the pool.
        let rate_watch = {
            let mut rx = ctx.client.rate_limit_events();
            let slots = ctx.slots.clone();
            tokio::spawn(async move {
                while rx.changed().await.is_ok() {
                    slots.on_rate_limited();
                }
            })
        };
        // A request held up (retried, or waiting out a rate limit) is said on the progress
        // line; a retry, in plain lines at once.
        progress.counters.watch(ctx.client.delays().clone());
        let held_watch = {
            let mut rx = ctx.client.delays().news();
            let progress = progress.clone();
            tokio::spawn(async move {
                while rx.changed().await.is_ok() {
                    progress.tick();
                }
            })
        };
        Watchers(vec![ticker, signals, rate_watch, held_watch])
    }

    pub(super) fn stop(self) {
        self.0.iter().for_each(|t| t.abort());
    }
}

/// First SIGINT/SIGTERM: stop scheduling, let in-flight jobs finish within the grace period,
/// then cancel them. A second signal cancels at once.
async fn watch_signals(ledger: Arc<Ledger>, grace: std::time::Duration, progress: Arc<Progress>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    let first = tokio::select! {
        _ = int.recv() => libc::SIGINT,
        _ = term.recv() => libc::SIGTERM,
    };
    ledger.stop(Stop::Signal(first));
    crate::interrupt::interrupt();
    progress.println(&msg!(
        "{} received: no new jobs; waiting up to {}s for jobs in flight (signal again to cancel them now)",
        stop::signal_name(first),
        grace.as_secs()
    ));
    tokio::select! {
        _ = tokio::time::sleep(grace) => {}
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
    ledger.cancel_in_flight();
}
