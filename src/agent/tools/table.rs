//! A table as a model sends it to `file_write` for a `.csv` or `.xlsx` file: `{headers, rows}`
//! (rows as arrays or as objects keyed by header), an array of row objects, or a JSON string
//! holding either. Shared by the CSV writer ([`super::write`]) and the workbook writer
//! ([`super::xlsx`]).

use serde_json::{Map, Value};

const TABLE_SHAPE: &str =
    r#"{"headers": ["Name", "Amount"], "rows": [["Tea", 12.5], ["Rice", 8]]}"#;

/// A table: header names and rows of JSON cells (strings, numbers, booleans, null).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    /// The number of columns: the widest of the header and the rows.
    pub(super) fn width(&self) -> usize {
        self.rows
            .iter()
            .map(Vec::len)
            .chain(std::iter::once(self.headers.len()))
            .max()
            .unwrap_or(0)
    }
}

/// A table from `{headers, rows}` (rows as arrays, or as objects keyed by header), from an
/// array of row objects, or from a JSON string holding either.
pub(super) fn table(content: &Value) -> Result<Table, String> {
    match content {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => table(&v),
            _ => Err(format!(
                "`content` must be a table like {TABLE_SHAPE} (as JSON, not as text)"
            )),
        },
        Value::Object(map) => table_from_object(map),
        Value::Array(rows) if rows.iter().all(Value::is_object) => {
            table_from_rows(Vec::new(), rows)
        }
        _ => Err(format!("`content` must be a table like {TABLE_SHAPE}")),
    }
}

fn table_from_object(map: &Map<String, Value>) -> Result<Table, String> {
    let headers = match map.get("headers").or_else(|| map.get("columns")) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().map(cell_text).collect(),
        Some(_) => {
            return Err(format!(
                "`headers` must be a list of names, as in {TABLE_SHAPE}"
            ));
        }
    };
    let rows = match map.get("rows").or_else(|| map.get("data")) {
        None | Some(Value::Null) => &Vec::new(),
        Some(Value::Array(rows)) => rows,
        Some(_) => {
            return Err(format!(
                "`rows` must be a list of rows, as in {TABLE_SHAPE}"
            ));
        }
    };
    table_from_rows(headers, rows)
}

fn table_from_rows(mut headers: Vec<String>, rows: &[Value]) -> Result<Table, String> {
    if headers.is_empty() {
        // Rows given as objects name their own columns (in key order).
        if let Some(Value::Object(first)) = rows.first() {
            headers = first.keys().cloned().collect();
        }
    }
    if headers.is_empty() && rows.is_empty() {
        return Err(format!("the table is empty; send it like {TABLE_SHAPE}"));
    }
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<Value> = match row {
            Value::Array(cells) => cells.clone(),
            Value::Object(cells) => headers
                .iter()
                .map(|h| cells.get(h).cloned().unwrap_or(Value::Null))
                .collect(),
            _ => {
                return Err(format!(
                    "row {} is not a list of cells; rows look like {TABLE_SHAPE}",
                    i + 1
                ));
            }
        };
        if !headers.is_empty() && cells.len() > headers.len() {
            return Err(format!(
                "row {} has {} cells but there are {} headers; give every row one cell per \
                 header",
                i + 1,
                cells.len(),
                headers.len()
            ));
        }
        out.push(cells);
    }
    Ok(Table { headers, rows: out })
}

/// A cell as text: strings as they are, numbers and booleans as written, null empty, anything
/// nested as compact JSON.
pub(super) fn cell_text(cell: &Value) -> String {
    match cell {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        nested => nested.to_string(),
    }
}
