//! ACLSum for the quality benches (`scripts/fetch-aclsum.sh`): ACL papers nobody here wrote,
//! with their experts' summaries (challenge, approach, outcome); the plain chat request the
//! benches compare zhi with; ROUGE-L.

use serde_json::Value;
use std::time::Duration;

/// The experts' three summaries of a paper, in order.
pub const FIELDS: [&str; 3] = ["challenge", "approach", "outcome"];

/// A request may wait behind others on a shared one-slot server.
pub const TIMEOUT_SECS: u64 = 900;

pub struct Paper {
    pub id: String,
    pub title: String,
    /// Abstract, introduction and conclusion sentences, a paragraph each.
    pub text: String,
    /// The experts' summaries, in the order of [`FIELDS`] (empty when the dataset has none).
    pub summary: [String; 3],
}

impl Paper {
    /// The experts' three summaries joined.
    pub fn reference(&self) -> String {
        self.summary
            .iter()
            .filter(|s| !s.is_empty())
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `ZHI_BENCH_PAPERS` (default 12) papers, in order, of the split `ZHI_BENCH_SPLIT` (`val`, the
/// default, for the numbers reported; `train` for tuning a prompt), with the split's name;
/// `None` with a note when the dataset has not been fetched.
pub fn papers() -> Option<(Vec<Paper>, String)> {
    let n: usize = std::env::var("ZHI_BENCH_PAPERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(12);
    let split = match std::env::var("ZHI_BENCH_SPLIT").as_deref() {
        Ok("validation") | Ok("") | Err(_) => "val".to_string(),
        Ok(s) => s.to_string(),
    };
    let data = super::docs_dir().join(format!("aclsum/{split}.jsonl"));
    let Ok(lines) = std::fs::read_to_string(&data) else {
        eprintln!(
            "note: {} is not available (scripts/fetch-aclsum.sh); skipped",
            data.display()
        );
        return None;
    };
    let papers = lines
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| paper(&v))
        .take(n)
        .collect();
    Some((papers, split))
}

/// A paper of the dataset: its sections as paragraphs, and the experts' three summaries.
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
    let summary = FIELDS.map(|f| v["summary"][f].as_str().unwrap_or_default().to_string());
    Paper {
        id: v["id"].as_str().unwrap_or("paper").to_string(),
        title: v["title"].as_str().unwrap_or_default().to_string(),
        text: text + "\n",
        summary,
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

/// The HTTP client of the plain requests.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(TIMEOUT_SECS))
        .build()
        .expect("HTTP client")
}

/// The answer budget zhi gives a request to this server: a quarter of the context window the
/// server reports, at most glm-4-flash's 4,096 (`Models::apply_server_window`).
pub async fn answer_budget(client: &reqwest::Client, url: &str) -> u64 {
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
pub async fn chat(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
) -> Result<(String, u64), String> {
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
pub fn words(text: &str) -> Vec<String> {
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

/// ROUGE-L F1 of a candidate against a reference (word-level longest common subsequence,
/// lowercased, punctuation stripped).
pub fn rouge_l(candidate: &str, reference: &str) -> f64 {
    let (c, r) = (words(candidate), words(reference));
    let common = lcs(&c, &r) as f64;
    if common == 0.0 {
        return 0.0;
    }
    let (precision, recall) = (common / c.len() as f64, common / r.len() as f64);
    2.0 * precision * recall / (precision + recall)
}
