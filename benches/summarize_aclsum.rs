//! Is `zhi run summarize` worse than just asking the model? Papers nobody here wrote — ACLSum,
//! ACL papers with expert summaries — summarized twice by the same local model: by zhi, and by
//! one plain request per paper ("Summarize the paper in three sentences: the problem, the
//! approach, the result." and the text, temperature 0, the answer budget zhi uses). Both are
//! scored against the experts' summary (challenge, approach and outcome joined) with ROUGE-L F1.
//!
//! `cargo bench --bench summarize_aclsum` (after `scripts/fetch-aclsum.sh`). Set
//! `ZHI_BENCH_LLM_URL` to use a running server; otherwise the bench starts the project's own
//! and stops it at the end. `ZHI_BENCH_PAPERS` (default 12) papers are taken, in order, from
//! the split `ZHI_BENCH_SPLIT`: `val` (the default) for the numbers reported, `train` for
//! tuning a prompt, so that the reported papers were never looked at while writing it.
//!
//! A paper's text is its abstract, introduction and conclusion sentences, a paragraph each,
//! with the dataset's spaces before punctuation taken out. Per method the bench reports ROUGE-L
//! F1 (word-level longest common subsequence, lowercased, punctuation stripped; a failed
//! paper scores 0), papers that succeeded, requests and prompt tokens per paper (zhi's from its
//! `results.jsonl`, the plain request's from the server's `usage`), words per summary and wall
//! time. The table is printed and written to `target/summarize_aclsum.md`; every summary, with
//! its reference and scores, to `target/summarize_aclsum-outputs.md`, for reading.

mod common;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The plain request, before the paper's text.
const PLAIN_TASK: &str =
    "Summarize the paper in three sentences: the problem, the approach, the result.";

/// A request may wait behind others on a shared one-slot server.
const TIMEOUT_SECS: u64 = 900;

struct Paper {
    id: String,
    title: String,
    text: String,
    reference: String,
}

/// One method's results, per paper in the order of the papers.
#[derive(Default)]
struct Method {
    summaries: Vec<Option<String>>,
    requests: u64,
    prompt: u64,
    wall: Duration,
}

fn main() {
    let n: usize = std::env::var("ZHI_BENCH_PAPERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(12);
    let split = match std::env::var("ZHI_BENCH_SPLIT").as_deref() {
        Ok("validation") | Ok("") | Err(_) => "val".to_string(),
        Ok(s) => s.to_string(),
    };
    let data = common::docs_dir().join(format!("aclsum/{split}.jsonl"));
    let Ok(lines) = std::fs::read_to_string(&data) else {
        eprintln!(
            "note: {} is not available (scripts/fetch-aclsum.sh); skipped",
            data.display()
        );
        return;
    };
    let papers: Vec<Paper> = lines
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| paper(&v))
        .take(n)
        .collect();

    let root = tempfile::tempdir().expect("temp dir");
    let work = root.path().join("work");
    let home = root.path().join("home");
    std::fs::create_dir_all(work.join("docs")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    for p in &papers {
        std::fs::write(work.join(format!("docs/{}.txt", p.id)), &p.text).unwrap();
    }
    // The project's settings file: both methods at temperature 0.
    std::fs::write(work.join("zhi.yaml"), "temperature: 0\n").unwrap();

    let (url, server) = common::local_model(8087);
    eprintln!("{} papers of the {split} split against {url}", papers.len());

    let t = Instant::now();
    let mut cmd = common::zhi(&home);
    cmd.current_dir(&work)
        .args([
            "run",
            "summarize",
            "docs",
            "-o",
            "out",
            "--no-progress",
            "-q",
        ])
        .args(["--base-url", &url, "--timeout", &TIMEOUT_SECS.to_string()]);
    let status = cmd.status().expect("run zhi");
    let mut zhi = Method {
        wall: t.elapsed(),
        ..Method::default()
    };
    let records: BTreeMap<String, Value> = common::latest_records(&work.join("out"))
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
        zhi.prompt += r.and_then(|r| r["tokens"]["prompt"].as_u64()).unwrap_or(0);
        let summary = r
            .filter(|r| r["status"] == "succeeded")
            .and_then(|r| r["outputs"][0]["path"].as_str())
            .and_then(|path| std::fs::read_to_string(work.join("out").join(path)).ok());
        zhi.summaries.push(summary);
    }
    eprintln!("zhi: {:.0} s", zhi.wall.as_secs_f64());

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(TIMEOUT_SECS))
        .build()
        .expect("HTTP client");
    let max_tokens = runtime.block_on(answer_budget(&client, &url));
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
        match runtime.block_on(chat(&client, &url, &body)) {
            Ok((answer, prompt)) => {
                plain.prompt += prompt;
                plain.summaries.push(Some(answer));
            }
            Err(e) => {
                eprintln!("plain request for {}: {e}", p.id);
                plain.summaries.push(None);
            }
        }
    }
    plain.wall = t.elapsed();
    eprintln!("plain: {:.0} s", plain.wall.as_secs_f64());
    common::stop_local_model(server);

    let methods = [("zhi run summarize", &zhi), ("plain request", &plain)];
    let table = render(&methods, &papers, &split);
    println!("{table}");
    let dest = repo().join("target/summarize_aclsum.md");
    let _ = std::fs::write(&dest, &table);
    let outputs = repo().join("target/summarize_aclsum-outputs.md");
    let _ = std::fs::write(&outputs, details(&methods, &papers));
    eprintln!("written to {} and {}", dest.display(), outputs.display());
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A paper of the dataset: its sections as paragraphs, and the experts' three summaries joined.
fn paper(v: &Value) -> Paper {
    let sentences = |section: &str| -> Vec<String> {
        v["sentences"][section]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(detokenize).collect())
            .unwrap_or_default()
    };
    let text = ["abstract", "introduction", "conclusion"]
        .iter()
        .map(|s| sentences(s).join(" "))
        .collect::<Vec<_>>()
        .join("\n\n");
    let reference = ["challenge", "approach", "outcome"]
        .iter()
        .filter_map(|a| v["summary"][a].as_str())
        .collect::<Vec<_>>()
        .join(" ");
    Paper {
        id: v["id"].as_str().unwrap_or("paper").to_string(),
        title: v["title"].as_str().unwrap_or_default().to_string(),
        text: text + "\n",
        reference,
    }
}

