//! Doubts and the audit (docs/outputs.md#doubts, docs/escalation.md#audit): a well-formed
//! answer that is probably wrong is said to be doubted, per field or file, and goes up the
//! ladder; `--strict` fails it; `--audit` measures the cheap model against the top rung on a
//! seeded sample and routes a skill below `--target`. Two fake servers: a cheap one that
//! swaps seller and buyer, and a strong one that reads invoices right.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, assert_exit, records_by_input, show, stderr};
use serde_json::{Value, json};
use zhi::exit::Exit;

const SCHEMA: &str = r#"{"type": "object", "properties": {
  "seller": {"type": "string", "description": "Who issued the invoice (销售方, Seller)"},
  "buyer": {"type": "string", "description": "Who is billed (购买方, Bill to)"},
  "total": {"type": "number", "description": "The total, tax included (价税合计, Total due)"}},
  "required": ["seller", "buyer", "total"]}"#;

/// Eight invoices: the parties and totals of each, and its text.
fn invoices() -> Vec<(String, String, String, f64)> {
    (1..=8)
        .map(|i| {
            (
                format!("invoices/inv{i}.txt"),
                format!("卖方{i}号有限公司"),
                format!("买方{i}号有限公司"),
                100.0 * f64::from(i) + 13.0,
            )
        })
        .collect()
}

fn text(seller: &str, buyer: &str, total: f64) -> String {
    let net = total - 13.0;
    format!(
        "电子发票\n购买方\n名称：{buyer}\n销售方\n名称：{seller}\n金额 {net:.2}\n税额 13.00\n价税合计 ¥{total:.2}\n"
    )
}

fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        "retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n\
         prices:\n  glm-4-flash: {input: 1, output: 1, currency: CNY}\n  strong-model: {input: 10, output: 10, currency: CNY}\n",
    );
    env.write("invoice.schema.json", SCHEMA);
    for (path, seller, buyer, total) in invoices() {
        env.write(&path, text(&seller, &buyer, total));
    }
    env
}

/// The invoice a request is about; a request about none of them is a broken test, said at
/// once rather than answered with an empty invoice.
fn invoice(r: &Recorded) -> (String, String, f64) {
    let doc = r.input_document();
    let (_, seller, buyer, total) = invoices()
        .into_iter()
        .find(|(p, ..)| doc.ends_with(p.trim_start_matches("invoices/")))
        .unwrap_or_else(|| panic!("a request about no known invoice: {doc:?}"));
    (seller, buyer, total)
}

/// The cheap model: seller and buyer swapped, the pre-tax amount as the total.
fn swapped(r: &Recorded) -> Reply {
    let (seller, buyer, total) = invoice(r);
    Reply::text(json!({"seller": buyer, "buyer": seller, "total": total - 13.0}).to_string())
        .with_usage(100, 10)
}

/// The strong model: right.
fn right(r: &Recorded) -> Reply {
    let (seller, buyer, total) = invoice(r);
    Reply::text(json!({"seller": seller, "buyer": buyer, "total": total}).to_string())
        .with_usage(100, 10)
}

fn server(script: fn(&Recorded) -> Reply) -> FakeApi {
    FakeApi::start(move |req| {
        if req.is_chat() {
            script(req)
        } else {
            Reply::status(404, json!({"error": "no"}))
        }
    })
}

fn run(env: &TestEnv, cheap: &FakeApi, extra: &[&str]) -> std::process::Output {
    env.zhi()
        .args(["--no-progress", "run", "extract", "invoices", "-o", "out"])
        .args([
            "-a",
            "schema=invoice.schema.json",
            "--base-url",
            &cheap.base_url(),
        ])
        .args(extra)
        .output()
        .unwrap()
}

