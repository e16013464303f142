//! One table per extraction skill (docs/extract.md#the-folders-table): at the end of every run,
//! `<OUT>/tables/<name>.jsonl`, `.csv` and `.xlsx`, rebuilt from the latest record of every job
//! of that skill in the output folder (this run's, cached ones included, and earlier runs'),
//! one row per document — a failed one too, with its status and error.

use crate::agent::structured::Schema;
use crate::confine::Root;
use crate::layout::OutputLayout;
use crate::manifest::{JobRecord, ShownStatus, Status};
use crate::plan::Job;
use crate::skills::schema::Field;
use crate::skills::{SchemaSpec, SkillSet};
use serde_json::{Map, Value, json};
use std::collections::HashSet;
use std::path::Path;

/// One table to build: its name, skill, schema and the arguments that pick its records.
struct Spec {
    name: String,
    skill: String,
    schema: Schema,
    /// For a schema given as an argument: (argument, value) every record of the table has.
    arg: Option<(String, String)>,
    /// The declared file holding each job's object.
    file: String,
}

/// The table name of a job: `<skill>`, or `<skill>-<schema file's stem>` when the schema is an
/// argument (`extract-invoice`).
fn table_name(skill: &str, schema_value: Option<&str>) -> String {
    match schema_value {
        Some(v) => {
            let name = Path::new(v)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let stem = name
                .trim_end_matches(".json")
                .trim_end_matches(".yaml")
                .trim_end_matches(".yml")
                .trim_end_matches(".schema");
            let stem: String = stem
                .chars()
                .map(|c| {
                    if c.is_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            format!("{skill}-{stem}")
        }
        None => skill.to_string(),
    }
}

/// The skills of this run's jobs that feed a table (those with a schema).
pub(super) fn table_skills(jobs: &[Job], skills: &SkillSet) -> HashSet<String> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut feeding = HashSet::new();
    for job in jobs {
        if seen.insert(&*job.skill) && skills.get(&job.skill).is_some_and(|s| s.schema().is_some())
        {
            feeding.insert(job.skill.to_string());
        }
    }
    feeding
}

/// The tables this run's jobs feed, each with its schema as the run resolves it.
fn specs(jobs: &[Job], skills: &SkillSet) -> Vec<Spec> {
    let mut out: Vec<Spec> = Vec::new();
    for job in jobs {
        let Some(skill) = skills.get(&job.skill) else {
            continue;
        };
        let Some(spec) = skill.schema() else {
            continue;
        };
        let (value, arg) = match spec {
            SchemaSpec::Inline(v) => (v.clone(), None),
            SchemaSpec::Arg(name) => {
                let Some(path) = job.arg_path(name) else {
                    continue;
                };
                let Ok(v) = crate::skills::schema::read_schema_file(&path) else {
                    continue;
                };
                let shown = job.args.get(name).cloned().unwrap_or_default();
                (v, Some((name.clone(), shown)))
            }
        };
        let name = table_name(&skill.name, arg.as_ref().map(|(_, v)| v.as_str()));
        if out.iter().any(|s| s.name == name) {
            continue;
        }
        let Ok(schema) = Schema::new(value) else {
            continue;
        };
        let file = skill
            .direct_output(&job.args)
            .unwrap_or_else(|| crate::skills::schema::EXTRACTED_FILE.to_string());
        out.push(Spec {
            name,
            skill: skill.name.clone(),
            schema,
            arg,
            file,
        });
    }
    out
}

/// Write every table this run feeds; returns the files written (relative to `out`) and what
/// went wrong, for the run's summary.
pub(super) fn write(
    out: &Path,
    jobs: &[Job],
    skills: &SkillSet,
    current: &[JobRecord],
    rows: Option<&str>,
) -> (Vec<String>, Vec<String>) {
    let specs = specs(jobs, skills);
    if specs.is_empty() {
        return (Vec::new(), Vec::new());
    }
    // The folder's state: each job's latest record (docs/outputs.md#the-folders-state).
    let history = crate::manifest::state::latest_records(out, current);
    let (mut written, mut problems) = (Vec::new(), Vec::new());
    for spec in &specs {
        let mut records: Vec<&JobRecord> = history
            .iter()
            .filter(|r| r.skill == spec.skill)
            .filter(|r| {
                spec.arg
                    .as_ref()
                    .is_none_or(|(k, v)| r.args.get(k) == Some(v))
            })
            .collect();
        records.sort_by(|a, b| a.input.cmp(&b.input));
        let table = Table::build(spec, out, &records, rows);
        let dir = out.join("tables");
        // Reached beneath the output folder's handle: a link at `tables` is refused.
        match OutputLayout::new(out).folder(&dir, true) {
            Ok(folder) => {
                let (ok, failed) = table.write_all(&folder, &dir.join(&spec.name));
                written.extend(ok);
                problems.extend(failed);
            }
            Err(e) => problems.push(format!("cannot write the table tables/{}: {e}", spec.name)),
        }
        if let Some(why) = &table.rows_problem {
            problems.push(why.clone());
        }
    }
    (written, problems)
}

/// A sheet of the workbook for an array of objects: the array's path, its columns, its rows.
type Sheet = (String, Vec<String>, Vec<Map<String, Value>>);

/// The table in memory: columns, and each row's values by column.
struct Table {
    columns: Vec<String>,
    rows: Vec<Map<String, Value>>,
    /// Sheets of arrays of objects for the workbook: (array's path, its items' columns, rows
    /// with `file` first).
    sheets: Vec<Sheet>,
    /// Why `--rows` could not be followed.
    rows_problem: Option<String>,
}

impl Table {
    fn build(spec: &Spec, out: &Path, records: &[&JobRecord], rows: Option<&str>) -> Table {
        let fields = &spec.schema.fields;
        let per_item = rows.and_then(|p| {
            fields
                .iter()
                .find(|f| f.path == p && f.kind.contains("array"))
        });
        let rows_problem = match (rows, per_item) {
            (Some(p), None) => Some(format!(
                "--rows {p}: table {} has no array field `{p}`; one row per document",
                spec.name
            )),
            _ => None,
        };
        let mut columns = vec!["file".to_string(), "status".to_string()];
        for f in fields {
            if per_item.is_some_and(|a| a.path == f.path) {
                columns.extend(item_columns(f));
            } else {
                columns.push(f.path.clone());
            }
        }
        columns.push("ungrounded".into());
        columns.push("doubts".into());
        columns.push("error".into());
        let mut sheets: Vec<Sheet> = fields
            .iter()
            .filter(|f| !f.items.is_empty() && per_item.is_none_or(|a| a.path != f.path))
            .map(|f| {
                let mut cols = vec!["file".to_string()];
                cols.extend(f.items.iter().map(|i| i.path.clone()));
                (f.path.clone(), cols, Vec::new())
            })
            .collect();
        let mut table_rows = Vec::new();
        for r in records {
            let object = extracted(out, r, &spec.file);
            let mut base = Map::new();
            base.insert("file".into(), Value::String(r.input.clone()));
            // A cached job's row is the row its result earned: a rerun rewrites the same table.
            // Outputs zhi doubts are `doubted`, never `succeeded`.
            let status = match r.shown() {
                ShownStatus::Cached => ShownStatus::Succeeded,
                other => other,
            };
            base.insert("status".into(), Value::String(status.as_str().into()));
            if let Some(obj) = &object {
                for f in fields {
                    if per_item.is_some_and(|a| a.path == f.path) {
                        continue;
                    }
                    let v = crate::skills::schema::at(obj, &f.path)
                        .cloned()
                        .unwrap_or(Value::Null);
                    base.insert(f.path.clone(), v);
                }
                add_sheet_rows(&mut sheets, obj, &r.input);
            }
            let ungrounded = r
                .extraction
                .as_ref()
                .map(|e| e.ungrounded.join(", "))
                .unwrap_or_default();
            base.insert("ungrounded".into(), Value::String(ungrounded));
            // In words, in zhi's language: `seller: found under the buyer's label ("Bill to")`.
            let doubts = crate::manifest::doubts_in_words(&r.doubts, crate::i18n::lang());
            base.insert("doubts".into(), Value::String(doubts));
            let error = r.error.as_ref().map_or(String::new(), |e| {
                format!("{}: {}", e.kind, crate::sanitize::one_line(e.reason()))
            });
            base.insert("error".into(), Value::String(error));
            push_rows(&mut table_rows, base, per_item, object.as_ref());
        }
        Table {
            columns,
            rows: table_rows,
            sheets,
            rows_problem,
        }
    }

    /// Each of the table's files, written on its own: the files written (relative to the
    /// output folder) and what went wrong. A file that cannot be rebuilt is removed, never
    /// left as an earlier run's rows beside the others' new ones.
    fn write_all(&self, folder: &Root, base: &Path) -> (Vec<String>, Vec<String>) {
        let (mut written, mut problems) = (Vec::new(), Vec::new());
        for ext in ["csv", "jsonl", "xlsx"] {
            let path = base.with_extension(ext);
            let result = match ext {
                "csv" => self.write_csv(folder, &path),
                "jsonl" => self.write_jsonl(folder, &path),
                _ => self.write_xlsx(folder, &path),
            };
            let shown = format!(
                "tables/{}",
                path.file_name().unwrap_or_default().to_string_lossy()
            );
            let Err(e) = result else {
                written.push(shown);
                continue;
            };
            let name = path.file_name().unwrap_or_default();
            let fate = match folder.top().unlink(name) {
                Ok(()) => "the earlier one was removed".to_string(),
                Err(r) if r.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(r) => format!("the earlier one could not be removed ({r}); it is stale"),
            };
            problems.push(if fate.is_empty() {
                format!("cannot write the table {shown}: {e}")
            } else {
                format!("cannot write the table {shown}: {e}; {fate}")
            });
        }
        (written, problems)
    }

    fn write_jsonl(&self, folder: &Root, path: &Path) -> std::io::Result<()> {
        let mut body = Vec::new();
        for row in &self.rows {
            let ordered: Map<String, Value> = self
                .columns
                .iter()
                .map(|c| (c.clone(), row.get(c).cloned().unwrap_or(Value::Null)))
                .collect();
            serde_json::to_writer(&mut body, &ordered).map_err(std::io::Error::other)?;
            body.push(b'\n');
        }
        write_in(folder, path, &body)
    }

    fn write_csv(&self, folder: &Root, path: &Path) -> std::io::Result<()> {
        let mut body = Vec::new();
        {
            let mut w = csv::Writer::from_writer(&mut body);
            // A header is text a spreadsheet reads too: a field named `=HYPERLINK(…)` is
            // kept from being run, as a cell is.
            let header: Vec<String> = self
                .columns
                .iter()
                .map(|c| crate::manifest::formula_safe(c).into_owned())
                .collect();
            w.write_record(&header).map_err(std::io::Error::other)?;
            for row in &self.rows {
                let cells: Vec<String> =
                    self.columns.iter().map(|c| csv_cell(row.get(c))).collect();
                w.write_record(&cells).map_err(std::io::Error::other)?;
            }
            w.flush()?;
        }
        write_in(folder, path, &body)
    }

    fn write_xlsx(&self, folder: &Root, path: &Path) -> std::io::Result<()> {
        let sheet = |name: &str, columns: &[String], rows: &[Map<String, Value>]| {
            let cells: Vec<Value> = rows
                .iter()
                .map(|row| Value::Array(columns.iter().map(|c| xlsx_cell(row.get(c))).collect()))
                .collect();
            let headers: Vec<String> = columns.iter().map(|c| fit_cell(c)).collect();
            json!({"name": name, "headers": headers, "rows": cells})
        };
        let mut sheets = vec![sheet("rows", &self.columns, &self.rows)];
        for (name, cols, rows) in &self.sheets {
            sheets.push(sheet(name, cols, rows));
        }
        let bytes = crate::agent::tools::xlsx::render(&json!({ "sheets": sheets }))
            .map_err(std::io::Error::other)?;
        write_in(folder, path, &bytes)
    }
}

/// A table's file, replaced whole in the `tables` folder held open.
fn write_in(folder: &Root, path: &Path, body: &[u8]) -> std::io::Result<()> {
    crate::layout::write_atomic_in(folder, path, |f| std::io::Write::write_all(f, body))
}

/// A document's items of each array field with a sheet of its own: one row each, after the
/// document's file.
fn add_sheet_rows(sheets: &mut [Sheet], obj: &Value, input: &str) {
    for (path, _, sheet_rows) in sheets {
        let items = crate::skills::schema::at(obj, path)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for item in items {
            let mut row = Map::new();
            row.insert("file".into(), Value::String(input.to_string()));
            if let Value::Object(m) = item {
                row.extend(m);
            }
            sheet_rows.push(row);
        }
    }
}

/// A document's rows: its one row, or with `--rows` one per item of that array (the document's
/// own values repeated; one row still when it has none).
fn push_rows(
    table_rows: &mut Vec<Map<String, Value>>,
    base: Map<String, Value>,
    per_item: Option<&Field>,
    object: Option<&Value>,
) {
    match (per_item, object) {
        (Some(a), Some(obj)) => {
            let items = crate::skills::schema::at(obj, &a.path)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if items.is_empty() {
                table_rows.push(base.clone());
            }
            for item in items {
                let mut row = base.clone();
                for c in item_columns(a) {
                    let key = c.trim_start_matches(&format!("{}.", a.path)).to_string();
                    row.insert(c, item.get(&key).cloned().unwrap_or(Value::Null));
                }
                table_rows.push(row);
            }
        }
        _ => table_rows.push(base),
    }
}

/// The columns of an array's items when each item is a row (`items.name`, `items.amount`).
fn item_columns(array: &Field) -> Vec<String> {
    if array.items.is_empty() {
        return vec![array.path.clone()];
    }
    array
        .items
        .iter()
        .map(|i| format!("{}.{}", array.path, i.path))
        .collect()
}

/// A job's extracted object, from its declared file in the output folder.
fn extracted(out: &Path, r: &JobRecord, file: &str) -> Option<Value> {
    if !matches!(r.status, Status::Succeeded | Status::Cached) {
        return None;
    }
    let o = r
        .outputs
        .iter()
        .find(|o| Path::new(&o.path).file_name() == Path::new(file).file_name())?;
    let bytes = crate::small_file::read_io(&out.join(&o.path), 64 << 20).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// A CSV cell: text kept from being read as a formula, numbers as written, arrays and objects
/// as JSON.
fn csv_cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => crate::manifest::formula_safe(s).into_owned(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(other) => crate::manifest::formula_safe(&other.to_string()).into_owned(),
    }
}

/// A workbook cell: numbers stay numbers, arrays and objects as JSON text; text over
/// Excel's limit cut with a mark ([`fit_cell`]).
fn xlsx_cell(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => Value::String(String::new()),
        Some(Value::String(s)) => Value::String(fit_cell(s)),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => v.clone(),
        Some(other) => Value::String(fit_cell(&other.to_string())),
    }
}

