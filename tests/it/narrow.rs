//! What a person sees on an 80-column terminal (docs/display.md#tables): `zhi plan` over the
//! sample invoices and documents, `zhi skills list` and `zhi config show`, pinned as insta
//! snapshots with `COLUMNS=80`, each line at most 80 columns and every name, id, path and
//! value whole on one line. And in Chinese (docs/display.md#languages): no English word is
//! left in what zhi says itself, outside names and values.

use crate::support::snapshot::{filters, stable};
use crate::support::testenv::{TestEnv, assert_exit, stderr, stdout};
use std::collections::BTreeSet;
use std::path::Path;
use zhi::exit::Exit;

/// Copy the repository's `examples/<name>` into the test's working folder.
fn examples(env: &TestEnv, name: &str) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        let rel = format!("examples/{name}/{}", entry.file_name().to_string_lossy());
        env.write(&rel, std::fs::read(entry.path()).unwrap());
    }
}

/// Display columns of a line (CJK counts two).
fn columns(line: &str) -> usize {
    line.chars()
        .map(|c| {
            if (c as u32) >= 0x1100 && !matches!(c, '…' | '↳' | '—') {
                2
            } else {
                1
            }
        })
        .sum()
}

/// `zhi ARGS…` at 80 columns, with its stdout and stderr.
fn narrow(env: &TestEnv, lang: &str, args: &[&str]) -> (String, String) {
    let out = env
        .zhi()
        .env("COLUMNS", "80")
        .env("ZHI_LANGUAGE", lang)
        .args(args)
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    (stdout(&out), stderr(&out))
}

/// Every line fits 80 columns, and each of `whole` is on one line somewhere.
fn assert_fits(table: &str, whole: &BTreeSet<String>) {
    for line in table.lines() {
        assert!(
            columns(line) <= 80,
            "wider than 80 columns: {line:?}\n{table}"
        );
    }
    for w in whole {
        assert!(
            table.contains(w.as_str()),
            "`{w}` is split or missing:\n{table}"
        );
    }
}

fn json(env: &TestEnv, args: &[&str]) -> Vec<serde_json::Value> {
    let out = env.zhi().arg("--json").args(args).output().unwrap();
    assert_exit(&out, Exit::Success);
    let text = stdout(&out);
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(serde_json::Value::Array(a)) => a,
        Ok(v) => vec![v],
        Err(_) => text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    }
}

/// What a command printed at 80 columns, pinned with the shared filters
/// ([`zhi_snapshot!`](crate::zhi_snapshot)'s).
fn snapshot(name: &str, env: &TestEnv, out: &(String, String)) {
    let shown = format!(
        "--- stdout\n{}--- stderr\n{}",
        stable(env, &out.0),
        stable(env, &out.1)
    );
    insta::with_settings!({filters => filters(true)}, {
        insta::assert_snapshot!(name.to_string(), shown);
    });
}

const PLAN: &[&str] = &[
    "plan",
    "invoice-to-excel",
    "examples/invoices",
    "examples/docs",
    "--base-url",
    "http://127.0.0.1:1/v1",
];

#[test]
fn plan_at_80_columns() {
    let env = TestEnv::new();
    examples(&env, "invoices");
    examples(&env, "docs");
    // A file zhi cannot read: `will-fail`, its reason under its row.
    env.write("examples/docs/blob.bin", [0u8, 1]);
    let out = narrow(&env, "en", PLAN);
    assert!(out.0.contains("--exclude '*.bin'"), "{}", out.0);
    let mut whole = BTreeSet::new();
    // A plan of one skill names it once, under the table.
    assert!(out.1.contains("skill: invoice-to-excel"), "{}", out.1);
    for job in json(&env, PLAN) {
        whole.insert(job["job_id"].as_str().unwrap()[..8].to_string());
        let input = job["inputs"][0].as_str().unwrap();
        whole.insert(input.rsplit('/').next().unwrap().to_string());
    }
    assert_fits(&out.0, &whole);
    snapshot("plan_80", &env, &out);
}

