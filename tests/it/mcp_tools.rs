//! Skills that call MCP tools (docs/mcp.md#skills-that-call-mcp-tools): a real MCP server —
//! `zhi mcp` itself, named in the settings as `self` — whose `skills` tool an agent skill calls
//! on the fake API; the call and its result in the transcript, the output made of it, the
//! server gone after the run. And the refusals: an unknown server, a non-agent skill.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, assert_exit, record, run_skill, show, stderr};
use serde_json::{Value, json};
use zhi::exit::Exit;

const FAST: &str = "retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n";

/// A world whose settings name `zhi mcp` as the server `self`.
fn env() -> TestEnv {
    let env = TestEnv::new();
    let zhi = env!("CARGO_BIN_EXE_zhi");
    env.write(
        "zhi.yaml",
        format!("{FAST}mcp:\n  self:\n    command: {zhi:?}\n    args: [mcp]\n"),
    );
    env.write("docs/a.txt", "A note about skills.\n");
    env
}

const LOOKUP: &str = "name: lookup\ndescription: List zhi's skills into skills.json\n\
system_prompt: Call the skills tool and write what it lists to skills.json.\n\
tools: [file_write, \"mcp:self/skills\"]\nmax_turns: 4\noutput:\n  files: [skills.json]\n";

/// The processes still running `zhi mcp` in `dir`.
#[cfg(target_os = "linux")]
fn servers_in(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let p = entry.path();
        let Ok(cmd) = std::fs::read(p.join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let here = std::fs::read_link(p.join("cwd")).is_ok_and(|c| c == dir);
        if here && cmd.contains(" mcp") {
            found.push(cmd);
        }
    }
    found
}

#[test]
fn an_agent_skill_calls_a_tool_of_an_mcp_server_and_the_server_goes_at_the_end() {
    let env = env();
    env.project_skill("lookup.yaml", LOOKUP);
    let api = FakeApi::start(|req: &Recorded| match req.tool_results().first() {
        None => {
            assert!(
                req.tools_offered()
                    .contains(&"mcp__self__skills".to_string()),
                "{:?}",
                req.tools_offered()
            );
            Reply::tool_calls(vec![("mcp__self__skills", json!({}))])
        }
        Some(result) => {
            let listed: Value = serde_json::from_str(&result.content)
                .unwrap_or_else(|e| panic!("{e}: {}", result.content));
            Reply::tool_calls(vec![(
                "file_write",
                json!({"path": "skills.json", "content": listed}),
            )])
        }
    });
    let out = run_skill(&env, &api, "lookup", &["docs/a.txt"]);
    assert_exit(&out, Exit::Success);
    // The tool's schema came from the server's tools/list.
    let first = &api.chat_requests()[0];
    let tools = first.body["tools"].as_array().unwrap();
    let def = tools
        .iter()
        .find(|t| t["function"]["name"] == "mcp__self__skills")
        .unwrap();
    assert_eq!(def["function"]["parameters"]["type"], "object", "{def}");

    let r = record(&env, "docs/a.txt");
    assert_eq!(r["status"], "succeeded", "{r}");
    assert_eq!(r["tool_calls"], 2, "{r}");
    let dir = env.path("out").join(r["output_dir"].as_str().unwrap());
    let written = std::fs::read_to_string(dir.join("skills.json")).unwrap();
    assert!(written.contains("summarize"), "{written}");
    assert!(written.contains("lookup"), "{written}");

    let transcript =
        std::fs::read_to_string(env.path("out").join(r["transcript"].as_str().unwrap())).unwrap();
    assert!(transcript.contains("mcp__self__skills"), "{transcript}");
    assert!(transcript.contains("summarize"), "{transcript}");

    #[cfg(target_os = "linux")]
    assert_eq!(
        servers_in(&env.work),
        Vec::<String>::new(),
        "{}",
        show(&out)
    );
}

#[test]
fn a_failing_mcp_call_is_an_error_text_for_the_model_not_a_failed_job() {
    let env = env();
    let broken = LOOKUP
        .replace("mcp:self/skills", "mcp:self/no_such_tool")
        .replace("name: lookup", "name: broken");
    env.project_skill("broken.yaml", &broken);
    let api = FakeApi::start(|req: &Recorded| match req.tool_results().first() {
        None => Reply::tool_calls(vec![("mcp__self__no_such_tool", json!({}))]),
        Some(result) => {
            assert!(result.content.starts_with("error:"), "{}", result.content);
            assert!(result.content.contains("no tool"), "{}", result.content);
            Reply::tool_calls(vec![(
                "file_write",
                json!({"path": "skills.json", "content": {"error": "the tool was missing"}}),
            )])
        }
    });
    let out = run_skill(&env, &api, "broken", &["docs/a.txt"]);
    assert_exit(&out, Exit::Success);
    #[cfg(target_os = "linux")]
    assert_eq!(servers_in(&env.work), Vec::<String>::new());
}

