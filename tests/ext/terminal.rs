//! The progress bar on a real terminal: a run in a tmux pane, read back while it goes.

use crate::support::progress_parse::{Seen, parse};
use crate::support::testenv::TestEnv;
use crate::support::{FakeApi, Reply};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The tests of this module and what each needs.
pub fn tests() -> Vec<crate::Test> {
    vec![
        crate::Test::new(
            "terminal::the_bar_on_a_terminal_tells_the_time_left",
            &[crate::need::Need::Program("tmux")],
            the_bar_on_a_terminal_tells_the_time_left,
        ),
        crate::Test::new(
            "terminal::a_job_that_overruns_pushes_the_time_left_out_and_the_bar_keeps_moving",
            &[crate::need::Need::Program("tmux")],
            a_job_that_overruns_pushes_the_time_left_out_and_the_bar_keeps_moving,
        ),
    ]
}

/// Seconds since the epoch: the test and the shell in the pane share this clock.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The tmux server of one test, on its own socket; killed when the test ends, also when it
/// fails.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn command(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket).arg("-f").arg("/dev/null");
        // A test run from inside tmux must not talk to that tmux.
        c.env_remove("TMUX");
        c
    }

    fn capture(&self) -> String {
        let out = self
            .command()
            .args(["capture-pane", "-p", "-t", "zhi"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").output();
    }
}

/// Single quotes for the shell.
fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// What a run in a tmux pane showed: each look at the pane (when, what), when the run ended,
/// its exit code, and the pane after it ended.
struct Watched {
    looks: Vec<(f64, String)>,
    end_at: f64,
    code: String,
    last: String,
}

impl Watched {
    /// The progress numbers of every look before the run ended.
    fn seen(&self) -> Vec<Seen> {
        self.looks
            .iter()
            .filter(|(at, _)| *at < self.end_at)
            .filter_map(|(at, screen)| screen.lines().find_map(|l| parse(l, *at)))
            .collect()
    }
}

/// `zhi run summarize docs ARGS --base-url URL -o out` in a 120×30 tmux pane of its own,
/// looked at every half second until the run ends (at most `limit` seconds).
fn watch_run(env: &TestEnv, url: &str, args: &str, limit: f64) -> Watched {
    let dir = tempfile::tempdir().unwrap();
    let end = dir.path().join("end");
    let script = dir.path().join("run.sh");
    std::fs::write(
        &script,
        format!(
            "cd {work}\n\
             env -i HOME={home} PATH=\"$PATH\" TERM=\"$TERM\" LANG=C.UTF-8 ZHI_LANGUAGE=en NO_COLOR=1 \
             {zhi} run summarize docs {args} --base-url {url} -o out\n\
             code=$?\n\
             date +%s.%N > {end}.tmp\n\
             echo \"$code\" >> {end}.tmp\n\
             mv {end}.tmp {end}\n\
             sleep 600\n",
            work = quote(&env.work),
            home = quote(&env.home),
            zhi = quote(Path::new(env!("CARGO_BIN_EXE_zhi"))),
            end = quote(&end),
        ),
    )
    .unwrap();
    let tmux = Tmux {
        socket: dir.path().join("sock"),
    };
    let started = tmux
        .command()
        .args(["new-session", "-d", "-x", "120", "-y", "30", "-s", "zhi"])
        .arg(format!("sh {}", quote(&script)))
        .status()
        .expect("tmux new-session");
    assert!(started.success(), "tmux new-session failed");

    // Look at the pane every half second until the run has ended.
    let mut looks: Vec<(f64, String)> = Vec::new();
    let deadline = now() + limit;
    while !end.exists() {
        assert!(now() < deadline, "the run did not end within {limit} s");
        looks.push((now(), tmux.capture()));
        std::thread::sleep(Duration::from_millis(500));
    }
    let ended = std::fs::read_to_string(&end).unwrap();
    let mut lines = ended.lines();
    let end_at: f64 = lines.next().unwrap().trim().parse().unwrap();
    let code = lines.next().unwrap().trim().to_string();
    let last = tmux.capture();
    Watched {
        looks,
        end_at,
        code,
        last,
    }
}

/// 20 documents, each answered after 1 s, two at a time, in a 120×30 terminal: the bar
/// shows no time left before a job has ended, then a time left within 50% of the time the
/// run actually took from there; its token count moves before the run ends.
pub fn the_bar_on_a_terminal_tells_the_time_left() {
    let env = TestEnv::new();
    for i in 0..20 {
        env.write(
            &format!("docs/d{i:02}.txt"),
            format!("Report number {i}.\nSales rose in the north and fell in the south.\n"),
        );
    }
    let api = FakeApi::start(|_| {
        Reply::delay(
            Duration::from_secs(1),
            Reply::text("Sales rose in the north and fell in the south.").with_usage(100, 20),
        )
    });
    let watched = watch_run(&env, &api.base_url(), "-j 2", 90.0);
    let (looks, end_at, last) = (&watched.looks, watched.end_at, &watched.last);
    assert_eq!(watched.code, "0", "zhi failed:\n{last}");

    let seen = watched.seen();
    note!("  at     done  ETA    actual  error");
    for s in &seen {
        let actual = end_at - s.at;
        match s.eta {
            Some(eta) => note!(
                "  {:5.1}s {:2}/{}  {:5.1}s {:5.1}s  {:+4.0}%  {} tokens",
                s.at - looks[0].0,
                s.done,
                s.total,
                eta,
                actual,
                (eta - actual) / actual * 100.0,
                s.tokens
            ),
            None => note!(
                "  {:5.1}s {:2}/{}  —      {:5.1}s         {} tokens",
                s.at - looks[0].0,
                s.done,
                s.total,
                actual,
                s.tokens
            ),
        }
    }
    assert!(
        seen.len() >= 10,
        "the bar was seen {} times in a run of about 10 s:\n{last}",
        seen.len()
    );
    assert!(seen.iter().all(|s| s.total == 20), "{seen:?}");
    // No time left before a job has ended.
    for s in seen.iter().filter(|s| s.done == 0) {
        assert_eq!(s.eta, None, "a time left before any job ended: {s:?}");
    }
    // From the first job that ended on: within 50% of the time the run actually took from
    // there. The display counts whole seconds and is redrawn five times a second, so in the
    // last two seconds a second's difference is allowed.
    let after: Vec<&Seen> = seen.iter().filter(|s| s.done > 0).collect();
    assert!(after.len() >= 5, "{seen:?}");
    for s in &after {
        let actual = end_at - s.at;
        let eta = s
            .eta
            .unwrap_or_else(|| panic!("no time left after a job ended: {s:?}"));
        let allowed = (actual * 0.5).max(if actual < 2.0 { 1.0 } else { 0.0 });
        assert!(
            (eta - actual).abs() <= allowed,
            "ETA {eta}s with {actual:.1}s actually left: {s:?}"
        );
    }
    // Tokens move while the run goes, not only at its end.
    let first = seen.iter().find(|s| s.tokens > 0.0).expect("tokens shown");
    assert!(first.done < 20, "{first:?}");
    assert!(
        seen.windows(2).all(|w| w[0].tokens <= w[1].tokens),
        "{seen:?}"
    );
    assert!(seen.last().unwrap().tokens > first.tokens, "{seen:?}");
    // The bar is gone; the summary is there.
    assert!(last.contains("run "), "{last}");
    assert!(!last.contains("ETA"), "{last}");
}

/// Three documents, one at a time: the first answered in 1 s, the second only after 9 s. While
/// the second overruns the pace the first set, the time left grows instead of standing still,
/// and the bar changes every second: it shows how long the running job has run.
pub fn a_job_that_overruns_pushes_the_time_left_out_and_the_bar_keeps_moving() {
    let env = TestEnv::new();
    for i in 0..3 {
        env.write(
            &format!("docs/d{i}.txt"),
            format!("Report number {i}.\nSales rose in the north and fell in the south.\n"),
        );
    }
    let api = FakeApi::start(|req| {
        let slow = req.document_text().starts_with("Report number 1.");
        Reply::delay(
            Duration::from_secs(if slow { 9 } else { 1 }),
            Reply::text("Sales rose in the north and fell in the south.").with_usage(100, 20),
        )
    });
    let watched = watch_run(&env, &api.base_url(), "-j 1", 60.0);
    assert_eq!(watched.code, "0", "zhi failed:\n{}", watched.last);
    let seen = watched.seen();
    let start = watched.looks[0].0;
    note!("  at     done  running for  ETA");
    for s in &seen {
        note!(
            "  {:5.1}s {}/{}   {:>6}      {}",
            s.at - start,
            s.done,
            s.total,
            s.longest.map_or("—".into(), |l| format!("{l}s")),
            s.eta.map_or("—".into(), |e| format!("{e}s"))
        );
    }
    // The second job, from 2 s in (twice the pace the first set) to its end.
    let overrun: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.done == 1 && s.longest.is_some_and(|l| l >= 2.0))
        .collect();
    assert!(
        overrun.len() >= 10,
        "seen {} times: {seen:?}",
        overrun.len()
    );
    let etas: Vec<f64> = overrun
        .iter()
        .map(|s| s.eta.unwrap_or_else(|| panic!("no time left: {s:?}")))
        .collect();
    assert!(
        etas.windows(2).all(|w| w[1] >= w[0]),
        "the time left fell while the job overran: {etas:?}"
    );
    assert!(
        etas[etas.len() - 1] >= etas[0] + 3.0,
        "the time left did not grow: {etas:?}"
    );
    // Something moves every second: two looks 1.2 s apart or more never show the same time.
    for (i, a) in overrun.iter().enumerate() {
        for b in &overrun[i + 1..] {
            if b.at - a.at >= 1.2 {
                assert!(
                    b.longest > a.longest,
                    "the bar stood still: {a:?} then {b:?}"
                );
            }
        }
    }
}
