//! The reliability findings (hostile servers, hostile folders, full disks): each test here
//! reproduces one attack that once got through and checks that it no longer does.

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::testenv::{
    TestEnv, assert_exit, assert_exit_for, records_by_input, stderr, stdout,
};
use crate::support::testenv::{files_under, output_within, record, run_skill as run, show};
use serde_json::json;
use zhi::exit::Exit;

const FAST: &str = "retry: {max_attempts: 3, base_delay_ms: 5, max_delay_ms: 10}\n";

fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", FAST);
    env
}

#[test]
fn an_endless_response_body_fails_its_job_and_the_run_goes_on() {
    let env = env();
    env.write("docs/a.txt", "The board approved the budget.\n");
    env.write("docs/b.txt", "The plant opens in May.\n");
    let api = FakeApi::start(|req| {
        if req.document_text().contains("budget") {
            Reply::Endless
        } else {
            Reply::text("# Summary\n\nA plant opens in May.")
        }
    });
    let out = run(&env, &api, "summarize", &["docs"]);
    assert_exit(&out, Exit::JobsFailed);
    let bad = record(&env, "docs/a.txt");
    assert_eq!(bad["error"]["kind"], "api_error", "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("response body is larger than"),
        "{bad}"
    );
    // Not retried: the same request would get the same flood.
    assert_eq!(bad["attempts"], 1, "{bad}");
    assert_eq!(record(&env, "docs/b.txt")["status"], "succeeded");
    // Read up to the cap (a multiple of the answer's length limit), not without end.
    let streamed = api.bytes_streamed();
    assert!(streamed < 64 << 20, "{streamed} bytes were streamed");
    assert!(env.path("out/manifest.json").exists());
}

#[test]
fn a_huge_tool_call_is_refused_before_it_is_read_or_sent_back() {
    let env = env();
    env.write("docs/a.txt", "The board approved the budget.\n");
    env.project_skill(
        "notes-and-facts.yaml",
        "name: notes-and-facts\ndescription: Notes and facts\nsystem_prompt: Write notes and facts.\n\
         tools: [file_read, file_write]\nmax_turns: 5\noutput:\n  files: [notes.md, facts.json]\n",
    );
    let huge = "x".repeat(40 << 20);
    let api = FakeApi::always(Reply::tool_calls(vec![(
        "file_write",
        json!({"path": "notes.md", "content": huge}),
    )]));
    let out = run(&env, &api, "notes-and-facts", &["docs/a.txt"]);
    assert_exit(&out, Exit::JobsFailed);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["error"]["kind"], "api_error", "{r}");
    // One request: the flood is neither retried nor sent back in a next turn.
    assert_eq!(api.chat_requests().len(), 1);
    assert!(!env.path("out/notes-and-facts/docs/a.txt/notes.md").exists());
}

#[test]
fn file_names_cannot_drive_the_terminal_or_forge_log_lines() {
    let env = env();
    // A window-title sequence, a colour, a bell, a carriage return and a newline that would
    // start a forged log line.
    let name = "docs/x\u{1b}]0;pwned\u{7}\u{1b}[31m\r\n ERROR forged line.txt";
    env.write(name, "The board approved the budget.\n");
    let api = FakeApi::always(Reply::text("# Summary\n\nThe budget was approved."));
    let base = api.base_url();
    let out = env
        .zhi()
        .args([
            "--no-progress",
            "-vv",
            "run",
            "summarize",
            "docs",
            "-o",
            "out",
        ])
        .args(["--base-url", &base])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let err = stderr(&out);
    assert!(err.contains("forged line"), "the job is logged: {err}");
    for bad in ['\u{1b}', '\u{7}', '\r'] {
        assert!(!err.contains(bad), "{bad:?} reached the terminal: {err:?}");
    }
    assert!(
        !err.lines()
            .any(|l| l.trim_start().starts_with("ERROR forged")),
        "a log line was forged: {err}"
    );
}

