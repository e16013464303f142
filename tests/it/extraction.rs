//! Structured extraction (docs/extract.md): one request a document whose answer is validated
//! against the schema, every value looked for in the document, and one table for the folder.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, assert_exit, record, run_skill as run, show};
use serde_json::{Value, json};
use zhi::exit::Exit;

const FAST: &str = "retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n";

const SCHEMA: &str = r#"{"type": "object", "properties": {
  "invoice_number": {"type": "string", "description": "The invoice number"},
  "seller": {"type": "string"},
  "total": {"type": "number"},
  "items": {"type": "array", "items": {"type": "object", "properties": {
     "name": {"type": "string"}, "amount": {"type": "number"}}}}},
  "required": ["invoice_number", "total"]}"#;

const ACME: &str = "ACME SUPPLIES LTD\nInvoice number: INV-0042\nOffice chairs 480.00\n\
                    Standing desk 650.00\nTotal due: 1,130.00 GBP\n";
const GLOBEX: &str =
    "Globex Corporation\nInvoice GX-7\nConsulting 2.000,50 EUR\nTotal: 2.000,50 EUR\n";

fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", FAST);
    env.write("invoice.schema.json", SCHEMA);
    env.write("invoices/acme.txt", ACME);
    env.write("invoices/globex.txt", GLOBEX);
    env
}

/// Answers by the document in the request: Acme's true values, Globex's with a made-up seller
/// and total.
fn answers(r: &Recorded) -> Reply {
    let doc = r.input_document();
    let v = if doc.contains("acme") {
        json!({"invoice_number": "INV-0042", "seller": "ACME SUPPLIES LTD", "total": 1130,
               "items": [{"name": "Office chairs", "amount": 480}, {"name": "Standing desk", "amount": 650}]})
    } else {
        json!({"invoice_number": "GX-7", "seller": "Initech", "total": 3999, "items": []})
    };
    Reply::text(v.to_string())
}

fn extract(env: &TestEnv, api: &FakeApi, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["invoices", "-a", "schema=invoice.schema.json"];
    args.extend_from_slice(extra);
    run(env, api, "extract", &args)
}

/// A job's `extracted.json`, as written.
fn saved(env: &TestEnv, rel: &str) -> Value {
    serde_json::from_slice(&std::fs::read(env.path(rel)).unwrap()).unwrap()
}

fn csv_rows(env: &TestEnv, name: &str) -> Vec<Vec<String>> {
    let mut r = csv::Reader::from_path(env.path(&format!("out/tables/{name}.csv"))).unwrap();
    let mut rows = vec![r.headers().unwrap().iter().map(String::from).collect()];
    rows.extend(
        r.records()
            .map(|x| x.unwrap().iter().map(String::from).collect()),
    );
    rows
}