/// The most characters an Excel cell holds.
const XLSX_CELL_CHARS: usize = 32_767;

/// `s` as a workbook holds it: text over [`XLSX_CELL_CHARS`] is cut, and says so at its end
/// (`… [cut: 40000 characters; the whole text is in the CSV and JSON Lines]`).
fn fit_cell(s: &str) -> String {
    let count = s.chars().count();
    if count <= XLSX_CELL_CHARS {
        return s.to_string();
    }
    let mark = format!("… [cut: {count} characters; the whole text is in the CSV and JSON Lines]");
    let keep = XLSX_CELL_CHARS - mark.chars().count();
    let mut out: String = s.chars().take(keep).collect();
    out.push_str(&mark);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_file_that_cannot_be_rebuilt_is_removed_and_the_others_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.xlsx"), "an earlier run's rows").unwrap();
        // More columns than a workbook holds: the CSV and JSON Lines are written, the
        // workbook cannot be.
        let columns: Vec<String> = (0..16_385).map(|i| format!("c{i}")).collect();
        let row: Map<String, Value> = columns.iter().map(|c| (c.clone(), json!(1))).collect();
        let table = Table {
            columns,
            rows: vec![row],
            sheets: Vec::new(),
            rows_problem: None,
        };
        let folder = Root::open(dir.path()).unwrap();
        let (written, problems) = table.write_all(&folder, &dir.path().join("t"));
        assert_eq!(written, ["tables/t.csv", "tables/t.jsonl"]);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with("cannot write the table tables/t.xlsx: ")
                && problems[0].ends_with("; the earlier one was removed"),
            "{problems:?}"
        );
        assert!(!dir.path().join("t.xlsx").exists());
        assert!(dir.path().join("t.csv").exists());
    }

    #[test]
    fn a_cell_over_excels_limit_is_cut_with_a_mark() {
        assert_eq!(fit_cell("short"), "short");
        let long = "é".repeat(40_000);
        let cut = fit_cell(&long);
        assert_eq!(cut.chars().count(), XLSX_CELL_CHARS);
        assert!(
            cut.ends_with("… [cut: 40000 characters; the whole text is in the CSV and JSON Lines]")
        );
        assert_eq!(
            fit_cell(&"x".repeat(XLSX_CELL_CHARS)).len(),
            XLSX_CELL_CHARS
        );
    }
}