/// A notes skill run as an agent (two declared outputs, so not direct).
fn agent_skill(env: &TestEnv) {
    env.project_skill(
        "notes-and-facts.yaml",
        "name: notes-and-facts\ndescription: Notes and facts\nsystem_prompt: Write notes and facts.\n\
         tools: [file_read, file_write]\nmax_turns: 40\noutput:\n  files: [notes.md, facts.json]\n",
    );
}

#[test]
fn a_job_that_writes_without_end_fails_at_the_files_limit() {
    let env = env();
    env.write("docs/a.txt", "The board approved the budget.\n");
    agent_skill(&env);
    // Every turn writes 60 new files.
    let api = FakeApi::start(|req| {
        let base = req.seq * 60;
        Reply::tool_calls(
            (0..60)
                .map(|i| {
                    (
                        "file_write",
                        json!({"path": format!("part-{}.md", base + i), "content": "x"}),
                    )
                })
                .collect(),
        )
    });
    let out = run(&env, &api, "notes-and-facts", &["docs/a.txt"]);
    assert_exit(&out, Exit::JobsFailed);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["error"]["kind"], "too_large", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("more than 1000 files"),
        "{r}"
    );
    // Stopped at the limit: the turn that crossed it was the last, and the calls of that turn,
    // written concurrently, did not pass it together.
    assert!(api.chat_requests().len() <= 1000 / 60 + 1);
    let kept = files_under(&env.path("out/.zhi/failed")).len();
    assert!((1000..=1001).contains(&kept), "{kept} files were written");
    assert!(!env.path("out/notes-and-facts/docs/a.txt").exists());
}

#[test]
fn a_final_answer_cut_at_the_length_limit_is_not_saved() {
    let env = env();
    env.write("docs/a.txt", "The board approved the budget.\n");
    env.project_skill(
        "answer.yaml",
        "name: answer\ndescription: Answer\nsystem_prompt: Answer.\ntools: [file_read]\nmax_turns: 3\n",
    );
    let api = FakeApi::always(Reply::completion(
        json!({"role": "assistant", "content": "The budget was approved and the"}),
        "length",
    ));
    let out = run(&env, &api, "answer", &["docs/a.txt"]);
    assert_exit(&out, Exit::JobsFailed);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["error"]["kind"], "truncated", "{r}");
    assert!(!env.path("out/answer/docs/a.txt/response.md").exists());
}

#[test]
fn a_name_with_a_text_direction_override_is_refused() {
    let env = env();
    env.write("docs/a.txt", "The board approved the budget.\n");
    agent_skill(&env);
    let api = FakeApi::sequence(vec![
        Reply::tool_calls(vec![(
            "file_write",
            json!({"path": "notes\u{202E}dm.exe", "content": "x"}),
        )]),
        Reply::tool_calls(vec![
            (
                "file_write",
                json!({"path": "notes.md", "content": "# Notes\n\nApproved."}),
            ),
            (
                "file_write",
                json!({"path": "facts.json", "content": {"approved": true}}),
            ),
        ]),
    ]);
    let out = run(&env, &api, "notes-and-facts", &["docs/a.txt"]);
    assert_exit(&out, Exit::Success);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["refused_tool_calls"], 1, "{r}");
    let names: Vec<String> = std::fs::read_dir(env.path("out/notes-and-facts/docs/a.txt"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains('\u{202E}')), "{names:?}");
}

