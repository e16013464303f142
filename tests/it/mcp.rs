//! `zhi mcp` spoken to directly in JSON-RPC over its stdin and stdout (docs/mcp.md), so the
//! server is tested without any client library: the handshake, the tools and their schemas, a
//! path outside the roots refused, and a run against the fake API followed to its end and read.
//! The same with the protocol's own Python client is in tests/ext/mcp_client.rs.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::TestEnv;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// A `zhi mcp` child and the lines it writes.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// What it writes on stderr, read to its end: kept, not let onto the test's own stderr.
    stderr: Option<std::thread::JoinHandle<String>>,
    next_id: u64,
    /// Notifications seen while waiting for answers.
    notes: Vec<Value>,
}

impl Server {
    fn start(env: &TestEnv, args: &[&str]) -> Server {
        let mut child = env
            .zhi_process()
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start zhi mcp");
        let stdin = child.stdin.take();
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut text);
            text
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Server {
            child,
            stdin,
            lines,
            stderr: Some(stderr),
            next_id: 1,
            notes: Vec::new(),
        };
        let init = s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "zhi-tests", "version": "0"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "zhi", "{init}");
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, v: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
            self.notes.push(v);
        }
    }

    /// A tool's answer: its structured content, and whether it is an error.
    fn call(&mut self, tool: &str, args: Value) -> (Value, bool) {
        self.call_with(tool, args, json!({}))
    }

    fn call_with(&mut self, tool: &str, args: Value, meta: Value) -> (Value, bool) {
        let v = self.request(
            "tools/call",
            json!({"name": tool, "arguments": args, "_meta": meta}),
        );
        let r = &v["result"];
        assert!(r.is_object(), "{tool}: {v}");
        (
            r["structuredContent"].clone(),
            r["isError"].as_bool().unwrap_or(false),
        )
    }

    /// Close stdin: the server ends, with its runs. Its stderr must hold no warning: a
    /// request it refuses is answered to the client, not logged.
    fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        for _ in 0..200 {
            if let Some(s) = self.child.try_wait().unwrap() {
                let said = self
                    .stderr
                    .take()
                    .map(|t| t.join().unwrap())
                    .unwrap_or_default();
                assert!(!said.contains("WARN"), "zhi mcp warned: {said}");
                return s;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("zhi mcp did not end when its stdin closed");
    }
}

#[test]
fn the_tools_are_listed_with_their_schemas_and_paths_outside_the_roots_are_refused() {
    let env = TestEnv::new();
    env.write("docs/a.md", "A short note.\n");
    let mut s = Server::start(&env, &[]);
    let tools = s.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for want in ["skills", "plan", "run", "status", "cancel", "results"] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    for t in tools["result"]["tools"].as_array().unwrap() {
        assert!(t["description"].as_str().unwrap().len() > 40, "{t}");
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }

    let outside = env.home.display().to_string();
    for (tool, args) in [
        ("plan", json!({"skill": "summarize", "inputs": [outside]})),
        ("plan", json!({"skill": "summarize", "inputs": ["../home"]})),
        (
            "plan",
            json!({"skill": "summarize", "inputs": ["docs"], "output": "/tmp"}),
        ),
        ("run", json!({"skill": "summarize", "inputs": ["/etc/*"]})),
        (
            "plan",
            json!({"skill": "extract", "inputs": ["docs"], "args": {"schema": "/etc/passwd"}}),
        ),
        ("results", json!({"output": "../"})),
    ] {
        let (v, err) = s.call(tool, args.clone());
        assert!(err, "{tool} {args}: {v}");
        let message = v["error"].as_str().unwrap();
        assert!(message.contains("outside the folders"), "{message}");
        let work = env.work.canonicalize().unwrap();
        assert!(
            message.contains(&work.display().to_string()),
            "names the root: {message}"
        );
    }

    let (skills, err) = s.call("skills", json!({}));
    assert!(!err, "{skills}");
    assert!(skills["skills"].as_array().unwrap().len() > 5, "{skills}");
    let (one, err) = s.call("skills", json!({"name": "summarize"}));
    assert!(!err, "{one}");
    assert_eq!(one["args"][0]["name"], "file");
    let (plan, err) = s.call("plan", json!({"skill": "summarize", "inputs": ["docs"]}));
    assert!(!err, "{plan}");
    assert_eq!(plan["by_status"]["pending"], 1, "{plan}");
    // glm-4-flash, the default model, is free at the default prices.
    assert_eq!(
        plan["estimated_input_cost"],
        json!({"model": "glm-4-flash", "amount": 0.0, "currency": "CNY"}),
        "{plan}"
    );
    // A name is never a flag of the child's.
    let (flag, err) = s.call(
        "plan",
        json!({"skill": "--config=/etc/passwd", "inputs": ["docs"], "model": "--force"}),
    );
    assert!(err, "{flag}");
    assert!(
        flag["error"].as_str().unwrap().contains("--config"),
        "{flag}"
    );
    let (bad, err) = s.call("plan", json!({"skill": "sumarize", "inputs": ["docs"]}));
    assert!(err, "{bad}");
    assert!(
        bad["error"].as_str().unwrap().contains("summarize"),
        "{bad}"
    );
    assert!(s.close().success());
}

