//! `file_write`: the model's content, rendered by extension, created as a new file through the
//! sandbox. The one place tools write files.
//!
//! Models send structured content either as a JSON value or as a JSON string holding it; both
//! are accepted. Content that does not fit the format is refused with the expected shape, so
//! the model can try again.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::table::{Table, cell_text, table};
use super::{Args, PATH_NAMES, ToolEnv, ToolOutcome, docx, xlsx};
use crate::agent::sandbox::{Refusal, Sandbox, WriteError, WriteTarget};

/// Extensions written as text, as given (and joined as text when a long document's pieces
/// each wrote one).
pub(crate) const TEXT_EXTENSIONS: &[&str] = &[
    "md", "markdown", "txt", "text", "html", "htm", "xml", "yaml", "yml", "tsv", "log", "rst",
    "srt", "vtt", "tex",
];

/// The file formats `file_write` can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    Csv,
    Xlsx,
    Docx,
}

impl Format {
    fn for_target(target: &WriteTarget) -> Result<Format, String> {
        let ext = target.extension().unwrap_or_default();
        match ext.as_str() {
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            "xlsx" => Ok(Format::Xlsx),
            "docx" => Ok(Format::Docx),
            e if TEXT_EXTENSIONS.contains(&e) => Ok(Format::Text),
            _ => Err(format!(
                "`{}` has {}; file_write supports .md, .txt (and other text types: {}), .json, \
                 .csv, .xlsx and .docx. Choose one of these extensions.",
                target.display(),
                if ext.is_empty() {
                    "no extension".to_string()
                } else {
                    format!("the unsupported extension .{ext}")
                },
                TEXT_EXTENSIONS
                    .iter()
                    .filter(|e| !matches!(**e, "md" | "txt"))
                    .map(|e| format!(".{e}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )),
        }
    }

    fn render(self, content: Value) -> Result<Vec<u8>, String> {
        match self {
            Format::Text => text(content),
            Format::Json => json(content),
            Format::Csv => csv(content),
            Format::Xlsx => xlsx::render(&content),
            Format::Docx => docx::render(&content),
        }
    }
}

enum Failure {
    Content(String),
    Write(WriteError),
}

pub(super) async fn file_write(mut args: Args, env: &ToolEnv) -> ToolOutcome {
    let path = match args.string(PATH_NAMES) {
        Ok(path) => path,
        Err(outcome) => return outcome,
    };
    let content = match args.take(&["content", "text", "data", "body"]) {
        Some(content) => content,
        // Tables sent next to the path instead of inside `content`.
        None if ["sheets", "headers", "rows"]
            .iter()
            .any(|k| args.map.contains_key(*k)) =>
        {
            Value::Object(std::mem::take(&mut args.map))
        }
        None => return args.invalid("`content` is missing"),
    };
    let target = match env.sandbox.check_write(&path) {
        Ok(target) => target,
        Err(refusal) => return ToolOutcome::refused(refusal.message()),
    };
    let format = match Format::for_target(&target) {
        Ok(format) => format,
        Err(message) => return ToolOutcome::refused(message),
    };
    let shown = target.display();
    // A declared file is judged as it is written, so the model hears now what is wrong with
    // it instead of the job failing at the end.
    if let Value::String(text) = &content
        && let Some(accept) = env.declared.iter().find(|a| {
            crate::judge::declared::find_written(&a.file, &[target.rel_path().to_path_buf()])
                .is_some()
        })
        // A tool has no stop of its own: the conversation heeds the run's at its next turn.
        && let Some(problem) = accept.answer(text, &|| false)
    {
        return ToolOutcome::refused(format!(
            "`{shown}` was not written: {}. Write the content your instructions ask for.",
            problem.describe(&shown)
        ));
    }
    let sandbox = Arc::clone(&env.sandbox);
    let done = tokio::task::spawn_blocking(move || write(&sandbox, &target, format, content)).await;
    match done {
        Ok(Ok((rel, bytes))) => ToolOutcome {
            content: if rel.to_string_lossy() == shown {
                format!(
                    "wrote `{}` ({bytes} bytes). The file is saved; do not write it again.",
                    rel.display()
                )
            } else {
                format!(
                    "`{shown}` already existed, so zhi wrote this as `{}` ({bytes} bytes). The file is saved; do not write it again.",
                    rel.display()
                )
            },
            refused: false,
            wrote: Some(rel),
        },
        Ok(Err(Failure::Content(message))) => {
            ToolOutcome::refused(format!("`{shown}` was not written: {message}"))
        }
        Ok(Err(Failure::Write(WriteError::Refused(refusal) | WriteError::Exists(refusal)))) => {
            ToolOutcome::refused(refusal.message())
        }
        Ok(Err(Failure::Write(error @ WriteError::Io { .. }))) => {
            ToolOutcome::failed(error.to_string())
        }
        Err(_) => ToolOutcome::failed(format!("writing `{shown}` failed unexpectedly")),
    }
}

fn write(
    sandbox: &Sandbox,
    target: &WriteTarget,
    format: Format,
    content: Value,
) -> Result<(PathBuf, usize), Failure> {
    let bytes = format.render(content).map_err(Failure::Content)?;
    // A file of nothing is never a result (and never committed).
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Failure::Content("the content is empty".into()));
    }
    // On a name clash zhi picks the name (`name-2.ext`, …) rather than have the model guess
    // one: a model told "choose another name" copies whatever example it was shown. The calls
    // of one turn write concurrently, so a name free when looked at may be taken when written:
    // then the next one is tried.
    let mut candidate = target.clone();
    let mut last = None;
    for n in 2..=101 {
        // Only a regular file is renamed around; a link in the way is refused by the write.
        let taken = std::fs::symlink_metadata(sandbox.output_dir().join(candidate.rel_path()))
            .is_ok_and(|m| m.is_file());
        if !taken {
            match sandbox.write_new(&candidate, &bytes) {
                Ok(rel) => return Ok((rel, bytes.len())),
                Err(WriteError::Exists(refusal)) => last = Some(refusal),
                Err(e) => return Err(Failure::Write(e)),
            }
        }
        match sandbox.check_write(&numbered(target.rel_path(), n)) {
            Ok(next) => candidate = next,
            Err(refusal) => return Err(Failure::Write(WriteError::Refused(refusal))),
        }
    }
    Err(Failure::Write(WriteError::Refused(last.unwrap_or_else(
        || {
            Refusal::new(format!(
                "`{}` and 100 numbered names beside it are taken; choose another name",
                target.display()
            ))
        },
    ))))
}

/// `dir/name.ext` → `dir/name-N.ext`.
fn numbered(rel: &std::path::Path, n: u32) -> String {
    let stem = rel
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match rel.extension() {
        Some(ext) => format!("{stem}-{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{n}"),
    };
    match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => format!("{}/{name}", parent.display()),
        None => name,
    }
}

fn text(content: Value) -> Result<Vec<u8>, String> {
    match content {
        Value::String(s) => Ok(s.into_bytes()),
        Value::Object(mut map) => match ["content", "text", "markdown"]
            .iter()
            .find_map(|k| map.remove(*k))
        {
            Some(Value::String(s)) => Ok(s.into_bytes()),
            _ => Err(text_shape_error()),
        },
        _ => Err(text_shape_error()),
    }
}

fn text_shape_error() -> String {
    "for a text file, `content` must be the text itself, as a string".to_string()
}

fn json(content: Value) -> Result<Vec<u8>, String> {
    let value = match content {
        Value::String(s) => serde_json::from_str::<Value>(&s).map_err(|e| {
            format!(
                "`content` for a .json file must be valid JSON ({e}). Send a JSON object or \
                 array, or use a .md or .txt file for plain text"
            )
        })?,
        other => other,
    };
    let mut bytes = serde_json::to_vec_pretty(&value).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn csv(content: Value) -> Result<Vec<u8>, String> {
    let table = match table(&content) {
        Ok(table) => table,
        // Models also send the CSV text itself; accept it when it is well-formed CSV.
        Err(shape_error) => match &content {
            Value::String(s) => csv_text_table(s).ok_or(shape_error)?,
            _ => return Err(shape_error),
        },
    };
    let width = table.width();
    let mut writer = csv::WriterBuilder::new().from_writer(Vec::new());
    let io = |e: csv::Error| e.to_string();
    if !table.headers.is_empty() {
        writer.write_record(&table.headers).map_err(io)?;
    }
    for row in &table.rows {
        let mut record: Vec<String> = row.iter().map(cell_text).collect();
        record.resize(width, String::new());
        writer.write_record(&record).map_err(io)?;
    }
    writer.into_inner().map_err(|e| e.to_string())
}

/// Well-formed CSV text (every record the same width) as a table whose first record is the
/// header.
fn csv_text_table(text: &str) -> Option<Table> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(false)
        .from_reader(text.as_bytes());
    let mut records = Vec::new();
    for record in reader.records() {
        let record = record.ok()?;
        records.push(record.iter().map(str::to_string).collect::<Vec<_>>());
    }
    if records.is_empty() || records[0].len() < 2 {
        return None;
    }
    let headers = records.remove(0);
    Some(Table {
        headers,
        rows: records
            .into_iter()
            .map(|r| r.into_iter().map(Value::String).collect())
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{ToolKind, Toolbox};
    use super::*;
    use serde_json::json;
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::Path;
    use tempfile::TempDir;

    struct Setup {
        root: TempDir,
        env: ToolEnv,
    }

    impl Setup {
        fn new() -> Setup {
            let root = TempDir::new().unwrap();
            let out = root.path().join("out");
            fs::create_dir_all(&out).unwrap();
            fs::create_dir_all(root.path().join("outside")).unwrap();
            fs::write(root.path().join("outside/keep.txt"), "keep").unwrap();
            let sandbox = Sandbox::builder(&out).build().unwrap();
            Setup {
                env: ToolEnv::plain(sandbox),
                root,
            }
        }

        fn out(&self) -> PathBuf {
            self.root.path().join("out")
        }

        async fn write(&self, path: &str, content: Value) -> ToolOutcome {
            let args = json!({ "path": path, "content": content }).to_string();
            Toolbox::new()
                .execute(ToolKind::FileWrite, &args, &self.env)
                .await
        }

        /// Every file under the root except inside `out`, with its content.
        fn outside_state(&self) -> Vec<(PathBuf, Vec<u8>)> {
            let mut all: Vec<(PathBuf, Vec<u8>)> = walkdir::WalkDir::new(self.root.path())
                .into_iter()
                .map(|e| e.unwrap())
                .filter(|e| !e.path().starts_with(self.out()))
                .map(|e| {
                    let bytes = if e.file_type().is_file() {
                        fs::read(e.path()).unwrap()
                    } else {
                        Vec::new()
                    };
                    (e.path().to_path_buf(), bytes)
                })
                .collect();
            all.sort();
            all
        }
    }

    fn zip_part(path: &Path, name: &str) -> String {
        let file = fs::File::open(path).unwrap();
        let mut archive = zip::ZipArchive::new(file).unwrap();
        let mut part = archive.by_name(name).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut part, &mut text).unwrap();
        text
    }

    #[tokio::test]
    async fn escaping_writes_are_refused_and_change_nothing() {
        let s = Setup::new();
        symlink(
            s.root.path().join("outside/keep.txt"),
            s.out().join("file-link.md"),
        )
        .unwrap();
        symlink(s.root.path().join("outside"), s.out().join("dir-link")).unwrap();
        let before = s.outside_state();
        for path in [
            "../x.md",
            "/tmp/abs.md",
            "a/../../x.md",
            "file-link.md",
            "dir-link/x.md",
            "dir-link/deeper/x.md",
        ] {
            let out = s.write(path, json!("pwned")).await;
            assert!(out.refused, "{path}: {}", out.content);
            assert_eq!(out.wrote, None);
        }
        assert_eq!(s.outside_state(), before);
        assert_eq!(
            fs::read_to_string(s.root.path().join("outside/keep.txt")).unwrap(),
            "keep"
        );
        assert!(s.env.sandbox.written().is_empty());
    }

    #[tokio::test]
    async fn never_overwrites_an_existing_file_and_picks_the_name() {
        let s = Setup::new();
        assert!(!s.write("a.md", json!("first")).await.refused);
        // zhi picks the next free name and says so; the first file stays as it was.
        let out = s.write("a.md", json!("second")).await;
        assert!(!out.refused, "{}", out.content);
        assert!(out.content.contains("`a-2.md`"), "{}", out.content);
        assert_eq!(out.wrote, Some(std::path::PathBuf::from("a-2.md")));
        assert_eq!(fs::read_to_string(s.out().join("a.md")).unwrap(), "first");
        assert_eq!(
            fs::read_to_string(s.out().join("a-2.md")).unwrap(),
            "second"
        );
    }

    /// The calls of one turn run at once: sixteen writes of one name, none lost, none refused,
    /// none overwritten, each under its own name.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn writes_of_one_name_at_once_each_get_a_name() {
        let s = Setup::new();
        let calls = (0..16).map(|i| s.write("same.md", json!(format!("version {i}"))));
        let outcomes = futures_util::future::join_all(calls).await;
        for out in &outcomes {
            assert!(!out.refused, "{}", out.content);
        }
        let mut names: Vec<PathBuf> = outcomes.iter().map(|o| o.wrote.clone().unwrap()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 16, "{names:?}");
        let mut contents: Vec<String> = names
            .iter()
            .map(|n| fs::read_to_string(s.out().join(n)).unwrap())
            .collect();
        contents.sort();
        let mut want: Vec<String> = (0..16).map(|i| format!("version {i}")).collect();
        want.sort();
        assert_eq!(contents, want);
    }

    #[tokio::test]
    async fn text_and_json() {
        let s = Setup::new();
        let out = s.write("notes/sum.md", json!("# 总结\n正文")).await;
        assert_eq!(out.wrote.as_deref(), Some(Path::new("notes/sum.md")));
        assert!(out.content.contains("notes/sum.md"));
        assert_eq!(
            fs::read_to_string(s.out().join("notes/sum.md")).unwrap(),
            "# 总结\n正文"
        );
        assert!(
            s.write("x.txt", json!({"content": "ok"}))
                .await
                .wrote
                .is_some()
        );
        assert!(s.write("y.txt", json!([1, 2])).await.refused);

        let value = json!({"total": 12.5, "items": ["a", "b"], "ok": true});
        s.write("a.json", value.clone()).await;
        s.write("b.json", json!(value.to_string())).await;
        for name in ["a.json", "b.json"] {
            let text = fs::read_to_string(s.out().join(name)).unwrap();
            assert!(text.contains("\n  "), "pretty-printed: {text}");
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
        }
        let out = s.write("c.json", json!("not json at all")).await;
        assert!(out.refused && out.content.contains("valid JSON"));
        assert!(!s.out().join("c.json").exists());
        assert_eq!(
            s.env.sandbox.written(),
            vec![
                PathBuf::from("notes/sum.md"),
                PathBuf::from("x.txt"),
                PathBuf::from("a.json"),
                PathBuf::from("b.json"),
            ]
        );
    }

    #[tokio::test]
    async fn unsupported_extensions_are_refused_with_the_list() {
        let s = Setup::new();
        for path in ["run.sh", "noext", "x.exe"] {
            let out = s.write(path, json!("x")).await;
            assert!(out.refused);
            assert!(out.content.contains(".xlsx"), "{}", out.content);
            assert!(!s.out().join(path).exists());
        }
    }

    #[tokio::test]
    async fn csv_from_object_string_and_text() {
        let s = Setup::new();
        let table = json!({"headers": ["name", "amount", "paid", "note"],
                           "rows": [["Tea, green", 12.5, true, null], ["Rice \"jasmine\"", 8, false]]});
        s.write("a.csv", table.clone()).await;
        s.write("b.csv", json!(table.to_string())).await;
        for name in ["a.csv", "b.csv"] {
            let mut reader = csv::Reader::from_path(s.out().join(name)).unwrap();
            assert_eq!(
                reader.headers().unwrap(),
                vec!["name", "amount", "paid", "note"]
            );
            let rows: Vec<Vec<String>> = reader
                .records()
                .map(|r| r.unwrap().iter().map(str::to_string).collect())
                .collect();
            assert_eq!(
                rows,
                vec![
                    vec!["Tea, green", "12.5", "true", ""],
                    vec!["Rice \"jasmine\"", "8", "false", ""]
                ]
            );
        }
        let objects = json!([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]);
        s.write("c.csv", objects).await;
        assert_eq!(
            fs::read_to_string(s.out().join("c.csv")).unwrap(),
            "a,b\n1,x\n2,y\n"
        );
        s.write("d.csv", json!("x,y\n1,2\n")).await;
        assert_eq!(
            fs::read_to_string(s.out().join("d.csv")).unwrap(),
            "x,y\n1,2\n"
        );

        let too_wide = json!({"headers": ["a"], "rows": [[1, 2]]});
        let out = s.write("e.csv", too_wide).await;
        assert!(out.refused && out.content.contains("row 1 has 2 cells"));
        let out = s.write("f.csv", json!("just a sentence")).await;
        assert!(out.refused && out.content.contains("headers"));
    }

    #[tokio::test]
    async fn xlsx_is_a_real_workbook() {
        let s = Setup::new();
        let content = json!({"sheets": [
            {"name": "发票", "headers": ["item", "amount"], "rows": [["Tea", 12.5], ["Rice", "8"]]},
            {"name": "bad/name?", "headers": ["x"], "rows": [[true]]}
        ]});
        let out = s.write("inv.xlsx", json!(content.to_string())).await;
        assert!(!out.refused, "{}", out.content);
        let path = s.out().join("inv.xlsx");
        let workbook = zip_part(&path, "xl/workbook.xml");
        assert!(workbook.contains("发票"));
        assert!(workbook.contains("bad_name_"));
        let sheet = zip_part(&path, "xl/worksheets/sheet1.xml");
        // Numbers are stored as numbers, not as shared strings.
        assert!(sheet.contains("<v>12.5</v>"), "{sheet}");
        assert!(sheet.contains("<v>8</v>"), "{sheet}");
        let strings = zip_part(&path, "xl/sharedStrings.xml");
        assert!(strings.contains("Tea") && strings.contains("item"));
        assert!(zip_part(&path, "xl/styles.xml").contains("<b/>"));

        let single = json!({"headers": ["a"], "rows": [[1]]});
        assert!(!s.write("one.xlsx", single).await.refused);
        // Sheets given beside the path instead of inside `content`.
        let flat = json!({"path": "flat.xlsx", "sheets": [{"headers": ["a"], "rows": [[2]]}]});
        let out = Toolbox::new()
            .execute(ToolKind::FileWrite, &flat.to_string(), &s.env)
            .await;
        assert!(!out.refused, "{}", out.content);
        assert!(zip_part(&s.out().join("flat.xlsx"), "xl/workbook.xml").contains("Sheet1"));
        let out = s.write("none.xlsx", json!({"sheets": []})).await;
        assert!(out.refused, "{}", out.content);
    }

    #[tokio::test]
    async fn docx_is_a_real_document() {
        let s = Setup::new();
        let md = "# 季度报告\n\nRevenue **grew** by 5%.\n\n- first point\n- second point\n\n| a | b |\n|---|---|\n| 1 | 2 |";
        let out = s.write("report.docx", json!({"content": md})).await;
        assert!(!out.refused, "{}", out.content);
        let path = s.out().join("report.docx");
        let document = zip_part(&path, "word/document.xml");
        assert!(document.contains("季度报告"));
        assert!(document.contains(r#"<w:pStyle w:val="Heading1"/>"#));
        assert!(document.contains("<w:b/>"));
        assert!(document.contains("grew"));
        assert!(document.contains("second point"));
        assert!(document.contains("<w:tbl>"));
        assert!(zip_part(&path, "word/styles.xml").contains(r#"w:styleId="Heading3""#));
        assert!(zip_part(&path, "[Content_Types].xml").contains("/word/document.xml"));
        assert!(zip_part(&path, "_rels/.rels").contains("word/document.xml"));

        // Markdown given directly, or as a JSON string holding {content}, works too.
        assert!(!s.write("b.docx", json!("plain *text*")).await.refused);
        let wrapped = json!({"content": "wrapped"}).to_string();
        assert!(!s.write("c.docx", json!(wrapped)).await.refused);
        assert!(zip_part(&s.out().join("c.docx"), "word/document.xml").contains("wrapped"));
        assert!(s.write("d.docx", json!([1])).await.refused);
    }

    #[tokio::test]
    async fn missing_content_is_refused() {
        let s = Setup::new();
        let out = Toolbox::new()
            .execute(ToolKind::FileWrite, r#"{"path": "a.md"}"#, &s.env)
            .await;
        assert!(out.refused && out.content.contains("`content` is missing"));
        let out = Toolbox::new()
            .execute(ToolKind::FileWrite, "not json", &s.env)
            .await;
        assert!(out.refused && out.content.contains("not valid JSON"));
        assert!(fs::read_dir(s.out()).unwrap().next().is_none());
    }
}
