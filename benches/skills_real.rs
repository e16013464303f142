//! What every builtin skill really does on a small real model: the project's local llama.cpp
//! server with Qwen2.5-Coder-0.5B (`examples/local-llm/start.sh`), over a fixed set of real
//! documents — English and Chinese text, a PDF, a docx, a spreadsheet, a scan, and two pairs for
//! `compare`. No configuration: zhi learns the server's window and slots by itself.
//!
//! `cargo bench --bench skills_real` (after `scripts/fetch-test-docs.sh`): three documents by
//! default (English text, Chinese text, a PDF), every builtin in under half an hour;
//! `ZHI_BENCH_DOCS=all` for all seven. Set
//! `ZHI_BENCH_LLM_URL` to use a running server; otherwise the bench starts the project's own
//! and stops it at the end (`ZHI_BENCH_LLM_URL` naming the 1.5B's server measures the strong
//! model). `ZHI_BENCH_SKILLS=summarize,translate` runs only those skills;
//! `ZHI_BENCH_REPORT=NAME` writes the table to `target/NAME.md`.
//!
//! Per skill it reports: jobs that succeeded (and of them, those zhi doubts) (zhi's verification: every declared output
//! exists, is not empty, not a copy, not a loop), declared outputs present, outputs in the
//! expected language (share of CJK characters: Chinese above 20%), figures of the source found
//! in the output, requests and prompt tokens per document, and wall time. The table is printed
//! and written to `target/skills_real.md`.

mod common;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Lang {
    En,
    Zh,
}

/// One document of the set, with the language it is written in.
struct Doc {
    rel: String,
    lang: Lang,
}

/// One `zhi run` of a skill: its inputs, arguments and the language its outputs should be in
/// (`None`: the document's own).
struct Run {
    inputs: Vec<String>,
    args: Vec<(String, String)>,
    lang: Option<Lang>,
}

#[derive(Default)]
struct Row {
    jobs: usize,
    succeeded: usize,
    /// Of those, the ones whose record holds doubts.
    doubted: usize,
    declared: usize,
    present: usize,
    lang_checked: usize,
    lang_ok: usize,
    figures: usize,
    figures_found: usize,
    requests: u64,
    prompt: u64,
    wall: Duration,
    failures: BTreeMap<String, usize>,
}