#[test]
fn a_run_is_started_followed_with_progress_and_read() {
    let env = TestEnv::new();
    // Once `slow` is set, every answer takes half a minute: a run that is still going.
    let slow = Arc::new(AtomicBool::new(false));
    let slow_now = Arc::clone(&slow);
    let api = FakeApi::start(move |r: &Recorded| {
        let reply = Reply::text(format!(
            "A summary of {} characters.",
            r.input_document().len()
        ));
        if slow_now.load(Ordering::SeqCst) {
            Reply::delay(Duration::from_secs(30), reply)
        } else {
            reply
        }
    });
    env.write(
        "zhi.yaml",
        format!(
            "provider: openai\nbase_url: {}\ngrace_period: 0\nretry: {{max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}}\n",
            api.base_url()
        ),
    );
    env.write("docs/a.md", "The first note, about apples.\n");
    env.write("docs/b.md", "The second note, about pears.\n");
    let mut s = Server::start(&env, &["--root", "."]);
    let (started, err) = s.call(
        "run",
        json!({"skill": "summarize", "inputs": ["docs"], "output": "out"}),
    );
    assert!(!err, "{started}");
    let run_id = started["run_id"].as_str().unwrap().to_string();
    assert_eq!(started["planned"], 2);
    assert_eq!(started["budget_tokens"], 1_000_000, "the default budget");

    let (status, err) = s.call_with(
        "status",
        json!({"run_id": run_id, "wait_seconds": 60}),
        json!({"progressToken": "p1"}),
    );
    assert!(!err, "{status}");
    assert_eq!(status["done"], true, "{status}");
    assert_eq!(status["counts"]["succeeded"], 2, "{status}");
    assert_eq!(status["exit_code"], 0, "{status}");
    let progress: Vec<&Value> = s
        .notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(
        !progress.is_empty(),
        "progress notifications: {:?}",
        s.notes
    );
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progressToken"] == "p1")
    );
    assert_eq!(progress.last().unwrap()["params"]["progress"], 2.0);

    let (listing, err) = s.call("results", json!({"output": "out"}));
    assert!(!err, "{listing}");
    assert_eq!(listing["jobs_total"], 2, "{listing}");
    assert_eq!(listing["run_id"], run_id.as_str(), "{listing}");
    let (job, err) = s.call("results", json!({"output": "out", "job": "docs/a.md"}));
    assert!(!err, "{job}");
    let text = job["outputs"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("A summary of"), "{job}");

    // The run's manifest is a resource; a file that is no manifest, report or table is not.
    let listed = s.request("resources/list", json!({}));
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    let manifest = uris
        .iter()
        .find(|u| u.ends_with(&format!("{run_id}/manifest.json")))
        .unwrap_or_else(|| panic!("the manifest among {uris:?}"))
        .to_string();
    let read = s.request("resources/read", json!({"uri": manifest}));
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap()["run_id"],
        run_id.as_str()
    );
    let work = env.work.canonicalize().unwrap();
    for uri in [
        format!("file://{}/docs/a.md", work.display()),
        format!("file://{}/.profile", env.home.display()),
    ] {
        let refused = s.request("resources/read", json!({"uri": uri}));
        assert!(refused["error"].is_object(), "{uri}: {refused}");
    }

    // A second run on the same folder while one holds it is refused as the lock refuses it.
    slow.store(true, Ordering::SeqCst);
    let (slow, err) = s.call(
        "run",
        json!({"skill": "summarize", "inputs": ["docs"], "output": "out2", "force": true}),
    );
    assert!(!err, "{slow}");
    let (again, err) = s.call(
        "run",
        json!({"skill": "summarize", "inputs": ["docs"], "output": "out2", "force": true}),
    );
    assert!(err, "{again}");
    assert!(
        again["error"].as_str().unwrap().contains("locked"),
        "{again}"
    );
    let (cancelled, err) = s.call("cancel", json!({"run_id": slow["run_id"]}));
    assert!(!err, "{cancelled}");
    assert_eq!(cancelled["done"], true, "{cancelled}");
    assert!(s.close().success());
}

