//! What a person sees while a run goes: one progress bar on a terminal; plain lines every few
//! seconds elsewhere (CI, cron), with no control characters.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Counters the workers update and the display reads.
#[derive(Debug, Default)]
pub struct Counters {
    pub done: AtomicU64,
    pub failed: AtomicU64,
    pub in_flight: AtomicU64,
    pub tokens: AtomicU64,
    /// Pieces of long documents: done and total.
    pub chunks_done: AtomicU64,
    pub chunks_total: AtomicU64,
}

/// How progress is shown.
pub enum Display {
    Bar(ProgressBar),
    Lines { last: std::sync::Mutex<Instant> },
    Silent,
}

pub struct Progress {
    pub counters: Arc<Counters>,
    total: u64,
    display: Display,
    started: Instant,
}

impl Progress {
    /// A bar when stderr is a terminal, lines otherwise; nothing with `--no-progress`/`-q`.
    pub fn new(total: u64, enabled: bool) -> Progress {
        let display = if !enabled {
            Display::Silent
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg} ETA {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            Display::Bar(bar)
        } else {
            Display::Lines {
                last: std::sync::Mutex::new(Instant::now()),
            }
        };
        Progress {
            counters: Arc::new(Counters::default()),
            total,
            display,
            started: Instant::now(),
        }
    }

    fn message(&self) -> String {
        let c = &self.counters;
        let chunks = match c.chunks_total.load(Ordering::Relaxed) {
            0 => String::new(),
            t => format!(", chunks {}/{t}", c.chunks_done.load(Ordering::Relaxed)),
        };
        format!(
            "{} in flight, {} failed, {} tokens{chunks}",
            c.in_flight.load(Ordering::Relaxed),
            c.failed.load(Ordering::Relaxed),
            c.tokens.load(Ordering::Relaxed)
        )
    }

    /// Refresh after a change; plain lines at most every 5 seconds.
    pub fn tick(&self) {
        match &self.display {
            Display::Bar(bar) => {
                bar.set_position(self.counters.done.load(Ordering::Relaxed));
                bar.set_message(self.message());
            }
            Display::Lines { last } => {
                let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
                if last.elapsed() >= Duration::from_secs(5) {
                    *last = Instant::now();
                    eprintln!("{}", self.line());
                }
            }
            Display::Silent => {}
        }
    }

    fn line(&self) -> String {
        let done = self.counters.done.load(Ordering::Relaxed);
        let eta = if done > 0 && done < self.total {
            let per = self.started.elapsed().as_secs_f64() / done as f64;
            format!(
                ", ETA {}s",
                (per * (self.total - done) as f64).round() as u64
            )
        } else {
            String::new()
        };
        format!("zhi: {done}/{} done, {}{eta}", self.total, self.message())
    }

    /// Log a line above the bar (or as a plain line), in zhi's language.
    pub fn println(&self, line: &str) {
        let line = crate::i18n::localize(line);
        let line = line.as_ref();
        match &self.display {
            Display::Bar(bar) => bar.println(line),
            _ => eprintln!("{line}"),
        }
    }

    pub fn finish(&self) {
        if let Display::Bar(bar) = &self.display {
            bar.finish_and_clear();
        }
    }
}
