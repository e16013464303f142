//! What a person sees while a run goes: one progress bar on a terminal; plain lines every few
//! seconds elsewhere (CI, cron), with no control characters. Both show the same numbers: jobs
//! done of all, running (and for how long the longest-running job has run, so a long request
//! shows as time passing, not as a frozen line), failed, tokens (added as each answer arrives,
//! not when its job ends), pieces of long documents, and the time left.
//!
//! A request held up says so on the same line — tried again after a failure (`try 3/5 after
//! timeout`) or waiting out a rate limit — so a slow model is not a silent stall; a plain line
//! is printed as soon as a request is tried again.
//!
//! The time left is "—" until it can be estimated, and never comes from the bar's own
//! arithmetic (elapsed time over position), which counts cached jobs that took no time and
//! knows nothing of the jobs running side by side: [`super::eta`] estimates it from the
//! jobs that ran and ended, the running ones (a long document by its pieces) and the
//! parallelism the run kept up.

use super::eta;
use crate::i18n::{self, Lang};
use crate::llm::Delays;
use crate::llm::delays::HeldUp;
use crate::manifest::Status;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often a plain progress line is printed when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// Counters the workers update and the display reads.
#[derive(Debug)]
pub(crate) struct Counters {
    pub done: AtomicU64,
    pub failed: AtomicU64,
    pub in_flight: AtomicU64,
    /// Tokens of every answer so far; the agent adds each answer's as it arrives.
    pub tokens: Arc<AtomicU64>,
    /// Pieces of long documents: done and total.
    pub chunks_done: AtomicU64,
    pub chunks_total: AtomicU64,
    total: u64,
    clock: Mutex<Clock>,
    /// What the run's requests are held up by (its clients').
    delays: OnceLock<Arc<Delays>>,
}

/// The times the estimate of the time left is made from.
#[derive(Debug)]
struct Clock {
    first_job: Option<Instant>,
    running: HashMap<String, Running>,
    /// Jobs of the run that make requests (not cached, not failed while planning).
    to_run: u64,
    /// Jobs that started and ended.
    ran: u64,
    /// Seconds the ended jobs ran, summed.
    busy: f64,
    /// Durations of the latest jobs that ran to an end (succeeded or failed).
    recent: Vec<f64>,
}

#[derive(Debug)]
struct Running {
    started: Instant,
    pieces_total: u64,
    pieces_done: u64,
    pieces_done_here: u64,
}

impl Counters {
    pub(crate) fn new(total: u64) -> Counters {
        Counters {
            done: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            tokens: Arc::new(AtomicU64::new(0)),
            chunks_done: AtomicU64::new(0),
            chunks_total: AtomicU64::new(0),
            total,
            clock: Mutex::new(Clock {
                first_job: None,
                running: HashMap::new(),
                to_run: total,
                ran: 0,
                busy: 0.0,
                recent: Vec::new(),
            }),
            delays: OnceLock::new(),
        }
    }

    /// Say what the requests of these clients are held up by.
    pub(crate) fn watch(&self, delays: Arc<Delays>) {
        let _ = self.delays.set(delays);
    }

    fn clock(&self) -> std::sync::MutexGuard<'_, Clock> {
        self.clock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many of the jobs will run; the others (cached, failed while planning) end at once
    /// and are no work left.
    pub(crate) fn set_to_run(&self, n: u64) {
        self.clock().to_run = n;
    }

    /// `n` of the jobs counted to run turned out cached.
    pub(crate) fn fewer_to_run(&self, n: u64) {
        let mut clock = self.clock();
        clock.to_run = clock.to_run.saturating_sub(n);
    }

    /// A job takes its slot.
    pub(crate) fn job_started(&self, id: &str) {
        self.start_at(id, Instant::now());
    }

