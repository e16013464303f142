//! A hostile or broken provider (docs/model-api.md): the key handed back in disguise, URL
//! credentials, discovery answers that lie. Each test here is one attack that once got
//! through.

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::testenv::{TestEnv, assert_exit, files_under, record, stderr, stdout};
use serde_json::json;
use zhi::exit::Exit;

const FAST: &str = "retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n";

/// Distinctive enough that any spelling of it is found by its tail.
const KEY: &str = "sk-hostile-0a1b2c3d4e5f";
const KEY_TAIL: &str = "0a1b2c3d4e5f";

/// The key as JSON text a server may spell it: every `-` and `s` as a `\u` escape.
fn escaped_key() -> String {
    KEY.replace('-', "\\u002d").replace('s', "\\u0073")
}

fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", FAST);
    env
}

/// No file name and no file under `out`, and nothing printed, holds the key in any spelling
/// a reader would decode (raw or JSON-escaped).
fn assert_nowhere(env: &TestEnv, printed: &str) {
    let escaped = escaped_key();
    for text in [KEY, KEY_TAIL, escaped.as_str()] {
        assert!(!printed.contains(text), "printed: {printed}");
    }
    let all = files_under(&env.path("out"));
    assert!(!all.is_empty());
    for f in all {
        let name = f.to_string_lossy();
        assert!(
            !name.contains(KEY_TAIL),
            "a file is named after the key: {name}"
        );
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        assert!(
            !text.contains(KEY_TAIL) && !text.contains(&escaped),
            "{} holds the key:\n{text}",
            f.display()
        );
    }
}

/// What a person looks at after a run: `zhi report out` and `zhi manifest show out`.
fn views(env: &TestEnv) -> [std::process::Output; 2] {
    [&["report"][..], &["manifest", "show"][..]]
        .map(|args| env.zhi().args(args).arg("out").output().unwrap())
}

#[test]
fn a_key_handed_back_json_escaped_never_reaches_the_disk() {
    let env = env();
    env.write(
        "docs/budget.txt",
        "The board met on Tuesday and approved the 2027 budget of four million after a long \
         debate about staffing costs, travel and the new laboratory building.\n",
    );
    // Direct: the answer and the `model` field spell the key with escapes; the discovery
    // probe echoes the Authorization header as the model's name.
    let api = FakeApi::start(|req| {
        if req.is_probe() && req.path.ends_with("/props") {
            let echoed = req.header("authorization").unwrap_or("").to_string();
            return Reply::status(
                200,
                json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 2,
                       "model_alias": echoed}),
            );
        }
        if !req.is_chat() {
            return Reply::status(404, json!({"error": "no"}));
        }
        let k = escaped_key();
        Reply::raw(
            200,
            format!(
                r#"{{"id":"c1","object":"chat.completion","model":"{k}","choices":[{{"index":0,"message":{{"role":"assistant","content":"The board approved the 2027 budget of four million after debating staffing, travel and a new laboratory. Reference {k}."}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70}}}}"#
            ),
        )
    });
    let out = env
        .zhi()
        .env("ZHI_API_KEY", KEY)
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .args(["--base-url", &api.base_url()])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert!(api.requests().iter().any(|r| r.bearer() == Some(KEY)));
    let summary = std::fs::read_to_string(env.path("out/summarize/docs/budget.txt/summary.md"))
        .unwrap_or_else(|e| panic!("{e}: {}", crate::support::testenv::show(&out)));
    assert!(summary.contains("Reference <redacted>."), "{summary}");
    let [report, manifest] = views(&env);
    let printed = [&out, &report, &manifest]
        .iter()
        .map(|o| format!("{}{}", stdout(o), stderr(o)))
        .collect::<String>();
    assert_nowhere(&env, &printed);
}

#[test]
fn a_file_named_after_the_escaped_key_is_never_created() {
    let env = env();
    env.write(
        "docs/a.txt",
        "The plant opens in May with forty new jobs.\n",
    );
    env.project_skill(
        "notes-and-facts.yaml",
        "name: notes-and-facts\ndescription: Notes and facts\nsystem_prompt: Write notes and facts.\n\
         tools: [file_read, file_write]\nmax_turns: 10\noutput:\n  files: [notes.md, facts.json]\n",
    );
    let api = FakeApi::start(|req| {
        if !req.is_chat() {
            return Reply::status(404, json!({"error": "no"}));
        }
        if req.has_tool_result() {
            return Reply::text("Done.");
        }
        let k = escaped_key();
        Reply::tool_calls_raw(vec![
            (
                "file_write",
                format!(r#"{{"path":"f{k}.md","content":"secret {k}"}}"#),
            ),
            (
                "file_write",
                format!(
                    r##"{{"path":"notes.md","content":"# Notes\n\nThe plant opens in May with forty jobs ({k})."}}"##
                ),
            ),
            (
                "file_write",
                r#"{"path":"facts.json","content":"{\"opens\": \"May\", \"jobs\": 40}"}"#
                    .to_string(),
            ),
        ])
    });
    let out = env
        .zhi()
        .env("ZHI_API_KEY", KEY)
        .args([
            "--no-progress",
            "run",
            "notes-and-facts",
            "docs",
            "-o",
            "out",
        ])
        .args(["--base-url", &api.base_url()])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert_eq!(record(&env, "docs/a.txt")["status"], "succeeded");
    let printed = format!("{}{}", stdout(&out), stderr(&out));
    assert_nowhere(&env, &printed);
}

#[test]
fn url_credentials_are_kept_off_every_record_and_the_query_on_every_request() {
    const PASSWORD: &str = "pw-0123456789abcdef";
    const QUERY_KEY: &str = "qk-fedcba9876543210";
    let env = env();
    env.write(
        "docs/a.txt",
        "The committee reviewed the river survey on Monday. Its members found the data thin in \
         the upper valley and asked for two more sampling sites before the spring report.\n",
    );
    let api = FakeApi::start(|req| {
        if !req.is_chat() {
            return Reply::status(404, json!({"error": "no"}));
        }
        Reply::text("After reading the survey, the committee wants sampling at two further places.")
    });
    let addr = api.addr();
    let base = format!("http://user:{PASSWORD}@{addr}/v1?api-key={QUERY_KEY}");
    let out = env
        .zhi()
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .args(["--base-url", &base])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let chats = api.chat_requests();
    assert_eq!(chats.len(), 1);
    assert_eq!(chats[0].path, "/v1/chat/completions");
    assert_eq!(
        chats[0].query.as_deref(),
        Some(format!("api-key={QUERY_KEY}").as_str())
    );

    let config = env
        .zhi()
        .args(["--base-url", &base, "config", "show"])
        .output()
        .unwrap();
    let [report, manifest] = views(&env);
    for o in [&out, &config, &report, &manifest] {
        let printed = format!("{}{}", stdout(o), stderr(o));
        assert!(
            !printed.contains(PASSWORD) && !printed.contains(QUERY_KEY),
            "{printed}"
        );
    }
    let shown = stdout(&manifest);
    assert!(shown.contains(&format!("http://{addr}/v1")), "{shown}");
    for f in files_under(&env.path("out")) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        assert!(
            !text.contains(PASSWORD) && !text.contains(QUERY_KEY),
            "{} holds a credential:\n{text}",
            f.display()
        );
    }
}

