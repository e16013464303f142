//! How long each check of a prose answer takes when the answer is hostile: what a looping
//! small model writes (counting out loud, its input again and again, its instructions again
//! and again), 250 KB, 1 MB and 2 MB of it, against a 100 KB source. Every check of
//! `zhi::judge::roster` meets every shape; each measurement runs in its own process (this
//! bench started again), is given `ZHI_BENCH_LIMIT` seconds (default 60) and is stopped
//! there, and reports the check's own CPU time and the process's peak memory. A second table
//! gives, for the 2 MB answers, how long each check goes on once its stop says so (asked
//! 50 ms in): the time a SIGTERM waits on it.
//!
//! `cargo bench --bench answer_checks`; `ZHI_BENCH_CHECKS=figures,echo` and
//! `ZHI_BENCH_SHAPES=counting` for some, `ZHI_BENCH_SIZES=250000,1000000` for other sizes.
//! docs/benchmarks.md gives the numbers measured, before and after the checks were made
//! linear.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A hostile answer of about the size given, over the source given.
type Build = fn(usize, &str) -> String;

/// The shapes of hostile answer, each with its builder.
const SHAPES: [(&str, Build); 7] = [
    ("counting", counting),
    ("lettered", lettered),
    ("looping", looping),
    ("echo", echo),
    ("paraphrase", paraphrase),
    ("commands", commands),
    ("backticks", backticks),
];

const SOURCE_BYTES: usize = 100_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--one") {
        return one(&args[at + 1..]);
    }
    let limit = Duration::from_secs_f64(env_or("ZHI_BENCH_LIMIT", 60.0));
    let sizes: Vec<usize> = std::env::var("ZHI_BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![250_000, 1_000_000, 2_000_000]);
    let wanted = |var: &str, name: &str| {
        std::env::var(var)
            .map(|v| v.split(',').any(|w| w.trim() == name))
            .unwrap_or(true)
    };
    let checks: Vec<&str> = zhi::judge::roster::all()
        .iter()
        .map(|c| c.name)
        .filter(|n| wanted("ZHI_BENCH_CHECKS", n))
        .collect();
    let shapes: Vec<&str> = SHAPES
        .iter()
        .map(|s| s.0)
        .filter(|n| wanted("ZHI_BENCH_SHAPES", n))
        .collect();
    let heads: Vec<String> = sizes.iter().map(|s| size_name(*s)).collect();
    println!(
        "answer checks: hostile answers over a {} KB source; CPU seconds of the check (peak MB of the process); limit {} s\n",
        SOURCE_BYTES / 1000,
        limit.as_secs()
    );
    println!(
        "| check | shape | {} | stops in (2 MB) |",
        heads.join(" | ")
    );
    println!("|---|---|{}---|", "---|".repeat(sizes.len()));
    for check in &checks {
        for shape in &shapes {
            let mut cells = Vec::new();
            let mut over = false;
            for size in &sizes {
                if over {
                    cells.push("–".to_string());
                    continue;
                }
                let cell = measure(check, shape, *size, None, limit);
                over = cell.starts_with('>');
                cells.push(cell);
            }
            let stops = if over {
                "–".to_string()
            } else {
                measure(check, shape, 2_000_000, Some(50), limit)
            };
            println!("| {check} | {shape} | {} | {stops} |", cells.join(" | "));
        }
    }
}

