//! A Batch API that fails at the worst moments (docs/model-api.md#when-a-batch-cannot-be-collected):
//! a 5xx after it created the batch or stored the file, batches and files it no longer knows,
//! result files over the cap, ids that are not tokens, listings it refuses, duplicate answers.
//! Nothing is billed twice, no job waits forever, and a run that cannot progress says so in
//! its exit code.

use crate::batch_api::{count, latest, submit, summary, write_docs, zhi_run};
use crate::support::testenv::{TestEnv, assert_exit, show};
use crate::support::{FakeApi, FakeBatch, Recorded, Reply};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use zhi::exit::Exit;
use zhi::manifest::{self, Status};

const ZHI_YAML: &str = "retry: {max_attempts: 3, base_delay_ms: 10, max_delay_ms: 50}\n\
                        grace_period: 2\nbatch: {max_stalled_runs: 2}\n";

fn env_with_docs(n: usize) -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", ZHI_YAML);
    write_docs(&env, n);
    env
}

fn latest_manifest(env: &TestEnv) -> Value {
    let runs = manifest::list_runs(&env.path("out"));
    let text = std::fs::read_to_string(runs.last().unwrap().path.join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `POST …/batches` (creation), `POST …/files` (upload), `GET …/batches/<id>` and so on.
fn is(req: &Recorded, method: &str, tail: &str) -> bool {
    req.method == method && req.path.ends_with(tail)
}

/// The fake Batch API with `hook` first: `Some(reply)` answers instead of the fake.
fn api_with(
    batch: &FakeBatch,
    hook: impl Fn(&Recorded, &dyn Fn(&Recorded) -> Reply) -> Option<Reply> + Send + Sync + 'static,
) -> FakeApi {
    let inner = batch.handler();
    FakeApi::start(move |req| hook(req, &inner).unwrap_or_else(|| inner(req)))
}

fn server_error() -> Reply {
    Reply::status(
        500,
        json!({"error": {"code": "500", "message": "internal error"}}),
    )
}

/// The first `POST …<tail>` is carried out by the provider, and then answered with a 500.
fn fails_once_after_doing_it(batch: &FakeBatch, tail: &'static str) -> FakeApi {
    let failed = Arc::new(AtomicUsize::new(0));
    api_with(batch, move |req, inner| {
        if is(req, "POST", tail) && failed.fetch_add(1, Ordering::SeqCst) == 0 {
            inner(req);
            return Some(server_error());
        }
        None
    })
}

#[test]
fn a_5xx_after_the_batch_was_made_adopts_it_and_never_makes_a_second() {
    let env = env_with_docs(4);
    let batch = FakeBatch::new(summary);
    // The provider makes the batch, then its gateway answers 500.
    let api = fails_once_after_doing_it(&batch, "/batches");
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert_eq!(
        batch.batches().len(),
        1,
        "one batch, not two: {}",
        show(&out)
    );
    let m = latest_manifest(&env);
    assert_eq!(m["batches"]["submitted"].as_array().unwrap().len(), 1);
    assert_eq!(
        m["batches"]["submitted"][0]["batch_id"],
        batch.batches()[0].id.as_str()
    );
    // The run that submitted says what it asked of the provider.
    assert!(m["requests"].as_u64().unwrap() >= 3, "{m}");

    batch.finish_all();
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert_eq!(count(&latest(&env), Status::Succeeded), 4, "{}", show(&out));
    assert_eq!(batch.batches().len(), 1);
    assert!(
        batch.files().is_empty(),
        "every file deleted: {:?}",
        batch.files()
    );
}

#[test]
fn a_5xx_after_the_file_was_stored_adopts_it_and_leaves_no_orphan() {
    let env = env_with_docs(3);
    let batch = FakeBatch::new(summary);
    let api = fails_once_after_doing_it(&batch, "/files");
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    let uploads = api
        .requests()
        .iter()
        .filter(|r| is(r, "POST", "/files"))
        .count();
    assert_eq!(
        uploads,
        1,
        "the file was not uploaded twice: {}",
        show(&out)
    );
    assert_eq!(batch.batches().len(), 1);
    batch.finish_all();
    assert_exit(&submit(&env, &api), Exit::Success);
    assert_eq!(count(&latest(&env), Status::Succeeded), 3);
    assert!(batch.files().is_empty(), "no orphan: {:?}", batch.files());
}

#[test]
fn a_batch_the_provider_no_longer_knows_is_given_up_and_its_requests_resubmitted() {
    let env = env_with_docs(3);
    let batch = FakeBatch::new(summary);
    let first_id: Arc<Mutex<Option<String>>> = Arc::default();
    let first = first_id.clone();
    let api = api_with(&batch, move |req, _| {
        let gone = first.lock().unwrap().clone()?;
        (req.method == "GET" && req.path.ends_with(&format!("/batches/{gone}"))).then(|| {
            Reply::status(
                404,
                json!({"error": {"code": "1214", "message": "no such batch"}}),
            )
        })
    });
    assert_exit(&submit(&env, &api), Exit::Success);
    *first_id.lock().unwrap() = Some(batch.batches()[0].id.clone());

    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert_eq!(batch.batches().len(), 2, "resubmitted: {}", show(&out));
    let m = latest_manifest(&env);
    let problems = m["batches"]["problems"].to_string();
    assert!(problems.contains("given up"), "{problems}");
    batch.finish_all();
    assert_exit(&submit(&env, &api), Exit::Success);
    assert_eq!(count(&latest(&env), Status::Succeeded), 3);
}

#[test]
fn an_error_file_that_fails_does_not_hold_the_answers_hostage() {
    let env = env_with_docs(4);
    let batch = FakeBatch::new(summary);
    let b = batch.clone();
    let api = api_with(&batch, move |req, _| {
        let error_file = b.batches().first()?.error_file_id.clone()?;
        (req.method == "GET" && req.path.ends_with(&format!("/files/{error_file}/content"))).then(
            || {
                Reply::status(
                    404,
                    json!({"error": {"code": "1214", "message": "no such file"}}),
                )
            },
        )
    });
    assert_exit(&submit(&env, &api), Exit::Success);
    batch.expire_all(2);
    assert!(batch.batches()[0].error_file_id.is_some());
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    let records = latest(&env);
    assert_eq!(count(&records, Status::Succeeded), 2, "{}", show(&out));
    assert_eq!(batch.batches().len(), 2, "the other two go again");
    batch.finish_all();
    assert_exit(&submit(&env, &api), Exit::Success);
    assert_eq!(
        count(&latest(&env), Status::Succeeded) + count(&latest(&env), Status::Cached),
        4
    );
}

#[test]
fn a_result_file_over_the_cap_is_given_up_not_downloaded_every_run() {
    let env = env_with_docs(2);
    let batch = FakeBatch::new(summary);
    let b = batch.clone();
    let api = api_with(&batch, move |req, _| {
        let output = b.batches().first()?.output_file_id.clone()?;
        // One line of 17 MiB: more than any answer can be.
        (req.method == "GET" && req.path.ends_with(&format!("/files/{output}/content"))).then(
            || {
                Reply::raw(
                    200,
                    format!(
                        "{{\"custom_id\":\"x\",\"pad\":\"{}\"}}\n",
                        "a".repeat(17 << 20)
                    ),
                )
            },
        )
    });
    assert_exit(&submit(&env, &api), Exit::Success);
    batch.finish_all();
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert_eq!(batch.batches().len(), 2, "resubmitted: {}", show(&out));
    let output = batch.batches()[0].output_file_id.clone().unwrap();
    let downloads = || {
        api.requests()
            .iter()
            .filter(|r| r.path.ends_with(&format!("/files/{output}/content")))
            .count()
    };
    assert_eq!(downloads(), 1);
    let _ = submit(&env, &api);
    assert_eq!(downloads(), 1, "never downloaded again");
    // Nothing half-written is left beside the batch records.
    let leftovers: Vec<_> = crate::support::testenv::files_under(&env.path("out/.zhi/batches"))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_id_that_is_not_a_token_never_reaches_a_url_and_its_jobs_do_not_wait_forever() {
    let env = env_with_docs(2);
    let batch = FakeBatch::new(summary);
    let api = api_with(&batch, move |req, inner| {
        let renamed = |reply: Reply| match reply {
            Reply::Json {
                status,
                headers,
                mut body,
            } => {
                body["id"] = json!("..");
                if let Some(data) = body["data"].as_array_mut() {
                    for b in data {
                        b["id"] = json!("..");
                    }
                }
                Reply::Json {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        };
        (is(req, "POST", "/batches") || (req.method == "GET" && req.path.ends_with("/batches")))
            .then(|| renamed(inner(req)))
    });
    let first = submit(&env, &api);
    assert!(!first.status.success(), "{}", show(&first));
    let out = submit(&env, &api);
    assert_exit(&out, Exit::JobsFailed);
    let records = latest(&env);
    assert_eq!(count(&records, Status::Failed), 2, "{}", show(&out));
    for r in api.requests() {
        let path = r.path.trim_end_matches('/');
        assert!(
            !(r.method == "GET" && path.ends_with("/batches") && r.query.is_none()),
            "`..` turned into a listing: {} {}",
            r.method,
            r.path
        );
        assert!(!r.path.contains("/.."), "{}", r.path);
    }
    assert_eq!(batch.batches().len(), 1, "never submitted twice");
}

#[test]
fn an_unconfirmed_creation_on_a_provider_that_refuses_listings_ends_in_two_runs() {
    let env = env_with_docs(2);
    let batch = FakeBatch::new(summary);
    let api = api_with(&batch, move |req, inner| {
        if is(req, "POST", "/batches") {
            inner(req);
            return Some(server_error());
        }
        (req.method == "GET" && req.path.ends_with("/batches")).then(|| {
            Reply::status(
                404,
                json!({"error": {"code": "404", "message": "listing not supported"}}),
            )
        })
    });
    let out = submit(&env, &api);
    assert_exit(&out, Exit::TempFail);
    let out = submit(&env, &api);
    assert_exit(&out, Exit::JobsFailed);
    assert_eq!(count(&latest(&env), Status::Failed), 2, "{}", show(&out));
    let creations = api
        .requests()
        .iter()
        .filter(|r| is(r, "POST", "/batches"))
        .count();
    assert_eq!(creations, 1, "the creation was never repeated blindly");
}

#[test]
fn a_batch_that_cannot_be_reached_exits_75_then_is_given_up() {
    let env = env_with_docs(2);
    let batch = FakeBatch::new(summary);
    let down = Arc::new(AtomicUsize::new(0));
    let d = down.clone();
    let api = api_with(&batch, move |req, _| {
        (d.load(Ordering::SeqCst) == 1 && req.method == "GET" && req.path.contains("/batches/"))
            .then(server_error)
    });
    assert_exit(&submit(&env, &api), Exit::Success);
    down.store(1, Ordering::SeqCst);
    let out = submit(&env, &api);
    assert_exit(&out, Exit::TempFail);
    assert_eq!(count(&latest(&env), Status::Skipped), 2, "{}", show(&out));
    assert_eq!(batch.batches().len(), 1, "nothing submitted twice");
    // `batch.max_stalled_runs: 2`: the second run gives it up (asking the provider to cancel
    // it) and submits its requests again.
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert_eq!(batch.batches().len(), 2, "{}", show(&out));
    assert_eq!(batch.batches()[0].status, "cancelling");
    down.store(0, Ordering::SeqCst);
    batch.finish_all();
    assert_exit(&submit(&env, &api), Exit::Success);
    assert_eq!(count(&latest(&env), Status::Succeeded), 2);
}

#[test]
fn two_different_answers_for_one_request_are_a_problem_for_that_request() {
    let env = env_with_docs(2);
    let batch = FakeBatch::new(summary);
    let b = batch.clone();
    let api = api_with(&batch, move |req, inner| {
        let output = b.batches().first()?.output_file_id.clone()?;
        if !(req.method == "GET" && req.path.ends_with(&format!("/files/{output}/content"))) {
            return None;
        }
        let Reply::Raw {
            status,
            headers,
            body,
        } = inner(req)
        else {
            return None;
        };
        let first = body.lines().next()?.to_string();
        let forged = first.replace("summary of", "a different answer about");
        Some(Reply::Raw {
            status,
            headers,
            body: format!("{body}{forged}\n"),
        })
    });
    assert_exit(&submit(&env, &api), Exit::Success);
    batch.finish_all();
    let out = zhi_run(&env, &api, &[]);
    assert_exit(&out, Exit::JobsFailed);
    let records = latest(&env);
    assert_eq!(count(&records, Status::Succeeded), 1, "{}", show(&out));
    let failed = records.iter().find(|r| r.status == Status::Failed).unwrap();
    let message = failed.error.as_ref().unwrap().message.clone();
    assert!(message.contains("twice, differently"), "{message}");
}

/// A status with a terminal title (OSC), a screen clear (CSI), a bell and a forged line.
const HOSTILE_STATUS: &str = "in_progress\u{1b}]0;pwned\u{7}\u{1b}[2J\nFORGED: all done";

fn assert_clean(what: &str, o: &std::process::Output) {
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        !printed.contains('\u{1b}') && !printed.contains('\u{7}'),
        "{what} printed a raw escape: {printed:?}"
    );
    assert!(
        !printed.lines().any(|l| l.starts_with("FORGED")),
        "{what} printed a forged line: {printed}"
    );
}

#[test]
fn escapes_from_a_provider_or_a_crafted_manifest_never_reach_the_terminal() {
    let env = env_with_docs(2);
    let batch = FakeBatch::new(summary);
    let api = api_with(&batch, move |req, inner| {
        let hostile = req.path.contains("/batches");
        if !hostile {
            return None;
        }
        match inner(req) {
            Reply::Json {
                status,
                headers,
                mut body,
            } if body.get("status").is_some() => {
                body["status"] = json!(HOSTILE_STATUS);
                Some(Reply::Json {
                    status,
                    headers,
                    body,
                })
            }
            _ => None,
        }
    });
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert_clean("the submitting run", &out);
    let out = submit(&env, &api);
    assert_clean("the collecting run", &out);
    for command in ["status", "cancel"] {
        let out = env
            .zhi()
            .args([
                "batch",
                command,
                "-o",
                "out",
                "--base-url",
                &api.zhipu_base_url(),
            ])
            .env("ZHI_API_KEY", "test-key-0123456789abcdef")
            .output()
            .unwrap();
        assert_clean(&format!("zhi batch {command}"), &out);
    }

    // A manifest whose fields were crafted.
    let runs = manifest::list_runs(&env.path("out"));
    let run = runs.last().unwrap().path.clone();
    let path = run.join("manifest.json");
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["command"] = json!("zhi run\u{1b}]8;;http://evil\u{7}x\nFORGED: command");
    m["reason"] = json!("done\u{1b}[31m\nFORGED: reason");
    m["skills"] = json!({"sum\u{1b}[2Jmarize": "00"});
    std::fs::write(&path, m.to_string()).unwrap();
    let show = env
        .zhi()
        .args(["manifest", "show", "-o", "out"])
        .output()
        .unwrap();
    assert_clean("zhi manifest show", &show);
    let merge = env
        .zhi()
        .arg("manifest")
        .arg("merge")
        .arg(&run)
        .args(["-o", "merged"])
        .output()
        .unwrap();
    assert_clean("zhi manifest merge", &merge);
}

/// Escalation in batch mode (docs/escalation.md): a step whose batch answer fails the checks
/// goes to the next batch on the stronger model, under its own `custom_id`.
#[test]
fn a_batch_answer_that_fails_the_checks_escalates_into_the_next_batch() {
    let env = env_with_docs(2);
    // The cheap model answers nothing; the strong one answers well.
    let batch = FakeBatch::new(|req: &Recorded| {
        if req.model() == Some("strong-model") {
            summary(req)
        } else {
            Reply::text("").with_usage(50, 1)
        }
    });
    batch.set_pace(crate::support::Pace::Immediate);
    let api = FakeApi::start(batch.handler());
    let escalate = ["--submit", "batch", "--escalate", "strong-model"];
    let mut last = None;
    for _ in 0..6 {
        let out = zhi_run(&env, &api, &escalate);
        let done = count(&latest(&env), Status::Succeeded) == 2;
        last = Some(out);
        if done {
            break;
        }
    }
    let out = last.unwrap();
    let records = latest(&env);
    assert_eq!(count(&records, Status::Succeeded), 2, "{}", show(&out));
    for r in &records {
        assert_eq!(r.model, "strong-model");
        assert!(r.escalated);
    }
    let strong_ids: Vec<String> = batch
        .batches()
        .iter()
        .flat_map(|b| b.lines.iter())
        .filter(|l| l["body"]["model"] == "strong-model")
        .map(|l| l["custom_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        strong_ids.len(),
        2,
        "one strong request a document: {strong_ids:?}"
    );
    assert!(
        strong_ids.iter().all(|id| id.ends_with("-esc1")),
        "{strong_ids:?}"
    );
}