    fn start_at(&self, id: &str, now: Instant) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        let mut c = self.clock();
        c.first_job.get_or_insert(now);
        c.running.insert(
            id.to_string(),
            Running {
                started: now,
                pieces_total: 0,
                pieces_done: 0,
                pieces_done_here: 0,
            },
        );
    }

    /// A job has its record (every job, also the ones that never started).
    pub(crate) fn job_ended(&self, id: &str, status: Status) {
        self.end_at(id, status, Instant::now());
    }

    fn end_at(&self, id: &str, status: Status, now: Instant) {
        let mut c = self.clock();
        if let Some(r) = c.running.remove(id) {
            let took = now.saturating_duration_since(r.started).as_secs_f64();
            c.ran += 1;
            c.busy += took;
            // A job waiting for a batch or cancelled midway says nothing of how long a job
            // takes.
            if matches!(status, Status::Succeeded | Status::Failed) {
                c.recent.push(took);
                if c.recent.len() > 2 * eta::RECENT {
                    c.recent.drain(..eta::RECENT);
                }
            }
        }
        drop(c);
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    /// A long document's job has `n` more pieces to answer (its split, or a combining round).
    pub(crate) fn add_pieces(&self, id: &str, n: u64) {
        self.chunks_total.fetch_add(n, Ordering::Relaxed);
        if let Some(r) = self.clock().running.get_mut(id) {
            r.pieces_total += n;
        }
    }

    /// A piece is answered; `here`: by this run, not taken from an earlier run's checkpoint.
    pub(crate) fn piece_done(&self, id: &str, here: bool) {
        self.chunks_done.fetch_add(1, Ordering::Relaxed);
        if let Some(r) = self.clock().running.get_mut(id) {
            r.pieces_done += 1;
            r.pieces_done_here += u64::from(here);
        }
    }

    /// The job splits its document anew (smaller pieces): the pieces counted so far go.
    pub(crate) fn forget_pieces(&self, id: &str) {
        let mut c = self.clock();
        if let Some(r) = c.running.get_mut(id) {
            self.chunks_total
                .fetch_sub(r.pieces_total, Ordering::Relaxed);
            self.chunks_done.fetch_sub(r.pieces_done, Ordering::Relaxed);
            r.pieces_total = 0;
            r.pieces_done = 0;
            r.pieces_done_here = 0;
        }
    }

    /// The numbers as they are now.
    pub(crate) fn snapshot(&self) -> Snapshot {
        self.snapshot_at(Instant::now())
    }

    fn snapshot_at(&self, now: Instant) -> Snapshot {
        let c = self.clock();
        let running: Vec<eta::Running> = c
            .running
            .values()
            .map(|r| eta::Running {
                elapsed: now.saturating_duration_since(r.started).as_secs_f64(),
                pieces: (r.pieces_total > 0).then(|| eta::Pieces {
                    done_here: r.pieces_done_here,
                    left: r.pieces_total.saturating_sub(r.pieces_done),
                }),
            })
            .collect();
        let work = eta::Work {
            wall: c
                .first_job
                .map_or(0.0, |t| now.saturating_duration_since(t).as_secs_f64()),
            busy: c.busy,
            recent: &c.recent,
            running: &running,
            waiting: c.to_run.saturating_sub(c.ran + running.len() as u64),
        };
        let left = eta::seconds_left(&work);
        let longest = running
            .iter()
            .map(|r| r.elapsed)
            .fold(None, |m: Option<f64>, e| Some(m.map_or(e, |m| m.max(e))));
        drop(c);
        let chunks_total = self.chunks_total.load(Ordering::Relaxed);
        Snapshot {
            done: self.done.load(Ordering::Relaxed),
            total: self.total,
            running: self.in_flight.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            tokens: self.tokens.load(Ordering::Relaxed),
            pieces: (chunks_total > 0)
                .then(|| (self.chunks_done.load(Ordering::Relaxed), chunks_total)),
            // While anything is left, never "0s".
            left: left.map(|s| (s.round() as u64).max(u64::from(s > 0.0))),
            longest: longest.map(|s| s as u64),
            held: self.delays.get().map(|d| d.now()).unwrap_or_default(),
        }
    }
}

/// The numbers a person sees, at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub done: u64,
    pub total: u64,
    pub running: u64,
    pub failed: u64,
    pub tokens: u64,
    /// Pieces of long documents, done and total, once a document was split.
    pub pieces: Option<(u64, u64)>,
    /// Seconds left, when they can be estimated.
    pub left: Option<u64>,
    /// Whole seconds the longest-running job has run, while any runs.
    pub longest: Option<u64>,
    /// What requests are held up by.
    pub held: HeldUp,
}

