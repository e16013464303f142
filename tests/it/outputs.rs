//! Honest results (docs/skills.md#declared-outputs, docs/skills.md#direct-mode,
//! docs/model-api.md#knowing-the-server, docs/outputs.md#transcripts): a job succeeds only
//! with the files its skill declares, a direct skill costs one request, and every job can be
//! explained from its transcript.

use crate::support::FILLER;
use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, assert_exit, assert_exit_for, stderr, stdout};
use crate::support::testenv::{files_under, record, run_skill as run, show};
use serde_json::{Value, json};
use zhi::exit::Exit;

const FAST: &str = "retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n";

fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", FAST);
    env
}

/// A two-file agent skill: it runs the loop (two declared outputs), with write and read tools.
fn two_file_skill(env: &TestEnv) {
    env.project_skill(
        "notes-and-facts.yaml",
        "name: notes-and-facts\ndescription: Notes and facts\nsystem_prompt: Write notes and facts.\n\
         tools: [file_read, file_write]\nmax_turns: 5\noutput:\n  files: [notes.md, facts.json]\n",
    );
}

#[test]
fn a_model_that_only_claims_its_files_ends_missing_output() {
    let env = env();
    env.write("docs/a.txt", "Q3 revenue rose 12%, driven by exports.\n");
    two_file_skill(&env);
    let api = FakeApi::always(Reply::text("I wrote notes.md and facts.json."));
    let out = run(&env, &api, "notes-and-facts", &["docs/a.txt"]);
    assert_exit(&out, Exit::JobsFailed);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["error"]["kind"], "missing_output", "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("notes.md") && message.contains("facts.json"),
        "{message}"
    );
    // The answer, then one corrective turn that names what is missing.
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 2);
    let corrective = reqs[1].last_user_text().unwrap();
    assert!(
        corrective.contains("notes.md") && corrective.contains("facts.json"),
        "{corrective}"
    );
    assert!(reqs[1].tools_offered().contains(&"file_write".to_string()));
    assert!(!env.path("out/notes-and-facts/docs/a.txt").exists());
    assert!(stderr(&out).contains("missing_output"), "{}", show(&out));
}

#[test]
fn a_direct_skill_that_only_claims_the_summary_ends_missing_output() {
    let env = env();
    env.write("docs/a.txt", "Q3 revenue rose 12%, driven by exports.\n");
    let api = FakeApi::always(Reply::text(
        "I wrote summary-2.md: Q3 revenue rose 12%, driven by exports.",
    ));
    let out = run(&env, &api, "summarize", &["docs/a.txt"]);
    assert_exit(&out, Exit::JobsFailed);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["error"]["kind"], "missing_output", "{r}");
    assert_eq!(
        api.chat_requests().len(),
        2,
        "one answer, one corrective request"
    );
    assert!(!env.path("out/summarize/docs/a.txt").exists());
}

