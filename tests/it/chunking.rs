//! Long documents (docs/documents.md#long-documents) against the fake server: split, run,
//! reassemble — never truncated.

use crate::support::FILLER;
use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, assert_exit};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use zhi::exit::Exit;

/// A small model budget so that pieces are small: map pieces hold 80 tokens (one page below),
/// map-reduce pieces 1,200.
/// A wide window and a small answer: a short document fits one request, its answer may not.
const FAST_SMALL_ANSWER: &str = "models:\n  glm-4-flash: {context_window: 8000, max_output: 400}\nretry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n";

const BUDGET: &str = "models:\n  glm-4-flash: {context_window: 4000, max_output: 100}\nretry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n";

/// `n` pages, each starting with a form feed and a marker `MARK-NNN`, about 70 tokens each.
fn pages(n: usize) -> String {
    (1..=n)
        .map(|i| format!("\u{c}MARK-{i:03} {}\n", "lorem ".repeat(44)))
        .collect()
}

fn markers(s: &str) -> Vec<String> {
    s.split_whitespace()
        .filter(|w| w.starts_with("MARK-") || w.starts_with("RESULT-MARK-"))
        .map(str::to_string)
        .collect()
}

fn records(env: &TestEnv, out: &str) -> Vec<Value> {
    env.latest_records(out)
}

