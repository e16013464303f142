//! Escalation (docs/escalation.md): a cheap model first, a stronger one only for the steps
//! whose answers fail zhi's checks; who answered and what it cost, in every record and
//! summary. Two fake servers: a cheap one and a strong one.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, assert_exit, records_by_input, show, stderr};
use serde_json::Value;
use zhi::exit::Exit;

const DOCS: [(&str, &str); 3] = [
    (
        "docs/budget.txt",
        "The board met on Tuesday and approved the 2027 budget of four million after a long debate about staffing costs and travel.\n",
    ),
    (
        "docs/plant.txt",
        "The new plant opens in May. It will employ forty people and make parts for the railway workshops in the north.\n",
    ),
    (
        "docs/river.txt",
        "The committee reviewed the river survey on Monday and asked for two more sampling sites before the spring report.\n",
    ),
];

fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        "retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n\
         prices:\n  glm-4-flash: {input: 0.1, output: 0.1, currency: CNY}\n  strong-model: {input: 5, output: 10, currency: CNY}\n",
    );
    for (path, text) in DOCS {
        env.write(path, text);
    }
    env
}

/// A good summary of the document the request is about, told by its text (a summarize
/// request does not name its document).
fn good(req: &Recorded) -> Reply {
    let doc = req.document_text();
    let text = if doc.contains("budget") {
        "Budget approved: four million for 2027, after a debate on staff and travel."
    } else if doc.contains("plant") {
        "A plant opening in May brings forty jobs making railway parts."
    } else {
        "Two extra sampling sites are wanted before the spring river report."
    };
    Reply::text(text).with_usage(100, 20)
}

/// An answer zhi's checks refuse: nothing at all.
fn junk(_: &Recorded) -> Reply {
    Reply::text("").with_usage(100, 1)
}

fn run(env: &TestEnv, cheap: &FakeApi, extra: &[&str]) -> std::process::Output {
    env.zhi()
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .args(["--base-url", &cheap.base_url()])
        .args(extra)
        .output()
        .unwrap()
}

fn only_chats(script: fn(&Recorded) -> Reply) -> FakeApi {
    FakeApi::start(move |req| {
        if req.is_chat() {
            script(req)
        } else {
            Reply::status(404, serde_json::json!({"error": "no"}))
        }
    })
}