#[test]
fn a_plain_answer_is_the_declared_file_in_one_request_without_tools() {
    let env = env();
    env.write(
        "docs/a.txt",
        "Q3 revenue rose 12%, driven by exports. Costs were flat.\n",
    );
    env.write("docs/b.txt", "第三季度营收增长百分之十二。\n");
    let api = FakeApi::start(|req: &Recorded| {
        if req.document_text().contains("第三季度") {
            Reply::text("```markdown\n# 摘要\n\n营收增长。\n```")
        } else {
            Reply::text("# Q3\n\nRevenue rose 12% on exports.")
        }
    });
    let out = run(&env, &api, "summarize", &["docs", "-j", "1"]);
    assert_exit(&out, Exit::Success);
    assert_eq!(
        std::fs::read_to_string(env.path("out/summarize/docs/a.txt/summary.md")).unwrap(),
        "# Q3\n\nRevenue rose 12% on exports.\n"
    );
    // The wrapping code fence is removed.
    assert_eq!(
        std::fs::read_to_string(env.path("out/summarize/docs/b.txt/summary.md")).unwrap(),
        "# 摘要\n\n营收增长。\n"
    );
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 2, "one request per document");
    // Summarize's one message: the instruction, a blank line, the text; no system prompt.
    const ASK: &str = "Summarize the following text in two to four sentences: what it is about, what it proposes, and what it finds. Answer with the summary only.";
    for req in &reqs {
        assert!(
            req.tools_offered().is_empty(),
            "direct requests offer no tools"
        );
        assert!(req.is_one_message(), "{:?}", req.messages());
        assert_eq!(req.messages().len(), 1, "{:?}", req.messages());
    }
    let en = reqs
        .iter()
        .find(|r| r.document_text().starts_with("Q3 revenue"))
        .unwrap();
    assert_eq!(
        en.first_user_text(),
        format!("{ASK}\n\nQ3 revenue rose 12%, driven by exports. Costs were flat.\n")
    );
    // The Chinese document is answered in Chinese: summarize's instruction for Chinese asks
    // in Chinese.
    let zh = reqs
        .iter()
        .find(|r| r.document_text().contains("第三季度"))
        .unwrap();
    assert_eq!(
        zh.first_user_text(),
        "用两到四句话总结以下文本：它讲的是什么、提出了什么、得出了什么。只回答总结本身。\n\n\
         第三季度营收增长百分之十二。\n"
    );
    let r = record(&env, "docs/a.txt");
    assert_eq!(
        (r["requests"].as_u64(), r["turns"].as_u64()),
        (Some(1), Some(1)),
        "{r}"
    );
}

#[test]
fn a_copy_of_the_input_is_not_a_summary() {
    let env = env();
    let doc = "The board met on Monday. It approved the budget of 4.2 million for the year, \
               a new plant in Suzhou with 200 jobs, and a dividend of 0.30 per share in May.\n";
    env.write("docs/a.txt", doc);
    let api = FakeApi::start(|req: &Recorded| {
        let text = req.document_text();
        assert!(text.starts_with("The board met"), "{text}");
        Reply::text(format!("# Summary\n\n{text}"))
    });
    let out = run(&env, &api, "summarize", &["docs/a.txt"]);
    assert_exit(&out, Exit::JobsFailed);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["error"]["kind"], "missing_output", "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("copy"),
        "{r}"
    );
}

#[test]
fn writing_the_declared_files_ends_the_job_in_one_request() {
    let env = env();
    env.write("docs/a.txt", "Q3 revenue rose 12%.\n");
    two_file_skill(&env);
    let api = FakeApi::always(Reply::tool_calls(vec![
        (
            "file_write",
            json!({"path": "notes.md", "content": "# Notes\n\nRevenue rose.\n"}),
        ),
        (
            "file_write",
            json!({"path": "facts.json", "content": {"revenue_growth": "12%"}}),
        ),
    ]));
    let out = run(&env, &api, "notes-and-facts", &["docs/a.txt"]);
    assert_exit(&out, Exit::Success);
    assert_eq!(api.chat_requests().len(), 1, "no confirmation turn");
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["status"], "succeeded", "{r}");
    assert_eq!(r["outputs"].as_array().unwrap().len(), 2, "{r}");
}

#[test]
fn a_second_write_of_a_declared_name_gets_a_name_zhi_picks() {
    let env = env();
    env.write("docs/a.txt", "Q3 revenue rose 12%.\n");
    env.project_skill(
        "twice.yaml",
        "name: twice\ndescription: Writes twice\nsystem_prompt: Write.\ntools: [file_write]\nmax_turns: 3\n",
    );
    let api = FakeApi::start(|req: &Recorded| {
        if req.has_tool_result() {
            Reply::text("done")
        } else {
            Reply::tool_calls(vec![
                ("file_write", json!({"path": "out.md", "content": "one"})),
                ("file_write", json!({"path": "out.md", "content": "two"})),
            ])
        }
    });
    let out = run(&env, &api, "twice", &["docs/a.txt"]);
    assert_exit(&out, Exit::Success);
    // The two calls run at once: either may get the name; neither is lost or overwritten.
    let dir = env.path("out/twice/docs/a.txt");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let mut both = [read("out.md"), read("out-2.md")];
    both.sort();
    assert_eq!(both, ["one", "two"]);
    // The results go back in call order, each naming the file it went to.
    let results = api.chat_requests()[1].tool_results();
    for (result, content) in results.iter().zip(["one", "two"]) {
        let named = if read("out.md") == content {
            "wrote `out.md`"
        } else {
            "`out-2.md`"
        };
        assert!(result.content.contains(named), "{results:?}");
    }
}