fn main() {
    let root = tempfile::tempdir().expect("temp dir");
    let work = root.path().join("work");
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let docs = make_docs(&work);
    std::fs::write(work.join("fields.schema.json"), FIELDS_SCHEMA).unwrap();
    let pairs = make_pairs(&work);

    let (url, server) = common::local_model(8087);
    let only: Option<BTreeSet<String>> = std::env::var("ZHI_BENCH_SKILLS")
        .ok()
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect());

    let skills: BTreeMap<String, zhi::skills::Skill> = zhi::skills::builtin_sources()
        .iter()
        .map(|(file, yaml)| {
            let s = zhi::skills::load_str(yaml.as_bytes(), zhi::skills::SkillSource::Builtin(file))
                .expect("builtin skill")
                .skill;
            (s.name.clone(), s)
        })
        .collect();

    let mut rows: Vec<(String, Row)> = Vec::new();
    for (name, skill) in &skills {
        if only.as_ref().is_some_and(|o| !o.contains(name)) {
            continue;
        }
        let runs = runs_for(name, skill, &docs, &pairs);
        let mut row = Row::default();
        for (i, run) in runs.iter().enumerate() {
            let out = format!("out-{name}-{i}");
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_zhi"));
            cmd.current_dir(&work)
                .env_clear()
                .env("HOME", &home)
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("OMP_THREAD_LIMIT", "1")
                .args(["run", name])
                .args(&run.inputs)
                .args(["-o", &out, "--no-progress", "-q", "--base-url", &url])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            for (k, v) in &run.args {
                cmd.args(["-a", &format!("{k}={v}")]);
            }
            let t = Instant::now();
            let status = cmd.status().expect("run zhi");
            row.wall += t.elapsed();
            let outdir = work.join(&out);
            let records = common::latest_records(&outdir);
            if records.is_empty() {
                eprintln!("{name}: zhi exited {status} with no records");
            }
            let args: BTreeMap<String, String> = run.args.iter().cloned().collect();
            let declared = skill.declared_files(&args);
            for r in &records {
                score(&mut row, r, &declared, &outdir, &work, &docs, run.lang);
            }
        }
        eprintln!("{name}: {}/{} succeeded", row.succeeded, row.jobs);
        rows.push((name.clone(), row));
    }
    common::stop_local_model(server);

    let table = render(&rows);
    println!("{table}");
    // `ZHI_BENCH_REPORT=NAME` writes `target/NAME.md` instead (a run on another model).
    let name = std::env::var("ZHI_BENCH_REPORT")
        .ok()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "skills_real".into());
    let dest = repo().join(format!("target/{name}.md"));
    let _ = std::fs::write(&dest, &table);
    eprintln!("written to {}", dest.display());
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The fixed set, in `work/docs/`: what cannot be had here (no fetched documents, no
/// fortunes-zh) is left out with a notice.
fn make_docs(work: &Path) -> Vec<Doc> {
    // Three documents (English text, Chinese text, a PDF) keep a run over every builtin under
    // half an hour; `ZHI_BENCH_DOCS=all` adds fortunes-zh, a docx, a spreadsheet and a scan.
    let all = std::env::var("ZHI_BENCH_DOCS").is_ok_and(|v| v == "all");
    let dir = work.join("docs");
    std::fs::create_dir_all(&dir).unwrap();
    let mut docs = Vec::new();
    let mut add = |name: &str, bytes: Vec<u8>, lang: Lang| {
        std::fs::write(dir.join(name), bytes).unwrap();
        docs.push(Doc {
            rel: format!("docs/{name}"),
            lang,
        });
    };
    let examples = repo().join("examples/docs");
    add(
        "incident.txt",
        std::fs::read(examples.join("incident.txt")).unwrap(),
        Lang::En,
    );
    add(
        "会议纪要.txt",
        std::fs::read(examples.join("会议纪要.txt")).unwrap(),
        Lang::Zh,
    );
    match std::fs::read_to_string("/usr/share/games/fortunes/chinese.u8") {
        _ if !all => {}
        Ok(text) => add("准则.txt", fortunes_excerpt(&text).into_bytes(), Lang::Zh),
        Err(_) => eprintln!("notice: no fortunes-zh; the Chinese text is the meeting notes only"),
    }
    let fetched = common::docs_dir().join("debian-reference/debian-reference.en.pdf");
    let pdf = work.join("reference.pdf");
    let made = fetched.is_file()
        && Command::new("qpdf")
            .args(["--empty", "--pages"])
            .arg(&fetched)
            .args(["24-25", "--"])
            .arg(&pdf)
            .status()
            .is_ok_and(|s| s.success());
    if made {
        add("reference.pdf", std::fs::read(&pdf).unwrap(), Lang::En);
    } else {
        eprintln!("notice: no PDF (run scripts/fetch-test-docs.sh; needs qpdf)");
    }
    if !all {
        return docs;
    }
    add("memo.docx", memo_docx(), Lang::En);
    add("budget.xlsx", budget_xlsx(), Lang::En);
    let scan = common::docs_dir().join("ocrmypdf/resources/linn.png");
    match std::fs::read(&scan) {
        Ok(bytes) => add("scan.png", bytes, Lang::En),
        Err(_) => eprintln!("notice: no scan (run scripts/fetch-test-docs.sh)"),
    }
    docs
}

/// The first Debian code-of-conduct entries of fortunes-zh, without the terminal colours.
fn fortunes_excerpt(text: &str) -> String {
    let mut clean = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            clean.push(c);
        }
    }
    let mut out = String::new();
    for entry in clean.split("\n%\n") {
        if out.len() + entry.len() > 1_600 {
            break;
        }
        out.push_str(entry.trim());
        out.push_str("\n\n");
    }
    out
}

/// Two pairs for `compare`: a release note and a changed older version, and the Chinese meeting
/// notes with an older draft.
fn make_pairs(work: &Path) -> Vec<Doc> {
    let dir = work.join("pairs");
    std::fs::create_dir_all(&dir).unwrap();
    let examples = repo().join("examples/docs");
    let notes = std::fs::read_to_string(examples.join("release-notes.md")).unwrap();
    std::fs::write(dir.join("release-notes.md"), &notes).unwrap();
    let old = notes
        .replace("30 days", "14 days")
        .replace("40 percent", "25 percent")
        .replace("31 March", "30 June");
    std::fs::write(dir.join("release-notes.old.md"), old).unwrap();
    let minutes = std::fs::read_to_string(examples.join("会议纪要.txt")).unwrap();
    std::fs::write(dir.join("会议纪要.txt"), &minutes).unwrap();
    let draft = minutes
        .replace("12月1日", "12月8日")
        .replace("周四下午三点", "周三上午十点");
    std::fs::write(dir.join("会议纪要.old.txt"), draft).unwrap();
    vec![
        Doc {
            rel: "pairs/release-notes.md".into(),
            lang: Lang::En,
        },
        Doc {
            rel: "pairs/会议纪要.txt".into(),
            lang: Lang::Zh,
        },
    ]
}

/// The schema `extract` runs with: what any document of the set states.
const FIELDS_SCHEMA: &str = r#"{"type": "object", "properties": {
  "title": {"type": ["string", "null"], "description": "The document's title or subject"},
  "author": {"type": ["string", "null"], "description": "Who wrote or issued it"},
  "date": {"type": ["string", "null"], "description": "The date it bears"}},
  "required": ["title", "author", "date"]}"#;