fn manifest(env: &TestEnv) -> Value {
    let runs = zhi::manifest::list_runs(&env.path("out"));
    let text = std::fs::read_to_string(runs.last().unwrap().path.join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn table(env: &TestEnv) -> Vec<csv::StringRecord> {
    let mut r = csv::Reader::from_path(env.path("out/tables/extract-invoice.csv")).unwrap();
    let mut rows = vec![r.headers().unwrap().clone()];
    rows.extend(r.records().map(Result::unwrap));
    rows
}

#[test]
fn a_swapped_invoice_is_doubted_per_field_and_marked_in_the_table_without_a_ladder() {
    let env = env();
    let cheap = server(swapped);
    let out = run(&env, &cheap, &[]);
    assert_exit(&out, Exit::Success);
    let records = records_by_input(&env.path("out"));
    let r = &records["invoices/inv3.txt"];
    assert_eq!(r["status"], "succeeded", "{r}");
    let doubted: Vec<(&str, &str)> = r["doubts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["field"].as_str().unwrap(), d["check"].as_str().unwrap()))
        .collect();
    for want in [("seller", "label"), ("buyer", "label"), ("total", "label")] {
        assert!(doubted.contains(&want), "{want:?} not in {r}");
    }
    // The table says each doubt in words, in zhi's language.
    let cells = |env: &TestEnv| -> Vec<String> {
        let rows = table(env);
        let col = rows[0].iter().position(|c| c == "doubts").unwrap();
        rows[1..].iter().map(|row| row[col].to_string()).collect()
    };
    for cell in cells(&env) {
        assert!(
            cell.contains("seller: found under the buyer's label (\"购买方\")")
                && cell.contains("buyer: found under the seller's label (\"销售方\")"),
            "{cell}"
        );
    }
    let err = stderr(&out);
    assert!(
        err.contains("doubted 8 job(s): extract 8 (buyer 8, seller 8, total 8)"),
        "{err}"
    );
    assert_eq!(manifest(&env)["doubts"]["extract"]["jobs"], 8);
    // A rerun in Chinese sends nothing and writes the table in Chinese.
    let out = env
        .zhi()
        .env("ZHI_LANGUAGE", "zh")
        .args(["--no-progress", "run", "extract", "invoices", "-o", "out"])
        .args([
            "-a",
            "schema=invoice.schema.json",
            "--base-url",
            &cheap.base_url(),
        ])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    for cell in cells(&env) {
        assert!(
            cell.contains("seller：出现在 buyer 的标签（“购买方”）下"),
            "{cell}"
        );
    }
}

#[test]
fn a_doubted_step_goes_up_the_ladder_and_the_strong_answer_is_kept_clean() {
    let env = env();
    let (cheap, strong) = (server(swapped), server(right));
    let to = format!("strong-model@{}", strong.base_url());
    let out = run(&env, &cheap, &["--escalate", &to]);
    assert_exit(&out, Exit::Success);
    assert_eq!(strong.chat_requests().len(), 8, "{}", show(&out));
    let r = &records_by_input(&env.path("out"))["invoices/inv2.txt"];
    assert_eq!(r["model"], "strong-model", "{r}");
    assert_eq!(r["escalated_from"], "glm-4-flash", "{r}");
    assert!(r.get("doubts").is_none(), "{r}");
    let saved: Value = serde_json::from_slice(
        &std::fs::read(env.path(&format!(
            "out/{}/extracted.json",
            r["output_dir"].as_str().unwrap()
        )))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(saved["seller"], "卖方2号有限公司");
    assert_eq!(saved["total"], 213.0);
    assert!(stderr(&out).contains("escalated 8 job(s): extract → strong-model 8"));
    // `escalate_on: []` keeps doubts as doubts: nothing goes up the ladder.
    let env = env_with("escalate_on: []\n");
    let strong = server(right);
    let to = format!("strong-model@{}", strong.base_url());
    let out = run(&env, &cheap, &["--escalate", &to]);
    assert_exit(&out, Exit::Success);
    assert!(strong.chat_requests().is_empty(), "{}", show(&out));
}

/// The cheap model gives up on the total: `null`, though the document states it.
fn gives_up(r: &Recorded) -> Reply {
    let (seller, buyer, _) = invoice(r);
    Reply::text(json!({"seller": seller, "buyer": buyer, "total": null}).to_string())
        .with_usage(100, 10)
}

/// The schema with a total that may be `null`.
fn nullable_total(env: &TestEnv) {
    env.write(
        "invoice.schema.json",
        SCHEMA.replace(
            r#""total": {"type": "number""#,
            r#""total": {"type": ["number", "null"]"#,
        ),
    );
}

#[test]
fn an_empty_field_the_document_states_is_missing_and_goes_up_the_ladder() {
    let env = env();
    nullable_total(&env);
    let cheap = server(gives_up);
    let out = run(&env, &cheap, &[]);
    assert_exit(&out, Exit::Success);
    let r = &records_by_input(&env.path("out"))["invoices/inv1.txt"];
    let doubts = r["doubts"].as_array().unwrap();
    assert_eq!(doubts.len(), 1, "{r}");
    assert_eq!(
        (&doubts[0]["field"], &doubts[0]["check"]),
        (&json!("total"), &json!("missing"))
    );
    assert!(
        doubts[0]["detail"].as_str().unwrap().contains("价税合计"),
        "{r}"
    );
    // With a ladder, the strong model's answer replaces it.
    let env = env_with("");
    nullable_total(&env);
    let strong = server(right);
    let to = format!("strong-model@{}", strong.base_url());
    let out = run(&env, &cheap, &["--escalate", &to]);
    assert_exit(&out, Exit::Success);
    assert_eq!(strong.chat_requests().len(), 8, "{}", show(&out));
    let r = &records_by_input(&env.path("out"))["invoices/inv1.txt"];
    assert!(r.get("doubts").is_none(), "{r}");
}

fn env_with(extra: &str) -> TestEnv {
    let env = env();
    let settings = std::fs::read_to_string(env.path("zhi.yaml")).unwrap();
    env.write("zhi.yaml", format!("{settings}{extra}"));
    env
}

#[test]
fn strict_fails_a_doubted_job_with_its_doubts() {
    let env = env();
    let cheap = server(swapped);
    let out = run(&env, &cheap, &["--strict"]);
    assert_exit(&out, Exit::JobsFailed);
    let r = &records_by_input(&env.path("out"))["invoices/inv1.txt"];
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["error"]["kind"], "doubtful", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("seller (label"),
        "{r}"
    );
}

/// One rule for the exit code (docs/exit-codes.md#doubted-jobs): a doubted job is not a failure
/// (exit 0, the doubted files named); with `--strict` it is, also when its outputs come from
/// the cache — nothing is sent, the outputs stay, and a rerun without `--strict` finds them
/// cached and doubted as before.
#[test]
fn doubted_jobs_exit_0_and_strict_fails_them_also_when_cached() {
    let env = env();
    let cheap = server(swapped);
    let out = run(&env, &cheap, &[]);
    assert_exit(&out, Exit::Success);
    assert!(
        stderr(&out).contains("succeeded 0  doubted 8  failed 0"),
        "{}",
        show(&out)
    );
    assert!(
        stderr(&out).contains("    invoices/inv1.txt\n      seller: found under the buyer's label"),
        "{}",
        show(&out)
    );
    let sent = cheap.chat_requests().len();
    let strict = run(&env, &cheap, &["--strict"]);
    assert_exit(&strict, Exit::JobsFailed);
    assert_eq!(cheap.chat_requests().len(), sent, "{}", show(&strict));
    let r = &records_by_input(&env.path("out"))["invoices/inv1.txt"];
    assert_eq!(
        (&r["status"], &r["error"]["kind"]),
        (&json!("failed"), &json!("doubtful")),
        "{r}"
    );
    assert!(
        env.path(&format!(
            "out/{}/extracted.json",
            r["output_dir"].as_str().unwrap()
        ))
        .exists()
    );
    let again = run(&env, &cheap, &[]);
    assert_exit(&again, Exit::Success);
    assert_eq!(cheap.chat_requests().len(), sent, "{}", show(&again));
    assert!(
        stderr(&again).contains("doubted 8  failed 0  cached 0"),
        "{}",
        show(&again)
    );
}

#[test]
fn an_audit_measures_agreement_on_a_seeded_sample_and_routes_what_falls_below_the_target() {
    let env = env_with("escalate_on: []\n");
    let (cheap, strong) = (server(swapped), server(right));
    let to = format!("strong-model@{}", strong.base_url());
    let args = [
        "--escalate",
        &to,
        "--audit",
        "2",
        "--target",
        "0.95",
        "-j",
        "1",
    ];
    let out = run(&env, &cheap, &args);
    assert_exit(&out, Exit::Success);
    let m = manifest(&env);
    let audit = &m["audit"];
    assert_eq!(audit["model"], "strong-model", "{m}");
    assert_eq!(audit["sampled"], 2, "{m}");
    // Both sampled answers differ from the strong ones on every field: 0/2, whose exact 95%
    // interval is 0–84.2%: no field is shown to reach 0.95.
    let seller = &audit["skills"]["extract"]["seller"];
    assert_eq!(
        (seller["agree"].as_u64(), seller["n"].as_u64()),
        (Some(0), Some(2)),
        "{m}"
    );
    assert!(
        (seller["high"].as_f64().unwrap() - 0.8419).abs() < 0.001,
        "{m}"
    );
    assert_eq!(
        audit["routed"]["extract"],
        json!(["buyer", "seller", "total"]),
        "{m}"
    );
    // Sampled jobs: the cheap model, then the strong one. The jobs past the window of 4 wait
    // for the sample, then go to the strong model alone; a job of the window that starts
    // after the sample is in does too.
    let records = records_by_input(&env.path("out"));
    let routed = records.values().filter(|r| r["routed"] == true).count();
    assert!(routed >= 4, "{m}");
    assert_eq!(audit["routed_jobs"], routed, "{m}");
    assert_eq!(
        cheap.chat_requests().len(),
        2 + (8 - 2 - routed),
        "{}",
        show(&out)
    );
    assert_eq!(strong.chat_requests().len(), 2 + routed, "{}", show(&out));
    // The strong model's 110 tokens a job at 10 a million: 2 sampled, the routed ones.
    assert!(
        (audit["cost"]["amount"].as_f64().unwrap() - 0.0022).abs() < 1e-9,
        "{m}"
    );
    let routed_cost = audit["routed_cost"]["amount"].as_f64().unwrap();
    assert!((routed_cost - 0.0011 * routed as f64).abs() < 1e-9, "{m}");
    let records = records_by_input(&env.path("out"));
    let audited: Vec<&String> = records
        .iter()
        .filter(|(_, r)| r["audited"] == true)
        .map(|(k, _)| k)
        .collect();
    assert_eq!(audited.len(), 2);
    assert!(
        records
            .values()
            .filter(|r| r["audited"] == true)
            .all(|r| r["model"] == "strong-model")
    );
    let err = stderr(&out);
    assert!(
        err.contains("audit: 2 job(s) also answered by strong-model"),
        "{err}"
    );
    assert!(
        err.contains("seller  0/2 agree (0%, 95% CI 0%–84%)"),
        "{err}"
    );
    assert!(
        err.contains(
            "routed extract to strong-model: buyer, seller, total not shown to reach 0.95 (95% confidence)"
        ),
        "{err}"
    );
    // What the guarantee costs: three fields share δ = 5%, so a field is kept at 0.95 only
    // when ln(0.05 / 3) / ln(0.95) = 80 sampled jobs all agree.
    assert_eq!(audit["needed"], 80, "{m}");
    assert!(
        err.contains(
            "a field is kept at 0.95 only on a sample of at least 80 job(s), all agreeing"
        ),
        "{err}"
    );
    // The same seed draws the same sample.
    let again = env_with("escalate_on: []\n");
    let out = run(&again, &cheap, &args);
    assert_exit(&out, Exit::Success);
    let same: Vec<String> = records_by_input(&again.path("out"))
        .into_iter()
        .filter(|(_, r)| r["audited"] == true)
        .map(|(k, _)| k)
        .collect();
    assert_eq!(same.iter().collect::<Vec<_>>(), audited);
}

#[test]
fn an_audit_needs_a_ladder() {
    let env = env();
    let cheap = server(right);
    let out = run(&env, &cheap, &["--audit", "3"]);
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("--escalate"), "{}", show(&out));
    let out = run(&env, &cheap, &["--audit", "0%", "--escalate", "x"]);
    assert_exit(&out, Exit::Usage);
}

/// The cheap model: the parties right, the pre-tax amount as the total.
fn total_wrong(r: &Recorded) -> Reply {
    let (seller, buyer, total) = invoice(r);
    Reply::text(json!({"seller": seller, "buyer": buyer, "total": total - 13.0}).to_string())
        .with_usage(100, 10)
}

#[test]
fn a_routed_extraction_asks_the_top_rung_for_the_fields_not_shown_only() {
    let env = env_with("escalate_on: []\n");
    let (cheap, strong) = (server(total_wrong), server(right));
    let to = format!("strong-model@{}", strong.base_url());
    // Three sampled jobs, three fields: at 60% confidence each field is held to an error of
    // 0.4 / 3, and 3 of 3 agreeing shows a field at 0.5 (0.5³ = 0.125 ≤ 0.133).
    let args = [
        "--escalate",
        &to,
        "--audit",
        "3",
        "--target",
        "0.5",
        "--confidence",
        "0.6",
        "-j",
        "1",
    ];
    let out = run(&env, &cheap, &args);
    assert_exit(&out, Exit::Success);
    let m = manifest(&env);
    assert_eq!(m["audit"]["routed"], json!({"extract": ["total"]}), "{m}");
    assert_eq!(m["audit"]["needed"], 3, "{m}");
    // The run's model is the one its jobs asked, though the top rung answered most of them
    // for the audit and the routes.
    assert!(
        !stderr(&out).contains("model: strong-model"),
        "{}",
        show(&out)
    );
    // The two jobs past the window of six waited for the sample and were routed, and so was
    // a job of the window that started after the sample was in.
    let records = records_by_input(&env.path("out"));
    let routed: Vec<&String> = records
        .iter()
        .filter(|(_, r)| r["routed"] == true)
        .map(|(k, _)| k)
        .collect();
    assert!(routed.len() >= 2, "{}", show(&out));
    assert_eq!(m["audit"]["routed_jobs"], routed.len(), "{m}");
    // Each routed job: the cheap model once for all fields, the strong one for the total only.
    let asked_total_only = strong
        .chat_requests()
        .iter()
        .filter(|r| !r.body_text.contains("seller") && r.body_text.contains("total"))
        .count();
    assert_eq!(asked_total_only, routed.len(), "{}", show(&out));
    assert_eq!(
        strong.chat_requests().len(),
        3 + routed.len(),
        "{}",
        show(&out)
    );
    assert_eq!(cheap.chat_requests().len(), 8, "{}", show(&out));
    // Their answers: the parties the cheap model's, the total the strong model's, right, and
    // the total no longer doubted.
    for input in routed {
        let r = &records[input];
        let (_, seller, buyer, total) = invoices().into_iter().find(|(p, ..)| p == input).unwrap();
        let out_file = env.path("out/extract").join(input).join("extracted.json");
        let got: Value =
            serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
        assert_eq!(
            got,
            json!({"seller": seller, "buyer": buyer, "total": total}),
            "{r}"
        );
        assert!(
            r["doubts"]
                .as_array()
                .is_none_or(|d| d.iter().all(|d| d["field"] != "total")),
            "{r}"
        );
    }
}
