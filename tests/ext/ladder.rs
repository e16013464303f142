//! The real ladder (docs/escalation.md, docs/outputs.md#doubts): the local 0.5B model is the
//! cheap one and the local 1.5B the strong one, at temperature 0. What the small model gets
//! wrong on the project's own invoices (examples/invoices, with their truth) is doubted,
//! cell by cell, and the ladder mends it; a half-translated note is doubted and asked of the
//! strong model; the quick start's Chinese notes never pass as a plain summary.

use crate::need::Need;
use crate::support::testenv::{TestEnv, latest_records, show};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

pub fn tests() -> Vec<crate::Test> {
    let both = &[Need::LocalModel, Need::StrongModel];
    vec![
        crate::Test::new(
            "ladder::invoices_the_small_model_gets_wrong_are_doubted_and_the_ladder_mends_them",
            both,
            invoices_the_small_model_gets_wrong_are_doubted_and_the_ladder_mends_them,
        ),
        crate::Test::new(
            "ladder::a_half_translated_note_is_doubted_and_asked_of_the_strong_model",
            both,
            a_half_translated_note_is_doubted_and_asked_of_the_strong_model,
        ),
        crate::Test::new(
            "ladder::the_quick_starts_chinese_notes_are_never_a_plain_summary",
            &[Need::LocalModel],
            the_quick_starts_chinese_notes_are_never_a_plain_summary,
        ),
    ]
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn strong_url() -> String {
    std::env::var("ZHI_TEST_STRONG_URL").unwrap_or_default()
}

fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", "temperature: 0\n");
    env
}

/// A cell as the truth is compared: numbers by value, dates by their day, text without case,
/// space or punctuation.
fn norm(v: &Value) -> String {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let s = match v {
        Value::Number(n) => return format!("{:.2}", n.as_f64().unwrap_or(0.0)),
        Value::String(s) => s.to_lowercase(),
        Value::Null => return String::new(),
        other => other.to_string(),
    };
    let plain: String = s.chars().filter(|c| !",¥$€£ ".contains(*c)).collect();
    if let Ok(n) = plain.parse::<f64>() {
        return format!("{n:.2}");
    }
    let numbers: Vec<u32> = s
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok())
        .collect();
    let month = MONTHS
        .iter()
        .position(|m| s.contains(m))
        .map(|i| i as u32 + 1);
    match (month, numbers.as_slice()) {
        (Some(m), [a, b]) => {
            let (y, d) = if *a > 31 { (a, b) } else { (b, a) };
            return format!("{y:04}-{m:02}-{d:02}");
        }
        (None, [y, m, d]) if *y > 1000 && !s.chars().any(|c| c.is_ascii_alphabetic()) => {
            return format!("{y:04}-{m:02}-{d:02}");
        }
        _ => {}
    }
    s.chars()
        .filter(|c| c.is_alphanumeric() || (!c.is_ascii() && !"（）。，".contains(*c)))
        .collect()
}

/// Per document: (field, right, doubted) for every cell of the truth.
fn cells(env: &TestEnv, out: &str) -> Vec<(String, String, bool, bool)> {
    let truth = std::fs::read_to_string(repo().join("examples/invoices.truth.jsonl")).unwrap();
    let records: BTreeMap<String, Value> = latest_records(&env.path(out))
        .into_iter()
        .map(|r| (r["input"].as_str().unwrap_or("").to_string(), r))
        .collect();
    let mut out_cells = Vec::new();
    for line in truth.lines().filter(|l| !l.trim().is_empty()) {
        let t: Value = serde_json::from_str(line).unwrap();
        let file = t["file"].as_str().unwrap();
        let r = &records[&format!("invoices/{file}")];
        let dir = r["output_dir"].as_str().unwrap_or_default();
        let got: Value = std::fs::read(env.path(&format!("{out}/{dir}/extracted.json")))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let doubted: Vec<&str> = r["doubts"]
            .as_array()
            .map(|d| d.iter().filter_map(|d| d["field"].as_str()).collect())
            .unwrap_or_default();
        for (field, want) in t.as_object().unwrap().iter().filter(|(k, _)| *k != "file") {
            let right = norm(&got[field]) == norm(want);
            out_cells.push((
                file.to_string(),
                field.clone(),
                right,
                doubted.contains(&field.as_str()),
            ));
        }
    }
    out_cells
}

