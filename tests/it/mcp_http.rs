//! `zhi mcp --listen` (docs/mcp.md#over-http): a loopback address only, a token of some length
//! or none made up where a log would keep it; every request without the token answered 401
//! before the protocol sees it, with it the protocol's own answer; SIGTERM ends it cleanly.
//! The same with the protocol's Python client is in tests/ext/mcp_client.rs.

use crate::support::testenv::{TestEnv, assert_exit, show, stderr};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;
use zhi::exit::Exit;

const TOKEN: &str = "5f1d6c1e0b7a4c2d9e8f7a6b5c4d3e2f";

/// `zhi mcp --listen ADDR` with `token` in ZHI_MCP_TOKEN (none when `None`), to its end.
fn listen(env: &TestEnv, addr: &str, token: Option<&str>) -> std::process::Output {
    let mut c = env.zhi();
    c.args(["mcp", "--listen", addr]);
    if let Some(t) = token {
        c.env("ZHI_MCP_TOKEN", t);
    }
    c.output().unwrap()
}

#[test]
fn only_a_loopback_address_and_a_real_token_are_taken() {
    let env = TestEnv::new();
    let out = listen(&env, "0.0.0.0:0", Some(TOKEN));
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).contains("only a loopback address"),
        "{}",
        show(&out)
    );

    let out = listen(&env, "127.0.0.1:0", Some("secret"));
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).contains("holds 6 characters"),
        "{}",
        show(&out)
    );
    assert!(!stderr(&out).contains("secret"), "the token is never shown");

    // No token, and stderr is no terminal: a made-up token would end in a log.
    let out = listen(&env, "127.0.0.1:0", None);
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("ZHI_MCP_TOKEN"), "{}", show(&out));
}

/// One HTTP/1.1 request; the status code and the body as far as it came within a moment.
fn post(addr: &str, path: &str, auth: Option<&str>, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let auth = auth.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    // An event stream may stay open: read until the answer is in or the socket is quiet.
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if String::from_utf8_lossy(&got).contains("\"result\"") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

#[test]
fn every_request_needs_the_token_and_sigterm_ends_the_server() {
    let env = TestEnv::new();
    // Reaped: an assert that fails before the SIGTERM leaves no server behind.
    let mut server = Reaped(
        env.zhi_process()
            .args(["mcp", "--listen", "127.0.0.1:0"])
            .env("ZHI_MCP_TOKEN", TOKEN)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let child = &mut server.0;
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let url = line
        .split("listening on ")
        .nth(1)
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .trim()
        .to_string();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

    let (code, text) = post(&addr, "/mcp", None, init);
    assert_eq!(code, 401, "{text}");
    assert!(
        text.to_lowercase().contains("www-authenticate: bearer"),
        "{text}"
    );
    let (code, _) = post(&addr, "/mcp", Some("Bearer wrong"), init);
    assert_eq!(code, 401);
    let (code, _) = post(&addr, "/mcp", Some(TOKEN), init);
    assert_eq!(code, 401, "the scheme is part of it");
    let bearer = format!("Bearer {TOKEN}");
    let (code, _) = post(&addr, "/other", Some(&bearer), init);
    assert_eq!(code, 404);
    let (code, text) = post(&addr, "/mcp", Some(&bearer), init);
    assert_eq!(code, 200, "{text}");
    let lower = format!("bearer {TOKEN}");
    let (code, text) = post(&addr, "/mcp", Some(&lower), init);
    assert_eq!(code, 200, "the scheme in any case: {text}");
    assert!(text.contains(r#""serverInfo":{"name":"zhi""#), "{text}");

    // SAFETY: kill(2) on the child's pid, which is ours until it is waited for.
    let r = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(r, 0);
    let mut status = None;
    for _ in 0..100 {
        if let Some(s) = child.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = status.unwrap_or_else(|| {
        let _ = child.kill();
        panic!("zhi mcp --listen did not end on SIGTERM")
    });
    assert!(status.success(), "{status}");
    let mut rest = String::new();
    let _ = err.read_to_string(&mut rest);
    assert!(
        !rest.contains(TOKEN) && !line.contains(TOKEN),
        "{line}{rest}"
    );
}

/// A server killed and reaped when dropped: a test that fails leaves no process behind.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The soft limit on open files of a live process, and its hard one, from /proc.
fn file_limits(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap_or_else(|| panic!("{text}"));
    let n: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (n[0], n[1])
}

/// Connections that never finish a request (issue 47: under `ulimit -n 128`, 200 that sent
/// half a request line shut out a client with the token for as long as they stayed open): the
/// soft file limit is raised to the hard one, the connections held are capped, the oldest that
/// has not brought the token makes room for a new one, and a request head that does not arrive
/// whole within 10 s closes its connection.
#[test]
fn half_sent_requests_cannot_shut_out_a_client_with_the_token() {
    use std::os::unix::process::CommandExt;
    let env = TestEnv::new();
    let mut command = env.zhi_process();
    command
        .args(["mcp", "--listen", "127.0.0.1:0"])
        .env("ZHI_MCP_TOKEN", TOKEN)
        .stderr(Stdio::piped());
    // SAFETY: setrlimit(2) between fork and exec, on the child alone; no allocation.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 64,
                rlim_max: 128,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut server = Reaped(command.spawn().unwrap());
    let child = &mut server.0;
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split("listening on http://")
        .nth(1)
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .trim()
        .trim_end_matches("/mcp")
        .to_string();
    assert_eq!(file_limits(child.id()), (128, 128), "the soft limit raised");

    let mut half_sent: Vec<TcpStream> = (0..200)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.write_all(b"POST /mcp HT").unwrap();
            s
        })
        .collect();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let started = std::time::Instant::now();
    let (code, text) = post(&addr, "/mcp", Some(&format!("Bearer {TOKEN}")), init);
    assert_eq!(code, 200, "shut out: {text}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "answered only after {:?}",
        started.elapsed()
    );

    // The newest half-sent request still holds its slot, until its head is overdue.
    let last = half_sent.last_mut().unwrap();
    last.set_read_timeout(Some(Duration::from_secs(25)))
        .unwrap();
    let mut got = Vec::new();
    let ended = last.read_to_end(&mut got);
    let closed = match &ended {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    };
    assert!(
        closed,
        "{ended:?} after {:?}: {}",
        started.elapsed(),
        String::from_utf8_lossy(&got)
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "closed only after {:?}",
        started.elapsed()
    );
    drop(half_sent);

    // SAFETY: kill(2) on the child's pid, which is ours until it is waited for.
    let r = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(r, 0);
    for _ in 0..100 {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("zhi mcp --listen did not end on SIGTERM");
}
