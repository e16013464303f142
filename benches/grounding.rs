//! How long one extraction job takes when its answer holds many values: one document of
//! ~100 KB of prose and one answer holding an array of `ZHI_BENCH_VALUES` (default 40,000)
//! distinct 14-character strings (~0.8 MB), one in ten of them taken from the document. The
//! run is `zhi run extract` against a fake server on 127.0.0.1; the wall and CPU time are the
//! whole process's (planning, the request, validation, grounding, doubts, the folder's table).
//!
//! `cargo bench --bench grounding`; `ZHI_BENCH_VALUES=4000 cargo bench --bench grounding` for a
//! smaller answer. docs/extract.md#grounding gives the numbers measured, before and after
//! grounding was bounded.
//!
//! The responder is a few lines of HTTP/1.1 on std threads, in this file because a bench
//! cannot use the test suite's modules.

mod common;

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let values: usize = std::env::var("ZHI_BENCH_VALUES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(40_000);
    let root = tempfile::tempdir().expect("temp dir");
    let work = root.path();
    let home = work.join("home");
    std::fs::create_dir_all(work.join("docs")).expect("docs dir");
    std::fs::create_dir_all(&home).expect("home dir");
    let (doc, codes) = document();
    std::fs::write(work.join("docs/big.txt"), &doc).expect("write document");
    std::fs::write(
        work.join("codes.schema.json"),
        r#"{"type": "object", "properties": {"codes": {"type": "array", "items": {"type": "string"}}}}"#,
    )
    .expect("write schema");
    std::fs::write(
        work.join("zhi.yaml"),
        "models:\n  glm-4-flash: {context_window: 1000000, max_output: 400000}\n",
    )
    .expect("write settings");
    let answer = answer(values, &codes);
    let base_url = serve(answer.clone());
    println!(
        "grounding: one document of {} KB, an answer of {values} values ({} KB)",
        doc.len() / 1000,
        answer.len() / 1000
    );
    let cpu_before = common::children_cpu();
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_zhi"))
        .current_dir(work)
        .env_clear()
        .env("HOME", &home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("ZHI_API_KEY", "bench-key-0123456789abcdef")
        .args(["run", "extract", "docs", "-a", "schema=codes.schema.json"])
        .args([
            "-o",
            "out",
            "--no-progress",
            "--base-url",
            base_url.as_str(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("spawn zhi");
    let wall = t.elapsed();
    let cpu = common::children_cpu().saturating_sub(cpu_before);
    assert!(
        out.status.success(),
        "zhi failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = work.join("out/.zhi/runs");
    let run = std::fs::read_dir(&runs)
        .expect("the run's folder")
        .flatten()
        .next()
        .expect("one run");
    let record = std::fs::read_to_string(run.path().join("results.jsonl")).unwrap_or_default();
    let r: serde_json::Value = record
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_default();
    let x = &r["extraction"];
    println!(
        "  exit {}, status {}, {} values found, {} found nowhere, {} not looked for; {:.2} s wall, {:.2} s CPU",
        out.status.code().unwrap_or(-1),
        r["status"],
        x["fields"]
            .as_object()
            .map_or(0, |f| f.values().filter(|l| l["match"] != "none").count()),
        x["ungrounded"].as_array().map_or(0, Vec::len),
        x["unchecked"].as_array().map_or(0, Vec::len),
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
    );
}

/// ~100 KB of invoice-like prose holding a code on every line; the codes.
fn document() -> (String, Vec<String>) {
    let mut doc = String::new();
    let mut codes = Vec::new();
    let mut i = 0u64;
    while doc.len() < 100_000 {
        let code = code(i.wrapping_mul(7_919).wrapping_add(13));
        doc.push_str(&format!(
            "Line {i}: {code} delivered to the warehouse on schedule, {} units at {}.{:02} each.\n",
            i % 97,
            i % 500,
            i % 100
        ));
        codes.push(code);
        i += 1;
    }
    (doc, codes)
}

/// A 14-character code of lower-case letters and digits from a number.
fn code(mut n: u64) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut s = String::new();
    for _ in 0..14 {
        n = n
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        s.push(ALPHABET[(n >> 33) as usize % ALPHABET.len()] as char);
    }
    s
}

/// The server's whole HTTP answer: one chat completion whose content is the object.
fn answer(values: usize, codes: &[String]) -> String {
    let list: Vec<String> = (0..values)
        .map(|i| {
            if i % 10 == 0 {
                codes[(i / 10) % codes.len()].clone()
            } else {
                code(1_000_000 + i as u64)
            }
        })
        .collect();
    let content = serde_json::json!({ "codes": list }).to_string();
    let body = serde_json::json!({
        "id": "bench", "object": "chat.completion", "created": 1_700_000_000, "model": "glm-4-flash",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 30_000, "completion_tokens": 200_000, "total_tokens": 230_000}
    })
    .to_string();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A server answering every chat request with `answer`, others with 404; its base URL.
fn serve(answer: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let base_url = format!("http://{}/v1", listener.local_addr().expect("local addr"));
    let answer = std::sync::Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let answer = answer.clone();
            std::thread::spawn(move || reply(stream, &answer));
        }
    });
    base_url
}

fn reply(stream: TcpStream, answer: &str) {
    let mut reader = BufReader::new(stream);
    while let Some(request_line) = common::read_request(&mut reader) {
        let sent = if request_line.contains("/chat/completions") {
            reader.get_mut().write_all(answer.as_bytes())
        } else {
            reader
                .get_mut()
                .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        };
        if sent.is_err() {
            return;
        }
    }
}