/// One measurement in a process of its own, stopped at `limit`: its cell.
fn measure(check: &str, shape: &str, size: usize, stop_ms: Option<u64>, limit: Duration) -> String {
    let exe = std::env::current_exe().expect("the bench's own path");
    let mut cmd = Command::new(exe);
    cmd.args(["--one", check, shape, &size.to_string()]);
    cmd.arg(stop_ms.map_or("-".to_string(), |m| m.to_string()));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the bench again");
    let t = Instant::now();
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return format!("> {} s", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("the measurement's output");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The measurement itself: `check shape size stop_ms`, one line on stdout.
fn one(args: &[String]) {
    let [check, shape, size, stop_ms] = args else {
        panic!("--one CHECK SHAPE SIZE STOP_MS");
    };
    let size: usize = size.parse().expect("a size");
    let checks = zhi::judge::roster::all();
    let check = checks
        .iter()
        .find(|c| c.name == check)
        .expect("a check of the roster");
    let build = SHAPES.iter().find(|s| s.0 == shape).expect("a shape").1;
    let source = source();
    let answer = build(size, &source);
    let stop_after = stop_ms.parse::<u64>().ok().map(Duration::from_millis);
    let t = Instant::now();
    let stop = || stop_after.is_some_and(|d| t.elapsed() >= d);
    let cpu = cpu_seconds();
    let found = check.run(&answer, &source, &stop);
    let cpu = cpu_seconds() - cpu;
    std::hint::black_box(found);
    match stop_after {
        Some(after) => {
            let late = t.elapsed().saturating_sub(after);
            println!("{} ms", late.as_millis());
        }
        None => println!("{cpu:.2} s ({} MB)", peak_mb()),
    }
}

/// ~100 KB of a report: dated figures, names, amounts in quarters, commands and paths, code
/// spans, headings; one quarter and one version written only at its end, and the
/// instructions quoted last.
fn source() -> String {
    let mut s = String::new();
    let mut i = 0u64;
    while s.len() < SOURCE_BYTES - 200 {
        let line = match i % 6 {
            0 => format!(
                "On {} March 2026 the team shipped release 2.{i} to {} customers in region {}.",
                i % 28 + 1,
                1_000 + i * 7,
                i % 9
            ),
            1 => format!(
                "Run `apt-get install pkg{i}` and then ls -la /srv/data{i} to check the {} files.",
                i % 50
            ),
            2 => format!(
                "Zhang Wei reported costs of {}.{:02} EUR against a budget of {} EUR for the year.",
                i * 13 % 5_000,
                i % 100,
                i * 17 % 9_000
            ),
            3 => format!("## Part {i}"),
            4 => "The outage was short, but the review asked why the alert fired so late and \
                  who should answer it at night."
                .to_string(),
            _ => format!(
                "Li Na will finish the reconciliation script for batch {i} before the next meeting."
            ),
        };
        s.push_str(&line);
        s.push('\n');
        i += 1;
    }
    s.push_str("The outlook for Q7 rests on version v9.\n");
    // A report on prompts quotes the one its summary was asked with: handing that back is
    // quoting the document, no echo, so every passage of it is looked up in the source.
    s.push_str("The prompt under review read: ");
    s.push_str(zhi::judge::roster::INSTRUCTIONS);
    s.push('\n');
    s
}

/// `1, 2, 3, …`: a small model counting out loud.
fn counting(size: usize, _: &str) -> String {
    let mut s = String::with_capacity(size + 16);
    let mut i = 1u64;
    while s.len() < size {
        s.push_str(&format!("{i}, "));
        i += 1;
    }
    s
}

/// `Q1 Q2 Q3 …`: figures tied to a letter, none of them in the source.
fn lettered(size: usize, _: &str) -> String {
    let mut s = String::with_capacity(size + 16);
    let mut i = 1u64;
    while s.len() < size {
        s.push_str(&format!("Q{i} "));
        i += 1;
    }
    s
}

/// The source handed back again and again.
fn looping(size: usize, source: &str) -> String {
    let mut s = String::with_capacity(size + source.len());
    while s.len() < size {
        s.push_str(source);
        s.push('\n');
    }
    s
}

/// The instructions handed back again and again (the source quotes them).
fn echo(size: usize, _: &str) -> String {
    let mut s = String::with_capacity(size + 512);
    while s.len() < size {
        s.push_str(zhi::judge::roster::INSTRUCTIONS);
        s.push('\n');
    }
    s
}

/// The source's lines with their middle word changed and each broken in two (at a third),
/// again and again: most of each sentence's pairs of words in the answer, in no one line of it.
fn paraphrase(size: usize, source: &str) -> String {
    let mut s = String::with_capacity(size + source.len());
    let mut round = 0u64;
    while s.len() < size {
        for line in source.lines() {
            let mut words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
            let middle = words.len() / 2;
            if let Some(w) = words.get_mut(middle) {
                *w = format!("w{round}");
            }
            let third = words.len() / 3;
            s.push_str(&words[..third].join(" "));
            s.push('\n');
            s.push_str(&words[third..].join(" "));
            s.push('\n');
        }
        round += 1;
    }
    s
}

/// A Chinese rendering full of kept commands and paths, each a phrase looked up in the
/// source.
fn commands(size: usize, _: &str) -> String {
    let mut s = String::with_capacity(size + 128);
    let mut i = 0u64;
    while s.len() < size {
        s.push_str(&format!(
            "运行 apt-get install pkg{i} 后，用 ls -la /srv/data{i} 检查文件，然后 run the check again。\n"
        ));
        i += 1;
    }
    s
}

/// One line of backtick runs of every length, none closed: each run opens a code span that
/// no later run of its length closes.
fn backticks(size: usize, _: &str) -> String {
    let mut s = String::with_capacity(size + 4096);
    let mut n = 1;
    while s.len() < size {
        s.push_str(&"`".repeat(n));
        s.push_str(" 运行 x ");
        n += 1;
    }
    s
}

fn size_name(size: usize) -> String {
    match size {
        s if s >= 1_000_000 && s % 1_000_000 == 0 => format!("{} MB", s / 1_000_000),
        s => format!("{} KB", s / 1000),
    }
}

fn env_or(var: &str, default: f64) -> f64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// This process's CPU time so far, in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: an all-zero timespec is a valid value to be overwritten.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and a valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// This process's peak resident memory, in MB.
fn peak_mb() -> i64 {
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to a rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss / 1024
}
