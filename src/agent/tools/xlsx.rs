//! `.xlsx` output: `{sheets: [{name, headers, rows}]}` as a real workbook. Numbers stay numbers
//! so the sheet can be summed; the header row is bold and frozen.

use rust_xlsxwriter::{ColNum, Format, RowNum, Workbook, Worksheet, XlsxError};
use serde_json::{Map, Value};

use super::table::{Table, cell_text, table};

const SHEETS_SHAPE: &str =
    r#"{"sheets": [{"name": "Invoices", "headers": ["Item", "Amount"], "rows": [["Tea", 12.5]]}]}"#;
/// Excel's limits.
const MAX_ROWS: usize = 1_048_576;
const MAX_COLS: usize = 16_384;
const MAX_CELL_CHARS: usize = 32_767;
const MAX_SHEET_NAME: usize = 31;
/// Integers beyond this lose digits as a spreadsheet number (IDs, account numbers): kept as text.
const MAX_EXACT_INTEGER: f64 = 999_999_999_999_999.0;
/// The widest a column gets from autofit, in pixels.
const MAX_COLUMN_PIXELS: u32 = 400;

pub(crate) fn render(content: &Value) -> Result<Vec<u8>, String> {
    let sheets = sheets(content)?;
    let mut workbook = Workbook::new();
    let bold = Format::new().set_bold();
    let mut used_names: Vec<String> = Vec::new();
    for (index, (name, table)) in sheets.iter().enumerate() {
        let name = unique_sheet_name(name.as_deref(), index, &used_names);
        used_names.push(name.clone());
        let sheet = workbook.add_worksheet();
        sheet.set_name(&name).map_err(|e| xlsx_error(&name, e))?;
        fill(sheet, table, &bold).map_err(|e| format!("sheet `{name}`: {e}"))?;
    }
    workbook
        .save_to_buffer()
        .map_err(|e| format!("the workbook could not be built: {e}"))
}

/// The sheets in `content`: `{sheets: [...]}`, `{sheets: {name: table}}`, or one bare table.
fn sheets(content: &Value) -> Result<Vec<(Option<String>, Table)>, String> {
    let parsed;
    let content = match content {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).map_err(|_| {
                format!("`content` must be a workbook like {SHEETS_SHAPE} (as JSON, not as text)")
            })?;
            &parsed
        }
        other => other,
    };
    let Some(map) = content.as_object() else {
        return Ok(vec![(None, table(content).map_err(shape)?)]);
    };
    let found = match map.get("sheets") {
        None => return Ok(vec![(None, table(content).map_err(shape)?)]),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, sheet)| {
                let name = sheet
                    .get("name")
                    .or_else(|| sheet.get("title"))
                    .map(cell_text);
                table(sheet)
                    .map(|t| (name, t))
                    .map_err(|e| format!("sheet {}: {e}", i + 1))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(Value::Object(named)) => named_sheets(named)?,
        Some(_) => return Err(format!("`sheets` must be a list, as in {SHEETS_SHAPE}")),
    };
    if found.is_empty() {
        return Err(format!(
            "the workbook has no sheets; send it like {SHEETS_SHAPE}"
        ));
    }
    Ok(found)
}

fn named_sheets(named: &Map<String, Value>) -> Result<Vec<(Option<String>, Table)>, String> {
    named
        .iter()
        .map(|(name, sheet)| {
            table(sheet)
                .map(|t| (Some(name.clone()), t))
                .map_err(|e| format!("sheet `{name}`: {e}"))
        })
        .collect()
}

fn shape(error: String) -> String {
    format!("{error}; a workbook looks like {SHEETS_SHAPE}")
}

fn fill(sheet: &mut Worksheet, table: &Table, bold: &Format) -> Result<(), String> {
    // Text a spreadsheet would take for a formula (`=HYPERLINK(…)`) is a text cell already;
    // the quote prefix keeps it text when the cell is edited, as a leading `'` does in a CSV.
    let quoted = Format::new().set_quote_prefix();
    let bold_quoted = bold.clone().set_quote_prefix();
    let header_rows = usize::from(!table.headers.is_empty());
    if table.rows.len() + header_rows > MAX_ROWS {
        return Err(format!(
            "more than {MAX_ROWS} rows; split it into several sheets"
        ));
    }
    let width = table.width();
    if width > MAX_COLS {
        return Err(format!("more than {MAX_COLS} columns"));
    }
    let err = |e: XlsxError| e.to_string();
    for (col, header) in table.headers.iter().enumerate() {
        check_len(header)?;
        // Row and column are within Excel's limits, checked above, so the casts are exact.
        let format = if crate::manifest::formula_like(header) {
            &bold_quoted
        } else {
            bold
        };
        sheet
            .write_string_with_format(0, col as ColNum, header.as_str(), format)
            .map_err(err)?;
    }
    for (r, row) in table.rows.iter().enumerate() {
        let row_num = (r + header_rows) as RowNum;
        for (c, cell) in row.iter().enumerate() {
            write_cell(sheet, row_num, c as ColNum, cell, &quoted)?;
        }
    }
    if header_rows == 1 {
        sheet.set_freeze_panes(1, 0).map_err(err)?;
    }
    sheet.set_autofit_max_width(MAX_COLUMN_PIXELS).autofit();
    Ok(())
}