/// Every job of every run has a transcript; none holds the key, even when the server echoes
/// it; `manifest show` names the failed jobs' transcripts.
#[test]
fn every_job_has_a_transcript_and_none_holds_the_key() {
    const KEY: &str = "sk-test-transcript-77153";
    let env = env();
    env.write("docs/a.txt", "alpha report\n");
    env.write("docs/b.txt", "beta report\n");
    env.write("docs/c.txt", "gamma report\n");
    let api = FakeApi::start(|req: &Recorded| {
        let key = req.bearer().unwrap_or("").to_string();
        if req.document_text().contains("gamma") {
            Reply::zhipu_error(400, "1301", "blocked")
        } else {
            Reply::text(format!("Summary (server saw {key})."))
        }
    });
    for round in 0..2 {
        let out = env
            .zhi()
            .env("ZHI_API_KEY", KEY)
            .args(["--no-progress", "run", "summarize", "docs", "--base-url"])
            .arg(api.base_url())
            .args(["-o", "out"])
            .output()
            .unwrap();
        assert_exit_for(&out, Exit::JobsFailed, format!("round {round}"));
        assert!(!stderr(&out).contains(KEY));
        if round == 0 {
            assert!(stderr(&out).contains("transcript"), "{}", show(&out));
        }
    }
    // Both runs: every record names an existing transcript without the key.
    let runs = env.path("out/.zhi/runs");
    let mut seen = 0;
    for run in std::fs::read_dir(&runs).unwrap() {
        let results = run.unwrap().path().join("results.jsonl");
        for line in std::fs::read_to_string(results).unwrap().lines() {
            let r: Value = serde_json::from_str(line).unwrap();
            let t = env
                .path("out")
                .join(r["transcript"].as_str().expect("a transcript"));
            let text =
                std::fs::read_to_string(&t).unwrap_or_else(|e| panic!("{}: {e}", t.display()));
            assert!(!text.is_empty());
            assert!(!text.contains(KEY), "{}", t.display());
            seen += 1;
        }
    }
    assert_eq!(
        seen, 6,
        "three jobs in each of two runs (the second cached two)"
    );
    for entry in files_under(&env.path("out/.zhi")) {
        if let Ok(text) = std::fs::read_to_string(&entry) {
            assert!(!text.contains(KEY), "{} holds the key", entry.display());
        }
    }
    let show_out = env
        .zhi()
        .args(["manifest", "show", "-o", "out"])
        .output()
        .unwrap();
    let text = format!("{}{}", stdout(&show_out), stderr(&show_out));
    assert!(
        text.contains("docs/c.txt") && text.contains("transcripts/"),
        "{text}"
    );
}