fn manifest(env: &TestEnv) -> Value {
    let runs = zhi::manifest::list_runs(&env.path("out"));
    let text = std::fs::read_to_string(runs.last().unwrap().path.join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_cheap_models_junk_is_asked_once_of_the_strong_model_and_recorded() {
    let env = env();
    let cheap = only_chats(junk);
    let strong = only_chats(good);
    let to = format!("strong-model@{}", strong.base_url());
    let out = run(&env, &cheap, &["--escalate", &to]);
    assert_exit(&out, Exit::Success);
    assert_eq!(
        strong.chat_requests().len(),
        3,
        "one request a document: {}",
        show(&out)
    );
    assert!(
        strong
            .chat_requests()
            .iter()
            .all(|r| r.model() == Some("strong-model"))
    );
    for (path, _) in DOCS {
        let r = &records_by_input(&env.path("out"))[path];
        assert_eq!(r["status"], "succeeded", "{r}");
        assert_eq!(r["model"], "strong-model", "{r}");
        assert_eq!(r["escalated"], true, "{r}");
        assert_eq!(r["escalated_from"], "glm-4-flash", "{r}");
        assert!(r["base_url"].as_str().unwrap().contains("127.0.0.1"), "{r}");
        let by_model = &r["tokens_by_model"];
        assert_eq!(by_model["strong-model"]["prompt"], 100, "{r}");
        assert!(
            by_model["glm-4-flash"]["prompt"].as_u64().unwrap() >= 100,
            "{r}"
        );
        assert_eq!(r["cost"]["currency"], "CNY", "{r}");
    }
    let err = stderr(&out);
    assert!(
        err.contains("escalated 3 job(s): summarize → strong-model 3"),
        "{err}"
    );
    assert!(err.contains("cost ¥"), "{err}");
    let m = manifest(&env);
    assert_eq!(m["escalations"]["summarize"]["strong-model"], 3, "{m}");
    // 3 × (100 × 5 + 20 × 10) / 1e6 on the strong model.
    let strong_cost = m["costs"]["strong-model"]["amount"].as_f64().unwrap();
    assert!((strong_cost - 0.0021).abs() < 1e-9, "{m}");
    let shown = env
        .zhi()
        .args(["manifest", "show", "-o", "out"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("escalated 3 job(s)"),
        "{}",
        show(&shown)
    );

    let report = env
        .zhi()
        .args(["report", "-o", "out", "--out", "report.html"])
        .output()
        .unwrap();
    assert_exit(&report, Exit::Success);
    let page = std::fs::read_to_string(env.path("report.html")).unwrap();
    assert!(
        page.contains("escalated 3 job(s): summarize → strong-model 3"),
        "{}",
        show(&report)
    );

    // A rerun without the ladder: cached, and the records still say who made the outputs.
    let before = (cheap.chat_requests().len(), strong.chat_requests().len());
    let out = run(&env, &cheap, &[]);
    assert_exit(&out, Exit::Success);
    assert_eq!(
        (cheap.chat_requests().len(), strong.chat_requests().len()),
        before
    );
    let r = &records_by_input(&env.path("out"))["docs/budget.txt"];
    assert_eq!(r["status"], "cached");
    assert_eq!(
        (r["model"].as_str(), r["escalated"].as_bool()),
        (Some("strong-model"), Some(true))
    );
}

#[test]
fn a_cheap_model_that_answers_well_keeps_every_job() {
    let env = env();
    let cheap = only_chats(good);
    let strong = only_chats(good);
    let to = format!("strong-model@{}", strong.base_url());
    let out = run(&env, &cheap, &["--escalate", &to]);
    assert_exit(&out, Exit::Success);
    assert!(
        strong.requests().iter().all(|r| !r.is_chat()),
        "{}",
        show(&out)
    );
    let r = &records_by_input(&env.path("out"))["docs/plant.txt"];
    assert_eq!(r["model"], "glm-4-flash");
    assert!(r.get("escalated").is_none(), "{r}");
    assert!(!stderr(&out).contains("escalated"), "{}", show(&out));
}

#[test]
fn an_auth_error_on_the_cheap_server_is_not_escalated() {
    let env = env();
    let cheap = FakeApi::always(Reply::openai_error(
        401,
        "invalid_api_key",
        "invalid_request_error",
        "Incorrect API key provided",
    ));
    let strong = only_chats(good);
    let to = format!("strong-model@{}", strong.base_url());
    let out = run(&env, &cheap, &["--escalate", &to]);
    assert_exit(&out, Exit::Aborted);
    assert!(
        strong.requests().iter().all(|r| !r.is_chat()),
        "{}",
        show(&out)
    );
}

#[test]
fn escalation_from_the_settings_file_and_a_remote_server_without_a_key_is_refused() {
    let env = env();
    let cheap = only_chats(junk);
    let strong = only_chats(good);
    env.write(
        "zhi.yaml",
        format!(
            "retry: {{max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}}\nescalate:\n  - {{model: strong-model, base_url: '{}'}}\n",
            strong.base_url()
        ),
    );
    let out = run(&env, &cheap, &[]);
    assert_exit(&out, Exit::Success);
    assert_eq!(strong.chat_requests().len(), 3, "{}", show(&out));
    let config = env.zhi().args(["config", "show"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&config.stdout).contains("strong-model@"),
        "{}",
        show(&config)
    );

    let out = run(
        &env,
        &cheap,
        &["--force", "--escalate", "gpt-4o@https://api.openai.com/v1"],
    );
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("api_key_env"), "{}", show(&out));
}

#[test]
fn a_cost_budget_stops_scheduling_like_a_token_budget() {
    let env = env();
    let cheap = only_chats(junk);
    let strong = only_chats(good);
    let to = format!("strong-model@{}", strong.base_url());
    // Each escalated job costs 0.0007 at the strong model's price.
    let out = run(
        &env,
        &cheap,
        &["-j", "1", "--escalate", &to, "--budget-cost", "0.001"],
    );
    assert_exit(&out, Exit::Aborted);
    let m = manifest(&env);
    assert_eq!(m["counts"]["succeeded"], 2, "{m}");
    assert_eq!(m["counts"]["skipped"], 1, "{m}");
    assert!(
        m["reason"]
            .as_str()
            .unwrap()
            .contains("cost budget of 0.001"),
        "{m}"
    );
    let bad = run(&env, &cheap, &["--budget-cost", "0"]);
    assert_exit(&bad, Exit::Usage);
}

#[test]
fn a_skills_own_ladder_is_used_and_the_flag_replaces_it() {
    let env = env();
    let cheap = only_chats(junk);
    let strong = only_chats(good);
    let other = only_chats(good);
    env.write(
        ".zhi/skills/brief.yaml",
        format!(
            "name: brief\ndescription: A brief of a document\nsystem_prompt: Write a brief of the document.\n\
             tools: []\noutput:\n  files: [brief.md]\nescalate:\n  - {{model: strong-model, base_url: '{}'}}\n",
            strong.base_url()
        ),
    );
    let brief = |extra: &[&str]| {
        env.zhi()
            .args([
                "--no-progress",
                "run",
                "brief",
                "docs",
                "-o",
                "out",
                "--force",
            ])
            .args(["--base-url", &cheap.base_url()])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = brief(&[]);
    assert_exit(&out, Exit::Success);
    assert_eq!(strong.chat_requests().len(), 3, "{}", show(&out));
    let to = format!("other-model@{}", other.base_url());
    let out = brief(&["--escalate", &to]);
    assert_exit(&out, Exit::Success);
    assert_eq!(
        strong.chat_requests().len(),
        3,
        "the flag replaced the skill's ladder"
    );
    assert_eq!(other.chat_requests().len(), 3, "{}", show(&out));
    let r = &records_by_input(&env.path("out"))["docs/river.txt"];
    assert_eq!(r["model"], "other-model", "{r}");
}

#[test]
fn kinds_a_user_lists_escalate_and_the_key_never_can() {
    let env = env();
    let cheap = only_chats(|_| Reply::finish("sensitive"));
    let strong = only_chats(good);
    let to = format!("strong-model@{}", strong.base_url());
    let out = run(&env, &cheap, &["--escalate", &to]);
    assert_exit(&out, Exit::JobsFailed);
    assert_eq!(
        strong.chat_requests().len(),
        0,
        "content_filter is not escalated unless listed"
    );
    env.write("zhi.yaml", "escalate_on: [content_filter]\n");
    let out = run(&env, &cheap, &["--escalate", &to]);
    assert_exit(&out, Exit::Success);
    assert_eq!(strong.chat_requests().len(), 3, "{}", show(&out));
    env.write("zhi.yaml", "escalate_on: [auth]\n");
    let out = run(&env, &cheap, &["--escalate", &to]);
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).contains("cannot be escalated"),
        "{}",
        show(&out)
    );
}

#[test]
fn a_rung_on_another_server_takes_its_own_limits_and_refuses_a_zero() {
    let env = env();
    env.write(
        "zhi.yaml",
        "escalate:\n  - {model: big, base_url: 'http://127.0.0.1:9/v1', rpm: 0}\n",
    );
    let out = env.zhi().args(["config", "show"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).contains("`rpm` must be a whole number of at least 1"),
        "{}",
        show(&out)
    );
    env.write(
        "zhi.yaml",
        "escalate:\n  - {model: big, base_url: 'http://127.0.0.1:9/v1', rpm: 30, tpm: 50000}\n",
    );
    let out = env.zhi().args(["config", "show"]).output().unwrap();
    assert_exit(&out, Exit::Success);
}
