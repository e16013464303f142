//! Debian's machine-readable copyright files for the extraction bench
//! (`scripts/fetch-copyright.sh`): short English documents nobody here wrote, a cheap model
//! mostly reads right, each with its own header as the truth (`upstream_name`, `license`,
//! `source`). Cells are compared as [`super::manpages::cell_right`] compares them.

use super::manpages::Page;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// The fields of the truth that are scored, in the schema's order.
pub const FIELDS: [&str; 3] = ["upstream_name", "license", "source"];

/// The folder `scripts/fetch-copyright.sh` writes by default.
pub fn dir() -> PathBuf {
    super::docs_dir().join("copyright")
}

/// The first `n` files of `truth.jsonl` (all when `None`), each as a [`Page`]; `None`
/// with a note when the script has not been run. A truth the file does not show (`Upstream-Name:
/// NAME` and `Source: URL` on their own lines) is a bad fetch, not a score.
pub fn files(n: Option<usize>) -> Option<Vec<Page>> {
    let dir = dir();
    let Ok(truth) = std::fs::read_to_string(dir.join("truth.jsonl")) else {
        eprintln!(
            "note: no copyright files in {} (scripts/fetch-copyright.sh); the copyright set is \
             skipped",
            dir.display()
        );
        return None;
    };
    let mut out = Vec::new();
    for line in truth.lines().filter(|l| !l.trim().is_empty()) {
        if n.is_some_and(|n| out.len() >= n) {
            break;
        }
        let row: Map<String, Value> = serde_json::from_str(line).expect("a truth line");
        let file = row["file"].as_str().expect("a truth line names its file");
        let text = std::fs::read_to_string(dir.join(file)).expect("a file of the truth");
        let truth: Map<String, Value> = FIELDS
            .iter()
            .map(|f| (f.to_string(), row[*f].clone()))
            .collect();
        for (label, field) in [("Upstream-Name", "upstream_name"), ("Source", "source")] {
            let want = format!("{label}: {}", truth[field].as_str().unwrap_or(""));
            assert!(
                text.lines().any(|l| l.trim_end() == want),
                "{file}: the truth says {want:?}, the file does not"
            );
        }
        out.push(Page {
            file: file.to_string(),
            text,
            truth,
            lang: "en".into(),
        });
    }
    Some(out)
}