/// An agent may not name, as the output folder, the place of a settings file or another output
/// folder's records: `plan` and `run` answer an error naming the folder and why, nothing is
/// made, and the server and the folder go on working. Before, `"output": "zhi.yaml"` in a root
/// without one left a folder that stopped every later `plan` and `run`, and `"output":
/// "main/.zhi/runs"` wrote a run into `main`'s records (issue 47).
#[test]
fn an_output_folder_in_place_of_the_settings_file_or_in_records_is_refused() {
    let env = TestEnv::new();
    let api = FakeApi::always(Reply::text("A summary of the note."));
    // The settings are the user's: the root holds no zhi.yaml.
    let settings = env.home.join(".config/zhi/config.yaml");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        format!(
            "provider: openai\nbase_url: {}\ngrace_period: 0\nretry: {{max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}}\n",
            api.base_url()
        ),
    )
    .unwrap();
    env.write("docs/a.md", "A short note.\n");
    let mut s = Server::start(&env, &["--root", "."]);
    let docs = json!(["docs"]);
    let (first, err) = s.call(
        "run",
        json!({"skill": "summarize", "inputs": docs, "output": "main", "wait_seconds": 60}),
    );
    assert!(!err, "{first}");
    assert_eq!(first["exit_code"], 0, "{first}");

    for (output, reason) in [
        ("zhi.yaml", "where zhi reads a settings file"),
        ("sub/zhi.yaml", "where zhi reads a settings file"),
        (
            "main/.zhi/runs",
            "where zhi keeps an output folder's records",
        ),
        ("main/.zhi", "where zhi keeps an output folder's records"),
    ] {
        for tool in ["plan", "run"] {
            let (v, err) = s.call(
                tool,
                json!({"skill": "summarize", "inputs": docs, "output": output, "wait_seconds": 30}),
            );
            assert!(err, "{tool} {output}: {v}");
            let message = v["error"].as_str().unwrap();
            assert!(
                message.contains("cannot be the output folder") && message.contains(reason),
                "{tool} {output}: {message}"
            );
            assert!(message.contains(output), "{tool} {output}: {message}");
        }
    }
    assert!(!env.path("zhi.yaml").exists(), "a zhi.yaml was made");
    assert!(!env.path("sub").exists(), "sub/zhi.yaml was made");
    assert_eq!(
        api.chat_requests().len(),
        1,
        "only the first run sent anything"
    );

    // The agent's next plan works, and `main` holds its one run.
    let (plan, err) = s.call(
        "plan",
        json!({"skill": "summarize", "inputs": docs, "output": "main"}),
    );
    assert!(!err, "{plan}");
    assert_eq!(plan["by_status"]["cached"], 1, "{plan}");
    assert!(s.close().success());
    let runs = std::fs::read_dir(env.path("main/.zhi/runs"))
        .unwrap()
        .count();
    assert_eq!(runs, 1);
}

/// The configuration snippets of docs/mcp.md, tried: each way it starts `zhi mcp` (a
/// `… -- zhi mcp ARGS` command line, a JSON `command` and `args`) starts a server that answers
/// the handshake and lists its tools, with its `--root` pointed at a folder of the test; each
/// HTTP entry names the path `zhi mcp --listen` serves and a bearer token.
#[test]
fn the_docs_snippets_start_a_server_that_answers() {
    let doc = include_str!("../../docs/mcp.md");
    let mut launches: Vec<Vec<String>> = Vec::new();
    let mut http = 0;
    for line in doc.lines() {
        let command = line.starts_with("claude ") || line.starts_with("kimi ");
        if let Some((_, rest)) = line.split_once(" -- zhi mcp").filter(|_| command) {
            launches.push(shlex::split(rest).unwrap());
        }
        if line.contains("mcp add --transport http") {
            let words = shlex::split(line).unwrap();
            assert!(
                words
                    .iter()
                    .any(|w| w.starts_with("http://127.0.0.1:") && w.ends_with("/mcp")),
                "{line}"
            );
            assert!(line.contains("--header \"Authorization: Bearer "), "{line}");
            http += 1;
        }
    }
    for block in doc.split("```json\n").skip(1) {
        let json_text = block.split("```").next().unwrap();
        let Ok(v) = serde_json::from_str::<Value>(json_text) else {
            continue;
        };
        for server in v["mcpServers"]
            .as_object()
            .into_iter()
            .flat_map(|m| m.values())
        {
            if let Some(url) = server["url"].as_str() {
                assert!(
                    url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
                    "{url}"
                );
                let auth = server["headers"]["Authorization"].as_str().unwrap_or("");
                assert!(auth.starts_with("Bearer "), "{server}");
                http += 1;
                continue;
            }
            assert_eq!(server["command"], "zhi", "{server}");
            let args: Vec<String> = server["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            assert_eq!(args[0], "mcp", "{server}");
            launches.push(args[1..].to_vec());
        }
    }
    assert!(launches.len() >= 4, "{launches:?}");
    assert!(http >= 3, "the HTTP snippets: {http}");
    let env = TestEnv::new();
    let root = env.work.display().to_string();
    for args in launches {
        // The snippets' folders are the reader's: the test's own stands for each.
        let mut given: Vec<String> = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            given.push(a.clone());
            if a == "--root" {
                it.next();
                given.push(root.clone());
            }
        }
        let given: Vec<&str> = given.iter().map(String::as_str).collect();
        let mut s = Server::start(&env, &given);
        let tools = s.request("tools/list", json!({}));
        assert_eq!(
            tools["result"]["tools"].as_array().map(Vec::len),
            Some(6),
            "{given:?}: {tools}"
        );
        assert!(s.close().success(), "{given:?}");
    }
}