fn runs_for(name: &str, skill: &zhi::skills::Skill, docs: &[Doc], pairs: &[Doc]) -> Vec<Run> {
    let all = |docs: &[Doc]| docs.iter().map(|d| d.rel.clone()).collect::<Vec<_>>();
    let of = |lang: Lang| {
        docs.iter()
            .filter(|d| d.lang == lang)
            .map(|d| d.rel.clone())
            .collect::<Vec<_>>()
    };
    let arg = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
    match name {
        // Into the other language: English documents into Chinese and back.
        "translate" | "translate-proofread" => vec![
            Run {
                inputs: of(Lang::En),
                args: arg("to", "Chinese"),
                lang: Some(Lang::Zh),
            },
            Run {
                inputs: of(Lang::Zh),
                args: arg("to", "English"),
                lang: Some(Lang::En),
            },
        ],
        "compare" => vec![Run {
            inputs: all(pairs),
            args: arg("file2", "{dir}/{stem}.old{ext}"),
            lang: None,
        }],
        // The fields every document of the set has: a title, who wrote it, a date.
        "extract" => vec![Run {
            inputs: all(docs),
            args: arg("schema", "fields.schema.json"),
            lang: None,
        }],
        "reformat" => vec![Run {
            inputs: all(docs),
            args: arg("format", "markdown"),
            lang: None,
        }],
        _ if skill.takes_directory() => vec![Run {
            inputs: vec!["docs".into()],
            args: Vec::new(),
            lang: None,
        }],
        _ => vec![Run {
            inputs: all(docs),
            args: Vec::new(),
            lang: None,
        }],
    }
}

fn score(
    row: &mut Row,
    r: &Value,
    declared: &[String],
    outdir: &Path,
    work: &Path,
    docs: &[Doc],
    expected_lang: Option<Lang>,
) {
    row.jobs += 1;
    if r["status"] == "succeeded" {
        row.succeeded += 1;
        // Kept, but doubted: shown as doubted, never as a success (docs/outputs.md).
        if r["doubts"].as_array().is_some_and(|d| !d.is_empty()) {
            row.doubted += 1;
        }
    } else {
        let kind = r["error"]["kind"].as_str().unwrap_or("?").to_string();
        *row.failures.entry(kind).or_default() += 1;
    }
    row.requests += r["requests"].as_u64().unwrap_or(0);
    row.prompt += r["tokens"]["prompt"].as_u64().unwrap_or(0);
    let outputs: Vec<PathBuf> = r["outputs"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|o| o["path"].as_str())
                .map(|p| outdir.join(p))
                .collect()
        })
        .unwrap_or_default();
    for d in declared {
        row.declared += 1;
        if outputs.iter().any(|p| names_declared(p, d)) && r["status"] == "succeeded" {
            row.present += 1;
        }
    }
    if r["status"] != "succeeded" {
        return;
    }
    let input = r["input"].as_str().unwrap_or_default();
    let doc_lang = docs
        .iter()
        .find(|d| d.rel == input)
        .map(|d| d.lang)
        .or_else(|| {
            // A folder or a pair: the language of its text.
            Some(lang_of(&extract(&work.join(input))))
        })
        .unwrap_or(Lang::En);
    let want = expected_lang.unwrap_or(doc_lang);
    let text: String = outputs
        .iter()
        .map(|p| extract(p))
        .collect::<Vec<_>>()
        .join("\n");
    if !text.trim().is_empty() {
        row.lang_checked += 1;
        if lang_of(&text) == want {
            row.lang_ok += 1;
        }
    }
    // Figures only where the output keeps the source's language (a translation may write
    // dates and numbers another way).
    if expected_lang.is_none() {
        let source = extract(&work.join(input));
        let figures = figures_of(&source);
        let squashed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        row.figures += figures.len();
        row.figures_found += figures.iter().filter(|f| squashed.contains(*f)).count();
    }
}