#[test]
fn a_placeholder_key_never_changes_a_documents_text() {
    let env = env();
    env.write(
        "docs/ollama.txt",
        "Ollama runs models locally. To use ollama from an OpenAI client, pass the key ollama \
         and the base URL of the ollama server.\n",
    );
    let api = FakeApi::start(|req| {
        if !req.is_chat() {
            return Reply::status(404, json!({"error": "no"}));
        }
        Reply::text(
            "Ollama runs models locally; an OpenAI client reaches ollama with the key ollama and the ollama server's URL.",
        )
    });
    let out = env
        .zhi()
        .env("ZHI_API_KEY", "ollama")
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .args(["--base-url", &api.base_url()])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert_eq!(api.chat_requests()[0].bearer(), Some("ollama"));
    let summary =
        std::fs::read_to_string(env.path("out/summarize/docs/ollama.txt/summary.md")).unwrap();
    assert!(
        summary.contains("with the key ollama and the ollama server"),
        "{summary}"
    );
    assert!(!summary.contains("redacted"), "{summary}");
    let err = stderr(&out);
    assert_eq!(
        err.matches("not treated as a secret").count(),
        1,
        "said once: {err}"
    );
}

/// The key folded back to what it is: ASCII lower case, format characters dropped, HTML
/// numeric references decoded — what a reader or a text normaliser makes of a spelling.
fn folded(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(reference) = rest.strip_prefix("&#")
            && let Some(end) = reference.find(';')
            && let Some(decoded) = reference[..end]
                .strip_prefix(['x', 'X'])
                .map_or_else(
                    || reference[..end].parse().ok(),
                    |h| u32::from_str_radix(h, 16).ok(),
                )
                .and_then(char::from_u32)
        {
            out.push(decoded.to_ascii_lowercase());
            rest = &reference[end + 1..];
            continue;
        }
        if !matches!(
            c,
            '\u{200b}'..='\u{200f}' | '\u{2060}' | '\u{feff}' | '\u{00ad}'
        ) {
            out.push(c.to_ascii_lowercase());
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[test]
fn the_key_in_case_zero_width_and_entity_spellings_never_reaches_an_output() {
    let env = env();
    env.write(
        "invoice.schema.json",
        r#"{"type":"object","properties":{"number":{"type":"string"},"note":{"type":"string"},"ref":{"type":"string"}}}"#,
    );
    env.write("docs/inv.txt", "Invoice number 42, issued to ACME.\n");
    let hex: String = hex::encode(KEY)
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 3 == 0 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect();
    let zero_width = KEY
        .chars()
        .map(String::from)
        .collect::<Vec<_>>()
        .join("\u{200b}");
    let entities: String = KEY.chars().map(|c| format!("&#{};", c as u32)).collect();
    let answer = json!({"number": "42", "note": zero_width, "ref": format!("{hex} {entities}")});
    let api = FakeApi::start(move |req| {
        if !req.is_chat() {
            return Reply::status(404, json!({"error": "no"}));
        }
        Reply::text(answer.to_string())
    });
    let out = env
        .zhi()
        .env("ZHI_API_KEY", KEY)
        .args(["--no-progress", "run", "extract", "docs", "-o", "out"])
        .args([
            "-a",
            "schema=invoice.schema.json",
            "--base-url",
            &api.base_url(),
        ])
        .output()
        .unwrap();
    assert!(api.requests().iter().any(|r| r.bearer() == Some(KEY)));
    let extracted = std::fs::read_to_string(env.path("out/extract/docs/inv.txt/extracted.json"))
        .unwrap_or_else(|e| panic!("{e}: {}", crate::support::testenv::show(&out)));
    assert!(extracted.contains("<redacted>"), "{extracted}");
    let hex_key = hex::encode(KEY);
    for f in files_under(&env.path("out")) {
        let text = folded(&String::from_utf8_lossy(&std::fs::read(&f).unwrap()));
        // JSON files hold `\u200b` escapes: decode those too.
        let text = text.replace("\\u200b", "");
        assert!(
            !text.contains(KEY_TAIL) && !text.contains(&hex_key),
            "{} holds the key in some spelling:\n{text}",
            f.display()
        );
    }
}