/// The dataset's tokenised sentence as ordinary text: no space before `, . ; : ! ? % )` or
/// after `(`.
fn detokenize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        let glued = matches!(word, "," | "." | ";" | ":" | "!" | "?" | "%" | ")" | "]")
            || out.ends_with('(')
            || out.ends_with('[');
        if !out.is_empty() && !glued {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The answer budget zhi gives a request to this server: a quarter of the context window the
/// server reports, at most glm-4-flash's 4,096 (`Models::apply_server_window`).
async fn answer_budget(client: &reqwest::Client, url: &str) -> u64 {
    let window = async {
        let v: Value = client
            .get(format!("{}/models", url.trim_end_matches('/')))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        v["data"][0]["meta"]["n_ctx"].as_u64()
    }
    .await;
    window.map_or(4_096, |w| (w / 4).clamp(256, 4_096))
}

/// One chat request: the answer and its prompt tokens.
async fn chat(client: &reqwest::Client, url: &str, body: &Value) -> Result<(String, u64), String> {
    let reply: Value = client
        .post(format!("{}/chat/completions", url.trim_end_matches('/')))
        .json(body)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| e.to_string())?
        .json()
        .await
        .map_err(|e| e.to_string())?;
    let answer = reply["choices"][0]["message"]["content"]
        .as_str()
        .filter(|a| !a.trim().is_empty())
        .ok_or("no answer")?;
    let prompt = reply["usage"]["prompt_tokens"].as_u64().unwrap_or(0);
    Ok((answer.to_string(), prompt))
}

/// Lowercased words, punctuation stripped.
fn words(text: &str) -> Vec<String> {
    text.chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .to_lowercase()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The length of the longest common subsequence of two word lists.
fn lcs(a: &[String], b: &[String]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                prev[j + 1].max(cur[j])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// ROUGE-L F1 of a candidate against a reference.
fn rouge_l(candidate: &str, reference: &str) -> f64 {
    let (c, r) = (words(candidate), words(reference));
    let common = lcs(&c, &r) as f64;
    if common == 0.0 {
        return 0.0;
    }
    let (precision, recall) = (common / c.len() as f64, common / r.len() as f64);
    2.0 * precision * recall / (precision + recall)
}

fn score(summary: Option<&String>, p: &Paper) -> f64 {
    summary.map_or(0.0, |s| rouge_l(s, &p.reference))
}

fn render(methods: &[(&str, &Method)], papers: &[Paper], split: &str) -> String {
    let n = papers.len().max(1) as f64;
    let mut t = format!(
        "{} ACLSum papers ({split} split); reference: the experts' challenge, approach and outcome; \
         ROUGE-L F1 averaged over the papers, a failed paper scoring 0.\n\n\
         | method | ROUGE-L F1 | succeeded | requests/paper | prompt tokens/paper | words/summary | wall |\n\
         |---|---|---|---|---|---|---|\n",
        papers.len()
    );
    for (name, m) in methods {
        let rouge: f64 = papers
            .iter()
            .zip(&m.summaries)
            .map(|(p, s)| score(s.as_ref(), p))
            .sum::<f64>()
            / n;
        let done: Vec<&String> = m.summaries.iter().flatten().collect();
        let words_each =
            done.iter().map(|s| words(s).len()).sum::<usize>() as f64 / done.len().max(1) as f64;
        t.push_str(&format!(
            "| {name} | {rouge:.3} | {}/{} | {:.1} | {:.0} | {words_each:.0} | {:.0} s |\n",
            done.len(),
            papers.len(),
            m.requests as f64 / n,
            m.prompt as f64 / n,
            m.wall.as_secs_f64(),
        ));
    }
    t
}

/// Every paper's summaries beside its reference, with their scores.
fn details(methods: &[(&str, &Method)], papers: &[Paper]) -> String {
    let mut out = String::new();
    for (i, p) in papers.iter().enumerate() {
        out.push_str(&format!(
            "# {} — {}\n\n## reference\n\n{}\n",
            p.id, p.title, p.reference
        ));
        for (name, m) in methods {
            let s = m.summaries[i].as_ref();
            out.push_str(&format!(
                "\n## {name} (ROUGE-L {:.3})\n\n{}\n",
                score(s, p),
                s.map_or("(failed)", |s| s.trim())
            ));
        }
        out.push('\n');
    }
    out
}