#[test]
fn skills_list_at_80_columns() {
    let env = TestEnv::new();
    let out = narrow(&env, "en", &["skills", "list"]);
    let mut whole = BTreeSet::new();
    for s in json(&env, &["skills", "list"]) {
        whole.insert(s["name"].as_str().unwrap().to_string());
        whole.insert(s["mode"].as_str().unwrap().to_string());
        // The description's first word, at least, and never a word cut without `…`.
        let first = s["description"]
            .as_str()
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        whole.insert(first.to_string());
    }
    assert_fits(&out.0, &whole);
    for line in out.0.lines().skip(1) {
        assert!(
            !line.starts_with(' '),
            "one line a skill: {line:?}\n{}",
            out.0
        );
    }
    snapshot("skills_list_80", &env, &out);
}

#[test]
fn config_show_at_80_columns() {
    let env = TestEnv::new();
    let out = narrow(&env, "en", &["config", "show"]);
    let mut whole = BTreeSet::new();
    for (name, v) in json(&env, &["config", "show"])[0].as_object().unwrap() {
        whole.insert(name.clone());
        if let Some(s) = v["value"].as_str() {
            whole.extend(s.split(' ').map(str::to_string));
        }
    }
    assert_fits(&out.0, &whole);
    snapshot("config_show_80", &env, &out);
}

/// The words of `v`'s strings and keys: the names and values a command shows.
fn words_of(v: &serde_json::Value, into: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::String(s) => into.extend(words(s)),
        serde_json::Value::Bool(b) => {
            into.insert(b.to_string());
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| words_of(v, into)),
        serde_json::Value::Object(o) => {
            // A will-fail job's reason is English in JSON and must be translated on screen.
            for (k, v) in o.iter().filter(|(k, _)| *k != "error") {
                into.extend(words(k));
                words_of(v, into);
            }
        }
        _ => {}
    }
}

/// English words of three letters or more, outside `code spans` and `--flags`; hex runs (job
/// ids, cut) are not words.
/// Identifiers (`unsupported_type`, `ZHI_API_KEY`) and flags are names, not words.
fn words(text: &str) -> Vec<String> {
    let mut plain = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 0 {
            plain.push_str(part);
            plain.push(' ');
        }
    }
    plain
        .split(|c: char| c.is_whitespace() || !c.is_ascii() || "()[]{}'\",;".contains(c))
        .filter(|w| !w.starts_with('-') && !w.contains('_'))
        .flat_map(|w| w.split(|c: char| !c.is_ascii_alphabetic()))
        .filter(|w| w.len() >= 3 && !w.chars().all(|c| c.is_ascii_hexdigit()))
        .map(str::to_lowercase)
        .collect()
}

#[test]
fn chinese_mode_leaves_no_english_words_outside_names_and_values() {
    let env = TestEnv::new();
    examples(&env, "invoices");
    env.write("examples/invoices/blob.bin", [0u8, 1]);
    let plan = [
        "plan",
        "invoice-to-excel",
        "examples/invoices",
        "--base-url",
        "http://127.0.0.1:1/v1",
    ];
    let commands: [&[&str]; 3] = [&plan, &["skills", "list"], &["config", "show"]];
    for args in commands {
        let mut known: BTreeSet<String> = ["zhi", "glm", "flash"].map(String::from).into();
        for v in json(&env, args) {
            words_of(&v, &mut known);
        }
        let (out, err) = narrow(&env, "zh", args);
        let left: BTreeSet<String> = words(&format!("{out}\n{err}"))
            .into_iter()
            .filter(|w| !known.contains(w))
            .collect();
        assert!(
            left.is_empty(),
            "zhi {args:?} in Chinese keeps English words {left:?}:\n{out}{err}"
        );
    }
}