#[test]
fn an_unknown_server_is_a_usage_error_naming_it() {
    let env = env();
    env.project_skill(
        "lookup.yaml",
        &LOOKUP.replace("mcp:self/skills", "mcp:elsewhere/skills"),
    );
    let api = FakeApi::always(Reply::text("never asked"));
    let out = run_skill(&env, &api, "lookup", &["docs/a.txt"]);
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("`elsewhere`"), "{}", show(&out));
    assert!(stderr(&out).contains("(defined: self)"), "{}", show(&out));
    assert_eq!(api.chat_requests().len(), 0);
    // `skills validate` says the same before any run.
    let out = env.zhi().args(["skills", "validate"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("`elsewhere`"), "{}", show(&out));
}

#[test]
fn only_agent_skills_may_name_mcp_tools() {
    let env = env();
    env.project_skill(
        "pull.yaml",
        "name: pull\ndescription: d\nsystem_prompt: Extract.\ntools: [\"mcp:self/skills\"]\n\
         output:\n  schema: {type: object, properties: {title: {type: string}}}\n",
    );
    let api = FakeApi::always(Reply::text("never asked"));
    let out = run_skill(&env, &api, "pull", &["docs/a.txt"]);
    assert_exit(&out, Exit::Usage);
    let err = stderr(&out);
    assert!(err.contains("only agent skills call MCP tools"), "{err}");
    assert!(err.contains("mcp:self/skills"), "{err}");
    assert_eq!(api.chat_requests().len(), 0);

    // A tool named without its server is refused when the skill loads.
    env.project_skill(
        "odd.yaml",
        &LOOKUP
            .replace("mcp:self/skills", "mcp:skills")
            .replace("name: lookup", "name: odd"),
    );
    let out = env.zhi().args(["skills", "validate"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("mcp:SERVER/TOOL"), "{}", show(&out));
}

/// A child killed when dropped, whatever the test did.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `zhi mcp --listen` on a free port with `token`: the child and its URL.
fn listening(env: &TestEnv, token: &str) -> (Killed, String) {
    use std::io::BufRead;
    let mut child = env
        .zhi_process()
        .args(["mcp", "--listen", "127.0.0.1:0"])
        .env("ZHI_MCP_TOKEN", token)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split("listening on ")
        .nth(1)
        .unwrap_or_else(|| panic!("{line:?}"))
        .trim()
        .to_string();
    (Killed(child), url)
}

#[test]
fn an_agent_skill_calls_a_tool_of_a_server_at_a_url_with_its_token() {
    const TOKEN: &str = "0d9f8e7c6b5a49382716a5b4c3d2e1f0";
    let env = TestEnv::new();
    let (_server, url) = listening(&env, TOKEN);
    env.write(
        "zhi.yaml",
        format!("{FAST}mcp:\n  remote:\n    url: {url}\n    bearer_token_env: REMOTE_TOKEN\n"),
    );
    env.write("docs/a.txt", "A note about skills.\n");
    env.project_skill(
        "lookup.yaml",
        &LOOKUP.replace("mcp:self/skills", "mcp:remote/skills"),
    );
    let api = FakeApi::start(|req: &Recorded| match req.tool_results().first() {
        None => Reply::tool_calls(vec![("mcp__remote__skills", json!({}))]),
        Some(result) if result.content.starts_with("error:") => Reply::tool_calls(vec![(
            "file_write",
            json!({"path": "skills.json", "content": {"failed": result.content}}),
        )]),
        Some(result) => Reply::tool_calls(vec![(
            "file_write",
            json!({"path": "skills.json", "content": result.content}),
        )]),
    });
    let run = |token: &str| {
        let base = api.base_url();
        env.zhi()
            .args(["--no-progress", "run", "lookup", "docs/a.txt", "-o", "out"])
            .args(["--base-url", &base, "--force"])
            .env("REMOTE_TOKEN", token)
            .output()
            .unwrap()
    };
    let out = run(TOKEN);
    assert_exit(&out, Exit::Success);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["status"], "succeeded", "{r}");
    let dir = env.path("out").join(r["output_dir"].as_str().unwrap());
    let written = std::fs::read_to_string(dir.join("skills.json")).unwrap();
    assert!(written.contains("summarize"), "{written}");
    let transcript =
        std::fs::read_to_string(env.path("out").join(r["transcript"].as_str().unwrap())).unwrap();
    assert!(transcript.contains("mcp__remote__skills"), "{transcript}");

    // A wrong token: the call is an error text for the model, and the job goes on.
    let out = run("not-the-token-at-all-0000000000");
    assert_exit(&out, Exit::Success);
    let r = record(&env, "docs/a.txt");
    let dir = env.path("out").join(r["output_dir"].as_str().unwrap());
    let written = std::fs::read_to_string(dir.join("skills.json")).unwrap();
    assert!(written.contains("\"failed\""), "{written}");
    assert!(!written.contains("summarize"), "{written}");
    // The token is in no file the runs wrote.
    for f in crate::support::testenv::files_under(&env.path("out")) {
        let bytes = std::fs::read(&f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(TOKEN), "{}", f.display());
    }
}

#[test]
fn a_url_server_is_held_to_http_and_its_token_to_https_or_this_machine() {
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        "mcp:\n  far:\n    url: http://tools.example.com/mcp\n    bearer_token_env: T\n",
    );
    let out = env.zhi().args(["config", "show"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("mcp.far.url"), "{}", show(&out));
    assert!(stderr(&out).contains("use https"), "{}", show(&out));
}