/// A llama.cpp-like server: its `/props` says 1,200 tokens of context and one slot. A
/// document of some 3,000 tokens is split without any configuration, one request at a time.
#[test]
fn the_servers_context_window_drives_splitting() {
    let env = TestEnv::new();
    let para = "The committee reviewed the annual plan and agreed on the next steps for the team. ";
    let doc: String = (0..120)
        .map(|i| format!("Section {i}. {}\n\n", para.repeat(2)))
        .collect();
    env.write("big.txt", &doc);
    let api = FakeApi::server(|req: &Recorded| {
        if req.method == "GET" && req.path == "/props" {
            return Reply::status(
                200,
                json!({"default_generation_settings": {"n_ctx": 1200}, "total_slots": 1}),
            );
        }
        if !req.is_chat() {
            return Reply::status(404, json!({"error": {"message": "no route"}}));
        }
        let size = req.body_text.len();
        if size > 6000 {
            // What llama.cpp says when the window is exceeded.
            return Reply::status(
                400,
                json!({"error": {"code": 400, "message": "request (3100 tokens) exceeds the available context size (1200 tokens), try increasing it", "type": "exceed_context_size_error"}}),
            );
        }
        if req
            .last_user_text()
            .unwrap_or_default()
            .contains("results of")
        {
            // Combining the parts' results: something shorter than them.
            return Reply::text(
                "The committee agreed on its annual plan and the team's next steps.",
            );
        }
        Reply::text(FILLER)
    });
    let out = run(&env, &api, "summarize", &["big.txt"]);
    assert_exit(&out, Exit::Success);
    let r = record(&env, "big.txt");
    assert_eq!(r["status"], "succeeded", "{r}");
    assert!(r["chunks"]["total"].as_u64().unwrap() >= 3, "{r}");
    for req in api.chat_requests() {
        assert!(
            req.body_text.len() <= 6000,
            "a request over the window was sent"
        );
    }
    let m: Value =
        serde_json::from_slice(&std::fs::read(env.path("out/manifest.json")).unwrap()).unwrap();
    assert_eq!(m["server"]["context_window"], 1200, "{m}");
    assert_eq!(
        m["concurrency"]["initial"], 1,
        "one slot, one document in flight: {m}"
    );
    assert!(
        m["base_url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{m}"
    );
}

/// Without `/props` the window is unknown; llama.cpp's "exceeds the available context size"
/// is `context_too_long`, and the document is split after all.
#[test]
fn llama_cpp_context_exceeded_splits_the_document() {
    let env = TestEnv::new();
    env.write("zhi.yaml", "retry: {max_attempts: 1}\n");
    let para = "The committee reviewed the annual plan and agreed on the next steps. ";
    let doc: String = (0..60).map(|i| format!("Part {i}. {para}\n\n")).collect();
    env.write("big.txt", &doc);
    let api = FakeApi::start(|req: &Recorded| {
        if !req.is_chat() {
            return Reply::status(404, json!({"error": {"message": "no route"}}));
        }
        if req.body_text.len() > 3000 {
            return Reply::status(
                400,
                json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error"}}),
            );
        }
        Reply::text(FILLER)
    });
    let out = run(&env, &api, "summarize", &["big.txt"]);
    assert_exit(&out, Exit::Success);
    let r = record(&env, "big.txt");
    assert_eq!(r["status"], "succeeded", "{r}");
    assert!(
        r["chunks"].is_object(),
        "split after the server said so: {r}"
    );
}

const GUIDE: &str = "## Backups\n\nThe backup job runs every night at two and keeps seven days of copies on the second disk.\n\n\
## Signing in\n\nUsers sign in with a password and a one-time code from the authenticator app on their phone.\n\n\
## Logs\n\nLogs are rotated daily. An alert is sent when a disk is more than 80 percent full.\n\n\
## Updates\n\nSecurity updates are installed automatically on Tuesday mornings; other updates wait for a person.\n";

#[test]
fn a_translation_in_the_wrong_language_is_asked_again_and_then_fails() {
    let env = env();
    env.write("docs/guide.md", GUIDE);
    // The model hands back English, lightly reworded: not a copy, but not Chinese.
    let api =
        FakeApi::start(|req: &Recorded| Reply::text(req.document_text().replace("## ", "### ")));
    let out = run(&env, &api, "translate", &["docs/guide.md", "-a", "to=中文"]);
    assert_exit(&out, Exit::JobsFailed);
    let r = record(&env, "docs/guide.md");
    assert_eq!(r["error"]["kind"], "missing_output", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not written in 中文"),
        "{r}"
    );
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 2, "one fresh try, then the job fails");
    // Asked afresh as it was: the instruction names the language, nothing is added after
    // the text.
    assert_eq!(reqs[1].last_user_text(), reqs[0].last_user_text());
    assert!(
        !env.path("out/translate/docs/guide.md/translation.md")
            .exists()
    );
}

