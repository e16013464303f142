//! The layering of `src/` (shared/STYLE.md): each top-level module imports only modules of a
//! lower layer, or of its own layer without a circle. Read from the sources (`crate::<module>`
//! outside comments and test modules), so a new import upwards fails here, naming the file
//! and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, top first. A module not listed is a leaf (the lowest layer): `providers`, the
/// providers' table that both `config` and `llm` read, is one and must stay one.
const LAYERS: &[&[&str]] = &[
    &["commands"],
    &["mcp"],
    &["cli"],
    &["run"],
    &["agent"],
    &["plan", "extract", "report", "batch"],
    &["manifest", "chunk", "ocr"],
    &["llm"],
    &["config"],
    &["skills"],
];

fn layer(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&module))
        .unwrap_or(LAYERS.len())
}

/// Every `crate::<module>` a top-level module names: (from, to) → the first place.
fn imports(src: &Path) -> BTreeMap<(String, String), String> {
    let mut found = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let from = rel
                .split('/')
                .next()
                .unwrap()
                .trim_end_matches(".rs")
                .to_string();
            if from == "main" || from == "lib" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                // A test module (at the end of a file, by convention) may import anything.
                if line.starts_with("#[cfg(test)]") {
                    break;
                }
                let code = line.split("//").next().unwrap_or("");
                for (i, _) in code.match_indices("crate::") {
                    let to: String = code[i + 7..]
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !to.is_empty() && to != from && src_has(src, &to) {
                        found
                            .entry((from.clone(), to))
                            .or_insert_with(|| format!("src/{rel}:{}", n + 1));
                    }
                }
            }
        }
    }
    found
}

fn src_has(src: &Path, module: &str) -> bool {
    src.join(format!("{module}.rs")).is_file() || src.join(module).is_dir()
}

#[test]
fn no_module_imports_upwards_and_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = imports(&src);
    assert!(edges.len() > 20, "the sources were not read: {edges:?}");
    let upward: Vec<String> = edges
        .iter()
        .filter(|((from, to), _)| layer(to) < layer(from))
        .map(|((from, to), at)| format!("{from} imports {to} ({at})"))
        .collect();
    assert!(upward.is_empty(), "imports upwards:\n{}", upward.join("\n"));

    // No circle: modules of one layer may import each other only one way round.
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        graph.entry(from).or_default().insert(to);
    }
    fn visit<'a>(
        m: &'a str,
        graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(i) = path.iter().position(|p| *p == m) {
            let mut circle = path[i..].to_vec();
            circle.push(m);
            return Some(circle);
        }
        if !done.insert(m) {
            return None;
        }
        path.push(m);
        for next in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        if let Some(circle) = visit(m, &graph, &mut Vec::new(), &mut done) {
            let places: Vec<String> = circle
                .windows(2)
                .map(|w| edges[&(w[0].to_string(), w[1].to_string())].clone())
                .collect();
            panic!(
                "import circle {}: {}",
                circle.join(" → "),
                places.join(", ")
            );
        }
    }
}
