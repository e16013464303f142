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

use common::aclsum::{self, Paper, TIMEOUT_SECS};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The plain request, before the paper's text.
const PLAIN_TASK: &str =
    "Summarize the paper in three sentences: the problem, the approach, the result.";

/// One method's results, per paper in the order of the papers.
#[derive(Default)]
struct Method {
    summaries: Vec<Option<String>>,
    requests: u64,
    prompt: u64,
    wall: Duration,
}

fn main() {
    let Some((papers, split)) = aclsum::papers() else {
        return;
    };

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
        match runtime.block_on(aclsum::chat(&client, &url, &body)) {
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

fn score(summary: Option<&String>, p: &Paper) -> f64 {
    summary.map_or(0.0, |s| aclsum::rouge_l(s, &p.reference()))
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
        let words_each = done.iter().map(|s| aclsum::words(s).len()).sum::<usize>() as f64
            / done.len().max(1) as f64;
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
            p.id,
            p.title,
            p.reference()
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