#[test]
fn a_translation_that_leaves_most_of_the_document_out_fails_and_a_whole_one_succeeds() {
    let env = env();
    env.write("docs/guide.md", GUIDE);
    env.write("docs/other.md", GUIDE.replace("Backups", "Copies"));
    // guide.md gets a quarter of a translation every time; other.md a quarter, then the
    // whole of it.
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let api = FakeApi::start(move |req: &Recorded| {
        let first = "## 备份\n\n备份任务每晚两点运行，在第二块磁盘上保留七天的副本。\n";
        let whole = "## 备份\n\n备份任务每晚两点运行，在第二块磁盘上保留七天的副本。\n\n\
## 登录\n\n用户使用密码和手机上身份验证器应用生成的一次性代码登录。\n\n\
## 日志\n\n日志每天轮换。当磁盘使用超过百分之八十时会发送警报。\n\n\
## 更新\n\n安全更新在每周二上午自动安装；其他更新等待人工处理。\n";
        let copies = req.document_text().contains("Copies");
        if copies && asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
            Reply::text(whole)
        } else {
            Reply::text(first)
        }
    });
    let out = run(&env, &api, "translate", &["docs", "-a", "to=chinese"]);
    assert_exit(&out, Exit::JobsFailed);
    let bad = record(&env, "docs/guide.md");
    assert_eq!(bad["error"]["kind"], "missing_output", "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("far shorter than the input"),
        "{bad}"
    );
    let good = record(&env, "docs/other.md");
    assert_eq!(good["status"], "succeeded", "{good}");
    assert_eq!(good["requests"], 2, "{good}");
    let text =
        std::fs::read_to_string(env.path("out/translate/docs/other.md/translation.md")).unwrap();
    assert!(text.contains("## 更新"), "{text}");
}

/// A section like the Debian Reference's: commands in plain quotes, a banner printed as text.
const SHELL: &str = "The shell prompt\n\n\
To repeat a command, type \"for x in foo1 foo2 foo3 ; do command ; done\" at the prompt. \
Programs marked setuid root run with the privilege of the root account.\n\n\
The programs included with the Debian GNU/Linux system are free software;\n\
the exact distribution terms for each program are described in the\n\
individual files in /usr/share/doc/*/copyright.\n\n\
Now you are in the shell. The shell interprets your commands and runs the programs you name. \
Each command you type is read, expanded and run, and its output is shown on the screen. \
When you are done, type exit or press Ctrl-D to leave the shell and log out of the system.\n";

const SHELL_ZH: &str = "shell 提示符\n\n\
要重复执行一条命令，在提示符下输入 \"for x in foo1 foo2 foo3 ; do command ; done\"。\
标记为 setuid root 的程序以 root 账户的权限运行。\n\n\
The programs included with the Debian GNU/Linux system are free software;\n\
the exact distribution terms for each program are described in the\n\
individual files in /usr/share/doc/*/copyright.\n\n\
现在你在 shell 中了。shell 解释你的命令并运行你指定的程序。\
你输入的每条命令都会被读取、展开并运行，其输出显示在屏幕上。\
完成后，输入 exit 或按 Ctrl-D 离开 shell 并退出系统。\n";

