//! How fast a run goes when the model, not zhi, is the bottleneck: documents per second at
//! `-j 1`, `-j 8` and `-j 64` against a server that answers every request after a fixed
//! latency L, beside the ideal C/L (no `--rpm`, so the rate cap R is unlimited); then the
//! request rate a run really makes under `--rpm 600`, beside the 10 requests/s it promises.
//!
//! `cargo bench --bench throughput`. Each concurrency level gets `ROUNDS × C` documents
//! (`ZHI_BENCH_ROUNDS`, default 25), so every level ideally takes `ROUNDS × L` and the tail
//! of the last round weighs the same everywhere. Each run has its own fresh output folder,
//! so nothing is cached. Two rates are reported per level: over the process's whole wall
//! time (start-up, planning, hashing, manifests included) and over the window in which the
//! server was busy (first request received to last answer sent), which isolates the worker
//! pool. The request rate under `--rpm` is taken from the server's own arrival timestamps:
//! `(count - 1) / (last - first)`.
//!
//! The responder is a few lines of HTTP/1.1 on std threads (one thread per connection,
//! keep-alive honoured), in this file because a bench cannot use the test suite's modules.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Server latency for the concurrency levels.
const LATENCY: Duration = Duration::from_millis(200);
const LEVELS: [usize; 3] = [1, 8, 64];
/// The `--rpm` measurement: documents, concurrency, latency, limit.
const RPM_DOCS: usize = 100;
const RPM_JOBS: usize = 64;
const RPM_LATENCY: Duration = Duration::from_millis(50);
const RPM: u32 = 600;

const REPLY: &str = r#"{"id":"bench","object":"chat.completion","created":1700000000,"model":"glm-4-flash","choices":[{"index":0,"message":{"role":"assistant","content":"Summary: sales rose in the north and fell in the south."},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}"#;

fn main() {
    let rounds: usize = std::env::var("ZHI_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(25);
    let root = tempfile::tempdir().expect("temp dir");
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).expect("home dir");
    let server = FakeApi::start();

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "throughput: fake API with a fixed latency L = {} ms, {rounds} rounds of C documents per level; \
         {cores} cores, documents and outputs under {} (set TMPDIR for another disk)",
        LATENCY.as_millis(),
        std::env::temp_dir().display()
    );
    println!(
        "  {:>5} {:>6} {:>8} {:>8} {:>12} {:>12} {:>10} {:>7}",
        "-j C", "docs", "wall s", "CPU s", "docs/s wall", "docs/s busy", "ideal C/L", "peak C"
    );
    for c in LEVELS {
        let n = rounds * c;
        let work = root.path().join(format!("j{c}"));
        make_docs(&work.join("docs"), n);
        server.reset(LATENCY);
        let (wall, cpu) = run_zhi(&work, &home, &server.base_url, c, &[]);
        let log = server.take();
        assert_eq!(log.arrivals.len(), n, "-j {c}: one request per document");
        assert_eq!(
            succeeded(&work.join("out")),
            n,
            "-j {c}: every job succeeded"
        );
        let busy = log.last_done.duration_since(log.arrivals[0]);
        println!(
            "  {:>5} {:>6} {:>8.2} {:>8.2} {:>12.1} {:>12.1} {:>10.1} {:>7}",
            c,
            n,
            wall.as_secs_f64(),
            cpu.as_secs_f64(),
            n as f64 / wall.as_secs_f64(),
            n as f64 / busy.as_secs_f64(),
            c as f64 / LATENCY.as_secs_f64(),
            log.peak_in_flight,
        );
    }

    let work = root.path().join("rpm");
    make_docs(&work.join("docs"), RPM_DOCS);
    server.reset(RPM_LATENCY);
    let rpm = RPM.to_string();
    let (wall, _) = run_zhi(
        &work,
        &home,
        &server.base_url,
        RPM_JOBS,
        &["--rpm", rpm.as_str()],
    );
    let log = server.take();
    assert_eq!(
        log.arrivals.len(),
        RPM_DOCS,
        "--rpm: one request per document"
    );
    assert_eq!(
        succeeded(&work.join("out")),
        RPM_DOCS,
        "--rpm: every job succeeded"
    );
    let span = log.arrivals[RPM_DOCS - 1].duration_since(log.arrivals[0]);
    let rate = (RPM_DOCS - 1) as f64 / span.as_secs_f64();
    println!(
        "--rpm {RPM}: {RPM_DOCS} documents, -j {RPM_JOBS}, L = {} ms: {rate:.2} requests/s measured \
         (ideal {:.2}/s), peak {} in flight, {:.2} s wall",
        RPM_LATENCY.as_millis(),
        f64::from(RPM) / 60.0,
        log.peak_in_flight,
        wall.as_secs_f64(),
    );
}