/// `results` a page at a time ends (issue 47 saw `limit: 0` answer `next_offset: 0`, so a
/// client paging until `null` never stopped): a limit of 0 is refused, and every page moves
/// on, one smaller than a character included, until `next_offset` is `null`.
#[test]
fn results_refuse_a_limit_of_0_and_every_page_moves_on() {
    let env = TestEnv::new();
    let summary = "Summary — the note is about “apples” and “pears”.";
    let api = FakeApi::always(Reply::text(summary));
    env.write("docs/a.md", "The first note, about apples.\n");
    env.write("docs/b.md", "The second note, about pears.\n");
    let out = env
        .zhi()
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .args(["--base-url", &api.base_url()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut s = Server::start(&env, &["--root", "."]);
    for args in [
        json!({"output": "out", "limit": 0}),
        json!({"output": "out", "job": "docs/a.md", "limit": 0}),
        json!({"output": "out", "job": "docs/a.md", "file": "summary.md", "limit": 0}),
        json!({"output": "out", "table": "none", "limit": 0}),
    ] {
        let (v, err) = s.call("results", args.clone());
        assert!(err, "{args}: {v}");
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains("`limit` must be at least 1"),
            "{args}: {v}"
        );
    }
    // The jobs one at a time.
    let (mut offset, mut seen) = (0, Vec::new());
    for _ in 0..10 {
        let (v, err) = s.call(
            "results",
            json!({"output": "out", "offset": offset, "limit": 1}),
        );
        assert!(!err, "{v}");
        seen.extend(
            v["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|j| j["input"].clone()),
        );
        match v["next_offset"].as_u64() {
            Some(next) => {
                assert!(next > offset, "{v}");
                offset = next;
            }
            None => break,
        }
    }
    // In the order the jobs ended.
    seen.sort_by_key(|v| v.to_string());
    assert_eq!(seen, [json!("docs/a.md"), json!("docs/b.md")]);
    // An output a byte at a time: each page holds a character, and the pages make the whole.
    let (mut offset, mut text) = (0, String::new());
    for _ in 0..=summary.len() {
        let (v, err) = s.call(
            "results",
            json!({"output": "out", "job": "docs/a.md", "file": "summary.md",
                   "offset": offset, "limit": 1}),
        );
        assert!(!err, "{v}");
        let page = &v["outputs"][0];
        text.push_str(page["text"].as_str().unwrap());
        match page["next_offset"].as_u64() {
            Some(next) => {
                assert!(next > offset, "{v}");
                offset = next;
            }
            None => break,
        }
    }
    assert_eq!(text.trim_end(), summary);
    assert!(s.close().success());
}

/// A server started as an agent starts it, with none of the agent's variables (issue 47: its
/// `run` answered "no API key: set ZHI_API_KEY (export …)", advice a shell takes and an agent
/// cannot): the error names the agent's `env` setting for the server and the settings file,
/// and no run is started. A plan still answers (it sends nothing).
#[test]
fn a_run_without_a_key_names_the_agents_env_setting_and_the_settings_file() {
    let env = TestEnv::new();
    env.write("docs/a.md", "The first note, about apples.\n");
    let mut s = Server::start(&env, &["--root", "."]);
    let job = json!({"skill": "summarize", "inputs": ["docs"], "output": "out"});
    let (plan, err) = s.call("plan", job.clone());
    assert!(!err, "{plan}");
    let (refused, err) = s.call("run", job);
    assert!(err, "{refused}");
    let message = refused["error"].as_str().unwrap();
    // The plan said so first, in the same words.
    assert_eq!(plan["run_would_fail"].as_str(), Some(message), "{plan}");
    for said in [
        "no API key",
        "ZHI_API_KEY",
        "`env` setting",
        "-e ZHI_API_KEY=",
        "~/.config/zhi/config.yaml",
    ] {
        assert!(message.contains(said), "{said}: {message}");
    }
    assert!(!message.contains("export "), "{message}");
    assert!(!env.path("out/.zhi/runs").exists(), "a run was started");
    assert!(s.close().success());
}
