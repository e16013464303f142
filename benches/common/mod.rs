//! Helpers shared by the benches that drive programs: timing a child with its peak memory,
//! finding programs, the fetched real documents (`scripts/fetch-test-docs.sh`), and the
//! project's local model.

#![allow(dead_code)]

pub mod aclsum;
pub mod chrf;
pub mod copyright;
pub mod manpages;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One timed run of a program.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    pub wall: Duration,
    /// The child's own max RSS, in KiB (from `wait4`).
    pub maxrss_kib: i64,
    pub code: i32,
}

/// Run `cmd` to its end (stdin closed, stdout and stderr as configured by the caller; stdout
/// to /dev/null unless set) and measure it.
pub fn timed(mut cmd: Command) -> Timed {
    cmd.stdin(Stdio::null());
    let t = Instant::now();
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten by wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, which nothing else reaps (the `Child` is never
    // waited on), with valid pointers to a status and a rusage.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = t.elapsed();
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    drop(child);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    Timed {
        wall,
        maxrss_kib: usage.ru_maxrss,
        code,
    }
}

/// The best (shortest) of `runs` runs of the command `make` builds; every run must exit 0.
pub fn best_of(runs: usize, mut make: impl FnMut() -> Command) -> Timed {
    let mut best: Option<Timed> = None;
    for _ in 0..runs {
        let t = timed(make());
        assert_eq!(t.code, 0, "{:?} failed", make());
        if best.is_none_or(|b| t.wall < b.wall) {
            best = Some(t);
        }
    }
    best.expect("at least one run")
}

/// A program on PATH, or `None` with a note.
pub fn program(name: &str) -> Option<PathBuf> {
    let found = on_path(name);
    if found.is_none() {
        eprintln!("note: {name} is not installed; skipped");
    }
    found
}

/// A program on PATH, or `None`.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

pub fn zhi_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_zhi"))
}

/// `zhi` with a clean environment and an empty home (no user config, no API key).
pub fn zhi(home: &Path) -> Command {
    let mut c = Command::new(zhi_exe());
    c.env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Where the fetched documents live (`ZHI_TEST_DOCS`, else `target/test-docs`).
pub fn docs_dir() -> PathBuf {
    std::env::var_os("ZHI_TEST_DOCS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-docs"))
}

/// A fetched document; `None` with a note when `scripts/fetch-test-docs.sh` has not fetched
/// it (a bench never fetches or installs anything itself).
pub fn fetched(relative: &str) -> Option<PathBuf> {
    let path = docs_dir().join(relative);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("note: {relative} is not available (scripts/fetch-test-docs.sh); skipped");
        None
    }
}

/// Pages of a PDF according to `pdfinfo`.
pub fn pdf_pages(pdf: &Path) -> Option<u32> {
    let out = Command::new("pdfinfo").arg(pdf).output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .and_then(|n| n.trim().parse().ok())
}

/// `ZHI_BENCH_RUNS`, else `default`.
pub fn runs(default: usize) -> usize {
    std::env::var("ZHI_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// Print rows under headers, columns padded.
pub fn table(headers: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::from("| ");
        for (cell, w) in cells.iter().zip(&widths) {
            s.push_str(cell);
            s.push_str(&" ".repeat(w - cell.chars().count()));
            s.push_str(" | ");
        }
        println!("{}", s.trim_end());
    };
    line(headers.to_vec());
    println!(
        "|{}|",
        widths
            .iter()
            .map(|w| "-".repeat(w + 2))
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
}

/// The local model's base URL: `ZHI_BENCH_LLM_URL` when set (a running server, left running),
/// else the project's own llama.cpp server started on `port` (`examples/local-llm/start.sh`),
/// with the folder to give [`stop_local_model`] at the end.
pub fn local_model(port: u16) -> (String, Option<PathBuf>) {
    local_server("ZHI_BENCH_LLM_URL", None, port)
}

/// A local model's base URL: the variable `var` when set (a running server, left running),
/// else `examples/local-llm/start.sh [--model MODEL] PORT` started, with its folder.
pub fn local_server(var: &str, model: Option<&str>, port: u16) -> (String, Option<PathBuf>) {
    if let Ok(url) = std::env::var(var)
        && !url.is_empty()
    {
        return (url, None);
    }
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"))
        .join("zhi-local-llm");
    let out = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/local-llm/start.sh"))
        .args(model.map(|m| ["--model", m]).into_iter().flatten())
        .arg(port.to_string())
        .arg(&dir)
        .stderr(Stdio::inherit())
        .output()
        .expect("run examples/local-llm/start.sh");
    assert!(out.status.success(), "the local model did not start");
    let url = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_string();
    (url, Some(dir))
}

/// Stop the server [`local_model`] started (nothing when it used a running one).
pub fn stop_local_model(dir: Option<PathBuf>) {
    if let Some(dir) = dir {
        let _ = Command::new("bash")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/local-llm/stop.sh"))
            .arg(dir)
            .status();
    }
}

/// The records of an output folder's latest run (`results.jsonl`), in file order.
pub fn latest_records(outdir: &Path) -> Vec<serde_json::Value> {
    let Some(latest) = std::fs::read_dir(outdir.join(".zhi/runs"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .max()
    else {
        return Vec::new();
    };
    std::fs::read_to_string(latest.join("results.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// User + system time of every child process reaped so far.
pub fn children_cpu() -> Duration {
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_CHILDREN with a valid pointer to a rusage we own.
    let r = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(r, 0, "getrusage: {}", std::io::Error::last_os_error());
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// One HTTP request read off a bench's local responder connection, body included: its
/// request line, or `None` when the connection ended.
pub fn read_request(reader: &mut std::io::BufReader<std::net::TcpStream>) -> Option<String> {
    use std::io::{BufRead, Read};
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).ok()? == 0 {
        return None;
    }
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(request_line)
}
