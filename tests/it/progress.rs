//! What a person sees while a run goes (SPEC §13): the progress bar on a real terminal (a
//! tmux pane, read back while the run goes), and the plain lines written when stderr is not a
//! terminal.

use crate::support::{FakeApi, Reply};
use crate::testenv::{TestEnv, show, stderr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds since the epoch: the test and the shell in the pane share this clock.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A duration as the progress display writes it (`8s`, `1m05s`, `2h03m`, `3d04h`).
fn seconds(text: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let n: f64 = digits.parse().ok()?;
        digits.clear();
        total += n * match c {
            'd' => 86_400.0,
            'h' => 3600.0,
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
    }
    digits.is_empty().then_some(total)
}

/// A token count as the display writes it (`98765`, `123k`, `12.3M`).
fn tokens(text: &str) -> Option<f64> {
    let (num, scale) = match text.chars().last()? {
        'k' => (&text[..text.len() - 1], 1e3),
        'M' => (&text[..text.len() - 1], 1e6),
        'G' => (&text[..text.len() - 1], 1e9),
        _ => (text, 1.0),
    };
    Some(num.parse::<f64>().ok()? * scale)
}

/// What one look at the progress showed.
#[derive(Debug)]
struct Seen {
    at: f64,
    done: u64,
    total: u64,
    /// `None` for "—".
    eta: Option<f64>,
    tokens: f64,
}

/// The progress numbers in a line: `… 3/20 … 45 tokens, ETA 8s` (bar or plain line).
fn parse(line: &str, at: f64) -> Option<Seen> {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let eta_at = words.iter().position(|w| *w == "ETA")?;
    let eta_text = words.get(eta_at + 1)?;
    let eta = if *eta_text == "—" {
        None
    } else {
        Some(seconds(eta_text)?)
    };
    let tokens_at = words.iter().position(|w| *w == "tokens")?;
    let (done, total) = words.iter().find_map(|w| {
        let (d, t) = w.split_once('/')?;
        Some((d.parse().ok()?, t.parse().ok()?))
    })?;
    Some(Seen {
        at,
        done,
        total,
        eta,
        tokens: tokens(words[tokens_at.checked_sub(1)?])?,
    })
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

fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Single quotes for the shell.
fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// 20 documents, each answered after 1 s, two at a time, in a 120×30 terminal: the bar
/// shows no time left before a job has ended, then a time left within 50% of the time the
/// run actually took from there; its token count moves before the run ends.
#[test]
fn the_bar_on_a_terminal_tells_the_time_left() {
    if !tmux_available() {
        eprintln!("notice: tmux is not installed; the progress bar is not checked on a terminal");
        return;
    }
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
    let dir = tempfile::tempdir().unwrap();
    let end = dir.path().join("end");
    let script = dir.path().join("run.sh");
    std::fs::write(
        &script,
        format!(
            "cd {work}\n\
             env -i HOME={home} PATH=\"$PATH\" TERM=\"$TERM\" LANG=C.UTF-8 ZHI_LANGUAGE=en NO_COLOR=1 \
             {zhi} run summarize docs -j 2 --base-url {url} -o out\n\
             code=$?\n\
             date +%s.%N > {end}.tmp\n\
             echo \"$code\" >> {end}.tmp\n\
             mv {end}.tmp {end}\n\
             sleep 600\n",
            work = quote(&env.work),
            home = quote(&env.home),
            zhi = quote(Path::new(env!("CARGO_BIN_EXE_zhi"))),
            url = api.base_url(),
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
    let deadline = now() + 90.0;
    while !end.exists() {
        assert!(now() < deadline, "the run did not end within 90 s");
        looks.push((now(), tmux.capture()));
        std::thread::sleep(Duration::from_millis(500));
    }
    let ended = std::fs::read_to_string(&end).unwrap();
    let mut lines = ended.lines();
    let end_at: f64 = lines.next().unwrap().trim().parse().unwrap();
    let code = lines.next().unwrap().trim().to_string();
    let last = tmux.capture();
    assert_eq!(code, "0", "zhi failed:\n{last}");

    let seen: Vec<Seen> = looks
        .iter()
        .filter(|(at, _)| *at < end_at)
        .filter_map(|(at, screen)| screen.lines().find_map(|l| parse(l, *at)))
        .collect();
    eprintln!("  at     done  ETA    actual  error");
    for s in &seen {
        let actual = end_at - s.at;
        match s.eta {
            Some(eta) => eprintln!(
                "  {:5.1}s {:2}/{}  {:5.1}s {:5.1}s  {:+4.0}%  {} tokens",
                s.at - looks[0].0,
                s.done,
                s.total,
                eta,
                actual,
                (eta - actual) / actual * 100.0,
                s.tokens
            ),
            None => eprintln!(
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

/// Not on a terminal: plain lines every few seconds with the same numbers — the time left
/// and tokens that count each answer as it arrives — and no control characters.
#[test]
fn plain_lines_say_the_time_left_and_tokens_without_control_characters() {
    let env = TestEnv::new();
    env.write(
        ".zhi/skills/agent.yaml",
        "name: agent\ndescription: An agent-loop skill for tests\nsystem_prompt: Do what the document needs.\ntools: [file_read, file_write, file_list]\nmax_turns: 5\n",
    );
    for i in 0..3 {
        env.write(&format!("docs/d{i}.txt"), format!("Report number {i}.\n"));
    }
    // Two requests a job (15 tokens each): a file written at once, then the answer after
    // 3 s. A line that shows an odd multiple of 15 counted a request of a running job.
    let api = FakeApi::start(|req| {
        if req.has_tool_result() {
            Reply::delay(Duration::from_secs(3), Reply::text("Wrote notes.md."))
        } else {
            Reply::tool_calls(vec![(
                "file_write",
                serde_json::json!({"path": "notes.md", "content": "Notes on the report."}),
            )])
        }
    });
    let out = env
        .zhi()
        .args(["run", "agent", "docs", "-j", "1", "--base-url"])
        .arg(api.base_url())
        .args(["-o", "out"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let err = stderr(&out);
    assert!(
        !err.chars().any(|c| c.is_control() && c != '\n'),
        "control characters in: {err:?}"
    );
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("zhi: ")).collect();
    let seen: Vec<Seen> = lines.iter().filter_map(|l| parse(l, 0.0)).collect();
    assert!(!seen.is_empty(), "no progress line in:\n{err}");
    assert_eq!(seen.len(), lines.len(), "{lines:?}");
    assert!(
        seen.iter().any(|s| s.done > 0 && s.eta.is_some()),
        "no line with a time left: {lines:?}"
    );
    assert!(
        seen.iter()
            .any(|s| s.tokens as u64 % 30 == 15 && s.done < s.total),
        "no line counted a request of a running job: {lines:?}"
    );
}

/// The document a request is about (`Input document: …`).
fn doc_of(req: &crate::support::Recorded) -> String {
    req.messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(crate::support::fake_api::message_text)
        .find_map(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("Input document: ").map(str::to_string))
        })
        .unwrap_or_default()
}

/// The summary at the end names the failed jobs with their kind and reason (twenty of them, and
/// where the rest are), and says where the outputs, the records and the manifest are — in
/// English and in Chinese.
#[test]
fn the_summary_says_where_things_went_and_why_jobs_failed() {
    let env = TestEnv::new();
    for i in 0..23 {
        env.write(
            &format!("docs/d{i:02}.txt"),
            format!("Report number {i}.\n"),
        );
    }
    let api = FakeApi::start(|req| {
        if doc_of(req) == "docs/d22.txt" {
            Reply::text("Report twelve, in short.")
        } else {
            Reply::zhipu_error(400, "1301", "unsafe or sensitive content")
        }
    });
    for (lang, failed, more, outputs, records, manifest) in [
        (
            "en",
            "  failed jobs:",
            "    … and 2 more — see out/.zhi/runs/",
            "  outputs   out/",
            "  records   out/.zhi/runs/",
            "  manifest  out/.zhi/runs/",
        ),
        (
            "zh",
            "  失败的任务：",
            "    … 另有 2 个，见 out/.zhi/runs/",
            "  输出目录  out/",
            "  记录      out/.zhi/runs/",
            "  清单      out/.zhi/runs/",
        ),
    ] {
        let out = env
            .zhi()
            .env("ZHI_LANGUAGE", lang)
            .args(["run", "summarize", "docs", "--force", "--base-url"])
            .arg(api.base_url())
            .args(["-o", "out"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", show(&out));
        let err = stderr(&out);
        assert!(!err.chars().any(|c| c.is_control() && c != '\n'), "{err:?}");
        let lines: Vec<&str> = err.lines().collect();
        let at = |prefix: &str| {
            lines
                .iter()
                .position(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{err}"))
        };
        assert_eq!(lines[at(outputs)], outputs, "{err}");
        assert!(lines[at(records)].ends_with("/results.jsonl"), "{err}");
        let manifest = lines[at(manifest)].split_whitespace().last().unwrap();
        assert!(manifest.ends_with("/manifest.json"), "{err}");
        assert!(env.path(manifest).is_file(), "{manifest} is not there");
        let failed_at = at(failed);
        let named: Vec<&&str> = lines[failed_at..]
            .iter()
            .filter(|l| l.contains("content_filter"))
            .collect();
        assert_eq!(named.len(), 20, "{err}");
        for l in &named {
            assert!(l.contains("unsafe or sensitive content"), "{l}");
        }
        let rest = lines[at(more)];
        assert!(rest.ends_with("/results.jsonl"), "{rest}");
        let results = rest.split_whitespace().last().unwrap();
        assert!(env.path(results).is_file(), "{results} is not there");
    }
}