#[test]
fn values_found_nowhere_are_flagged_in_the_record_and_the_table() {
    let env = env();
    let api = FakeApi::start(answers);
    let out = extract(&env, &api, &[]);
    assert_exit(&out, Exit::Success);
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 2, "one request a document: {}", show(&out));
    for r in &reqs {
        // A server that does not describe itself gets json_object; the message ends with the
        // fields, after the document.
        assert_eq!(r.body["response_format"], json!({"type": "json_object"}));
        let msg = r.last_user_text().unwrap();
        assert!(
            msg.ends_with(
                "- invoice_number (string, required): The invoice number\n- seller (string)\n\
                 - total (number, required)\n- items (array)\n- items[].name (string)\n\
                 - items[].amount (number)\n"
            ),
            "{msg}"
        );
        assert!(msg.find("END DOCUMENT") < msg.find("- invoice_number"));
    }
    let acme = record(&env, "invoices/acme.txt");
    assert_eq!(acme["status"], "succeeded");
    assert_eq!(acme["extraction"]["valid"], true);
    assert_eq!(acme["extraction"]["ungrounded"], json!([]));
    // Offsets point at the value in the text zhi read.
    let at = &acme["extraction"]["fields"]["invoice_number"];
    let (s, e) = (
        at["start"].as_u64().unwrap() as usize,
        at["end"].as_u64().unwrap() as usize,
    );
    let found: String = ACME.chars().skip(s).take(e - s).collect();
    assert_eq!(
        (found.as_str(), at["match"].as_str()),
        ("INV-0042", Some("exact"))
    );
    let total = &acme["extraction"]["fields"]["total"];
    assert_eq!(
        total["match"], "normalized",
        "1130 is written 1,130.00: {acme}"
    );
    let globex = record(&env, "invoices/globex.txt");
    assert_eq!(globex["status"], "succeeded", "kept, and flagged");
    assert_eq!(
        globex["extraction"]["ungrounded"],
        json!(["seller", "total"])
    );
    let saved = saved(&env, "out/extract/invoices/globex.txt/extracted.json");
    assert_eq!(saved["seller"], "Initech");

    let rows = csv_rows(&env, "extract-invoice");
    assert_eq!(
        rows[0],
        [
            "file",
            "status",
            "invoice_number",
            "seller",
            "total",
            "items",
            "ungrounded",
            "doubts",
            "error"
        ]
    );
    assert_eq!(rows.len(), 3, "a row per document: {rows:?}");
    assert_eq!(
        &rows[1][..5],
        [
            "invoices/acme.txt",
            "succeeded",
            "INV-0042",
            "ACME SUPPLIES LTD",
            "1130"
        ]
    );
    assert_eq!(rows[2][6], "seller, total");
    // Found nowhere, so doubted too.
    assert_eq!(
        rows[2][7],
        "seller: found nowhere in the document; total: found nowhere in the document"
    );
    let jsonl = std::fs::read_to_string(env.path("out/tables/extract-invoice.jsonl")).unwrap();
    let first: Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    assert_eq!(first["items"][1]["name"], "Standing desk");
    // The workbook: the rows, and a sheet of the line items.
    use calamine::Reader;
    let mut book: calamine::Xlsx<_> =
        calamine::open_workbook(env.path("out/tables/extract-invoice.xlsx")).unwrap();
    assert_eq!(book.sheet_names(), ["rows", "items"]);
    let items = book.worksheet_range("items").unwrap();
    assert_eq!(items.get_size(), (3, 3), "a header and two items");
    assert_eq!(items.get((2, 1)).unwrap().to_string(), "Standing desk");
    let manifest: Value = serde_json::from_str(&show_manifest(&env)).unwrap();
    assert!(
        manifest["tables"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "tables/extract-invoice.csv")
    );
}

fn show_manifest(env: &TestEnv) -> String {
    let runs = env.path("out/.zhi/runs");
    let mut dirs: Vec<_> = std::fs::read_dir(runs)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    std::fs::read_to_string(dirs.last().unwrap().join("manifest.json")).unwrap()
}

#[test]
fn an_answer_that_is_not_json_fails_invalid_output_after_one_corrective_request() {
    let env = env();
    std::fs::remove_file(env.path("invoices/globex.txt")).unwrap();
    let api = FakeApi::start(|_: &Recorded| {
        Reply::text("The invoice number is INV-0042 and the total is 1,130.00.")
    });
    let out = extract(&env, &api, &[]);
    assert_exit(&out, Exit::JobsFailed);
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 2, "{}", show(&out));
    assert!(
        reqs[1]
            .last_user_text()
            .unwrap()
            .contains("not a JSON object")
    );
    let r = record(&env, "invoices/acme.txt");
    assert_eq!(r["error"]["kind"], "invalid_output", "{r}");
    assert_eq!(r["extraction"]["valid"], false);
    // The failed document is a row of the table, with its error.
    let rows = csv_rows(&env, "extract-invoice");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1][1], "failed");
    assert!(rows[1][8].starts_with("invalid_output:"), "{rows:?}");
    // The answer is kept for a person to read, never committed.
    assert!(!env.path("out/extract/invoices/acme.txt").exists());
}

