//! The bill (docs/escalation.md#cost): a cost budget is kept or refused, never overrun in
//! silence; what has no price is named, not counted as zero; yuan and dollars are never added;
//! merged shards add up to what the shards spent (docs/outputs.md#merging-runs).
//!
//! Two fake servers: a cheap one whose answers zhi refuses, and a strong one that answers well,
//! so every job is escalated and pays the strong model's price.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, assert_exit, records_by_input, show, stderr, stdout};
use serde_json::Value;
use zhi::exit::Exit;

const DOCS: [(&str, &str); 5] = [
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
    (
        "docs/school.txt",
        "The school will add two classrooms over the summer so that the autumn intake of sixty pupils has room.\n",
    ),
    (
        "docs/bridge.txt",
        "Repairs to the old bridge start in June and close it to lorries for six weeks while the deck is relaid.\n",
    ),
];

/// Each escalated job costs 100 × 5 + 20 × 10 per million at the strong model's price: ¥0.0007.
const STRONG_PRICE: &str = "strong-model: {input: 5, output: 10, currency: CNY}";

fn env(prices: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        format!(
            "retry: {{max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}}\nprices:\n{prices}"
        ),
    );
    for (path, text) in DOCS {
        env.write(path, text);
    }
    env
}

fn good(_: &Recorded) -> Reply {
    Reply::text("A short and faithful summary of what the document says, in one line.")
        .with_usage(100, 20)
}

/// An answer zhi's checks refuse: nothing at all.
fn junk(_: &Recorded) -> Reply {
    Reply::text("").with_usage(100, 1)
}

fn server(script: fn(&Recorded) -> Reply) -> FakeApi {
    FakeApi::start(move |req| {
        if req.is_chat() {
            script(req)
        } else {
            Reply::status(404, serde_json::json!({"error": "no"}))
        }
    })
}

fn run(env: &TestEnv, cheap: &FakeApi, out: &str, extra: &[&str]) -> std::process::Output {
    env.zhi()
        .args(["--no-progress", "run", "summarize", "docs", "-o", out])
        .args(["--base-url", &cheap.base_url()])
        .args(extra)
        .output()
        .unwrap()
}

fn manifest_of(dir: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn latest_manifest(env: &TestEnv, out: &str) -> Value {
    let runs = zhi::manifest::list_runs(&env.path(out));
    manifest_of(&runs.last().unwrap().path)
}

fn amount(v: &Value) -> f64 {
    v["amount"]
        .as_f64()
        .unwrap_or_else(|| panic!("no amount in {v}"))
}

/// The attack of issue 36: the run's model unpriced, the ladder's priced, a budget of a tenth
/// of what five escalations cost. The budget cannot be kept, so the run is refused before a
/// request is sent, naming the model; without a budget, the priced part is counted and the
/// unpriced model named, in the records, the manifest and the summary.
#[test]
fn a_cost_budget_over_an_unpriced_model_is_refused_and_the_priced_part_is_counted() {
    let env = env(&format!("  {STRONG_PRICE}\n"));
    let cheap = server(junk);
    let strong = server(good);
    let to = format!("strong-model@{}", strong.base_url());
    let ladder = ["-m", "local-cheap", "--escalate", &to];

    let out = run(
        &env,
        &cheap,
        "out",
        &[&ladder[..], &["--budget-cost", "0.005"]].concat(),
    );
    assert_exit(&out, Exit::Usage);
    let err = stderr(&out);
    assert!(err.contains("--budget-cost"), "{err}");
    assert!(err.contains("no price for local-cheap"), "{err}");
    assert!(
        !err.contains("strong-model"),
        "the priced model is not blamed: {err}"
    );
    assert_eq!(
        cheap.count() + strong.count(),
        0,
        "nothing sent: {}",
        show(&out)
    );
    assert!(!env.path("out").exists(), "no output folder made");

    // The audit's model is the top rung: unpriced, it is named too.
    let unpriced_top = format!("big-model@{}", strong.base_url());
    let out = run(
        &env,
        &cheap,
        "out",
        &[
            "--escalate",
            &unpriced_top,
            "--audit",
            "1",
            "--budget-cost",
            "1",
        ],
    );
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).contains("no price for big-model"),
        "{}",
        show(&out)
    );

    // No budget: the run goes, and the bill says what it knows and what it does not.
    let out = run(&env, &cheap, "out", &ladder);
    assert_exit(&out, Exit::Success);
    assert_eq!(strong.chat_requests().len(), 5, "{}", show(&out));
    for (path, _) in DOCS {
        let r = &records_by_input(&env.path("out"))[path];
        assert_eq!(r["escalated"], true, "{r}");
        assert!((amount(&r["cost"]) - 0.0007).abs() < 1e-9, "{r}");
        assert_eq!(r["cost"]["currency"], "CNY", "{r}");
        assert_eq!(r["unpriced"], serde_json::json!(["local-cheap"]), "{r}");
        assert!(
            (amount(&r["cost_by_model"]["strong-model"]) - 0.0007).abs() < 1e-9,
            "{r}"
        );
    }
    let m = latest_manifest(&env, "out");
    assert!(
        (amount(&m["costs"]["strong-model"]) - 0.0035).abs() < 1e-9,
        "{m}"
    );
    assert_eq!(m["unpriced"], serde_json::json!(["local-cheap"]), "{m}");
    assert_eq!(m["tokens_by_model"]["strong-model"]["prompt"], 500, "{m}");
    assert!(
        m["tokens_by_model"]["local-cheap"]["prompt"].as_u64() >= Some(500),
        "{m}"
    );
    let err = stderr(&out);
    assert!(err.contains("cost ¥0.0035 (strong-model ¥0.0035)"), "{err}");
    assert!(
        err.contains("cost unknown for local-cheap: no price"),
        "{err}"
    );
    let shown = env
        .zhi()
        .args(["manifest", "show", "-o", "out"])
        .output()
        .unwrap();
    assert!(
        stdout(&shown).contains("cost unknown for local-cheap"),
        "{}",
        show(&shown)
    );
}

