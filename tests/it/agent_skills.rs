//! Agent Skills (docs/skills.md#agent-skills-skillmd): a folder with `SKILL.md` (front matter and
//! Markdown instructions), optional `references/`, `assets/` and `scripts/`, run over documents
//! like a YAML skill.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, records_by_input, stderr, stdout};
use crate::support::testenv::{assert_exit, show};
use serde_json::{Value, json};
use zhi::exit::Exit;

const FAST: &str = "retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n";

fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", FAST);
    env.write(
        "docs/a.txt",
        "The board approved the budget of 4.2 million.\n",
    );
    env.write(
        "docs/b.txt",
        "The new plant in Suzhou opens in May with 200 jobs.\n",
    );
    env
}

fn run(env: &TestEnv, api: &FakeApi, skill: &str, inputs: &str) -> std::process::Output {
    env.zhi()
        .args([
            "--no-progress",
            "run",
            skill,
            inputs,
            "-o",
            "out",
            "--base-url",
        ])
        .arg(api.base_url())
        .output()
        .unwrap()
}

const BRIEF: &str = "---\nname: brief\ndescription: A two-line brief of a document\nlicense: MIT\n\
metadata:\n  author: someone\n---\n\n# Brief\n\nWrite a two-line brief of the document: what happened, and the one figure that matters.\n";

fn system_of(r: &Recorded) -> String {
    r.messages()[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn an_instructions_only_skill_md_is_one_direct_request_per_document_and_cached() {
    let env = env();
    env.write(".zhi/skills/brief/SKILL.md", BRIEF);
    let api = FakeApi::start(|r: &Recorded| {
        let user = r.messages()[1]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let which = if user.contains("budget") {
            "budget"
        } else {
            "plant"
        };
        Reply::text(format!(
            "# Brief\n\nThe {which} news, in two lines: approved and on time."
        ))
    });
    let out = run(&env, &api, "brief", "docs");
    assert_exit(&out, Exit::Success);
    // The format's own fields (license, metadata) are known: no warning.
    assert!(!stderr(&out).contains("license"), "{}", show(&out));
    assert!(!stderr(&out).contains("unknown"), "{}", show(&out));
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 2, "one request a document");
    for r in &reqs {
        assert!(
            r.tools_offered().is_empty(),
            "no tools: {:?}",
            r.tools_offered()
        );
        assert!(
            system_of(r).contains("Write a two-line brief"),
            "{}",
            system_of(r)
        );
    }
    let records = records_by_input(&env.path("out"));
    for input in ["docs/a.txt", "docs/b.txt"] {
        let r = &records[input];
        assert_eq!(r["status"], "succeeded", "{r}");
        assert_eq!(r["requests"], 1, "{r}");
        let text =
            std::fs::read_to_string(env.path(&format!("out/brief/{input}/response.md"))).unwrap();
        assert!(text.starts_with("# Brief"), "{text}");
    }
    // A rerun is cached, as for YAML skills.
    let again = run(&env, &api, "brief", "docs");
    assert_exit(&again, Exit::Success);
    assert_eq!(api.chat_requests().len(), 2);
    assert!(
        records_by_input(&env.path("out"))
            .values()
            .all(|r| r["status"] == "cached")
    );
}

#[test]
fn small_references_go_with_the_instructions_and_a_changed_reference_reruns_the_jobs() {
    let env = env();
    env.write(
        ".zhi/skills/house-style/SKILL.md",
        "---\nname: house-style\ndescription: A brief in the house style\n---\n\n\
         Write a brief of the document in the house style described in references/style.md.\n",
    );
    env.write(
        ".zhi/skills/house-style/references/style.md",
        "House style: start with the figure, then the verb.\n",
    );
    env.write(".zhi/skills/house-style/assets/logo.txt", "ZHI\n");
    let api = FakeApi::start(|r: &Recorded| {
        let system = system_of(r);
        let style = system
            .lines()
            .find(|l| l.starts_with("House style"))
            .unwrap_or("no style")
            .to_string();
        Reply::text(format!("# Brief\n\nStyle used: {style}"))
    });
    let out = run(&env, &api, "house-style", "docs/a.txt");
    assert_exit(&out, Exit::Success);
    // Small text resources go with the instructions: still one direct request.
    let first = api.chat_requests();
    assert_eq!(first.len(), 1);
    assert!(first[0].tools_offered().is_empty());
    let system = system_of(&first[0]);
    assert!(
        system.contains("--- references/style.md ---")
            && system.contains("--- assets/logo.txt ---"),
        "{system}"
    );
    let text = std::fs::read_to_string(env.path("out/house-style/docs/a.txt/response.md")).unwrap();
    assert!(text.contains("start with the figure"), "{text}");

    // Unchanged: cached. A changed reference: the job runs again.
    let same = run(&env, &api, "house-style", "docs/a.txt");
    assert_exit(&same, Exit::Success);
    assert_eq!(api.chat_requests().len(), 1);
    env.write(
        ".zhi/skills/house-style/references/style.md",
        "House style: start with the verb, then the figure.\n",
    );
    let changed = run(&env, &api, "house-style", "docs/a.txt");
    assert_exit(&changed, Exit::Success);
    assert_eq!(api.chat_requests().len(), 2, "the job ran again");
    let text = std::fs::read_to_string(env.path("out/house-style/docs/a.txt/response.md")).unwrap();
    assert!(text.contains("start with the verb"), "{text}");
}

#[test]
fn large_references_are_read_with_file_read_in_the_agent_loop() {
    let env = env();
    env.write(
        ".zhi/skills/glossary/SKILL.md",
        "---\nname: glossary\ndescription: Terms of a document, from the glossary\n---\n\n\
         List the document's terms with their meanings from references/glossary.md.\n",
    );
    let glossary: String = (0..600)
        .map(|i| format!("- term{i}: the meaning of term number {i}\n"))
        .collect();
    env.write(".zhi/skills/glossary/references/glossary.md", &glossary);
    let api = FakeApi::start(|r: &Recorded| {
        if r.has_tool_result() {
            let result = r
                .messages()
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                .collect::<String>();
            let line = result
                .lines()
                .find(|l| l.contains("term42:"))
                .unwrap_or("none");
            return Reply::text(format!("# Terms\n\n{line}"));
        }
        Reply::tool_calls(vec![(
            "file_read",
            json!({"path": "references/glossary.md"}),
        )])
    });
    let out = run(&env, &api, "glossary", "docs/a.txt");
    assert_exit(&out, Exit::Success);
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].tools_offered().contains(&"file_read".to_string()));
    assert!(system_of(&reqs[0]).contains("- references/glossary.md"));
    let text = std::fs::read_to_string(env.path("out/glossary/docs/a.txt/response.md")).unwrap();
    assert!(text.contains("the meaning of term number 42"), "{text}");
    let r = &records_by_input(&env.path("out"))["docs/a.txt"];
    assert_eq!(r["refused_tool_calls"], 0, "{r}");
}