impl Snapshot {
    /// What follows the bar: running (with the time the longest-running job has run, from
    /// its first second on), failed, tokens, pieces and the time left.
    pub(crate) fn status(&self, lang: Lang) -> String {
        let tokens = count(self.tokens);
        let left = self
            .left
            .map_or_else(|| "—".to_string(), |s| duration(s, lang));
        let longest = self
            .longest
            .filter(|&s| s > 0 && self.running > 0)
            .map(|s| running_for(s, lang));
        let pieces = self
            .pieces
            .map(|(d, t)| t!(in lang; ", pieces {done}/{total}", done = d, total = t))
            .unwrap_or_default();
        let longest = longest
            .map(|l| t!(in lang; " ({time})", time = l))
            .unwrap_or_default();
        t!(in lang;
            "{running} running{longest}{held}, {failed} failed, {tokens} tokens{pieces}, ETA {left}",
            running = self.running,
            longest = longest,
            held = self.held_note(lang),
            failed = self.failed,
            tokens = tokens,
            pieces = pieces,
            left = left
        )
    }

    /// What holds requests up, when something does: a rate limit being waited out (it holds
    /// every request), else the latest retry.
    fn held_note(&self, lang: Lang) -> String {
        let h = &self.held;
        if h.limited > 0 {
            return match h.pause_left {
                Some(s) => {
                    t!(in lang; ", waiting out a rate limit ({time})", time = duration(s, lang))
                }
                None => t!(in lang; ", waiting out a rate limit"),
            };
        }
        match h.latest {
            Some(r) => t!(in lang;
                ", try {attempt}/{of} after {kind}",
                attempt = r.attempt,
                of = r.of,
                kind = r.kind
            ),
            None => String::new(),
        }
    }

    /// The retry a plain line says, to tell a new one: said at once. (A rate limit's wait is
    /// said by the lines every few seconds: with `--rpm`, requests wait their turn one after
    /// another, and a line for each would flood a log.)
    fn retry_said(&self) -> Option<(u32, crate::error::ErrorKind)> {
        self.held.latest.map(|r| (r.attempt, r.kind))
    }

    /// One plain progress line (no bar, no control characters).
    pub(crate) fn line(&self, lang: Lang) -> String {
        t!(in lang;
            "zhi: {done}/{total} done, {status}",
            done = self.done,
            total = self.total,
            status = self.status(lang)
        )
    }
}

/// A token count in at most six columns, never shown larger than it is: `98765`, `123k`,
/// `12.3M`, `4.5G`.
fn count(n: u64) -> String {
    match n {
        0..100_000 => n.to_string(),
        100_000..1_000_000 => format!("{}k", n / 1_000),
        1_000_000..1_000_000_000 => format!("{}.{}M", n / 1_000_000, n / 100_000 % 10),
        _ => format!("{}.{}G", n / 1_000_000_000, n / 100_000_000 % 10),
    }
}

/// A duration without spaces: `8s`, `1m05s`, `2h03m`, `3d04h` (`8秒`, `1分05秒`, `2小时03分`,
/// `3天04小时`).
fn duration(secs: u64, lang: Lang) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match secs {
        0..60 => t!(in lang; "{s}s", s = s),
        60..3600 => t!(in lang; "{m}m{s}s", m = m, s = format!("{s:02}")),
        3600..86_400 => t!(in lang; "{h}h{m}m", h = h, m = format!("{m:02}")),
        _ => t!(in lang; "{d}d{h}h", d = d, h = format!("{h:02}")),
    }
}

/// How long a job has run, in at most six columns: to the second for its first hour (so the
/// display moves every second), then in whole hours, then days: `8s`, `4m05s`, `3h`, `2d`.
fn running_for(secs: u64, lang: Lang) -> String {
    match secs {
        0..3600 => duration(secs, lang),
        3600..86_400 => t!(in lang; "{h}h", h = secs / 3600),
        _ => t!(in lang; "{d}d", d = secs / 86_400),
    }
}