#[test]
fn a_schema_invalid_answer_then_a_valid_one_succeeds_in_two_requests() {
    let env = env();
    std::fs::remove_file(env.path("invoices/globex.txt")).unwrap();
    let api = FakeApi::sequence(vec![
        Reply::text(r#"{"invoice_number": "INV-0042", "total": "about eleven hundred"}"#),
        Reply::text(r#"{"invoice_number": "INV-0042", "total": 1130}"#),
    ]);
    let out = extract(&env, &api, &[]);
    assert_exit(&out, Exit::Success);
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 2);
    let correction = reqs[1].last_user_text().unwrap();
    assert!(
        correction.contains("/total"),
        "the validation error is quoted: {correction}"
    );
    let r = record(&env, "invoices/acme.txt");
    assert_eq!(r["extraction"]["valid"], true);
    assert_eq!(r["requests"], 2);
}

#[test]
fn a_rerun_pays_nothing_and_rewrites_the_same_table_and_a_changed_document_changes_its_row() {
    let env = env();
    let api = FakeApi::start(answers);
    assert_exit(&extract(&env, &api, &[]), Exit::Success);
    let table = std::fs::read(env.path("out/tables/extract-invoice.csv")).unwrap();
    let jsonl = std::fs::read(env.path("out/tables/extract-invoice.jsonl")).unwrap();
    let before = api.chat_requests().len();
    assert_exit(&extract(&env, &api, &[]), Exit::Success);
    assert_eq!(api.chat_requests().len(), before, "nothing to pay");
    assert_eq!(
        std::fs::read(env.path("out/tables/extract-invoice.csv")).unwrap(),
        table
    );
    assert_eq!(
        std::fs::read(env.path("out/tables/extract-invoice.jsonl")).unwrap(),
        jsonl
    );
    env.write("invoices/acme.txt", ACME.replace("INV-0042", "INV-0043"));
    let api2 = FakeApi::start(|_: &Recorded| {
        Reply::text(json!({"invoice_number": "INV-0043", "total": 1130}).to_string())
    });
    assert_exit(&extract(&env, &api2, &[]), Exit::Success);
    assert_eq!(api2.chat_requests().len(), 1, "only the changed document");
    let rows = csv_rows(&env, "extract-invoice");
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1][2], "INV-0043");
    assert_eq!(rows[2][2], "GX-7", "the unchanged one keeps its row");
}

#[test]
fn a_figure_written_as_text_is_read_as_the_number_the_schema_wants() {
    let env = env();
    std::fs::remove_file(env.path("invoices/globex.txt")).unwrap();
    let api = FakeApi::always(Reply::text(
        r#"{"invoice_number": "INV-0042", "total": "1,130.00 GBP"}"#,
    ));
    let out = extract(&env, &api, &[]);
    assert_exit(&out, Exit::Success);
    assert_eq!(api.chat_requests().len(), 1);
    let saved = saved(&env, "out/extract/invoices/acme.txt/extracted.json");
    assert_eq!(saved["total"], json!(1130.0));
}

#[test]
fn rows_makes_a_row_per_line_item() {
    let env = env();
    let api = FakeApi::start(answers);
    let out = extract(&env, &api, &["--rows", "items"]);
    assert_exit(&out, Exit::Success);
    let rows = csv_rows(&env, "extract-invoice");
    assert_eq!(
        rows[0],
        [
            "file",
            "status",
            "invoice_number",
            "seller",
            "total",
            "items.name",
            "items.amount",
            "ungrounded",
            "doubts",
            "error"
        ]
    );
    // Acme's two items, and Globex (no items) as one row.
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(
        &rows[2][..7],
        [
            "invoices/acme.txt",
            "succeeded",
            "INV-0042",
            "ACME SUPPLIES LTD",
            "1130",
            "Standing desk",
            "650"
        ]
    );
    assert_eq!(rows[3][0], "invoices/globex.txt");
}

#[test]
fn grounding_required_fails_a_job_whose_required_value_is_found_nowhere() {
    let env = env();
    env.write(
        ".zhi/skills/invoice-strict.yaml",
        "name: invoice-strict\ndescription: Invoice fields, every required one found in the invoice\nsystem_prompt: Take the fields of one invoice.\noutput:\n  schema: invoice.schema.json\n  grounding: required\n",
    );
    env.write(".zhi/skills/invoice.schema.json", SCHEMA);
    let api = FakeApi::start(answers);
    let out = run(&env, &api, "invoice-strict", &["invoices"]);
    assert_exit(&out, Exit::JobsFailed);
    assert_eq!(
        record(&env, "invoices/acme.txt")["status"],
        "succeeded",
        "{}",
        show(&out)
    );
    let r = record(&env, "invoices/globex.txt");
    assert_eq!(r["error"]["kind"], "invalid_output", "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("total") && !msg.contains("seller"),
        "only required fields: {msg}"
    );
    // A schema beside the skill gives the table the skill's name.
    assert_eq!(csv_rows(&env, "invoice-strict").len(), 3);
}

