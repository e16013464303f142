//! What a nightly or CI rerun costs when nothing changed: 10,000 small documents already
//! processed, all `cached`. Reports the rerun's wall time and peak memory (max RSS), beside
//! `find DOCS -type f -printf '%s %T@\n'` over the same tree (a walk and a stat per file:
//! what a rerun that trusts the stat cache cannot do with less).
//!
//! Each rerun also reports the bytes it wrote under `.zhi/` (the first rerun records the
//! outputs' stats once they can be trusted; later ones write no record), and the bench ends
//! with `zhi prune --keep-last 1`: the size of `.zhi/` before and after, and a rerun after it.
//!
//! `cargo bench --bench rerun_cached`; `ZHI_BENCH_DOCS=N` for another count,
//! `ZHI_BENCH_DOC_BYTES=N` for documents of about N bytes (default ~200),
//! `ZHI_BENCH_RERUNS=N` for another number of timed reruns (default 3). The first pass runs
//! against a tiny local HTTP responder that answers every request with a fixed completion;
//! the timed reruns must make no request at all, and the bench checks that.
//!
//! `ZHI_BENCH_KEEP=DIR` keeps the documents and the first pass's output folder in `DIR` and,
//! when `DIR` already holds a finished first pass of the same count and size, reruns over it
//! without making it again (a million documents take about 40 minutes to make and process
//! once).

mod common;

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

const RERUNS: usize = 3;

fn main() {
    let docs: usize = std::env::var("ZHI_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let doc_bytes: usize = std::env::var("ZHI_BENCH_DOC_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let reruns: usize = std::env::var("ZHI_BENCH_RERUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(RERUNS);
    let temp;
    let root = match std::env::var_os("ZHI_BENCH_KEEP") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => {
            temp = tempfile::tempdir().expect("temp dir");
            temp.path().to_path_buf()
        }
    };
    let work = root.join("work");
    let home = root.join("home");
    // What a kept world was made of, written once its first pass has ended.
    let made_marker = root.join("first-pass-done");
    let made_as = format!("{docs} {doc_bytes}\n");
    let reuse = std::fs::read_to_string(&made_marker).is_ok_and(|m| m == made_as);
    if !reuse {
        let _ = std::fs::remove_dir_all(&work);
        let _ = std::fs::remove_file(&made_marker);
    }
    std::fs::create_dir_all(&home).unwrap();
    let t = Instant::now();
    if !reuse {
        make_docs(&work.join("docs"), docs, doc_bytes);
    }
    let made_in = t.elapsed();
    // A file changed less than 2 s before it is hashed is hashed again on the next run (the
    // racy-stat rule): the documents are let age past that, so the reruns measure the cache.
    std::thread::sleep(std::time::Duration::from_millis(2100));

    let (base_url, requests) = fake_api();
    let zhi = |extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_zhi"));
        c.current_dir(&work)
            .env_clear()
            .env("HOME", &home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .args([
                "run",
                "summarize",
                "docs",
                "-o",
                "out",
                "-q",
                "--no-progress",
            ])
            .args(["--base-url", &base_url])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        c
    };

    let t = Instant::now();
    let mut first_rss_kib = 0;
    if !reuse {
        let run = common::timed(zhi(&["-j", "32"]));
        assert_eq!(run.code, 0, "first run failed");
        first_rss_kib = run.maxrss_kib;
    }
    let first = t.elapsed();
    let made = requests.load(Ordering::SeqCst);
    // One request per document; a long one is split into pieces, a request each.
    assert!(
        reuse || made >= docs,
        "the first run makes a request per document"
    );
    if !reuse && std::env::var_os("ZHI_BENCH_KEEP").is_some() {
        std::fs::write(&made_marker, &made_as).expect("write the first pass's marker");
    }
    let size = std::fs::metadata(work.join("docs/batch-000/doc-00000.txt"))
        .map(|m| m.len())
        .unwrap_or(0);
    println!(
        "rerun_cached: {docs} documents of {size} bytes (made in {:.1} s)",
        made_in.as_secs_f64()
    );
    if reuse {
        println!("  first run: kept from an earlier bench in ZHI_BENCH_KEEP");
    } else {
        println!(
            "  first run ({made} requests to a local fake): {:.2} s, {:.1} MiB max RSS",
            first.as_secs_f64(),
            first_rss_kib as f64 / 1024.0
        );
    }

    let mut walls = Vec::new();
    let mut peak_kib = 0;
    for i in 1..=reruns {
        let before = bytes_under(&work.join("out/.zhi"));
        let common::Timed {
            wall,
            maxrss_kib,
            code,
        } = common::timed(zhi(&[]));
        assert_eq!(code, 0, "rerun {i} failed");
        assert_eq!(
            requests.load(Ordering::SeqCst),
            made,
            "a cached rerun made a request"
        );
        let cached = cached_count(&work.join("out"));
        assert_eq!(cached, docs, "every job of rerun {i} is cached");
        let written = bytes_under(&work.join("out/.zhi")).saturating_sub(before);
        println!(
            "  rerun {i}: {:.3} s wall, {:.1} MiB max RSS, {} written under .zhi/ ({} earlier runs in the output folder)",
            wall.as_secs_f64(),
            maxrss_kib as f64 / 1024.0,
            human_bytes(written),
            std::fs::read_dir(work.join("out/.zhi/runs")).map_or(0, |d| d.count()) - 1
        );
        walls.push(wall);
        peak_kib = peak_kib.max(maxrss_kib);
    }
    walls.sort();
    println!(
        "  rerun, all cached: median {:.3} s, best {:.3} s; peak memory {:.1} MiB",
        walls[walls.len() / 2].as_secs_f64(),
        walls[0].as_secs_f64(),
        peak_kib as f64 / 1024.0
    );
    // `zhi prune --keep-last 1`: what the archive holds after it, and a rerun still all cached.
    let before = bytes_under(&work.join("out/.zhi"));
    let mut prune = Command::new(env!("CARGO_BIN_EXE_zhi"));
    prune
        .current_dir(&work)
        .env_clear()
        .env("HOME", &home)
        .args(["prune", "out", "--keep-last", "1"])
        .stdout(Stdio::null());
    let pruned = common::timed(prune);
    assert_eq!(pruned.code, 0, "prune failed");
    let after = bytes_under(&work.join("out/.zhi"));
    let rerun = common::timed(zhi(&[]));
    assert_eq!(rerun.code, 0, "the rerun after prune failed");
    assert_eq!(
        requests.load(Ordering::SeqCst),
        made,
        "a rerun after prune made a request"
    );
    assert_eq!(
        cached_count(&work.join("out")),
        docs,
        "every job is cached after prune"
    );
    println!(
        "  zhi prune --keep-last 1: {:.2} s; .zhi/ {} → {}; the rerun after it {:.3} s, all cached",
        pruned.wall.as_secs_f64(),
        human_bytes(before),
        human_bytes(after),
        rerun.wall.as_secs_f64()
    );
    let find = common::best_of(reruns, || {
        let mut c = Command::new("find");
        c.current_dir(&work)
            .args(["docs", "-type", "f", "-printf", "%s %T@\n"])
            .stdout(Stdio::null());
        c
    });
    assert_eq!(find.code, 0, "find failed");
    println!(
        "  find docs -type f -printf '%s %T@\\n': best {:.3} s, {:.1} MiB max RSS; zhi's median rerun is {:.1}x that",
        find.wall.as_secs_f64(),
        find.maxrss_kib as f64 / 1024.0,
        walls[walls.len() / 2].as_secs_f64() / find.wall.as_secs_f64()
    );
}

/// Bytes of the files under `dir` (what `du -sb` counts, less the folders).
fn bytes_under(dir: &Path) -> u64 {
    let mut sum = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => sum += bytes_under(&e.path()),
            Ok(_) => sum += e.metadata().map_or(0, |m| m.len()),
            Err(_) => {}
        }
    }
    sum
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