/// Yuan and dollars: a budget in one amount cannot add them, so it is refused naming both
/// currencies; without one, each currency's total is shown apart.
#[test]
fn a_cost_budget_across_currencies_is_refused_and_each_currency_shown_apart() {
    let env = env(
        "  glm-4-flash: {input: 0.1, output: 0.1, currency: CNY}\n  strong-model: {input: 5, output: 10, currency: USD}\n",
    );
    let cheap = server(junk);
    let strong = server(good);
    let to = format!("strong-model@{}", strong.base_url());

    let out = run(
        &env,
        &cheap,
        "out",
        &["--escalate", &to, "--budget-cost", "1"],
    );
    assert_exit(&out, Exit::Usage);
    let err = stderr(&out);
    assert!(err.contains("more than one currency"), "{err}");
    assert!(err.contains("CNY: glm-4-flash; USD: strong-model"), "{err}");
    assert_eq!(
        cheap.count() + strong.count(),
        0,
        "nothing sent: {}",
        show(&out)
    );

    let out = run(&env, &cheap, "out", &["--escalate", &to]);
    assert_exit(&out, Exit::Success);
    let err = stderr(&out);
    assert!(err.contains("cost ¥"), "{err}");
    assert!(err.contains(" + $0.0035 ("), "each currency apart: {err}");
    let r = &records_by_input(&env.path("out"))["docs/river.txt"];
    assert!(r.get("cost").is_none(), "no sum across currencies: {r}");
    assert_eq!(r["cost_by_model"]["strong-model"]["currency"], "USD", "{r}");
    assert_eq!(r["cost_by_model"]["glm-4-flash"]["currency"], "CNY", "{r}");

    // One currency: the budget is kept, as before.
    let env = env_one_currency();
    let out = run(
        &env,
        &cheap,
        "out",
        &["-j", "1", "--escalate", &to, "--budget-cost", "0.001"],
    );
    assert_exit(&out, Exit::Aborted);
    let m = latest_manifest(&env, "out");
    assert_eq!(m["counts"]["succeeded"], 2, "{m}");
}

fn env_one_currency() -> TestEnv {
    env(&format!(
        "  glm-4-flash: {{input: 0.1, output: 0.1, currency: CNY}}\n  {STRONG_PRICE}\n"
    ))
}

/// Two shards, each escalating its jobs: the merge's costs, escalations and tokens per model
/// are the shards' added up, and `manifest show` of the merge prints them.
#[test]
fn merged_shards_add_up_their_costs_escalations_and_tokens_per_model() {
    let env = env_one_currency();
    let cheap = server(junk);
    let strong = server(good);
    let to = format!("strong-model@{}", strong.base_url());
    let a = run(
        &env,
        &cheap,
        "s1",
        &["--escalate", &to, "--shard", "slice:1/2"],
    );
    assert_exit(&a, Exit::Success);
    let b = run(
        &env,
        &cheap,
        "s2",
        &["--escalate", &to, "--shard", "slice:2/2"],
    );
    assert_exit(&b, Exit::Success);
    let (m1, m2) = (latest_manifest(&env, "s1"), latest_manifest(&env, "s2"));
    let escalated = |m: &Value| {
        m["escalations"]["summarize"]["strong-model"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(escalated(&m1) + escalated(&m2), 5, "{m1}\n{m2}");
    assert!(escalated(&m1) > 0 && escalated(&m2) > 0);

    let merged = env
        .zhi()
        .args(["manifest", "merge", "s1", "s2", "-o", "merged"])
        .output()
        .unwrap();
    assert_exit(&merged, Exit::Success);
    let m = manifest_of(&env.path("merged"));
    assert_eq!(m["escalations"]["summarize"]["strong-model"], 5, "{m}");
    for model in ["strong-model", "glm-4-flash"] {
        let sum = amount(&m1["costs"][model]) + amount(&m2["costs"][model]);
        assert!(
            (amount(&m["costs"][model]) - sum).abs() < 1e-12,
            "{model}: {m}"
        );
        assert_eq!(m["costs"][model]["currency"], "CNY");
        for part in ["prompt", "completion"] {
            let sum = m1["tokens_by_model"][model][part].as_u64().unwrap()
                + m2["tokens_by_model"][model][part].as_u64().unwrap();
            assert_eq!(
                m["tokens_by_model"][model][part], sum,
                "{model} {part}: {m}"
            );
        }
    }
    assert!(
        (amount(&m["costs"]["strong-model"]) - 0.0035).abs() < 1e-9,
        "{m}"
    );

    let shown = env
        .zhi()
        .args(["manifest", "show", "merged"])
        .output()
        .unwrap();
    assert_exit(&shown, Exit::Success);
    let text = stdout(&shown);
    assert!(
        text.contains("escalated 5 job(s): summarize → strong-model 5"),
        "{text}"
    );
    assert!(text.contains("cost ¥"), "{text}");
    assert!(text.contains("strong-model ¥0.0035"), "{text}");
}