/// `grounding: required` is a verdict the ladder reads on each rung, as it reads a schema's
/// `invalid_output`: with `escalate_on: []` (no doubt climbs), the cheap model's made-up
/// required total is asked of the strong model, whose grounded answer is kept.
#[test]
fn a_required_value_found_nowhere_is_asked_of_the_strong_model_with_escalate_on_empty() {
    let env = env();
    env.write("zhi.yaml", format!("{FAST}escalate_on: []\n"));
    env.write(
        ".zhi/skills/invoice-strict.yaml",
        "name: invoice-strict\ndescription: Invoice fields, every required one found in the invoice\nsystem_prompt: Take the fields of one invoice.\noutput:\n  schema: invoice.schema.json\n  grounding: required\n",
    );
    env.write(".zhi/skills/invoice.schema.json", SCHEMA);
    let cheap = FakeApi::start(answers);
    let strong = FakeApi::start(|_: &Recorded| {
        Reply::text(
            json!({"invoice_number": "GX-7", "seller": "Globex Corporation", "total": 2000.5,
                   "items": [{"name": "Consulting", "amount": 2000.5}]})
            .to_string(),
        )
    });
    let to = format!("strong-model@{}", strong.base_url());
    let out = run(
        &env,
        &cheap,
        "invoice-strict",
        &["invoices", "--escalate", &to],
    );
    assert_exit(&out, Exit::Success);
    let asked: Vec<String> = strong
        .chat_requests()
        .iter()
        .map(|r| r.input_document())
        .collect();
    assert_eq!(asked.len(), 1, "only Globex goes up: {}", show(&out));
    assert!(asked[0].contains("globex"), "{asked:?}");
    let r = record(&env, "invoices/globex.txt");
    assert_eq!(r["status"], "succeeded", "{r}");
    assert_eq!(r["model"], "strong-model", "{r}");
    assert_eq!(r["escalated_from"], "glm-4-flash", "{r}");
    assert_eq!(
        r["extraction"]["ungrounded"],
        json!([]),
        "the kept answer's grounding is recorded: {r}"
    );
    assert!(r["extraction"]["fields"]["total"].is_object(), "{r}");
    let kept = saved(
        &env,
        "out/invoice-strict/invoices/globex.txt/extracted.json",
    );
    assert_eq!(kept["total"], json!(2000.5));
    assert_eq!(kept["seller"], "Globex Corporation");
    let acme = record(&env, "invoices/acme.txt");
    assert_eq!(acme["escalated"], Value::Null, "{acme}");
}

#[test]
fn a_schema_that_is_not_json_stops_the_run_before_anything_is_asked_naming_its_file() {
    let env = env();
    env.write("bad.schema.json", "{\"type\": \"object\", \"properties\": ");
    let api = FakeApi::start(answers);
    let out = run(
        &env,
        &api,
        "extract",
        &["invoices", "-a", "schema=bad.schema.json"],
    );
    assert_exit(&out, Exit::Usage);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.schema.json") && stderr.contains("not JSON"),
        "{stderr}"
    );
    assert!(api.chat_requests().is_empty(), "nothing was asked");
}