#[test]
fn a_skill_whose_instructions_need_its_scripts_is_reported_by_validate() {
    let env = env();
    env.write(
        ".zhi/skills/convert/SKILL.md",
        "---\nname: convert\ndescription: Convert a document\n---\n\n\
         Run scripts/convert.py on the document, then summarise what it printed.\n",
    );
    env.write(".zhi/skills/convert/scripts/convert.py", "print('hello')\n");
    let out = env.zhi().args(["skills", "validate"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    let err = stderr(&out);
    assert!(
        err.contains("convert") && err.contains("scripts/convert.py") && err.contains("shell"),
        "{err}"
    );
    // The folder named directly, too.
    let out = env
        .zhi()
        .args(["skills", "validate", ".zhi/skills/convert"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    // `skills show` lists the script as never run.
    let out = env
        .zhi()
        .args(["skills", "show", "convert"])
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains("scripts/convert.py (never run)"),
        "{}",
        show(&out)
    );
}

#[test]
fn a_malformed_front_matter_is_skipped_with_a_warning_and_fails_validate() {
    let env = env();
    env.write(
        ".zhi/skills/broken/SKILL.md",
        "---\nname: [broken\ndescription: oops\n---\n\nInstructions.\n",
    );
    env.write(
        ".zhi/skills/nofront/SKILL.md",
        "# No front matter\n\nJust instructions.\n",
    );
    let list = env.zhi().args(["skills", "list"]).output().unwrap();
    assert_exit(&list, Exit::Success);
    let err = stderr(&list);
    assert!(err.contains("broken/SKILL.md"), "{err}");
    assert!(
        err.contains("nofront/SKILL.md") && err.contains("front matter"),
        "{err}"
    );
    assert!(!stdout(&list).contains("broken"), "{}", show(&list));
    let validate = env.zhi().args(["skills", "validate"]).output().unwrap();
    assert_exit(&validate, Exit::Usage);
    // Builtins still run.
    let api = FakeApi::always(Reply::text("# Summary\n\nThe budget was approved."));
    let out = run(&env, &api, "summarize", "docs/a.txt");
    assert_exit(&out, Exit::Success);
}

#[test]
fn skills_new_writes_an_agent_skill_folder_that_validates() {
    let env = env();
    let out = env
        .zhi()
        .args(["skills", "new", "digest-md", "--format", "skill-md"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert!(env.path(".zhi/skills/digest-md/SKILL.md").is_file());
    // What follows the front matter is the system prompt: instructions only, no notes, no
    // heading; the notes are comments in the front matter, and agree with the defaults.
    let text = std::fs::read_to_string(env.path(".zhi/skills/digest-md/SKILL.md")).unwrap();
    let (front, body) = text[3..].split_once("\n---\n").unwrap();
    assert!(
        !body.contains("<!--") && !body.contains("# digest-md"),
        "{body}"
    );
    assert!(
        body.trim_start().starts_with("You process one document"),
        "{body}"
    );
    assert!(
        front.contains("# max_turns: 15 ") && !front.contains("max_turns: 5"),
        "{front}"
    );
    let validate = env.zhi().args(["skills", "validate"]).output().unwrap();
    assert_exit(&validate, Exit::Success);
    let list = env
        .zhi()
        .args(["skills", "list", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&list)).unwrap_or(Value::Null);
    assert!(v.to_string().contains("digest-md"), "{}", show(&list));
    // Never overwritten.
    let again = env
        .zhi()
        .args(["skills", "new", "digest-md", "--format", "skill-md"])
        .output()
        .unwrap();
    assert_exit(&again, Exit::Usage);
}

/// The Agent Skills format's fields (`license`, `compatibility`, `metadata`, `allowed-tools`)
/// never warn; a field no format defines warns when its skill is used, shown, or validated —
/// once — and never on a run of another skill or on `skills list`.
#[test]
fn a_skills_warning_comes_when_it_is_used_or_validated_and_once() {
    let env = env();
    env.write(
        ".zhi/skills/known/SKILL.md",
        "---\nname: known\ndescription: Fields of the format\nlicense: MIT\n\
         compatibility: Needs nothing\nmetadata:\n  author: someone\n  version: \"1.0\"\n\
         allowed-tools: Read\n---\n\nWrite a two-line brief of the document.\n",
    );
    env.write(
        ".zhi/skills/odd/SKILL.md",
        "---\nname: odd\ndescription: A field no format has\nflavour: spicy\n---\n\n\
         Write a two-line brief of the document.\n",
    );
    let api = FakeApi::always(Reply::text("# Brief\n\nThe budget was approved, on time."));
    let warned = |out: &std::process::Output| stderr(out).matches("`flavour`").count();

    // Another skill's run, the list: nothing about `odd`.
    let out = run(&env, &api, "summarize", "docs/a.txt");
    assert_exit(&out, Exit::Success);
    assert_eq!(warned(&out), 0, "{}", show(&out));
    let list = env.zhi().args(["skills", "list"]).output().unwrap();
    assert_eq!(warned(&list), 0, "{}", show(&list));
    // Its own run, `skills show` and `skills validate`: once each.
    let out = run(&env, &api, "odd", "docs");
    assert_exit(&out, Exit::Success);
    assert_eq!(warned(&out), 1, "{}", show(&out));
    for args in [
        &["skills", "show", "odd"][..],
        &["skills", "validate"],
        &["skills", "validate", ".zhi/skills/odd"],
    ] {
        let out = env.zhi().args(args).output().unwrap();
        assert_eq!(warned(&out), 1, "{args:?}: {}", show(&out));
    }
    // The format's fields: never a warning, and the skill is valid.
    let out = run(&env, &api, "known", "docs");
    assert_exit(&out, Exit::Success);
    assert!(!stderr(&out).contains("warning"), "{}", show(&out));
    let out = env
        .zhi()
        .args(["skills", "validate", ".zhi/skills/known"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert!(stderr(&out).trim().is_empty(), "{}", show(&out));
}

/// A reference swapped for a link to a file outside the skill while the run goes on (after the
/// skill was loaded, before its job reads it): the link is never followed, and the file it
/// points to never reaches the model.
#[test]
fn a_reference_swapped_for_a_link_mid_run_is_never_followed() {
    const SECRET: &str = "root-secret-line-6f1c2a";
    let env = env();
    env.write(
        ".zhi/skills/glossary/SKILL.md",
        "---\nname: glossary\ndescription: Terms of a document, from the glossary\n---\n\n\
         List the document's terms with their meanings from references/glossary.md.\n",
    );
    let glossary: String = (0..600)
        .map(|i| format!("- term{i}: the meaning of term number {i}\n"))
        .collect();
    let reference = env.write(".zhi/skills/glossary/references/glossary.md", &glossary);
    let secret = env.write("outside/passwd", format!("{SECRET}\n"));
    let api = FakeApi::start(move |r: &Recorded| {
        if r.has_tool_result() {
            return Reply::text("# Terms\n\nNone could be read.");
        }
        // The swap, while the job runs: the reference becomes a link to the secret.
        if std::fs::symlink_metadata(&reference).is_ok_and(|m| m.file_type().is_file()) {
            std::fs::remove_file(&reference).unwrap();
            std::os::unix::fs::symlink(&secret, &reference).unwrap();
        }
        Reply::tool_calls(vec![(
            "file_read",
            json!({"path": "references/glossary.md"}),
        )])
    });
    let _ = run(&env, &api, "glossary", "docs/a.txt");
    let reqs = api.chat_requests();
    assert!(reqs.len() >= 2, "the model asked to read it");
    for r in &reqs {
        assert!(
            !r.body_text.contains(SECRET),
            "the link was followed: {}",
            r.body_text
        );
    }
    let refused = reqs[1].tool_results();
    assert!(
        refused[0]
            .content
            .contains("no longer the file the skill was loaded with"),
        "{refused:?}"
    );
}