/// How progress is shown.
enum Display {
    Bar(ProgressBar),
    Lines {
        last: Mutex<Instant>,
        /// The retry the last line said.
        retry: Mutex<Option<(u32, crate::error::ErrorKind)>>,
    },
    Silent,
}

pub(crate) struct Progress {
    pub counters: Arc<Counters>,
    display: Display,
}

impl Progress {
    /// A bar when stderr is a terminal, lines otherwise; nothing with `--no-progress`/`-q`.
    pub(crate) fn new(total: u64, enabled: bool) -> Progress {
        let counters = Arc::new(Counters::new(total));
        let display = if !enabled {
            Display::Silent
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            // The words after the bar are worked out at each redraw, so the time left
            // counts down between events.
            let status = {
                let counters = counters.clone();
                move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = w.write_str(&counters.snapshot().status(i18n::lang()));
                }
            };
            bar.set_style(
                ProgressStyle::with_template("{spinner} {pos}/{len} {wide_bar} {status}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .with_key("status", status),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            Display::Bar(bar)
        } else {
            Display::Lines {
                last: Mutex::new(Instant::now()),
                retry: Mutex::new(None),
            }
        };
        Progress { counters, display }
    }

    /// Refresh after a change; plain lines at most every [`LINE_EVERY`].
    pub(crate) fn tick(&self) {
        match &self.display {
            Display::Bar(bar) => {
                bar.set_position(self.counters.done.load(Ordering::Relaxed));
            }
            Display::Lines { last, retry } => {
                let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
                let snapshot = self.counters.snapshot();
                let mut said = retry.lock().unwrap_or_else(|e| e.into_inner());
                let news = snapshot.retry_said();
                // A request tried again is said at once, not up to 5 s later.
                let newly = news.is_some() && news != *said;
                if last.elapsed() >= LINE_EVERY || newly {
                    *last = Instant::now();
                    *said = news;
                    eprintln!("{}", snapshot.line(i18n::lang()));
                }
            }
            Display::Silent => {}
        }
    }

    /// Log a line above the bar (or as a plain line).
    pub(crate) fn println(&self, line: &str) {
        let line = crate::sanitize::for_terminal(&crate::i18n::localize(line));
        let line = line.as_str();
        match &self.display {
            Display::Bar(bar) => bar.println(line),
            _ => eprintln!("{line}"),
        }
    }

    pub(crate) fn finish(&self) {
        if let Display::Bar(bar) = &self.display {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sanitize::columns;

    fn secs(n: f64) -> Duration {
        Duration::from_secs_f64(n)
    }

    #[test]
    fn no_time_left_until_a_job_that_ran_has_ended() {
        let c = Counters::new(20);
        let t0 = Instant::now();
        c.start_at("a", t0);
        c.start_at("b", t0);
        assert_eq!(c.snapshot_at(t0 + secs(0.9)).left, None);
        c.end_at("a", Status::Succeeded, t0 + secs(1.0));
        c.start_at("c", t0 + secs(1.0));
        c.end_at("b", Status::Succeeded, t0 + secs(1.0));
        c.start_at("d", t0 + secs(1.0));
        let s = c.snapshot_at(t0 + secs(1.0));
        assert_eq!((s.done, s.left), (2, Some(9)));
        assert_eq!(c.snapshot_at(t0 + secs(1.5)).left, Some(9)); // 8.5
        assert_eq!(c.snapshot_at(t0 + secs(1.9)).left, Some(8)); // 8.1
        // The last job, about to end: never "0s" while it runs.
        let last = Counters::new(2);
        last.start_at("a", t0);
        last.end_at("a", Status::Succeeded, t0 + secs(1.0));
        last.start_at("b", t0 + secs(1.0));
        assert_eq!(last.snapshot_at(t0 + secs(1.99)).left, Some(1));
    }

    #[test]
    fn cached_and_skipped_jobs_take_no_time_and_are_no_work_left() {
        // 10 jobs: 6 cached, one waiting for a batch; 3 run, one at a time, 2 s each.
        let c = Counters::new(10);
        c.set_to_run(4);
        let t0 = Instant::now();
        for i in 0..6 {
            c.end_at(&format!("cached{i}"), Status::Cached, t0);
        }
        // Nothing ran yet: the cached ones say nothing.
        assert_eq!(c.snapshot_at(t0).left, None);
        c.start_at("pending", t0);
        c.end_at("pending", Status::Skipped, t0 + secs(0.01));
        assert_eq!(c.snapshot_at(t0 + secs(0.01)).left, None);
        c.start_at("a", t0 + secs(0.01));
        c.end_at("a", Status::Succeeded, t0 + secs(2.01));
        c.start_at("b", t0 + secs(2.01));
        let s = c.snapshot_at(t0 + secs(2.51));
        // b needs 1.5 s more, c then 2 s.
        assert_eq!((s.done, s.left), (8, Some(4)));
    }

    #[test]
    fn a_long_request_shows_time_passing_and_pushes_the_time_left_out() {
        // Three documents, one slot: the first took 6 s, the second runs for minutes.
        let c = Counters::new(3);
        let t0 = Instant::now();
        c.start_at("a", t0);
        c.end_at("a", Status::Succeeded, t0 + secs(6.0));
        // As the scheduler does when a job leaves its slot.
        c.in_flight.fetch_sub(1, Ordering::Relaxed);
        c.start_at("b", t0 + secs(6.0));
        let mut last: Option<Snapshot> = None;
        for second in 1..=240u64 {
            let s = c.snapshot_at(t0 + secs(6.0 + second as f64));
            assert_eq!(s.longest, Some(second));
            if let Some(last) = &last {
                assert_ne!(s.status(Lang::En), last.status(Lang::En), "{second} s in");
                if second > 6 {
                    assert!(s.left >= last.left, "{second} s in: {s:?} after {last:?}");
                }
            }
            last = Some(s);
        }
        assert_eq!(
            last.unwrap().status(Lang::En),
            "1 running (4m00s), 0 failed, 0 tokens, ETA 3m14s"
        );
    }

    #[test]
    fn a_long_document_counts_its_pieces() {
        let c = Counters::new(1);
        let t0 = Instant::now();
        c.start_at("long", t0);
        c.add_pieces("long", 10);
        // Two pieces from an earlier run's checkpoints took no time.
        c.piece_done("long", false);
        c.piece_done("long", false);
        assert_eq!(c.snapshot_at(t0 + secs(1.0)).left, None);
        c.piece_done("long", true);
        c.piece_done("long", true);
        let s = c.snapshot_at(t0 + secs(4.0));
        // 2 s a piece, 6 to go.
        assert_eq!((s.pieces, s.left), (Some((4, 10)), Some(12)));
        // Split anew: the old pieces go.
        c.forget_pieces("long");
        c.add_pieces("long", 20);
        assert_eq!(c.snapshot_at(t0 + secs(4.0)).pieces, Some((0, 20)));
    }

    fn worst() -> Snapshot {
        Snapshot {
            done: 99_999,
            total: 99_999,
            running: 64,
            failed: 99_999,
            tokens: 999_999_999_999,
            pieces: Some((99_999, 99_999)),
            left: Some(99 * 86_400),
            longest: Some(99 * 86_400),
            held: HeldUp::default(),
        }
    }

    #[test]
    fn lines_fit_a_hundred_columns_in_both_languages() {
        for lang in [Lang::En, Lang::Zh] {
            let line = worst().line(lang);
            assert!(columns(&line) <= 100, "{} columns: {line}", columns(&line));
            assert!(!line.chars().any(char::is_control), "{line}");
            // The bar's line: spinner, done/total, at least eight columns of bar (every number
            // at its widest at once), the status.
            let bar_line = 2 + "99999/99999 ".len() + 8 + 1 + columns(&worst().status(lang));
            assert!(
                bar_line <= 100,
                "{bar_line} columns: {}",
                worst().status(lang)
            );
        }
    }

    #[test]
    fn lines_say_the_same_numbers_in_both_languages() {
        let s = Snapshot {
            done: 3,
            total: 20,
            running: 2,
            failed: 1,
            tokens: 1234,
            pieces: None,
            left: None,
            longest: None,
            held: HeldUp::default(),
        };
        assert_eq!(
            s.line(Lang::En),
            "zhi: 3/20 done, 2 running, 1 failed, 1234 tokens, ETA —"
        );
        assert_eq!(
            s.line(Lang::Zh),
            "zhi：完成 3/20，进行中 2，失败 1，令牌 1234，剩余 —"
        );
        let s = Snapshot {
            pieces: Some((4, 10)),
            left: Some(7384),
            longest: Some(65),
            ..s
        };
        assert_eq!(
            s.line(Lang::En),
            "zhi: 3/20 done, 2 running (1m05s), 1 failed, 1234 tokens, pieces 4/10, ETA 2h03m"
        );
        assert_eq!(
            s.line(Lang::Zh),
            "zhi：完成 3/20，进行中 2（1分05秒），失败 1，令牌 1234，分块 4/10，剩余 2小时03分"
        );
    }

    /// A slow model is visible: a request tried again says which attempt it is and what
    /// failed; a rate limit being waited out says so, and for how long when the server said.
    #[test]
    fn a_request_held_up_says_why_in_both_languages() {
        use crate::error::ErrorKind;
        use crate::llm::delays::Retry;
        let s = Snapshot {
            done: 0,
            total: 8,
            running: 1,
            failed: 0,
            tokens: 0,
            pieces: None,
            left: None,
            longest: Some(422),
            held: HeldUp {
                retrying: 1,
                latest: Some(Retry {
                    kind: ErrorKind::Timeout,
                    attempt: 3,
                    of: 5,
                }),
                ..HeldUp::default()
            },
        };
        assert_eq!(
            s.line(Lang::En),
            "zhi: 0/8 done, 1 running (7m02s), try 3/5 after timeout, 0 failed, 0 tokens, ETA —"
        );
        assert_eq!(
            s.line(Lang::Zh),
            "zhi：完成 0/8，进行中 1（7分02秒），尝试 3/5（timeout），失败 0，令牌 0，剩余 —"
        );
        let waiting = Snapshot {
            held: HeldUp {
                limited: 4,
                pause_left: Some(12),
                ..s.held
            },
            ..s.clone()
        };
        assert_eq!(
            waiting.status(Lang::En),
            "1 running (7m02s), waiting out a rate limit (12s), 0 failed, 0 tokens, ETA —"
        );
        assert_eq!(
            waiting.status(Lang::Zh),
            "进行中 1（7分02秒），等待限流结束（12秒），失败 0，令牌 0，剩余 —"
        );
        let rpm = Snapshot {
            held: HeldUp {
                limited: 1,
                ..HeldUp::default()
            },
            ..s.clone()
        };
        assert!(
            rpm.status(Lang::En)
                .contains(", waiting out a rate limit, ")
        );
        // A large run with a request held up still fits a hundred columns.
        for lang in [Lang::En, Lang::Zh] {
            let big = Snapshot {
                done: 999,
                total: 9_999,
                running: 16,
                failed: 12,
                tokens: 123_456,
                left: Some(7384),
                longest: Some(725),
                held: HeldUp {
                    retrying: 9,
                    latest: Some(Retry {
                        kind: ErrorKind::Timeout,
                        attempt: 3,
                        of: 5,
                    }),
                    ..HeldUp::default()
                },
                ..s.clone()
            };
            let line = big.line(lang);
            assert!(columns(&line) <= 100, "{} columns: {line}", columns(&line));
        }
    }

    #[test]
    fn counts_and_durations_are_short_and_never_larger() {
        assert_eq!(count(99_999), "99999");
        assert_eq!(count(123_999), "123k");
        assert_eq!(count(12_399_999), "12.3M");
        assert_eq!(count(4_560_000_000), "4.5G");
        assert_eq!(duration(0, Lang::En), "0s");
        assert_eq!(duration(59, Lang::En), "59s");
        assert_eq!(duration(60, Lang::En), "1m00s");
        assert_eq!(duration(3600, Lang::En), "1h00m");
        assert_eq!(duration(90_000, Lang::En), "1d01h");
        assert_eq!(duration(8, Lang::Zh), "8秒");
        assert_eq!(duration(90_000, Lang::Zh), "1天01小时");
    }
}