/// `n` documents in folders of 100, like a real archive; of about `bytes` bytes each when
/// `bytes` is given (the report's lines repeated), else ~200 bytes.
fn make_docs(dir: &Path, n: usize, bytes: usize) {
    for i in 0..n {
        let sub = dir.join(format!("batch-{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&sub).unwrap();
        }
        let body = format!(
            "Report {i}\n\nQuarterly figures for unit {i}: revenue up {}%, costs down {}%.\nNothing else to note.\n{}\n",
            i % 17,
            i % 5,
            "-".repeat(80)
        );
        let body = if bytes > body.len() {
            let mut long = String::with_capacity(bytes + body.len());
            let mut line = 0usize;
            while long.len() < bytes {
                long.push_str(&format!("{line}: {body}"));
                line += 1;
            }
            long
        } else {
            body
        };
        std::fs::write(sub.join(format!("doc-{i:05}.txt")), body).unwrap();
    }
}

/// The manifest's count of cached jobs, read without holding the manifest: a million planned
/// ids held here would count in the next child's peak memory (`wait4` reports at least the
/// parent's peak at the time of the spawn).
fn cached_count(out: &Path) -> usize {
    #[derive(serde::Deserialize)]
    struct Manifest {
        counts: Counts,
    }
    #[derive(serde::Deserialize)]
    struct Counts {
        cached: usize,
    }
    let file = std::fs::File::open(out.join("manifest.json")).expect("manifest.json");
    let m: Manifest =
        serde_json::from_reader(std::io::BufReader::new(file)).expect("manifest.json holds counts");
    m.counts.cached
}

/// A local OpenAI-compatible responder: every request gets the same short completion.
fn fake_api() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let counter = counter.clone();
            std::thread::spawn(move || answer(stream, &counter));
        }
    });
    (base, count)
}

fn answer(stream: std::net::TcpStream, counter: &AtomicUsize) {
    let mut reader = BufReader::new(stream);
    let Some(request_line) = common::read_request(&mut reader) else {
        return;
    };
    // Only chat requests count: zhi first asks a server it does not know what it is
    // (`/props`, `/v1/models`, `/api/show`), and this one answers those like any other.
    let chat = request_line.starts_with("POST ") && request_line.contains("/chat/completions");
    if chat {
        counter.fetch_add(1, Ordering::SeqCst);
    }
    let reply = r#"{"id":"bench","object":"chat.completion","created":1700000000,"model":"glm-4-flash","choices":[{"index":0,"message":{"role":"assistant","content":"The quarterly report gives the figures of one business unit: revenue rose by a few percent over the quarter while costs fell, and the unit notes nothing else of importance for the period under review."},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":5,"total_tokens":55}}"#;
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reply.len()
    );
    let mut stream = reader.into_inner();
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(reply.as_bytes());
    let _ = stream.flush();
}