/// Whether `path` is the declared file `declared`, or zhi's renamed `name-N.ext` of it.
fn names_declared(path: &Path, declared: &str) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name == declared {
        return true;
    }
    let (stem, ext) = declared.rsplit_once('.').unwrap_or((declared, ""));
    name.strip_prefix(stem)
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|rest| rest.strip_suffix(ext))
        .and_then(|n| n.strip_suffix('.'))
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// The text zhi itself reads from a file (`zhi extract`), or a folder's files, joined.
fn extract(path: &Path) -> String {
    if path.is_dir() {
        let mut parts = Vec::new();
        for e in std::fs::read_dir(path).into_iter().flatten().flatten() {
            parts.push(extract(&e.path()));
        }
        return parts.join("\n");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_zhi"))
        .arg("extract")
        .arg(path)
        .env("OMP_THREAD_LIMIT", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => std::fs::read_to_string(path).unwrap_or_default(),
    }
}

fn lang_of(text: &str) -> Lang {
    let (mut cjk, mut letters) = (0usize, 0usize);
    for c in text.chars() {
        if ('\u{4e00}'..='\u{9fff}').contains(&c) {
            cjk += 1;
        } else if c.is_alphabetic() {
            letters += 1;
        }
    }
    // A Chinese character carries about as much as an English word of five letters.
    if cjk * 5 > (cjk * 5 + letters) / 5 {
        Lang::Zh
    } else {
        Lang::En
    }
}

/// The figures of a text: runs of digits (with `.`, `,`, `:`, `%` inside) of two or more
/// characters, at most 30 of them.
fn figures_of(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut cur = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_digit() || (!cur.is_empty() && matches!(c, '.' | ',' | ':' | '%')) {
            cur.push(c);
        } else {
            let f = cur.trim_end_matches(['.', ',', ':']).to_string();
            if f.chars().filter(char::is_ascii_digit).count() >= 2 {
                out.insert(f);
            }
            cur.clear();
        }
        if out.len() >= 30 {
            break;
        }
    }
    out
}

fn render(rows: &[(String, Row)]) -> String {
    let pct = |a: usize, b: usize| {
        if b == 0 {
            "–".to_string()
        } else {
            format!("{a}/{b}")
        }
    };
    let mut t = String::from(
        "| skill | succeeded (verified) | of them doubted | declared outputs | language | figures kept | requests/doc | prompt tokens/doc | wall | failures |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (name, r) in rows {
        let per = |x: u64| {
            if r.jobs == 0 {
                "–".to_string()
            } else {
                format!("{:.1}", x as f64 / r.jobs as f64)
            }
        };
        let prompt = if r.jobs == 0 {
            "–".to_string()
        } else {
            format!("{}", r.prompt / r.jobs as u64)
        };
        let failures = r
            .failures
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ");
        t.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} | {} | {prompt} | {:.0} s | {} |\n",
            pct(r.succeeded, r.jobs),
            r.doubted,
            pct(r.present, r.declared),
            pct(r.lang_ok, r.lang_checked),
            pct(r.figures_found, r.figures),
            per(r.requests),
            r.wall.as_secs_f64(),
            if failures.is_empty() {
                "–"
            } else {
                &failures
            },
        ));
    }
    t
}

/// A short English memo as a Word document (the minimal parts Word and zhi read).
fn memo_docx() -> Vec<u8> {
    use std::io::Write;
    let paragraphs = [
        "Memo: office move",
        "From: Facilities. To: all staff. Date: 14 October 2024.",
        "The Berlin office moves to Hauptstrasse 12 on 4 November 2024. Desks are packed on Friday 1 November from 14:00; IT disconnects the 85 workstations that evening.",
        "The new office has 3 floors and 120 desks. Parking costs 45 euros a month; 30 places are available and are given out first come, first served.",
        "Questions go to Anna Keller, extension 2417, before 25 October.",
    ];
    let body: String = paragraphs
        .iter()
        .map(|p| format!("<w:p><w:r><w:t xml:space=\"preserve\">{p}</w:t></w:r></w:p>"))
        .collect();
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}<w:sectPr/></w:body></w:document>"#
    );
    let types = r#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;
    let rels = r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#;
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default();
        for (name, text) in [
            ("[Content_Types].xml", types),
            ("_rels/.rels", rels),
            ("word/document.xml", document.as_str()),
        ] {
            zip.start_file(name, opts).unwrap();
            zip.write_all(text.as_bytes()).unwrap();
        }
        zip.finish().unwrap();
    }
    buf.into_inner()
}

/// A small budget spreadsheet.
fn budget_xlsx() -> Vec<u8> {
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    let rows: [(&str, f64, f64); 5] = [
        ("Salaries", 182_000.0, 189_500.0),
        ("Rent", 36_000.0, 38_400.0),
        ("Travel", 12_500.0, 9_800.0),
        ("Software", 8_200.0, 11_750.0),
        ("Training", 4_000.0, 6_300.0),
    ];
    sheet.write_string(0, 0, "Item").unwrap();
    sheet.write_string(0, 1, "Budget 2024").unwrap();
    sheet.write_string(0, 2, "Budget 2025").unwrap();
    for (i, (item, a, b)) in rows.iter().enumerate() {
        let r = i as u32 + 1;
        sheet.write_string(r, 0, *item).unwrap();
        sheet.write_number(r, 1, *a).unwrap();
        sheet.write_number(r, 2, *b).unwrap();
    }
    book.save_to_buffer().unwrap()
}
