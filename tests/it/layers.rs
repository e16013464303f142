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
    &["judge"],
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

/// Every `.rs` file under `src`: its path relative to `src`, and the lines of its code before
/// its test module (a test module, at the end of a file by convention, may import anything),
/// comments cut.
fn code_lines(src: &Path) -> Vec<(std::path::PathBuf, Vec<(usize, String)>)> {
    let mut files = Vec::new();
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
            let text = std::fs::read_to_string(&path).unwrap();
            let lines = text
                .lines()
                .take_while(|l| !l.starts_with("#[cfg(test)]"))
                .map(|l| l.split("//").next().unwrap_or("").to_string())
                .enumerate()
                .collect();
            files.push((path.strip_prefix(src).unwrap().to_path_buf(), lines));
        }
    }
    files
}

/// Every `crate::<module>` a top-level module names: (from, to) → the first place.
fn imports(src: &Path) -> BTreeMap<(String, String), String> {
    let mut found = BTreeMap::new();
    for (rel, lines) in code_lines(src) {
        let rel = rel.to_string_lossy().into_owned();
        let from = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        if from == "main" || from == "lib" {
            continue;
        }
        for (n, code) in lines {
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

/// A file's module path: `src/run/job.rs` → `run::job`, `src/judge/mod.rs` → `judge`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts
}

/// The file a module path names, or the longest prefix of it that is a file's module.
fn file_of(src: &Path, path: &[String]) -> Option<Vec<String>> {
    (1..=path.len()).rev().find_map(|n| {
        let p = path[..n].join("/");
        (src.join(format!("{p}.rs")).is_file() || src.join(&p).join("mod.rs").is_file())
            .then(|| path[..n].to_vec())
    })
}

/// The module paths a line of `module`'s code names: `crate::a::b`, `super::c` (resolved
/// against `module`), and the items of `super::{d::X, e}`.
fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let chain = |mut rest: &str| -> Vec<String> {
        let mut out = Vec::new();
        loop {
            let id = ident(rest);
            if id.is_empty() {
                return out;
            }
            rest = &rest[id.len()..];
            out.push(id);
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => return out,
            }
        }
    };
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        if i > 0 && code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        out.push(chain(&code[i + 7..]));
    }
    let mut i = 0;
    while let Some(k) = code[i..].find("super::") {
        let start = i + k;
        if start > 0 && code[..start].ends_with("::") {
            i = start + 7;
            continue;
        }
        let mut rest = &code[start..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        // `module` is already the folder for a `mod.rs`: each `super` drops one name.
        let base = &module[..module.len().saturating_sub(ups)];
        if let Some(group) = rest.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or("");
            for item in group.split(',') {
                let mut p = base.to_vec();
                p.extend(chain(item.trim()));
                out.push(p);
            }
        } else {
            let mut p = base.to_vec();
            p.extend(chain(rest));
            out.push(p);
        }
        i = start + 7;
    }
    out
}

/// No two files of `src/` import each other, nor does any longer circle of files run through
/// their `crate::` and `super::` paths (docs/pipeline.md: the judge, the ladder and the job each
/// have one side).
#[test]
fn no_two_files_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut edges: BTreeMap<(String, String), String> = BTreeMap::new();
    for (rel, lines) in code_lines(&src) {
        let module = module_of(&rel);
        if module.is_empty() || module == ["main"] || module == ["lib"] {
            continue;
        }
        for (n, code) in lines {
            for named in named_paths(&code, &module) {
                let Some(to) = file_of(&src, &named) else {
                    continue;
                };
                // A file naming its own folder's `mod.rs` (or an ancestor's) reaches what that
                // module re-exports: not an import of a sibling.
                if to == module || module.starts_with(&to) {
                    continue;
                }
                edges
                    .entry((module.join("::"), to.join("::")))
                    .or_insert_with(|| format!("src/{}:{}", rel.display(), n + 1));
            }
        }
    }
    assert!(
        edges.len() > 100,
        "the sources were not read: {}",
        edges.len()
    );
    let both: Vec<String> = edges
        .iter()
        .filter(|((a, b), _)| a < b && edges.contains_key(&(b.clone(), a.clone())))
        .map(|((a, b), at)| format!("{a} ↔ {b} ({at}, {})", edges[&(b.clone(), a.clone())]))
        .collect();
    assert!(
        both.is_empty(),
        "files importing each other:\n{}",
        both.join("\n")
    );
}
