//! Hostile answers and schemas for extraction (docs/reliability.md, "grounding time" and
//! "tables"): an answer of more values than grounding looks for, schema fields named as the
//! table's own columns or as formulas, and a value too long for a workbook's cell.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, assert_exit, record, run_skill as run, show};
use serde_json::{Value, json};
use zhi::exit::Exit;

const FAST: &str = "retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n";
const ACME: &str = "ACME SUPPLIES LTD\nInvoice number: INV-0042\nTotal due: 1,130.00 GBP\n";
const GLOBEX: &str = "Globex Corporation\nInvoice GX-7\nTotal: 2.000,50 EUR\n";

fn env(schema: &Value) -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", FAST);
    env.write("t.schema.json", schema.to_string());
    env.write("invoices/acme.txt", ACME);
    env.write("invoices/globex.txt", GLOBEX);
    env
}

fn extract(env: &TestEnv, api: &FakeApi) -> std::process::Output {
    run(
        env,
        api,
        "extract",
        &["invoices", "-a", "schema=t.schema.json"],
    )
}

fn csv_rows(env: &TestEnv) -> Vec<Vec<String>> {
    let mut r = csv::Reader::from_path(env.path("out/tables/extract-t.csv")).unwrap();
    let mut rows = vec![r.headers().unwrap().iter().map(String::from).collect()];
    rows.extend(
        r.records()
            .map(|x| x.unwrap().iter().map(String::from).collect()),
    );
    rows
}

fn latest_manifest(env: &TestEnv) -> Value {
    let mut dirs: Vec<_> = std::fs::read_dir(env.path("out/.zhi/runs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    serde_json::from_slice(&std::fs::read(dirs.last().unwrap().join("manifest.json")).unwrap())
        .unwrap()
}

/// The text of a zip member of the workbook.
fn workbook_part(env: &TestEnv, part: &str) -> String {
    let bytes = std::fs::read(env.path("out/tables/extract-t.xlsx")).unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut archive.by_name(part).unwrap(), &mut text).unwrap();
    text
}

/// The first sheet's cells, as calamine reads them.
fn workbook_rows(env: &TestEnv) -> Vec<Vec<String>> {
    use calamine::Reader;
    let mut book: calamine::Xlsx<_> =
        calamine::open_workbook(env.path("out/tables/extract-t.xlsx")).unwrap();
    let range = book.worksheet_range("rows").unwrap();
    range
        .rows()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect()
}

#[test]
fn an_answer_of_more_values_than_grounding_looks_for_says_which_it_did_not_look_for() {
    let env = env(&json!({"type": "object", "properties": {
        "codes": {"type": "array", "items": {"type": "string"}}}}));
    std::fs::remove_file(env.path("invoices/globex.txt")).unwrap();
    // 10,050 distinct 14-character codes, the first one in the document.
    let mut codes = vec!["INV-0042".to_string()];
    codes.extend((1..10_050).map(|i| format!("zq{i:012}")));
    let api = FakeApi::always(Reply::text(json!({ "codes": codes }).to_string()));
    let out = extract(&env, &api);
    assert_exit(&out, Exit::Success);
    let r = record(&env, "invoices/acme.txt");
    assert_eq!(r["status"], "succeeded", "{}", show(&out));
    let x = &r["extraction"];
    assert_eq!(x["fields"]["codes[0]"]["match"], "exact");
    assert_eq!(x["fields"].as_object().unwrap().len(), 10_000);
    assert_eq!(x["ungrounded"].as_array().unwrap().len(), 9_999);
    // What was not looked for is said, never taken as found or as found nowhere.
    let unchecked = x["unchecked"].as_array().expect("unchecked listed");
    assert_eq!(unchecked.len(), 50);
    assert_eq!(unchecked[0], "codes[10000]");
    assert!(x["fields"].get("codes[10000]").is_none());
    let doubts = r["doubts"].as_array().unwrap();
    let doubt = doubts
        .iter()
        .find(|d| d["check"] == "unchecked")
        .expect("a doubt says so");
    assert_eq!(doubt["field"], "codes[10000]");
    assert!(
        doubt["detail"]
            .as_str()
            .unwrap()
            .starts_with("50 values from codes[10000] on were not looked for"),
        "{doubt}"
    );
    // One doubt per value found nowhere up to 100, then one for the rest.
    let nowhere = doubts.iter().filter(|d| d["check"] == "ungrounded").count();
    assert_eq!(nowhere, 101);
    let rows = csv_rows(&env);
    let cell = &rows[1][rows[0].iter().position(|c| c == "doubts").unwrap()];
    assert!(
        cell.ends_with("codes[10000]: not looked for in the document (too many values)"),
        "{cell}"
    );
}

#[test]
fn a_schema_field_named_as_the_tables_own_columns_is_refused_before_anything_is_asked() {
    let env = env(&json!({"type": "object", "properties": {
        "file": {"type": "string"}, "status": {"type": "string"}, "total": {"type": "number"},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "file": {"type": "string"}, "amount": {"type": "number"}}}}}}));
    let api = FakeApi::start(|_: &Recorded| {
        Reply::text(json!({"file": "FORGED.pdf", "status": "failed", "total": 1130}).to_string())
    });
    let out = extract(&env, &api);
    assert_exit(&out, Exit::Usage);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("t.schema.json")
            && stderr.contains("`file`, `status`, `items[].file`")
            && stderr.contains("rename"),
        "{stderr}"
    );
    assert!(api.chat_requests().is_empty(), "nothing was asked");
    assert!(!env.path("out/tables").exists());
    // Nested, the names are the fields' own (`seller.status`): taken.
    let env = self::env(&json!({"type": "object", "properties": {
        "seller": {"type": "object", "properties": {"status": {"type": "string"}}}}}));
    let api = FakeApi::always(Reply::text(
        json!({"seller": {"status": "FORGED"}}).to_string(),
    ));
    assert_exit(&extract(&env, &api), Exit::Success);
    let rows = csv_rows(&env);
    assert_eq!(rows[0][..3], ["file", "status", "seller.status"]);
    // FORGED stands nowhere in the invoice: doubted, as the table's status says.
    assert_eq!(rows[1][..3], ["invoices/acme.txt", "doubted", "FORGED"]);
}