/// Each piece's request echoes its page markers into translation.md.
/// A translation of `doc` into Chinese (the default target) as long as its pages: each
/// page's marker, then Chinese text.
fn chinese(doc: &str) -> String {
    markers(doc)
        .iter()
        .map(|m| format!("{m} {}", "这一页的译文保持原来的长度。".repeat(4)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn echo_translator() -> FakeApi {
    FakeApi::start(|r| {
        if r.has_tool_result() {
            return Reply::text("translated this part");
        }
        let m = chinese(&r.document_text());
        Reply::tool_calls(vec![(
            "file_write",
            json!({"path": "translation.md", "content": m}),
        )])
    })
}

#[test]
fn three_hundred_pages_translated_in_order_with_nothing_lost() {
    let env = TestEnv::new();
    env.write("zhi.yaml", BUDGET);
    env.write("book.txt", pages(300));
    let api = echo_translator();
    let out = env
        .zhi()
        .args([
            "run",
            "translate",
            "book.txt",
            "-o",
            "out",
            "-j",
            "8",
            "--no-progress",
            "--base-url",
        ])
        .arg(api.base_url())
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let translation =
        std::fs::read_to_string(env.path("out/translate/book.txt/translation.md")).unwrap();
    let want: Vec<String> = (1..=300).map(|i| format!("MARK-{i:03}")).collect();
    assert_eq!(markers(&translation), want, "every page, once, in order");
    let r = &records(&env, "out")[0];
    assert_eq!(r["status"], "succeeded");
    assert_eq!(r["chunks"]["total"], 300);
    assert_eq!(r["chunks"]["done"], 300);
    // No piece saw more than its budget, and map pieces carry no overlap.
    for req in api.chat_requests() {
        let doc = req.document_text();
        assert!(
            zhi::chunk::tokens(&doc) <= 80 + 2,
            "piece of {} tokens",
            zhi::chunk::tokens(&doc)
        );
        assert!(
            !req.last_user_text()
                .unwrap_or_default()
                .contains("Context: the end of the previous part")
        );
    }
    // Checkpoints are gone once the result is committed.
    assert!(
        !env.path("out/.zhi/checkpoints")
            .join(r["job_id"].as_str().unwrap())
            .exists()
    );
}

#[test]
fn map_reduce_reduce_request_sees_every_piece_result() {
    let env = TestEnv::new();
    env.write("zhi.yaml", BUDGET);
    env.write("report.txt", pages(300));
    let api = FakeApi::start(|r| {
        let user = r.last_user_text().unwrap_or_default();
        if user.contains("results of") {
            return Reply::text(format!(
                "FINAL {}. {FILLER}",
                markers(&r.document_text()).join(" ")
            ));
        }
        let first = markers(&r.document_text())
            .into_iter()
            .find(|m| m.starts_with("MARK-"))
            .unwrap_or_default();
        Reply::text(format!("RESULT-{first}. {FILLER}"))
    });
    let out = env
        .zhi()
        .args([
            "run",
            "summarize",
            "report.txt",
            "-o",
            "out",
            "-j",
            "4",
            "--no-progress",
            "--base-url",
        ])
        .arg(api.base_url())
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let reqs = api.chat_requests();
    let reduce: Vec<&Recorded> = reqs
        .iter()
        .filter(|r| {
            r.last_user_text()
                .unwrap_or_default()
                .contains("results of")
        })
        .collect();
    assert_eq!(reduce.len(), 1, "one reduce pass");
    // The reduce request is framed, with the skill's instructions as its system prompt: its
    // text refers to them.
    let system = reduce[0].system_prompt().unwrap_or_default();
    assert!(system.contains("Summarize the document"), "{system}");
    let pieces = reqs.len() - 1;
    assert!(pieces >= 5, "{pieces} pieces");
    let results = markers(&reduce[0].document_text());
    assert_eq!(
        results.len(),
        pieces,
        "every piece's result is in the reduce request: {results:?}"
    );
    // Direct pieces carry no overlap from the previous piece: a small model takes it for its
    // task and echoes it.
    let with_overlap = reqs
        .iter()
        .filter(|r| {
            r.last_user_text()
                .unwrap_or_default()
                .contains("Context: the end of the previous part")
        })
        .count();
    assert_eq!(with_overlap, 0);
    // Each piece is asked in summarize's one message: the instruction, then the piece's text;
    // from the second piece on, the end of the piece before named as context first.
    for r in reqs.iter().filter(|r| !std::ptr::eq(*r, reduce[0])) {
        assert!(r.is_one_message(), "{:?}", r.messages());
        let text = r.first_user_text();
        let first = markers(&r.document_text()).contains(&"MARK-001".to_string());
        let asked = match text.strip_prefix("For context only, the text before it ends: ") {
            Some(rest) => rest.split_once("\n\n").map_or("", |(_, r)| r),
            None => &text,
        };
        assert_eq!(!first, asked.len() < text.len(), "{text}");
        assert!(asked.starts_with("Summarize the following text"), "{text}");
    }
    // The reduce request is framed: the pieces' results as one document.
    assert!(
        reduce[0].first_user_text().contains(&format!(
            "--- BEGIN DOCUMENT report.txt (results of {pieces} parts) ---"
        )),
        "{}",
        reduce[0].first_user_text()
    );
    let summary = std::fs::read_to_string(env.path("out/summarize/report.txt/summary.md")).unwrap();
    assert!(summary.starts_with("FINAL RESULT-MARK-001"), "{summary}");
}

#[test]
fn failure_at_piece_15_of_66_then_rerun_sends_only_missing_pieces() {
    let env = TestEnv::new();
    env.write("zhi.yaml", BUDGET);
    env.write("manual.txt", pages(66));
    let fail = Arc::new(Mutex::new(true));
    let f2 = fail.clone();
    let api = FakeApi::start(move |r| {
        if r.has_tool_result() {
            return Reply::text("done");
        }
        let doc = r.document_text();
        if doc.contains("MARK-015") && *f2.lock().unwrap() {
            return Reply::zhipu_error(400, "1301", "sensitive content");
        }
        Reply::tool_calls(vec![(
            "file_write",
            json!({"path": "translation.md", "content": chinese(&doc)}),
        )])
    });
    let run = |env: &TestEnv| {
        env.zhi()
            .args([
                "run",
                "translate",
                "manual.txt",
                "-o",
                "out",
                "-j",
                "1",
                "--no-progress",
                "--base-url",
            ])
            .arg(api.base_url())
            .output()
            .unwrap()
    };
    let out = run(&env);
    assert_exit(&out, Exit::JobsFailed);
    let r = &records(&env, "out")[0];
    assert_eq!(r["status"], "failed");
    assert_eq!(r["error"]["kind"], "content_filter");
    assert_eq!(r["chunks"]["total"], 66);
    assert_eq!(r["chunks"]["done"], 14);
    let first_run = api.chat_requests().len();

    *fail.lock().unwrap() = false;
    let out = run(&env);
    assert_exit(&out, Exit::Success);
    let rerun: Vec<Recorded> = api.chat_requests().into_iter().skip(first_run).collect();
    let pieces: BTreeSet<String> = rerun
        .iter()
        .filter(|r| !r.has_tool_result())
        .flat_map(|r| markers(&r.document_text()))
        .collect();
    let want: BTreeSet<String> = (15..=66).map(|i| format!("MARK-{i:03}")).collect();
    assert_eq!(pieces, want, "only pieces 15..=66 are sent again");
    let translation =
        std::fs::read_to_string(env.path("out/translate/manual.txt/translation.md")).unwrap();
    let all: Vec<String> = (1..=66).map(|i| format!("MARK-{i:03}")).collect();
    assert_eq!(markers(&translation), all);
}

#[test]
fn a_document_just_under_the_budget_is_not_split() {
    let env = TestEnv::new();
    env.write("zhi.yaml", BUDGET);
    // summarize (map-reduce, direct) pieces hold what the window leaves after the answer and
    // the prompt.
    let budget = zhi::chunk::piece_budget(
        zhi::config::ModelBudget {
            context_window: 4000,
            max_output: 100,
        },
        zhi::skills::Chunking::MapReduce,
        true,
    );
    assert_eq!(budget, 4000 - 100 - zhi::chunk::DIRECT_PROMPT_OVERHEAD);
    let mut doc = String::new();
    while zhi::chunk::tokens(&doc) < budget - 10 {
        doc.push_str("word ");
    }
    assert!(zhi::chunk::tokens(&doc) <= budget);
    env.write("short.txt", &doc);
    let api = FakeApi::always(Reply::text(FILLER));
    let out = env
        .zhi()
        .args([
            "run",
            "summarize",
            "short.txt",
            "-o",
            "out",
            "--no-progress",
            "--base-url",
        ])
        .arg(api.base_url())
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 1);
    assert!(
        !reqs[0]
            .last_user_text()
            .unwrap_or_default()
            .contains("part 1 of")
    );
    assert!(reqs[0].is_one_message(), "{:?}", reqs[0].messages());
    assert!(
        reqs[0]
            .first_user_text()
            .starts_with("Summarize the following text")
    );
    assert_eq!(reqs[0].document_text().trim_end(), doc.trim_end());
    assert!(records(&env, "out")[0]["chunks"].is_null());

    // Over the budget it is split into two pieces and a reduce pass.
    let env = TestEnv::new();
    env.write("zhi.yaml", BUDGET);
    env.write("long.txt", format!("{doc}\n\n{}", "more ".repeat(200)));
    let api = FakeApi::always(Reply::text(FILLER));
    let out = env
        .zhi()
        .args([
            "run",
            "summarize",
            "long.txt",
            "-o",
            "out",
            "--no-progress",
            "--base-url",
        ])
        .arg(api.base_url())
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert_eq!(api.chat_requests().len(), 3);
}

#[test]
fn chunking_none_fails_too_large_with_sizes() {
    let env = TestEnv::new();
    env.write("zhi.yaml", BUDGET);
    env.write("big.txt", pages(100));
    let api = FakeApi::always(Reply::text("never"));
    let out = env
        .zhi()
        .args([
            "run",
            "compare",
            "big.txt",
            "-a",
            "file2=big.txt",
            "-o",
            "out",
            "--no-progress",
            "--base-url",
        ])
        .arg(api.base_url())
        .output()
        .unwrap();
    assert_exit(&out, Exit::JobsFailed);
    assert_eq!(api.count(), 0);
    let r = &records(&env, "out")[0];
    assert_eq!(r["error"]["kind"], "too_large");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("tokens") && msg.contains("chunking: none"),
        "{msg}"
    );
}

/// A manual of paragraphs and shell code, translated in pieces on a small window: each piece
/// is asked in one message (the instruction, then its text; from the second on, the end of
/// the piece before as context), a fenced block stays whole in one piece, and a piece whose
/// first answer is the English handed back is asked again alone — one request more than there
/// are pieces. The pieces are joined in order, the code as it was.
#[test]
fn a_long_document_is_translated_piece_by_piece_and_only_a_bad_piece_is_asked_again() {
    let env = TestEnv::new();
    env.write("zhi.yaml", BUDGET);
    let para = |i: usize| {
        format!("MARK-{i:03} The system reads its settings at start and keeps a log.\n\n")
    };
    let code = "```sh\n# list what is installed\ndpkg -l\n\n# and where its files are\ndpkg -L bash\n```\n\n";
    let doc = format!(
        "{}{}{}{code}{}{}",
        para(1),
        para(2),
        para(3),
        para(4),
        para(5)
    ) + &(6..=24).map(para).collect::<String>();
    env.write("manual.md", &doc);
    let copied = Arc::new(Mutex::new(false));
    let c2 = copied.clone();
    let api = FakeApi::start(move |r| {
        let text = r.document_text();
        // The piece holding MARK-006 first answers with its own text.
        if text.contains("MARK-006") && !std::mem::replace(&mut *c2.lock().unwrap(), true) {
            return Reply::text(text);
        }
        let zh: String = text
            .split("\n\n")
            // The text's paragraphs and its code, not the line a retry adds after it.
            .filter(|p| p.starts_with("MARK-") || p.starts_with("```") || p.starts_with('#'))
            .map(|p| match p.strip_prefix("MARK-") {
                Some(rest) => format!("MARK-{} 系统启动时读取其设置并记录日志。", &rest[..3]),
                None => p.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n\n");
        Reply::text(zh)
    });
    let out = env
        .zhi()
        .args([
            "run",
            "translate",
            "manual.md",
            "-o",
            "out",
            "-j",
            "1",
            "--no-progress",
            "--base-url",
        ])
        .arg(api.base_url())
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let r = &records(&env, "out")[0];
    let pieces = r["chunks"]["total"].as_u64().unwrap() as usize;
    assert!(pieces >= 3, "{r}");
    let requests = api.chat_requests();
    assert_eq!(
        requests.len(),
        pieces + 1,
        "one request a piece, and one more for the copy"
    );
    for req in &requests {
        assert!(req.system_prompt().is_none(), "no system prompt");
        let text = req.last_user_text().unwrap();
        let first = markers(&req.document_text()).contains(&"MARK-001".to_string());
        assert_eq!(!first, text.starts_with("For context only"), "{text}");
        assert!(!text.contains("--- BEGIN DOCUMENT"), "{text}");
    }
    // The piece asked again is the one that was copied, alone.
    let asked: Vec<Vec<String>> = requests
        .iter()
        .map(|r| markers(&r.document_text()))
        .collect();
    let again: Vec<&Vec<String>> = asked
        .iter()
        .filter(|m| m.contains(&"MARK-006".to_string()))
        .collect();
    assert_eq!(again.len(), 2, "{asked:?}");
    assert_eq!(again[0], again[1]);
    // The fence is whole in one piece, and in the translation as it was.
    let holding: BTreeSet<Vec<String>> = requests
        .iter()
        .filter(|r| r.document_text().contains("dpkg -l"))
        .map(|r| {
            assert!(r.document_text().contains(code.trim_end()));
            markers(&r.document_text())
        })
        .collect();
    assert_eq!(holding.len(), 1, "one piece holds the code: {holding:?}");
    let translation =
        std::fs::read_to_string(env.path("out/translate/manual.md/translation.md")).unwrap();
    assert!(translation.contains(code.trim_end()), "{translation}");
    let want: Vec<String> = (1..=24).map(|i| format!("MARK-{i:03}")).collect();
    assert_eq!(
        markers(&translation),
        want,
        "every paragraph, once, in order"
    );
}

/// A piece whose answer runs past the length limit twice (a proofread text with its table of
/// changes) is asked again in halves, alone, and their outputs are joined in its place: every
/// paragraph once, in order.
#[test]
fn a_piece_whose_answer_is_cut_twice_is_asked_again_in_halves() {
    let env = TestEnv::new();
    env.write("zhi.yaml", BUDGET);
    let doc: String = (1..=24)
        .map(|i| format!("MARK-{i:03} The system reads its settings at start and keeps a log.\n\n"))
        .collect();
    env.write("manual.md", &doc);
    // The size of the first piece asked, in paragraphs: the pieces' own. The piece holding
    // MARK-010 is cut at the length limit while it is asked whole.
    let first = Mutex::new(None::<usize>);
    let (api, out) = proofread_cutting(&env, "manual.md", move |marks| {
        let whole = *first.lock().unwrap().get_or_insert(marks.len());
        marks.contains(&"MARK-010".to_string()) && marks.len() >= whole
    });
    assert_exit(&out, Exit::Success);
    let asked: Vec<Vec<String>> = api
        .chat_requests()
        .iter()
        .map(|r| markers(&r.document_text()))
        .collect();
    let cut: Vec<&Vec<String>> = asked
        .iter()
        .filter(|m| m.contains(&"MARK-010".to_string()))
        .collect();
    // Asked whole, asked afresh, then in its halves: each alone, together the piece.
    assert!(cut.len() >= 3, "{asked:?}");
    let whole = cut[0].clone();
    let last = asked.iter().rposition(|m| *m == whole).unwrap();
    assert!(
        last >= 1 && asked[last - 1] == whole,
        "asked afresh: {asked:?}"
    );
    let mut halves: Vec<String> = Vec::new();
    for m in &asked[last + 1..] {
        if halves.len() == whole.len() {
            break;
        }
        assert!(m.len() < whole.len(), "{asked:?}");
        halves.extend(m.iter().cloned());
    }
    assert_eq!(
        halves, whole,
        "the halves together are the piece: {asked:?}"
    );
    let proofread =
        std::fs::read_to_string(env.path("out/proofread/manual.md/proofread.md")).unwrap();
    let want: Vec<String> = (1..=24).map(|i| format!("MARK-{i:03}")).collect();
    assert_eq!(markers(&proofread), want, "every paragraph, once, in order");
    let r = &records(&env, "out")[0];
    let transcript =
        std::fs::read_to_string(env.path("out").join(r["transcript"].as_str().unwrap())).unwrap();
    assert!(transcript.contains("smaller pieces"), "{transcript}");
}

/// A document that fits one request, whose proofread answer runs past the length limit twice,
/// is proofread again in halves, joined in order.
#[test]
fn a_whole_document_whose_answer_is_cut_twice_is_asked_again_in_halves() {
    let env = TestEnv::new();
    env.write("zhi.yaml", FAST_SMALL_ANSWER);
    let doc: String = (1..=6)
        .map(|i| format!("MARK-{i:03} The system reads its settings at start and keeps a log.\n\n"))
        .collect();
    env.write("notes.md", &doc);
    let (api, out) = proofread_cutting(&env, "notes.md", |marks| marks.len() == 6);
    assert_exit(&out, Exit::Success);
    let asked: Vec<usize> = api
        .chat_requests()
        .iter()
        .map(|r| markers(&r.document_text()).len())
        .collect();
    let whole = asked.iter().take_while(|n| **n == 6).count();
    assert!(whole >= 2, "asked whole, then afresh: {asked:?}");
    let halves = &asked[whole..];
    assert!(
        halves.len() >= 2 && halves.iter().all(|n| *n <= 3) && halves.iter().sum::<usize>() == 6,
        "then in pieces of half its size, each once: {asked:?}"
    );
    let r = &records(&env, "out")[0];
    assert_eq!(r["chunks"]["total"], halves.len(), "{r}");
    let proofread =
        std::fs::read_to_string(env.path("out/proofread/notes.md/proofread.md")).unwrap();
    let want: Vec<String> = (1..=6).map(|i| format!("MARK-{i:03}")).collect();
    assert_eq!(markers(&proofread), want, "every paragraph, once, in order");
}

/// `proofread` of `input` against a server that hands each request's paragraphs back lightly
/// corrected, cut at the length limit when `cut` says so of the request's markers.
fn proofread_cutting(
    env: &TestEnv,
    input: &str,
    cut: impl Fn(&[String]) -> bool + Send + Sync + 'static,
) -> (FakeApi, std::process::Output) {
    let api = FakeApi::start(move |r| {
        let text = r.document_text();
        let body: String = text
            .split("\n\n")
            .filter(|p| p.starts_with("MARK-"))
            .map(|p| format!("{}\n\n", p.trim().replace("at start", "at its start")))
            .collect();
        if cut(&markers(&text)) {
            return Reply::completion(
                serde_json::json!({"role": "assistant", "content": body}),
                "length",
            );
        }
        Reply::text(body)
    });
    let out = env
        .zhi()
        .args(["run", "proofread", input, "-o", "out", "-j", "1"])
        .args(["--no-progress", "--base-url"])
        .arg(api.base_url())
        .output()
        .unwrap();
    (api, out)
}