/// `zhi run summarize docs -o out -j C --no-progress` in `work`, with an empty home so no
/// user configuration or skill interferes. Returns its wall time and CPU time (user + system);
/// panics (with its stderr) if it fails.
fn run_zhi(
    work: &Path,
    home: &Path,
    base_url: &str,
    jobs: usize,
    extra: &[&str],
) -> (Duration, Duration) {
    let jobs = jobs.to_string();
    let cpu_before = common::children_cpu();
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_zhi"))
        .current_dir(work)
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(["run", "summarize", "docs", "-o", "out", "--no-progress"])
        .args(["--base-url", base_url, "-j", jobs.as_str()])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("spawn zhi");
    let wall = t.elapsed();
    assert!(
        out.status.success(),
        "zhi failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (wall, common::children_cpu().saturating_sub(cpu_before))
}

/// `n` small text documents of about 200 bytes each.
fn make_docs(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).expect("docs dir");
    for i in 0..n {
        let body = format!(
            "Report {i}\n\nQuarterly figures for unit {i}: revenue up {}%, costs down {}%.\nNothing else to note.\n{}\n",
            i % 17,
            i % 5,
            "-".repeat(80)
        );
        std::fs::write(dir.join(format!("doc-{i:05}.txt")), body).expect("write document");
    }
}

/// The jobs of the run manifest in `out` whose outputs stand: `counts.succeeded`, and
/// `counts.doubted` (outputs kept, doubted).
fn succeeded(out: &Path) -> usize {
    let text = std::fs::read_to_string(out.join("manifest.json")).expect("manifest.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("manifest.json is JSON");
    let count = |name: &str| v["counts"][name].as_u64().unwrap_or(0) as usize;
    count("succeeded") + count("doubted")
}

/// What the server saw during one run.
struct Log {
    /// When each chat request was fully received, in order.
    arrivals: Vec<Instant>,
    /// When the last answer was written.
    last_done: Instant,
    /// Most requests held at once.
    peak_in_flight: usize,
}

struct State {
    latency_ms: AtomicU64,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    arrivals: Mutex<Vec<Instant>>,
    last_done: Mutex<Option<Instant>>,
}

/// A local OpenAI-compatible responder: every `POST …/chat/completions` gets the same
/// completion after the configured latency.
struct FakeApi {
    base_url: String,
    state: Arc<State>,
}

impl FakeApi {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let base_url = format!("http://{}/v1", listener.local_addr().expect("local addr"));
        let state = Arc::new(State {
            latency_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            arrivals: Mutex::new(Vec::new()),
            last_done: Mutex::new(None),
        });
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        FakeApi { base_url, state }
    }

    /// Clears the log and sets the latency for the next run.
    fn reset(&self, latency: Duration) {
        self.state
            .latency_ms
            .store(latency.as_millis() as u64, Ordering::SeqCst);
        self.state.peak.store(0, Ordering::SeqCst);
        self.state.arrivals.lock().expect("arrivals").clear();
        *self.state.last_done.lock().expect("last_done") = None;
    }

    /// The log of the run that just ended (its process has exited, so nothing is in flight).
    fn take(&self) -> Log {
        let arrivals = std::mem::take(&mut *self.state.arrivals.lock().expect("arrivals"));
        let last_done = self
            .state
            .last_done
            .lock()
            .expect("last_done")
            .expect("the server answered at least one request");
        Log {
            arrivals,
            last_done,
            peak_in_flight: self.state.peak.load(Ordering::SeqCst),
        }
    }
}

/// Answers requests on one connection until the client closes it.
fn serve(stream: TcpStream, state: &State) {
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream);
    loop {
        let Some((request_line, length)) = read_head(&mut reader) else {
            return;
        };
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let chat = request_line.starts_with("POST ")
            && request_line
                .split(' ')
                .nth(1)
                .is_some_and(|p| p.ends_with("/chat/completions"));
        if !chat {
            let _ = reader.get_mut().write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            return;
        }
        state
            .arrivals
            .lock()
            .expect("arrivals")
            .push(Instant::now());
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.peak.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(
            state.latency_ms.load(Ordering::SeqCst),
        ));
        // Head and body in one write: two small writes would meet Nagle's algorithm and the
        // client's delayed ACK, and add ~40 ms to every answer.
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{REPLY}",
            REPLY.len()
        );
        let ok = reader.get_mut().write_all(answer.as_bytes()).is_ok();
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        *state.last_done.lock().expect("last_done") = Some(Instant::now());
        if !ok {
            return;
        }
    }
}

/// The request line and `Content-Length` of the next request; `None` at end of stream.
fn read_head(reader: &mut BufReader<TcpStream>) -> Option<(String, usize)> {
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).ok()? == 0 {
        return None;
    }
    let mut length = 0;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            return Some((request_line, length));
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
}