fn write_cell(
    sheet: &mut Worksheet,
    row: RowNum,
    col: ColNum,
    cell: &Value,
    quoted: &Format,
) -> Result<(), String> {
    let err = |e: XlsxError| e.to_string();
    match cell {
        Value::Null => {}
        Value::Bool(b) => {
            sheet.write_boolean(row, col, *b).map_err(err)?;
        }
        Value::Number(n) => match n.as_f64() {
            Some(f) if (f.is_finite() && f.abs() <= MAX_EXACT_INTEGER) || !is_integer(n) => {
                sheet.write_number(row, col, f).map_err(err)?;
            }
            _ => {
                sheet.write_string(row, col, n.to_string()).map_err(err)?;
            }
        },
        Value::String(s) => match numeric_text(s) {
            Some(f) => {
                sheet.write_number(row, col, f).map_err(err)?;
            }
            None => {
                check_len(s)?;
                if crate::manifest::formula_like(s) {
                    sheet
                        .write_string_with_format(row, col, s.as_str(), quoted)
                        .map_err(err)?;
                } else {
                    sheet.write_string(row, col, s.as_str()).map_err(err)?;
                }
            }
        },
        nested => {
            let text = nested.to_string();
            check_len(&text)?;
            sheet.write_string(row, col, text).map_err(err)?;
        }
    }
    Ok(())
}

fn is_integer(n: &serde_json::Number) -> bool {
    n.is_i64() || n.is_u64()
}

/// A string that is plainly a number (`12`, `-3.50`) becomes one, so amounts sent as text can
/// still be summed. Anything else stays text: leading zeros (`007`), exponents, thousands
/// separators, and long digit strings (IDs) would change meaning as numbers.
fn numeric_text(s: &str) -> Option<f64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let (int, frac) = match digits.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (digits, None),
    };
    let plain = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    if !plain(int) || frac.is_some_and(|f| !plain(f)) {
        return None;
    }
    if int.len() > 1 && int.starts_with('0') {
        return None;
    }
    if int.len() + frac.map_or(0, str::len) > 15 {
        return None;
    }
    s.parse::<f64>().ok()
}

fn check_len(text: &str) -> Result<(), String> {
    if text.chars().count() > MAX_CELL_CHARS {
        return Err(format!(
            "a cell holds more than {MAX_CELL_CHARS} characters, Excel's limit; shorten it"
        ));
    }
    Ok(())
}

/// A valid, unused sheet name close to what the model asked for.
fn unique_sheet_name(requested: Option<&str>, index: usize, used: &[String]) -> String {
    let cleaned: String = requested
        .unwrap_or("")
        .trim()
        .chars()
        .map(|c| match c {
            '[' | ']' | ':' | '*' | '?' | '/' | '\\' => '_',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    let cleaned = cleaned.trim_matches('\'').trim().to_string();
    let base = if cleaned.is_empty() || cleaned.eq_ignore_ascii_case("history") {
        format!("Sheet{}", index + 1)
    } else {
        cleaned
    };
    let taken = |name: &str| used.iter().any(|u| u.to_lowercase() == name.to_lowercase());
    let mut candidate = truncate_utf16(&base, MAX_SHEET_NAME);
    let mut n = 2;
    while taken(&candidate) {
        let suffix = format!(" ({n})");
        let room = MAX_SHEET_NAME - suffix.len();
        candidate = format!("{}{suffix}", truncate_utf16(&base, room));
        n += 1;
    }
    candidate
}

fn truncate_utf16(s: &str, max_units: usize) -> String {
    let mut units = 0;
    s.chars()
        .take_while(|c| {
            units += c.len_utf16();
            units <= max_units
        })
        .collect()
}

fn xlsx_error(name: &str, e: XlsxError) -> String {
    format!("the sheet name `{name}` is not valid in Excel ({e})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_strings_only_when_plain() {
        assert_eq!(numeric_text("12"), Some(12.0));
        assert_eq!(numeric_text("-3.50"), Some(-3.5));
        assert_eq!(numeric_text("0.5"), Some(0.5));
        for text in [
            "007",
            "1e5",
            "1,000",
            "",
            "-",
            "1.",
            ".5",
            "110101199003070012",
            "12a",
        ] {
            assert_eq!(numeric_text(text), None, "{text}");
        }
    }

    #[test]
    fn sheet_names_are_made_valid_and_unique() {
        let used = vec!["Data".to_string()];
        assert_eq!(unique_sheet_name(Some("data"), 1, &used), "data (2)");
        assert_eq!(unique_sheet_name(Some("a/b:c"), 0, &[]), "a_b_c");
        assert_eq!(unique_sheet_name(Some("'q'"), 0, &[]), "q");
        assert_eq!(unique_sheet_name(None, 2, &[]), "Sheet3");
        assert_eq!(unique_sheet_name(Some("History"), 0, &[]), "Sheet1");
        let long = "x".repeat(40);
        assert_eq!(unique_sheet_name(Some(&long), 0, &[]).len(), 31);
        let taken = vec!["x".repeat(31)];
        let again = unique_sheet_name(Some(&long), 1, &taken);
        assert_eq!(again, format!("{} (2)", "x".repeat(27)));
    }

    #[test]
    fn long_ids_stay_text() {
        let content = serde_json::json!({"headers": ["id"], "rows": [[110101199003070012u64]]});
        let bytes = render(&content).unwrap();
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        let mut strings = String::new();
        std::io::Read::read_to_string(
            &mut archive.by_name("xl/sharedStrings.xml").unwrap(),
            &mut strings,
        )
        .unwrap();
        assert!(strings.contains("110101199003070012"));
    }
}