fn extract(env: &TestEnv, url: &str, out: &str, extra: &[&str]) -> std::process::Output {
    env.zhi()
        .args(["--no-progress", "run", "extract", "invoices", "-o", out])
        .args(["-a", "schema=invoice.schema.json", "-j", "1"])
        .args(["--base-url", url])
        .args(extra)
        .output()
        .unwrap()
}

pub fn invoices_the_small_model_gets_wrong_are_doubted_and_the_ladder_mends_them() {
    // One test at a time on the one-slot servers.
    let url = crate::local_model::server();
    let env = env();
    let data = repo().join("examples");
    for entry in std::fs::read_dir(data.join("invoices")).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        env.write(&format!("invoices/{name}"), std::fs::read(&p).unwrap());
    }
    env.write(
        "invoice.schema.json",
        std::fs::read(data.join("invoice.schema.json")).unwrap(),
    );

    let out = extract(&env, &url, "cheap", &[]);
    assert!(out.status.success(), "{}", show(&out));
    let cheap = cells(&env, "cheap");
    let wrong: Vec<_> = cheap.iter().filter(|c| !c.2).collect();
    let missed: Vec<_> = wrong.iter().filter(|c| !c.3).collect();
    note!(
        "0.5B alone: {} of {} cells right, {} wrong and doubted, {} wrong and not doubted: {missed:?}",
        cheap.len() - wrong.len(),
        cheap.len(),
        wrong.len() - missed.len(),
        missed.len()
    );
    // Measured: the cells it misses are an English invoice's parties with no label of the
    // schema's before them; on the Chinese invoices every wrong cell is doubted.
    assert!(missed.iter().all(|c| c.0.is_ascii()), "{missed:?}");
    // The 0.5B gets some cells of these invoices wrong (measured: 20 to 22 of 48): were it to
    // get none wrong, the share below would hold on nothing.
    assert!(
        !wrong.is_empty(),
        "the 0.5B got every cell right: nothing to doubt"
    );
    assert!(missed.len() * 4 <= wrong.len(), "{missed:?} of {wrong:?}");

    let to = format!("1.5b@{}", strong_url());
    let out = extract(&env, &url, "ladder", &["--escalate", &to]);
    assert!(out.status.success(), "{}", show(&out));
    let ladder = cells(&env, "ladder");
    let right = ladder.iter().filter(|c| c.2).count();
    note!(
        "ladder 0.5B → 1.5B: {right} of {} cells right",
        ladder.len()
    );
    assert!(
        right + 2 >= ladder.len(),
        "{:?}",
        ladder.iter().filter(|c| !c.2).collect::<Vec<_>>()
    );
}

pub fn a_half_translated_note_is_doubted_and_asked_of_the_strong_model() {
    let url = crate::local_model::server();
    let env = env();
    let note = std::fs::read(repo().join("examples/docs/会议纪要.txt")).unwrap();
    env.write("notes/会议纪要.txt", note);
    let to = format!("1.5b@{}", strong_url());
    let out = env
        .zhi()
        .args([
            "--no-progress",
            "run",
            "translate",
            "notes",
            "-a",
            "to=english",
            "-o",
            "out",
        ])
        .args(["--base-url", url.as_str(), "--escalate", &to])
        .output()
        .unwrap();
    let records = latest_records(&env.path("out"));
    let r = &records[0];
    // The small model's translation is doubted (names half in characters, 下午三点 lost), so
    // the step is asked of the strong model; what it says is kept, with any doubt it earns.
    assert_eq!(r["escalated"], true, "{r}\n{}", show(&out));
    assert_eq!(r["model"], "1.5b", "{r}");
}

pub fn the_quick_starts_chinese_notes_are_never_a_plain_summary() {
    let url = crate::local_model::server();
    let env = env();
    let note = std::fs::read(repo().join("examples/docs/会议纪要.txt")).unwrap();
    env.write("docs/会议纪要.txt", note);
    let out = env
        .zhi()
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .args(["--base-url", url.as_str()])
        .output()
        .unwrap();
    let records = latest_records(&env.path("out"));
    let r = &records[0];
    let doubted = r["doubts"].as_array().is_some_and(|d| !d.is_empty());
    assert!(
        r["status"] == "failed" || doubted,
        "a plain success: {r}\n{}",
        show(&out)
    );
    if r["status"] == "succeeded" {
        let dir = r["output_dir"].as_str().unwrap();
        let summary = std::fs::read_to_string(env.path(&format!("out/{dir}/summary.md"))).unwrap();
        note!("doubted summary: {summary}\n{}", r["doubts"]);
    }
}