#[test]
fn batch_mode_carries_extraction_requests_and_the_collecting_run_writes_the_table() {
    use crate::support::FakeBatch;
    let env = env();
    let batch = FakeBatch::new(answers);
    let api = FakeApi::start(batch.handler());
    let submit = || {
        env.zhi()
            .args([
                "--no-progress",
                "run",
                "extract",
                "invoices",
                "-a",
                "schema=invoice.schema.json",
            ])
            .args(["-o", "out", "--submit", "batch", "--base-url"])
            .arg(api.zhipu_base_url())
            .env("ZHI_API_KEY", "test-key")
            .output()
            .unwrap()
    };
    let out = submit();
    assert_exit(&out, Exit::Success);
    let batches = batch.batches();
    assert_eq!(batches.len(), 1, "{}", show(&out));
    assert_eq!(batches[0].lines.len(), 2, "both documents in one batch");
    assert_eq!(
        batches[0].lines[0]["body"]["response_format"],
        json!({"type": "json_object"}),
        "Zhipu's Batch API is asked for a JSON object"
    );
    assert!(api.chat_requests().is_empty());
    batch.finish_all();
    let out = submit();
    assert_exit(&out, Exit::Success);
    let globex = record(&env, "invoices/globex.txt");
    assert_eq!(globex["status"], "succeeded", "{}", show(&out));
    assert_eq!(
        globex["extraction"]["ungrounded"],
        json!(["seller", "total"])
    );
    let rows = csv_rows(&env, "extract-invoice");
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1][2], "INV-0042");
}

#[test]
fn a_long_invoice_is_extracted_piece_by_piece_and_merged() {
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        "models:\n  glm-4-flash: {context_window: 4000, max_output: 200}\nretry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n",
    );
    env.write("invoice.schema.json", SCHEMA);
    let filler = "The goods were delivered on time and in good order to the warehouse. ".repeat(6);
    let mut doc = String::from("ACME SUPPLIES LTD\nInvoice number: INV-0042\n");
    for i in 1..=60 {
        doc.push_str(&format!("Line item Chair-{i:02} delivered. {filler}\n"));
    }
    doc.push_str("Total due: 1,130.00 GBP\n");
    env.write("invoices/long.txt", &doc);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
    let api = FakeApi::start(move |r: &Recorded| {
        // The whole conversation: a corrective request holds the piece too.
        let text = r.body_text.clone();
        let items: Vec<Value> = (1..=60)
            .map(|i| format!("Chair-{i:02}"))
            .filter(|c| text.contains(c.as_str()))
            .map(|c| json!({"name": c}))
            .collect();
        // The first answer for the piece holding Chair-30 is not valid: that piece alone is
        // asked again.
        if text.contains("Chair-30") && seen.lock().unwrap().insert("Chair-30") {
            return Reply::text("I could not find an invoice here.");
        }
        let number = if text.contains("INV-0042") {
            "INV-0042"
        } else {
            "INV-9999"
        };
        let total = if text.contains("1,130.00") { 1130 } else { 7 };
        Reply::text(json!({"invoice_number": number, "total": total, "items": items}).to_string())
    });
    let out = run(
        &env,
        &api,
        "extract",
        &["invoices", "-a", "schema=invoice.schema.json"],
    );
    assert_exit(&out, Exit::Success);
    let r = record(&env, "invoices/long.txt");
    let pieces = r["chunks"]["total"].as_u64().unwrap_or(0);
    assert!(pieces >= 2, "split: {r}");
    assert_eq!(
        r["requests"],
        pieces + 1,
        "one corrective request, for one piece"
    );
    let saved = saved(&env, "out/extract/invoices/long.txt/extracted.json");
    // Scalars from the piece whose text holds them, items from every piece, each once.
    assert_eq!(saved["invoice_number"], "INV-0042");
    assert_eq!(saved["total"], json!(1130));
    let names: Vec<&str> = saved["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    let want: Vec<String> = (1..=60).map(|i| format!("Chair-{i:02}")).collect();
    assert_eq!(names, want);
    assert_eq!(r["extraction"]["ungrounded"], json!([]), "{r}");
}

#[test]
fn a_value_that_a_spreadsheet_would_run_as_a_formula_stays_text_in_the_csv() {
    let env = env();
    std::fs::remove_file(env.path("invoices/globex.txt")).unwrap();
    let api = FakeApi::always(Reply::text(
        json!({"invoice_number": "=HYPERLINK(\"http://example.invalid\")", "total": -5})
            .to_string(),
    ));
    assert_exit(&extract(&env, &api, &[]), Exit::Success);
    let rows = csv_rows(&env, "extract-invoice");
    assert_eq!(rows[1][2], "'=HYPERLINK(\"http://example.invalid\")");
    assert_eq!(
        rows[1][4], "-5",
        "a number is a number, not neutralised text"
    );
    assert_eq!(rows[1][6], "invoice_number, total");
}
