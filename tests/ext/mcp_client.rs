//! `zhi mcp` driven by the Model Context Protocol's official Python client (`mcp` on the
//! package index, in the virtual environment `.ci/run` makes; `ZHI_TEST_MCP_PYTHON` names its
//! python): started as an agent starts it (the SDK's few variables, and the API's address and
//! key in the server's `env`; without the key, `run` says where it goes), initialize, list the
//! tools, plan, run an extraction against the fake API with progress notifications, status
//! until done, the folder's table read a page at a time, and a path outside the root refused
//! (docs/mcp.md). The script is tests/ext/mcp_client.py.
//!
//! And the other way round: an agent skill calling the tool of an MCP server written with the
//! same SDK (tests/ext/mcp_server.py), named in the settings, on the fake API.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, assert_exit, record, run_skill, show};
use serde_json::{Value, json};
use zhi::exit::Exit;

/// The tests of this module and what each needs.
pub fn tests() -> Vec<crate::Test> {
    vec![
        crate::Test::new(
            "mcp_client::the_python_sdk_plans_runs_follows_and_reads_a_run",
            &[crate::need::Need::McpPython],
            the_python_sdk_plans_runs_follows_and_reads_a_run,
        ),
        crate::Test::new(
            "mcp_client::the_python_sdk_over_http_needs_the_token",
            &[crate::need::Need::McpPython],
            the_python_sdk_over_http_needs_the_token,
        ),
        crate::Test::new(
            "mcp_client::a_skill_calls_a_tool_of_a_python_sdk_server",
            &[crate::need::Need::McpPython],
            a_skill_calls_a_tool_of_a_python_sdk_server,
        ),
    ]
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
    drive("stdio");
}

fn the_python_sdk_over_http_needs_the_token() {
    let seen = drive("http");
    assert_eq!(seen["unauthorized"], 401, "{seen}");
    assert_eq!(seen["server_exit"], 0, "SIGTERM ends it cleanly: {seen}");
}

/// The key the server is given in its `env`.
const KEY: &str = "sk-given-in-the-servers-env-5f1d6c1e";

/// The client script over `transport`, on two invoices against the fake API: what it saw. The
/// API's address and key reach `zhi mcp` only through the server's `env` (over stdio) or the
/// environment it is started with (over HTTP), never through the root's `zhi.yaml`; the
/// client's own `ZHI_API_KEY`, an agent's variable, is not handed on.
fn drive(transport: &str) -> Value {
    let env = TestEnv::new();
    let api = FakeApi::start(answers);
    env.write(
        "zhi.yaml",
        "provider: openai\nretry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n",
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
        .arg(transport)
        .arg(api.base_url())
        .arg(KEY)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .env("SHELL", "/bin/sh")
        .env("TERM", "dumb")
        .env("USER", "agent")
        .env("LOGNAME", "agent")
        .env("ZHI_API_KEY", "sk-the-agents-own-variable-not-passed")
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
    let chats = api.chat_requests();
    assert_eq!(chats.len(), 2, "one request an invoice");
    assert!(
        chats.iter().all(|r| r.bearer() == Some(KEY)),
        "the key of the server's env"
    );
    if transport == "stdio" {
        let said = seen["no_key"].as_str().unwrap_or_default();
        assert!(said.contains("`env` setting"), "{seen}");
    }
    seen
}

const CONVERT: &str = "name: convert\ndescription: Give an invoice's total in yuan into converted.json\n\
system_prompt: Ask the rate tool for the invoice's currency, then write the total in CNY to converted.json.\n\
tools: [file_write, \"mcp:rates/rate\"]\nmax_turns: 4\noutput:\n  files: [converted.json]\n";

/// The processes whose command line holds `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                found.push(cmd);
            }
        }
    }
    found
}

fn a_skill_calls_a_tool_of_a_python_sdk_server() {
    let env = TestEnv::new();
    let python = std::env::var("ZHI_TEST_MCP_PYTHON").unwrap();
    let server = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ext/mcp_server.py");
    let calls = env.path("rates-calls.log");
    env.write(
        "zhi.yaml",
        format!(
            "retry: {{max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}}\n\
             mcp:\n  rates:\n    command: {python:?}\n    args: [{server:?}]\n    \
             env: {{RATES_CALLS: {:?}}}\n",
            calls.display().to_string()
        ),
    );
    env.project_skill("convert.yaml", CONVERT);
    env.write(
        "invoices/acme.txt",
        "ACME Tools Ltd.\nTotal due (GBP): 666.00\n",
    );
    let api = FakeApi::start(|req: &Recorded| match req.tool_results().first() {
        None => {
            assert!(
                req.tools_offered()
                    .contains(&"mcp__rates__rate".to_string()),
                "{:?}",
                req.tools_offered()
            );
            Reply::tool_calls(vec![("mcp__rates__rate", json!({"currency": "GBP"}))])
        }
        Some(result) => {
            // 666.00 GBP at the rate the server gave.
            let rate: f64 = result
                .content
                .split_whitespace()
                .nth(3)
                .and_then(|r| r.parse().ok())
                .unwrap_or_else(|| panic!("no rate in {:?}", result.content));
            let cny = (666.0 * rate * 100.0_f64).round() / 100.0;
            Reply::tool_calls(vec![(
                "file_write",
                json!({"path": "converted.json",
                       "content": json!({"total": 666.0, "currency": "GBP", "rate": rate,
                                         "total_cny": cny, "source": result.content}).to_string()}),
            )])
        }
    });
    let out = run_skill(&env, &api, "convert", &["invoices/acme.txt"]);
    assert_exit(&out, Exit::Success);

    // The tool's description and input schema are the server's own.
    let first = &api.chat_requests()[0];
    let def = first.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__rates__rate")
        .cloned()
        .unwrap();
    let about = def["function"]["description"].as_str().unwrap_or("");
    assert!(about.contains("yuan"), "{def}");
    assert_eq!(
        def["function"]["parameters"]["properties"]["currency"]["type"], "string",
        "{def}"
    );

    let r = record(&env, "invoices/acme.txt");
    assert_eq!(r["status"], "succeeded", "{r}\n{}", show(&out));
    assert_eq!(r["tool_calls"], 2, "{r}");
    let dir = env.path("out").join(r["output_dir"].as_str().unwrap());
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("converted.json")).unwrap())
            .unwrap();
    assert_eq!(written["total_cny"], json!(6073.92), "{written}");
    // The server process answered it, once.
    assert_eq!(std::fs::read_to_string(&calls).unwrap(), "GBP\n");
    let transcript =
        std::fs::read_to_string(env.path("out").join(r["transcript"].as_str().unwrap())).unwrap();
    assert!(transcript.contains("mcp__rates__rate"), "{transcript}");
    assert!(transcript.contains("1 GBP = 9.12 CNY"), "{transcript}");
    // Started for the run, stopped at its end.
    assert_eq!(processes_with(server), Vec::<String>::new());
}