/// The language of a translation is judged on what the model wrote: a command in plain
/// quotes and a banner kept in English, as the source has them, leave a Chinese translation
/// Chinese (kept, the banner said as a doubt); the same translation with its last paragraph
/// left in English is a half copy, refused twice.
#[test]
fn a_translation_is_judged_on_what_it_translated_and_a_half_copy_is_not() {
    let env = env();
    env.write("docs/shell.txt", SHELL);
    env.write(
        "docs/half.txt",
        SHELL.replace("The shell prompt", "The shell"),
    );
    let api = FakeApi::start(|req: &Recorded| {
        if req.document_text().starts_with("The shell prompt") {
            return Reply::text(SHELL_ZH);
        }
        let (head, _) = SHELL_ZH.split_once("现在").unwrap();
        let (_, tail) = SHELL.split_once("Now you are").unwrap();
        Reply::text(format!("{head}Now you are{tail}"))
    });
    let out = run(&env, &api, "translate", &["docs", "-a", "to=chinese"]);
    assert_exit(&out, Exit::JobsFailed);
    let good = record(&env, "docs/shell.txt");
    assert_eq!(good["status"], "succeeded", "{good}");
    assert_eq!(good["requests"], 1, "{good}");
    let doubts = good["doubts"].to_string();
    assert!(doubts.contains("kept as they are"), "{doubts}");
    assert!(!doubts.contains("setuid"), "{doubts}");
    let half = record(&env, "docs/half.txt");
    assert_eq!(half["error"]["kind"], "missing_output", "{half}");
    assert!(
        half["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not written in chinese"),
        "{half}"
    );
    // What zhi sent: one user message, the instruction before the text.
    for req in api.chat_requests() {
        assert!(req.system_prompt().is_none());
        let user = req.last_user_text().unwrap();
        assert!(
            user.starts_with("Translate the following text into Simplified Chinese."),
            "{user}"
        );
    }
}

#[test]
fn an_answer_that_echoes_its_instructions_is_not_a_result() {
    let env = env();
    env.write(
        "docs/a.txt",
        "The board met on Monday and approved the budget of 4.2 million for the year.\n",
    );
    // What a 0.5B model says when it takes its one message's instruction for the text: the
    // instruction handed back.
    let api = FakeApi::always(Reply::text(
        "In two to four sentences: what it is about, what it proposes, and what it finds. Answer with the summary only.",
    ));
    let out = run(&env, &api, "summarize", &["docs/a.txt"]);
    assert_exit(&out, Exit::JobsFailed);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["error"]["kind"], "missing_output", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("repeats the model's instructions"),
        "{r}"
    );
    // Every request is summarize's one message: the instruction, a blank line and the text,
    // no system prompt (a retry adds its line after the text).
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 2, "one fresh try, then the job fails");
    let first = "Summarize the following text in two to four sentences: what it is about, what it proposes, and what it finds. Answer with the summary only.\n\n\
                 The board met on Monday and approved the budget of 4.2 million for the year.\n";
    for req in &reqs {
        assert_eq!(req.messages().len(), 1, "{:?}", req.messages());
        assert!(req.is_one_message(), "{:?}", req.messages());
        assert!(
            req.first_user_text().starts_with(first),
            "{}",
            req.first_user_text()
        );
    }
    assert_eq!(reqs[0].first_user_text(), first);
}

