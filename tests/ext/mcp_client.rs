//! `zhi mcp` driven by the Model Context Protocol's official Python client (`mcp` on the
//! package index, in the virtual environment `.ci/run` makes; `ZHI_TEST_MCP_PYTHON` names its
//! python): initialize, list the tools, plan, run an extraction against the fake API with
//! progress notifications, status until done, the folder's table read a page at a time, and a
//! path outside the root refused (docs/mcp.md). The script is tests/ext/mcp_client.py.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::testenv::TestEnv;
use serde_json::{Value, json};

/// The tests of this module and what each needs.
pub fn tests() -> Vec<crate::Test> {
    vec![crate::Test::new(
        "mcp_client::the_python_sdk_plans_runs_follows_and_reads_a_run",
        &[crate::need::Need::McpPython],
        the_python_sdk_plans_runs_follows_and_reads_a_run,
    )]
}

const SCHEMA: &str = r#"{"type": "object", "properties": {
  "invoice_number": {"type": "string"}, "seller": {"type": "string"}, "total": {"type": "number"}},
  "required": ["invoice_number", "total"]}"#;

fn answers(r: &Recorded) -> Reply {
    let v = if r.input_document().to_lowercase().contains("acme") {
        json!({"invoice_number": "INV-0042", "seller": "ACME SUPPLIES LTD", "total": 1130})
    } else {
        json!({"invoice_number": "GX-7", "seller": "Globex Corporation", "total": 2000.5})
    };
    Reply::text(v.to_string())
}

fn the_python_sdk_plans_runs_follows_and_reads_a_run() {
    let env = TestEnv::new();
    let api = FakeApi::start(answers);
    env.write(
        "zhi.yaml",
        format!(
            "provider: openai\nbase_url: {}\nretry: {{max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}}\n",
            api.base_url()
        ),
    );
    env.write("invoice.schema.json", SCHEMA);
    env.write(
        "invoices/acme.txt",
        "ACME SUPPLIES LTD\nInvoice number: INV-0042\nTotal due: 1,130.00 GBP\n",
    );
    env.write(
        "invoices/globex.txt",
        "Globex Corporation\nInvoice GX-7\nTotal: 2,000.50 EUR\n",
    );
    let python = std::env::var("ZHI_TEST_MCP_PYTHON").unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ext/mcp_client.py");
    let work = env.work.canonicalize().unwrap();
    let out = std::process::Command::new(&python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_zhi"))
        .arg(&work)
        .arg(&env.home)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap();
    note!("mcp client saw: {seen}");
    assert_eq!(seen["table"], json!(["GX-7", "INV-0042"]));
    assert_eq!(api.chat_requests().len(), 2, "one request an invoice");
}