#[test]
fn a_schema_field_named_as_a_formula_is_text_in_the_tables_headers() {
    let name = "=HYPERLINK(\"http://evil\",\"h\")";
    let env = env(&json!({"type": "object", "properties": {
        "invoice_number": {"type": "string"}, name: {"type": "string"}}}));
    std::fs::remove_file(env.path("invoices/globex.txt")).unwrap();
    let api = FakeApi::always(Reply::text(
        json!({"invoice_number": "INV-0042", name: "-1+2"}).to_string(),
    ));
    assert_exit(&extract(&env, &api), Exit::Success);
    let rows = csv_rows(&env);
    assert_eq!(rows[0][3], format!("'{name}"), "{rows:?}");
    assert_eq!(rows[1][3], "'-1+2");
    // The workbook's header and cell are text cells with the quote prefix: never a formula,
    // not even once edited.
    let sheet = workbook_part(&env, "xl/worksheets/sheet1.xml");
    assert!(!sheet.contains("<f>"), "{sheet}");
    let styles = workbook_part(&env, "xl/styles.xml");
    assert_eq!(
        styles.matches("quotePrefix=\"1\"").count(),
        2,
        "a bold header and a plain cell: {styles}"
    );
    let cells = workbook_rows(&env);
    assert_eq!(cells[0][3], name);
    assert_eq!(cells[1][3], "-1+2");
}

#[test]
fn a_value_too_long_for_a_workbook_cell_is_cut_with_a_mark_and_no_table_is_left_stale() {
    let env = env(&json!({"type": "object", "properties": {
        "invoice_number": {"type": "string"}, "note": {"type": "string"}}}));
    let api = FakeApi::start(|r: &Recorded| {
        let n = if r.input_document().contains("acme") {
            "INV-0042"
        } else {
            "GX-7"
        };
        Reply::text(json!({"invoice_number": n, "note": "first run"}).to_string())
    });
    assert_exit(&extract(&env, &api), Exit::Success);
    assert_eq!(workbook_rows(&env)[1][3], "first run");
    // The rerun's new answer for one document holds 40,000 characters.
    env.write("invoices/acme.txt", ACME.replace("INV-0042", "INV-0043"));
    let long = "x".repeat(40_000);
    let answer = json!({"invoice_number": "INV-0043", "note": long}).to_string();
    let api = FakeApi::always(Reply::text(answer));
    let out = extract(&env, &api);
    assert_exit(&out, Exit::Success);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("cannot write the table"), "{stderr}");
    // The CSV and JSON Lines hold the whole value; the workbook the same rows, the long cell
    // cut to Excel's 32,767 characters with a mark that says so.
    assert_eq!(csv_rows(&env)[1][3], long);
    let cells = workbook_rows(&env);
    assert_eq!(
        cells[1][2], "INV-0043",
        "the rerun's rows, not the first run's"
    );
    let cell = &cells[1][3];
    assert_eq!(cell.chars().count(), 32_767);
    assert!(cell.starts_with("xxxx"));
    assert!(
        cell.ends_with("… [cut: 40000 characters; the whole text is in the CSV and JSON Lines]"),
        "{}",
        &cell[cell.len() - 100..]
    );
    assert_eq!(cells[2][3], "first run", "the cached document's row");
    let manifest = latest_manifest(&env);
    assert_eq!(
        manifest["tables"],
        json!([
            "tables/extract-t.csv",
            "tables/extract-t.jsonl",
            "tables/extract-t.xlsx"
        ])
    );
}
