//! Is `zhi run extract` better than just asking the model for the JSON? Papers nobody here
//! wrote — ACLSum, ACL papers with expert summaries of their challenge, approach and outcome —
//! and a schema of those three fields, extracted twice by the same local model: by
//! `zhi run extract -a schema=schema.json docs` (the server's `response_format`, validation,
//! one corrective request, grounding), and by one plain request per paper ("Extract from the
//! paper, as a JSON object with the keys challenge, approach and outcome, …" and the text,
//! temperature 0, the answer budget zhi uses, no `response_format`).
//!
//! `cargo bench --bench extract_real` (after `scripts/fetch-aclsum.sh`). Set
//! `ZHI_BENCH_LLM_URL` to use a running server; otherwise the bench starts the project's own
//! and stops it at the end. `ZHI_BENCH_PAPERS` (default 12) papers are taken, in order, from
//! the split `ZHI_BENCH_SPLIT`: `val` (the default) for the numbers reported, `train` for
//! tuning the schema's descriptions or the prompt.
//!
//! Per method the bench reports: answers valid against the schema (zhi's job succeeded and its
//! `extracted.json`, or the plain answer with a code fence stripped, is an object with the three
//! keys as non-empty strings, valid against the schema); values grounded in the paper's text
//! (zhi's own grounding: its record's `extraction.fields` for zhi, the same code run by the
//! bench on the plain answers), with how they were found (exact, normalized, fuzzy); ROUGE-L
//! F1 of each field against the expert's summary of that field and their mean (an invalid
//! answer scores 0), and the mean on the papers every method answered validly; words per
//! value; zhi's pieces per paper (a paper above its piece budget is split, each piece an
//! extraction request of its own); requests and prompt tokens per paper (zhi's from its
//! `results.jsonl`, the plain request's from the server's `usage`); wall time. The table is
//! printed and written to `target/extract_real.md`; every paper's values beside the references,
//! with their matches and scores, to `target/extract_real-outputs.md`, for reading.

mod common;

use common::aclsum::{self, FIELDS, Paper, TIMEOUT_SECS};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zhi::judge::grounding::{Haystack, Match};

/// What the schema says of each field, in the order of [`FIELDS`].
const DESCRIPTIONS: [&str; 3] = [
    "The problem the paper addresses",
    "What the authors do",
    "What they found",
];

/// The plain request, before the paper's text.
const PLAIN_TASK: &str = "Extract from the paper, as a JSON object with the keys challenge, \
     approach and outcome, the problem the paper addresses (challenge), what the authors do \
     (approach) and what they found (outcome). Answer with the JSON object only.";

/// One method's answer for one paper.
#[derive(Default)]
struct Answer {
    /// The three values, in the order of [`FIELDS`], when the answer is valid.
    values: Option<[String; 3]>,
    /// How each value was found in the paper's text (`exact`, `normalized`, `fuzzy`, `none`).
    matches: [Option<Match>; 3],
    /// Why there is no valid answer.
    problem: Option<String>,
    /// The answer as the model gave it, kept when it is not valid (plain requests).
    raw: Option<String>,
}

/// One method's results, per paper in the order of the papers.
#[derive(Default)]
struct Method {
    answers: Vec<Answer>,
    /// The pieces the documents were split into (zhi's `chunks.total`, 1 when not split);
    /// `None` for the plain request, which sends the whole paper.
    pieces: Option<u64>,
    requests: u64,
    prompt: u64,
    wall: Duration,
}