/// What a 0.5B model wrote for a two-line note: talk about the task, then a "summary" longer
/// than the note. Talk about the task is no result — asked afresh once, then the job fails
/// naming why, in both languages; a summary longer than its source is kept and doubted.
#[test]
fn prompt_talk_is_no_summary_and_a_summary_longer_than_its_note_is_doubted() {
    const NOTE: &str = "Plant opens in May.\nAna leads.\n";
    const TALK: &str = "This task involves summarizing the given text from an English perspective, keeping its meaning and its key facts for the reader. Summary in English: The plant opens in May, and Ana leads it.";
    for lang in ["en", "zh"] {
        let env = env();
        env.write("docs/note.txt", NOTE);
        let api = FakeApi::always(Reply::text(TALK));
        let out = env
            .zhi()
            .env("ZHI_LANGUAGE", lang)
            .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
            .args(["--base-url", &api.base_url()])
            .output()
            .unwrap();
        assert_exit(&out, Exit::JobsFailed);
        assert_eq!(
            api.chat_requests().len(),
            2,
            "asked afresh once: {}",
            show(&out)
        );
        let r = record(&env, "docs/note.txt");
        assert_eq!(r["error"]["kind"], "missing_output", "{r}");
        let said = match lang {
            "en" => "summary.md talks about the task instead of giving the result",
            _ => "summary.md 在谈论任务本身，而没有给出结果",
        };
        assert!(stderr(&out).contains(said), "{}", show(&out));
    }
    // Talk first, then a summary when asked afresh: the summary is the result.
    let fresh = env();
    fresh.write("docs/note.txt", NOTE);
    let api = FakeApi::sequence(vec![
        Reply::text(TALK),
        Reply::text("Plant opens in May, led by Ana."),
    ]);
    let out = run(&fresh, &api, "summarize", &["docs/note.txt"]);
    assert_exit(&out, Exit::Success);
    let r = record(&fresh, "docs/note.txt");
    assert!(r.get("doubts").is_none(), "{r}");
    // A summary that talks past its note is kept, doubted, and said so in both languages.
    for lang in ["en", "zh"] {
        let env = env();
        env.write("docs/note.txt", NOTE);
        let api = FakeApi::always(Reply::text(
            "The note says that the new plant is going to open its doors to the public in the month of May, and that Ana, who knows the site well, is the person who will lead it from then on.",
        ));
        let out = env
            .zhi()
            .env("ZHI_LANGUAGE", lang)
            .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
            .args(["--base-url", &api.base_url()])
            .output()
            .unwrap();
        assert_exit(&out, Exit::Success);
        let r = record(&env, "docs/note.txt");
        assert_eq!(
            (&r["status"], &r["doubts"][0]["check"]),
            (&json!("succeeded"), &json!("longer")),
            "{r}"
        );
        let said = match lang {
            "en" => "      summary.md: longer than its source",
            _ => "      summary.md：比原文还长",
        };
        assert!(stderr(&out).contains(said), "{}", show(&out));
    }
}

/// A comparison is judged against both files it was given: a figure of the second file is not
/// invented, one in neither file is doubted.
#[test]
fn a_comparison_is_judged_against_both_files() {
    const NEW: &str = "Release 2.4\n\nOffline mode keeps the last 30 days of documents. Sync is 40 percent faster on slow networks.\n";
    const OLD: &str = "Release 2.4\n\nOffline mode keeps the last 14 days of documents. Sync is 25 percent faster on slow networks.\n";
    let compared = |answer: &str| {
        let env = env();
        env.write("v/notes.md", NEW);
        env.write("v/notes.old.md", OLD);
        let api = FakeApi::always(Reply::text(answer));
        let out = run(
            &env,
            &api,
            "compare",
            &["v/notes.md", "-a", "file2={dir}/{stem}.old{ext}"],
        );
        assert_exit(&out, Exit::Success);
        let asked = api.chat_requests()[0].first_user_text();
        assert!(
            asked.contains("14 days") && asked.contains("30 days"),
            "{asked}"
        );
        record(&env, "v/notes.md")
    };
    let r = compared(
        "The new notes keep 30 days offline where the old kept 14, and sync is 40 percent faster where it was 25.",
    );
    assert_eq!(r["status"], "succeeded", "{r}");
    assert!(r.get("doubts").is_none(), "{r}");
    let r = compared(
        "The new notes keep 30 days offline where the old kept 14, and sync is 60 percent faster where it was 25.",
    );
    let figures: Vec<&Value> = r["doubts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["check"] == "figures")
        .collect();
    assert_eq!(figures.len(), 1, "{r}");
    let said = figures[0]["detail"].as_str().unwrap();
    assert!(
        said.contains("60") && !said.contains("14") && !said.contains("25"),
        "{said}"
    );
}