#[test]
fn results_csv_cells_are_never_formulas() {
    let env = env();
    env.write(
        "=HYPERLINK(\"http://x\").txt",
        "The board approved the budget.\n",
    );
    env.write("@SUM(A1).txt", "The plant opens in May.\n");
    let api = FakeApi::always(Reply::text("# Summary\n\nApproved."));
    let out = run(
        &env,
        &api,
        "summarize",
        &["=HYPERLINK(\"http://x\").txt", "@SUM(A1).txt"],
    );
    assert_exit(&out, Exit::Success);
    let runs = env.path("out/.zhi/runs");
    let run_dir = std::fs::read_dir(&runs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut reader = csv::Reader::from_path(run_dir.join("results.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    let input = headers.iter().position(|h| h == "input").unwrap();
    let mut seen = 0;
    for row in reader.records() {
        let row = row.unwrap();
        for cell in row.iter() {
            assert!(
                !cell.starts_with(['=', '+', '-', '@']),
                "a cell a spreadsheet reads as a formula: {cell}"
            );
        }
        assert!(row[input].starts_with('\''), "{:?}", &row[input]);
        seen += 1;
    }
    assert_eq!(seen, 2);
}

#[test]
fn names_that_differ_only_in_non_utf8_bytes_stay_separate_jobs() {
    use std::os::unix::ffi::OsStrExt;
    let env = env();
    let docs = env.path("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for (name, text) in [
        (&b"x\xff.txt"[..], "The board approved the budget.\n"),
        (&b"x\xfe.txt"[..], "The plant opens in May.\n"),
        (
            &b"x\\xff.txt"[..],
            "A backslash, then xff, in a valid name.\n",
        ),
    ] {
        std::fs::write(docs.join(std::ffi::OsStr::from_bytes(name)), text).unwrap();
    }
    let api = FakeApi::always(Reply::text("# Summary\n\nDone."));
    let out = run(&env, &api, "summarize", &["docs"]);
    assert_exit(&out, Exit::Success);
    let records = records_by_input(&env.path("out"));
    assert_eq!(records.len(), 3, "{records:?}");
    let ids: std::collections::BTreeSet<_> =
        records.values().map(|r| r["job_id"].to_string()).collect();
    assert_eq!(ids.len(), 3);
    let folders: Vec<_> = std::fs::read_dir(env.path("out/summarize/docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(folders.len(), 3, "{folders:?}");
    // Each document reached the model once, under its own name.
    assert_eq!(api.chat_requests().len(), 3);
}

#[test]
fn a_server_that_echoes_the_key_never_gets_it_written_or_printed() {
    const KEY: &str = "sk-echo-3f9a1c77e2";
    let env = env();
    env.write("docs/a.txt", "The board approved the budget.\n");
    env.write("docs/b.txt", "The plant opens in May.\n");
    agent_skill(&env);
    // a.txt: the key in tool arguments and in written files, then a failure (the files
    // stay in the failed staging folder); b.txt: the key in written files, a success.
    let api = FakeApi::start(|req| {
        let key = req.bearer().unwrap_or("").to_string();
        if req.document_text().contains("budget") {
            Reply::tool_calls(vec![(
                "file_write",
                json!({"path": format!("notes-{key}.md"), "content": format!("key {key}")}),
            )])
        } else {
            Reply::tool_calls(vec![
                (
                    "file_write",
                    json!({"path": "notes.md", "content": format!("# Notes\n\nkey {key}")}),
                ),
                (
                    "file_write",
                    json!({"path": "facts.json", "content": {"key": key}}),
                ),
            ])
        }
    });
    let base = api.base_url();
    let out = env
        .zhi()
        .env("ZHI_API_KEY", KEY)
        .args([
            "--no-progress",
            "-vv",
            "run",
            "notes-and-facts",
            "docs",
            "-o",
            "out",
        ])
        .args(["--base-url", &base])
        .output()
        .unwrap();
    assert_exit(&out, Exit::JobsFailed);
    assert!(
        api.requests().iter().any(|r| r.bearer() == Some(KEY)),
        "the key was sent"
    );
    let printed = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!printed.contains(KEY), "printed: {printed}");
    let all = files_under(&env.path("out"));
    assert!(all.len() > 4, "{all:?}");
    for f in all {
        assert!(!f.to_string_lossy().contains(KEY), "{}", f.display());
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "{} holds the key",
            f.display()
        );
    }
    assert_eq!(record(&env, "docs/b.txt")["status"], "succeeded");
}

#[test]
fn links_planted_in_the_output_folder_are_never_followed() {
    let env = env();
    env.write("docs/a.txt", "The board approved the budget.\n");
    let api = FakeApi::always(Reply::text("# Summary\n\nApproved."));
    let outside = env.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let out = env.path("out");
    std::fs::create_dir_all(&out).unwrap();

    // The skill's folder as a link: the job fails, nothing lands outside.
    std::os::unix::fs::symlink("../outside", out.join("summarize")).unwrap();
    let o = run(&env, &api, "summarize", &["docs/a.txt"]);
    assert_exit(&o, Exit::JobsFailed);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["error"]["kind"], "io", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is a link"),
        "{r}"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    std::fs::remove_file(out.join("summarize")).unwrap();

    // zhi's own folders as links: the run refuses to start, naming the link.
    std::fs::remove_dir_all(out.join(".zhi")).unwrap();
    for planted in [".zhi", ".zhi/runs", ".zhi/staging"] {
        let _ = std::fs::remove_dir_all(out.join(".zhi"));
        let link = out.join(planted);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        let up = "../".repeat(planted.matches('/').count() + 1);
        std::os::unix::fs::symlink(format!("{up}outside"), &link).unwrap();
        let o = run(&env, &api, "summarize", &["docs/a.txt"]);
        assert_exit_for(&o, Exit::Usage, planted);
        assert!(stderr(&o).contains("is a link"), "{planted}: {}", show(&o));
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            0,
            "{planted}: something was written outside"
        );
        std::fs::remove_file(&link).unwrap();
    }
}

/// `.zhi/runs` swapped for a link to outside after the run made and checked its folders (while
/// it asks the server what it is) and before its records begin: the run's folder is reached
/// beneath the output folder's handle, so the run refuses (exit 2), naming the link, and
/// nothing lands outside.
#[test]
fn a_runs_folder_swapped_for_a_link_before_the_records_begin_writes_nothing_outside() {
    let env = env();
    env.write("docs/a.txt", "The board approved the budget.\n");
    let outside = env.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let runs = env.path("out/.zhi/runs");
    let swap = std::sync::Once::new();
    let (to, link) = (outside.clone(), runs.clone());
    let api = FakeApi::server(move |req| {
        if req.is_probe() {
            swap.call_once(|| {
                std::fs::remove_dir_all(&link).unwrap();
                std::os::unix::fs::symlink(&to, &link).unwrap();
            });
            return Reply::status(404, json!({"error": "no"}));
        }
        Reply::text("# Summary\n\nApproved.")
    });
    let o = run(&env, &api, "summarize", &["docs/a.txt"]);
    assert!(
        std::fs::symlink_metadata(&runs).is_ok_and(|m| m.file_type().is_symlink()),
        "the swap did not happen: {}",
        show(&o)
    );
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "something was written outside: {:?} {}",
        files_under(&outside),
        show(&o)
    );
    assert_exit(&o, Exit::Usage);
    assert!(stderr(&o).contains("is a link"), "{}", show(&o));
    assert!(stderr(&o).contains(".zhi/runs"), "{}", show(&o));
    assert!(api.chat_requests().is_empty());
}

#[test]
fn a_commit_journal_left_by_a_kill_after_the_record_is_removed_by_the_next_run() {
    let env = env();
    env.write("docs/a.txt", "The board approved the budget.\n");
    let api = FakeApi::always(Reply::text("# Summary\n\nApproved."));
    let o = run(&env, &api, "summarize", &["docs/a.txt"]);
    assert_exit(&o, Exit::Success);
    let r = record(&env, "docs/a.txt");
    // What a kill between the record and the journal's removal leaves: the journal.
    let journal = env
        .path("out/.zhi/commits")
        .join(format!("{}.json", r["job_id"].as_str().unwrap()));
    std::fs::create_dir_all(journal.parent().unwrap()).unwrap();
    std::fs::write(&journal, serde_json::to_vec(&r).unwrap()).unwrap();
    let o = run(&env, &api, "summarize", &["docs/a.txt"]);
    assert_exit(&o, Exit::Success);
    assert_eq!(record(&env, "docs/a.txt")["status"], "cached");
    assert!(!journal.exists(), "the journal outlived its record");
    assert_eq!(api.chat_requests().len(), 1);
}

#[test]
fn devices_and_fifos_named_as_inputs_fail_their_own_jobs_at_once() {
    let env = env();
    env.write("docs/a.txt", "The board approved the budget.\n");
    let fifo = env.path("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let api = FakeApi::always(Reply::text("# Summary\n\nApproved."));
    let base = api.base_url();
    // Killed after 30 s: a hang on the device or the FIFO fails the test.
    let o = output_within(
        env.zhi()
            .args(["--no-progress", "run", "summarize", "/dev/zero", "pipe"])
            .args(["docs/a.txt", "--base-url", &base, "-o", "out"]),
        30,
    );
    assert_exit(&o, Exit::JobsFailed);
    let records = records_by_input(&env.path("out"));
    let zero = &records["/dev/zero"];
    assert_eq!(zero["error"]["kind"], "input_error", "{zero}");
    assert!(
        zero["error"]["message"]
            .as_str()
            .unwrap()
            .contains("character device")
    );
    let pipe = &records["pipe"];
    assert!(
        pipe["error"]["message"].as_str().unwrap().contains("FIFO"),
        "{pipe}"
    );
    assert_eq!(records["docs/a.txt"]["status"], "succeeded");
    assert_eq!(api.chat_requests().len(), 1);
}

#[test]
fn a_signal_while_inputs_are_hashed_ends_the_run_at_once() {
    let env = env();
    // A 64 GB sparse file: hashing it takes minutes, reading it costs no disk.
    let big = env.path("docs/big.txt");
    std::fs::create_dir_all(big.parent().unwrap()).unwrap();
    std::fs::File::create(&big)
        .unwrap()
        .set_len(64 << 30)
        .unwrap();
    let api = FakeApi::always(Reply::text("# Summary\n\nNothing."));
    let base = api.base_url();
    let mut child = env
        .zhi_process()
        .args([
            "--no-progress",
            "run",
            "summarize",
            "docs",
            "--base-url",
            &base,
            "-o",
            "out",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The run holds its lock once its signal handlers are about to be set: then wait a
    // little more and signal.
    let lock = env.path("out/.zhi/lock");
    let start = std::time::Instant::now();
    while !lock.exists() && start.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(700));
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let signalled = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if signalled.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            panic!("SIGTERM while hashing was ignored");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    assert_exit(&o, Exit::Terminated);
    assert!(env.path("out/manifest.json").exists(), "{}", show(&o));
    assert_eq!(api.chat_requests().len(), 0);
}

#[test]
fn a_document_swapped_for_a_link_after_planning_is_not_sent() {
    let env = env();
    env.write("docs/a.txt", "The board approved the budget.\n");
    let b = env.write("docs/b.txt", "The plant opens in May.\n");
    let secret = env.write("secret.txt", "TOP SECRET: the root password is hunter2.\n");
    // While a.txt is being asked, b.txt (planned and hashed already) becomes a link to a
    // file that was never an input.
    let api = FakeApi::start(move |req| {
        if req.document_text().contains("budget")
            && std::fs::symlink_metadata(&b).is_ok_and(|m| !m.file_type().is_symlink())
        {
            std::fs::remove_file(&b).unwrap();
            std::os::unix::fs::symlink(&secret, &b).unwrap();
        }
        Reply::text("# Summary\n\nDone.")
    });
    let out = run(&env, &api, "summarize", &["docs", "-j", "1"]);
    assert_exit(&out, Exit::JobsFailed);
    for req in api.requests() {
        assert!(
            !req.body_text.contains("TOP SECRET"),
            "the swapped-in file was sent"
        );
    }
    let r = record(&env, "docs/b.txt");
    assert_eq!(r["error"]["kind"], "input_error", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("changed after the run was planned"),
        "{r}"
    );
    assert_eq!(record(&env, "docs/a.txt")["status"], "succeeded");
}

#[test]
fn fifos_planted_among_zhis_own_records_do_not_hang_a_run() {
    let env = env();
    env.write("docs/a.txt", "The board approved the budget.\n");
    let old = env.path("out/.zhi/runs/20200101T000000.000Z");
    std::fs::create_dir_all(&old).unwrap();
    for name in ["results.jsonl", "manifest.json"] {
        let made = std::process::Command::new("mkfifo")
            .arg(old.join(name))
            .status()
            .unwrap();
        assert!(made.success());
    }
    let api = FakeApi::always(Reply::text("# Summary\n\nApproved."));
    let base = api.base_url();
    // Killed after 30 s: a hang on a planted FIFO fails the test.
    let o = output_within(
        env.zhi()
            .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
            .args(["--base-url", &base]),
        30,
    );
    assert_exit(&o, Exit::Success);
    assert!(env.path("out/summarize/docs/a.txt/summary.md").exists());
}

/// An output folder that is, or would shadow, a settings file, or lies inside another output
/// folder's records (`.zhi/`), however it is named (a flag, `ZHI_OUTPUT_DIR`, a link), is
/// refused by `run` and `plan` alike: exit 2 naming the folder and why, before anything is
/// planned, made or sent. Before, `-o zhi.yaml` left a folder that stopped every later
/// command there, and `-o main/.zhi/runs` made `zhi status main` count runs that were not
/// its own (issue 47).
#[test]
fn an_output_folder_in_place_of_a_settings_file_or_inside_records_is_refused() {
    let env = TestEnv::new();
    env.write("docs/a.txt", "The board approved the budget.\n");
    let api = FakeApi::always(Reply::text("# Summary\n\nApproved."));
    let base = api.base_url();
    let o = env
        .zhi()
        .args(["--no-progress", "run", "summarize", "docs", "-o", "main"])
        .args(["--base-url", &base])
        .output()
        .unwrap();
    assert_exit(&o, Exit::Success);
    std::os::unix::fs::symlink("main/.zhi", env.path("records")).unwrap();
    let user_file = env.home.join(".config/zhi/config.yaml");
    let settings = "where zhi reads a settings file";
    let records = "where zhi keeps an output folder's records";
    let cases = [
        ("zhi.yaml", settings),
        ("sub/zhi.yaml", settings),
        ("zhi.yaml/out", settings),
        (user_file.to_str().unwrap(), settings),
        ("main/.zhi", records),
        ("main/.zhi/runs", records),
        ("records/runs", records),
        (".zhi/skills", records),
    ];
    for (output, reason) in cases {
        for command in ["plan", "run"] {
            let case = format!("{command} -o {output}");
            let o = env
                .zhi()
                .args(["--no-progress", command, "summarize", "docs", "-o", output])
                .args(["--base-url", &base])
                .output()
                .unwrap();
            assert_exit_for(&o, Exit::Usage, &case);
            let err = stderr(&o);
            assert!(err.contains("cannot be the output folder"), "{case}: {err}");
            assert!(err.contains(reason), "{case}: {err}");
            assert!(
                err.contains(output.trim_start_matches("./")),
                "{case}: {err}"
            );
        }
    }
    // Through the environment too.
    let o = env
        .zhi()
        .env("ZHI_OUTPUT_DIR", "main/.zhi/runs/x")
        .args([
            "--no-progress",
            "run",
            "summarize",
            "docs",
            "--base-url",
            &base,
        ])
        .output()
        .unwrap();
    assert_exit(&o, Exit::Usage);
    assert!(stderr(&o).contains(records), "{}", show(&o));

    assert_eq!(
        api.chat_requests().len(),
        1,
        "only the first run sent anything"
    );
    for made in ["zhi.yaml", "sub", ".zhi"] {
        assert!(!env.path(made).exists(), "{made} was made");
    }
    assert!(!user_file.exists());
    let runs: Vec<_> = std::fs::read_dir(env.path("main/.zhi/runs"))
        .unwrap()
        .collect();
    assert_eq!(runs.len(), 1);
    // Every command still works in the folder, and `main` has its one run.
    let o = env
        .zhi()
        .args(["--json", "status", "main"])
        .output()
        .unwrap();
    assert_exit(&o, Exit::Success);
    let state: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(state["runs"], 1, "{state}");
}