fn main() {
    let Some((papers, split)) = aclsum::papers() else {
        return;
    };
    let schema = schema();
    let validator = jsonschema::validator_for(&schema).expect("the bench's schema compiles");

    let root = tempfile::tempdir().expect("temp dir");
    let work = root.path().join("work");
    let home = root.path().join("home");
    std::fs::create_dir_all(work.join("docs")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    for p in &papers {
        std::fs::write(work.join(format!("docs/{}.txt", p.id)), &p.text).unwrap();
    }
    std::fs::write(
        work.join("schema.json"),
        serde_json::to_string_pretty(&schema).unwrap(),
    )
    .unwrap();

    let (url, server) = common::local_model(8087);
    // The project's settings file: the server, temperature 0, a timeout for a shared server.
    std::fs::write(
        work.join("zhi.yaml"),
        format!("base_url: {url}\ntemperature: 0\ntimeout: {TIMEOUT_SECS}\n"),
    )
    .unwrap();
    eprintln!("{} papers of the {split} split against {url}", papers.len());

    let t = Instant::now();
    let mut cmd = common::zhi(&home);
    cmd.current_dir(&work).args([
        "run",
        "extract",
        "-a",
        "schema=schema.json",
        "docs",
        "-o",
        "out",
        "--no-progress",
        "-q",
    ]);
    let status = cmd.status().expect("run zhi");
    let mut zhi = Method {
        pieces: Some(0),
        wall: t.elapsed(),
        ..Method::default()
    };
    let out = work.join("out");
    let records: BTreeMap<String, Value> = common::latest_records(&out)
        .into_iter()
        .filter_map(|r| Some((r["input"].as_str()?.to_string(), r)))
        .collect();
    if records.is_empty() {
        eprintln!("zhi exited {status} with no records");
    }
    let model = records
        .values()
        .find_map(|r| r["model"].as_str())
        .unwrap_or("glm-4-flash")
        .to_string();
    for p in &papers {
        let r = records.get(&format!("docs/{}.txt", p.id));
        zhi.requests += r.and_then(|r| r["requests"].as_u64()).unwrap_or(0);
        zhi.pieces = zhi
            .pieces
            .map(|n| n + r.map_or(0, |r| r["chunks"]["total"].as_u64().unwrap_or(1)));
        zhi.prompt += r.and_then(|r| r["tokens"]["prompt"].as_u64()).unwrap_or(0);
        zhi.answers.push(zhi_answer(r, &out, &validator));
    }
    let table_rows = std::fs::read_to_string(out.join("tables/extract-schema.jsonl"))
        .map_or(0, |t| t.lines().filter(|l| !l.trim().is_empty()).count());
    eprintln!("zhi: {:.0} s", zhi.wall.as_secs_f64());

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let client = aclsum::client();
    let max_tokens = runtime.block_on(aclsum::answer_budget(&client, &url));
    let mut plain = Method::default();
    let t = Instant::now();
    for p in &papers {
        plain.requests += 1;
        let body = json!({
            "model": model,
            "messages": [{"role": "user", "content": format!("{PLAIN_TASK}\n\n{}", p.text)}],
            "temperature": 0,
            "max_tokens": max_tokens,
        });
        let answer = match runtime.block_on(aclsum::chat(&client, &url, &body)) {
            Ok((answer, prompt)) => {
                plain.prompt += prompt;
                plain_answer(&answer, p, &validator)
            }
            Err(e) => {
                eprintln!("plain request for {}: {e}", p.id);
                Answer {
                    problem: Some(format!("request failed: {e}")),
                    ..Answer::default()
                }
            }
        };
        plain.answers.push(answer);
    }
    plain.wall = t.elapsed();
    eprintln!("plain: {:.0} s", plain.wall.as_secs_f64());
    common::stop_local_model(server);

    let methods = [("zhi run extract", &zhi), ("plain request", &plain)];
    let table = render(&methods, &papers, &split, &model, table_rows);
    println!("{table}");
    let dest = repo().join("target/extract_real.md");
    let _ = std::fs::write(&dest, &table);
    let outputs = repo().join("target/extract_real-outputs.md");
    let _ = std::fs::write(&outputs, details(&methods, &papers));
    eprintln!("written to {} and {}", dest.display(), outputs.display());
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The schema both methods answer to: the three fields, strings, all required.
fn schema() -> Value {
    let properties: serde_json::Map<String, Value> = FIELDS
        .iter()
        .zip(DESCRIPTIONS)
        .map(|(f, d)| (f.to_string(), json!({"type": "string", "description": d})))
        .collect();
    json!({"type": "object", "properties": properties, "required": FIELDS})
}

/// The three values of an object valid against the schema, each a non-empty string.
fn check(v: &Value, validator: &jsonschema::Validator) -> Result<[String; 3], String> {
    if !v.is_object() {
        return Err("not a JSON object".into());
    }
    if let Some(e) = validator.iter_errors(v).next() {
        return Err(format!("not valid against the schema: {e}"));
    }
    let mut values: [String; 3] = Default::default();
    for (value, f) in values.iter_mut().zip(FIELDS) {
        *value = v[f].as_str().unwrap_or_default().trim().to_string();
        if value.is_empty() {
            return Err(format!("{f} is empty"));
        }
    }
    Ok(values)
}

/// zhi's answer for a paper: its record, its `extracted.json`, its grounding.
fn zhi_answer(r: Option<&Value>, out: &Path, validator: &jsonschema::Validator) -> Answer {
    let Some(r) = r else {
        return Answer {
            problem: Some("no record".into()),
            ..Answer::default()
        };
    };
    if r["status"] != "succeeded" {
        return Answer {
            problem: Some(format!(
                "{} {}: {}",
                r["status"].as_str().unwrap_or("?"),
                r["error"]["kind"].as_str().unwrap_or("?"),
                r["error"]["message"].as_str().unwrap_or_default()
            )),
            ..Answer::default()
        };
    }
    let object = r["outputs"][0]["path"]
        .as_str()
        .and_then(|path| std::fs::read_to_string(out.join(path)).ok())
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let Some(object) = object else {
        return Answer {
            problem: Some("succeeded without a readable extracted.json".into()),
            ..Answer::default()
        };
    };
    match check(&object, validator) {
        Ok(values) => Answer {
            values: Some(values),
            matches: FIELDS.map(|f| {
                serde_json::from_value(r["extraction"]["fields"][f]["match"].clone()).ok()
            }),
            ..Answer::default()
        },
        Err(e) => Answer {
            problem: Some(format!("succeeded, but extracted.json is {e}")),
            raw: Some(object.to_string()),
            ..Answer::default()
        },
    }
}

/// The plain request's answer: parsed as JSON (a code fence stripped), checked, and grounded
/// in the paper's text by zhi's own code.
fn plain_answer(answer: &str, p: &Paper, validator: &jsonschema::Validator) -> Answer {
    let checked = serde_json::from_str::<Value>(strip_fence(answer))
        .map_err(|e| format!("not JSON: {e}"))
        .and_then(|v| check(&v, validator));
    match checked {
        Ok(values) => {
            let hay = Haystack::new(&p.text);
            let matches = values
                .each_ref()
                .map(|v| Some(hay.locate(&Value::String(v.clone())).how));
            Answer {
                values: Some(values),
                matches,
                ..Answer::default()
            }
        }
        Err(e) => Answer {
            problem: Some(e),
            raw: Some(answer.to_string()),
            ..Answer::default()
        },
    }
}

/// The inside of the answer's first code fence (```` ```json … ``` ````), or the answer.
fn strip_fence(answer: &str) -> &str {
    let t = answer.trim();
    let Some(open) = t.find("```") else {
        return t;
    };
    let inside = t[open + 3..].split_once('\n').map_or("", |(_, rest)| rest);
    inside
        .find("```")
        .map_or(inside, |end| &inside[..end])
        .trim()
}

fn match_name(m: Option<Match>) -> &'static str {
    match m {
        Some(Match::Exact) => "exact",
        Some(Match::Normalized) => "normalized",
        Some(Match::Fuzzy) => "fuzzy",
        Some(Match::None) => "none",
        None => "?",
    }
}

/// ROUGE-L F1 of field `i` of an answer against the expert's summary of it (0 when invalid).
fn score(a: &Answer, p: &Paper, i: usize) -> f64 {
    a.values
        .as_ref()
        .map_or(0.0, |v| aclsum::rouge_l(&v[i], &p.summary[i]))
}

fn render(
    methods: &[(&str, &Method)],
    papers: &[Paper],
    split: &str,
    model: &str,
    table_rows: usize,
) -> String {
    let n = papers.len().max(1) as f64;
    let mut t = format!(
        "{} ACLSum papers ({split} split), model {model} at temperature 0; a schema of three \
         strings (challenge, approach, outcome). Valid: an object with the three as non-empty \
         strings, valid against the schema. Grounded: values of the valid answers found in the \
         paper's text by zhi's grounding (exact / normalized / fuzzy). ROUGE-L F1 of each field \
         against the expert's summary of it, averaged over the papers, an invalid answer \
         scoring 0.\n\n\
         | method | valid | grounded | exact / normalized / fuzzy | ROUGE-L challenge | approach | outcome | mean | words/value | pieces/paper | requests/paper | prompt tokens/paper | wall |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        papers.len()
    );
    for (name, m) in methods {
        let valid: Vec<&Answer> = m.answers.iter().filter(|a| a.values.is_some()).collect();
        let count = |want: Match| {
            valid
                .iter()
                .flat_map(|a| a.matches.iter())
                .filter(|&&x| x == Some(want))
                .count()
        };
        let (exact, normalized, fuzzy) = (
            count(Match::Exact),
            count(Match::Normalized),
            count(Match::Fuzzy),
        );
        let values = 3 * valid.len();
        let rouge: Vec<f64> = (0..3)
            .map(|i| {
                papers
                    .iter()
                    .zip(&m.answers)
                    .map(|(p, a)| score(a, p, i))
                    .sum::<f64>()
                    / n
            })
            .collect();
        let words = valid
            .iter()
            .flat_map(|a| a.values.iter().flatten())
            .map(|v| aclsum::words(v).len())
            .sum::<usize>() as f64
            / values.max(1) as f64;
        t.push_str(&format!(
            "| {name} | {}/{} | {}/{values} | {exact} / {normalized} / {fuzzy} | {:.3} | {:.3} | {:.3} | {:.3} | {words:.0} | {} | {:.1} | {:.0} | {:.0} s |\n",
            valid.len(),
            papers.len(),
            exact + normalized + fuzzy,
            rouge[0],
            rouge[1],
            rouge[2],
            rouge.iter().sum::<f64>() / 3.0,
            m.pieces
                .map_or("—".to_string(), |k| format!("{:.1}", k as f64 / n)),
            m.requests as f64 / n,
            m.prompt as f64 / n,
            m.wall.as_secs_f64(),
        ));
    }
    let expert_words = papers
        .iter()
        .flat_map(|p| p.summary.iter())
        .map(|s| aclsum::words(s).len())
        .sum::<usize>() as f64
        / (3 * papers.len()).max(1) as f64;
    // The papers every method answered validly, where the fields' scores compare content alone.
    let both: Vec<usize> = (0..papers.len())
        .filter(|&i| methods.iter().all(|(_, m)| m.answers[i].values.is_some()))
        .collect();
    let means: Vec<String> = methods
        .iter()
        .map(|(name, m)| {
            let sum: f64 = both
                .iter()
                .map(|&i| {
                    (0..3)
                        .map(|k| score(&m.answers[i], &papers[i], k))
                        .sum::<f64>()
                        / 3.0
                })
                .sum();
            format!("{name} {:.3}", sum / both.len().max(1) as f64)
        })
        .collect();
    t.push_str(&format!(
        "\nOn the {} papers every method answered validly, the mean ROUGE-L: {}. The experts' \
         summaries: {expert_words:.0} words a field. zhi's table \
         (tables/extract-schema.jsonl): {table_rows} rows for {} papers.\n",
        both.len(),
        means.join(", "),
        papers.len()
    ));
    t
}

/// Every paper's values beside the references, with how they were found and their scores.
fn details(methods: &[(&str, &Method)], papers: &[Paper]) -> String {
    let mut out = String::new();
    for (i, p) in papers.iter().enumerate() {
        out.push_str(&format!("# {} — {}\n\n", p.id, p.title));
        for (name, m) in methods {
            let a = &m.answers[i];
            if let Some(problem) = &a.problem {
                out.push_str(&format!("**{name}**: no valid answer ({problem})\n\n"));
                if let Some(raw) = &a.raw {
                    out.push_str(&format!("```\n{}\n```\n\n", raw.trim()));
                }
            }
        }
        for (k, field) in FIELDS.iter().enumerate() {
            out.push_str(&format!(
                "## {field}\n\n- **reference**: {}\n",
                p.summary[k]
            ));
            for (name, m) in methods {
                let a = &m.answers[i];
                if let Some(values) = &a.values {
                    out.push_str(&format!(
                        "- **{name}** ({}, ROUGE-L {:.3}): {}\n",
                        match_name(a.matches[k]),
                        score(a, p, k),
                        values[k]
                    ));
                }
            }
            out.push('\n');
        }
    }
    out
}
