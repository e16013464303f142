//! `zhi skills list|show|validate|new` and every validation error of the skill system.

use crate::support::testenv::{TestEnv, assert_exit, assert_exit_for, skill_yaml, stderr, stdout};

use serde_json::Value;
use zhi::exit::Exit;

/// docs/skills.md#builtin-skills: the builtin skills' tools, turn limits and arguments (`*` =
/// required).
const BUILTINS: &[(&str, &str, u64, &str)] = &[
    ("summarize", "file_read,file_write", 5, "file*"),
    ("translate", "file_read,file_write", 5, "file*,to"),
    ("extract-text", "ocr,file_write,file_list", 5, "file*"),
    // Extraction skills: one request a document against a schema (docs/extract.md).
    ("extract-table", "", 15, "file*"),
    ("extract", "", 15, "file*,schema*"),
    ("analyze", "file_read,ocr,file_write,file_list", 8, "file*"),
    ("proofread", "file_read,ocr,file_write", 5, "file*"),
    (
        "reformat",
        "file_read,ocr,file_write,file_list",
        8,
        "file*,format",
    ),
    ("meeting-notes", "file_read,ocr,file_write", 5, "file*"),
    (
        "compare",
        "file_read,ocr,file_write,file_list",
        8,
        "file*,file2*",
    ),
    // Workflows: fixed steps, no tools of their own (docs/skills.md#workflows).
    ("contract-review", "", 15, "file*,file2"),
    ("daily-digest", "", 15, "dir*"),
    ("invoice-to-excel", "", 15, "file*"),
    ("meeting-followup", "", 15, "file*,translate_to"),
    ("report-polish", "", 15, "file*,format"),
    ("translate-proofread", "", 15, "file*,to"),
];

fn list_json(env: &TestEnv) -> Vec<Value> {
    let out = env
        .zhi()
        .args(["skills", "list", "--json"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn list_json_is_exactly_the_builtins_of_the_spec() {
    let env = TestEnv::new();
    let skills = list_json(&env);
    assert_eq!(skills.len(), BUILTINS.len());
    for (name, tools, turns, args) in BUILTINS {
        let s = skills
            .iter()
            .find(|s| s["name"] == *name)
            .unwrap_or_else(|| panic!("builtin {name} missing"));
        let got_tools: Vec<&str> = s["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        let mut want_tools: Vec<&str> = tools.split(',').filter(|t| !t.is_empty()).collect();
        let mut got_sorted = got_tools.clone();
        want_tools.sort_unstable();
        got_sorted.sort_unstable();
        assert_eq!(got_sorted, want_tools, "{name} tools");
        assert_eq!(s["max_turns"], *turns, "{name} max_turns");
        let mode = if ["extract", "extract-table", "invoice-to-excel"].contains(name) {
            "extract"
        } else if tools.is_empty() {
            "workflow"
        } else {
            "direct"
        };
        assert_eq!(s["mode"], mode, "{name} mode");
        assert_eq!(s["model"], "glm-4-flash", "{name} model");
        assert_eq!(s["source"], "builtin");
        assert!(!s["description"].as_str().unwrap().is_empty());
        let got_args: Vec<String> = s["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                format!(
                    "{}{}",
                    a["name"].as_str().unwrap(),
                    if a["required"] == true { "*" } else { "" }
                )
            })
            .collect();
        assert_eq!(got_args.join(","), *args, "{name} args");
    }
    let arg = |skill: &str, arg: &str| -> Value {
        skills.iter().find(|s| s["name"] == skill).unwrap()["args"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == arg)
            .unwrap()
            .clone()
    };
    assert_eq!(arg("translate", "to")["default"], "chinese");
    assert_eq!(arg("translate-proofread", "to")["default"], "chinese");
    assert_eq!(arg("reformat", "format")["default"], "markdown");
    assert_eq!(arg("daily-digest", "dir")["type"], "directory");
    assert_eq!(arg("extract", "schema")["type"], "file");
    assert_eq!(arg("compare", "file2")["type"], "file");
}

#[test]
fn default_model_applies_to_builtins() {
    let env = TestEnv::new();
    let out = env
        .zhi()
        .args(["skills", "list", "--json"])
        .env("ZHI_DEFAULT_MODEL", "glm-4-air")
        .output()
        .unwrap();
    let skills: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        skills
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["model"] == "glm-4-air")
    );
}

#[test]
fn list_table() {
    let env = TestEnv::new();
    let out = env.zhi().args(["skills", "list"]).output().unwrap();
    assert_exit(&out, Exit::Success);
    let text = stdout(&out);
    assert!(text.starts_with("NAME"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn show_draws_a_workflows_steps() {
    let env = TestEnv::new();
    let out = env
        .zhi()
        .args(["skills", "show", "contract-review"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let text = stdout(&out);
    let steps: String = text
        .lines()
        .skip_while(|l| !l.starts_with("steps:"))
        .take_while(|l| !l.starts_with("system prompt"))
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(steps, @r"
    steps:
      analysis    analyze (direct)  (optional)
      comparison  compare (direct)  when file2  (optional)
      review      one request -> review.md  after analysis, comparison
    ");

    let out = env
        .zhi()
        .args(["skills", "show", "contract-review", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let nested: Vec<&str> = v["nested"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(nested, ["analyze", "compare"]);
    assert_eq!(v["mode"], "workflow");
    assert_eq!(v["steps"].as_array().unwrap().len(), 3);
}

#[test]
fn show_unknown_skill_is_a_usage_error() {
    let env = TestEnv::new();
    let out = env.zhi().args(["skills", "show", "nope"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("unknown skill `nope`"));
}

#[test]
fn validate_all_builtins_is_clean() {
    let env = TestEnv::new();
    let out = env.zhi().args(["skills", "validate"]).output().unwrap();
    assert_exit(&out, Exit::Success);
    assert!(stdout(&out).contains("16 skill(s) valid"));
}

/// Validate the given project skill files; return how zhi ended and its stderr (temp paths
/// filtered).
fn validate_files(env: &TestEnv, files: &[(&str, &str)]) -> (std::process::Output, String) {
    let mut args = vec!["skills".to_string(), "validate".to_string()];
    for (name, yaml) in files {
        env.write(name, yaml);
        args.push(name.to_string());
    }
    let out = env.zhi().args(&args).output().unwrap();
    let err = env.filter(&stderr(&out));
    (out, err)
}

#[test]
fn cycle_a_b_a_names_the_chain() {
    let env = TestEnv::new();
    let (out, err) = validate_files(
        &env,
        &[
            ("a.yaml", &skill_yaml("a", "file_read, b")),
            ("b.yaml", &skill_yaml("b", "a")),
        ],
    );
    assert_exit(&out, Exit::Usage);
    assert!(err.contains("skill cycle: a -> b -> a"), "{err}");
}

#[test]
fn self_cycle() {
    let env = TestEnv::new();
    let (out, err) = validate_files(&env, &[("a.yaml", &skill_yaml("a", "a"))]);
    assert_exit(&out, Exit::Usage);
    assert!(err.contains("skill cycle: a -> a"), "{err}");
}

#[test]
fn nesting_deeper_than_three() {
    let env = TestEnv::new();
    let chain = [
        ("a", "b"),
        ("b", "c"),
        ("c", "d"),
        ("d", "e"),
        ("e", "file_read"),
    ];
    for (n, t) in chain {
        env.project_skill(&format!("{n}.yaml"), &skill_yaml(n, t));
    }
    let out = env.zhi().args(["skills", "validate"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    let err = stderr(&out);
    assert!(
        err.contains("skills nest deeper than 3: a -> b -> c -> d -> e"),
        "{err}"
    );
    // Three levels are fine.
    let env = TestEnv::new();
    for (n, t) in [("a", "b"), ("b", "c"), ("c", "d"), ("d", "file_read")] {
        env.project_skill(&format!("{n}.yaml"), &skill_yaml(n, t));
    }
    let out = env.zhi().args(["skills", "validate"]).output().unwrap();
    assert_exit(&out, Exit::Success);
}

#[test]
fn unknown_tool() {
    let env = TestEnv::new();
    let (out, err) = validate_files(&env, &[("a.yaml", &skill_yaml("a", "file_read, shell"))]);
    assert_exit(&out, Exit::Usage);
    assert!(err.contains("a.yaml"), "{err}");
    assert!(err.contains("unknown tool or skill `shell`"), "{err}");
}

#[test]
fn bad_name() {
    let env = TestEnv::new();
    let (out, err) = validate_files(&env, &[("bad.yaml", &skill_yaml("-bad", "file_read"))]);
    assert_exit(&out, Exit::Usage);
    assert!(
        err.contains("bad.yaml: invalid name `-bad`: must start with a letter or digit"),
        "{err}"
    );
    let (out, err) = validate_files(
        &env,
        &[("sp.yaml", &skill_yaml("'has space'", "file_read"))],
    );
    assert_exit(&out, Exit::Usage);
    assert!(err.contains("invalid name `has space`"), "{err}");
}

#[test]
fn max_turns_out_of_range() {
    for (turns, clamped) in [(0, 1), (99, 50)] {
        let env = TestEnv::new();
        let yaml =
            skill_yaml("a", "file_read").replace("max_turns: 3", &format!("max_turns: {turns}"));
        let (out, err) = validate_files(&env, &[("a.yaml", &yaml)]);
        assert_exit_for(&out, Exit::Usage, format!("max_turns {turns}"));
        assert!(
            err.contains(&format!(
                "max_turns {turns} is outside 1..=50; clamped to {clamped}"
            )),
            "{err}"
        );
        // A run tolerates it with the clamped value: `skills show` of the project skill works.
        env.project_skill("a.yaml", &yaml);
        let out = env
            .zhi()
            .args(["skills", "show", "a", "--json"])
            .output()
            .unwrap();
        assert_exit(&out, Exit::Success);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["max_turns"], clamped);
        assert!(stderr(&out).contains("clamped"), "warned");
    }
}

#[test]
fn empty_binary_and_malformed_files() {
    let env = TestEnv::new();
    let (out, err) = validate_files(&env, &[("empty.yaml", "")]);
    assert_exit(&out, Exit::Usage);
    assert!(err.contains("empty.yaml: empty file"), "{err}");

    let (out, err) = validate_files(&env, &[("bin.yaml", "\u{0}\u{1}\u{2}garbage\u{0}")]);
    assert_exit(&out, Exit::Usage);
    assert!(err.contains("bin.yaml: binary file"), "{err}");

    let (out, err) = validate_files(
        &env,
        &[(
            "syntax.yaml",
            "name: a\ndescription: d\nsystem_prompt: [unclosed\ntools: [file_read]\n",
        )],
    );
    assert_exit(&out, Exit::Usage);
    assert!(err.contains("syntax.yaml: YAML syntax error"), "{err}");
    assert!(err.contains("line 4"), "names the line: {err}");

    let (out, err) = validate_files(
        &env,
        &[(
            "missing.yaml",
            "name: a\ndescription: d\ntools: [file_read]\n",
        )],
    );
    assert_exit(&out, Exit::Usage);
    assert!(
        err.contains("missing required field `system_prompt`"),
        "{err}"
    );
}

#[test]
fn unknown_fields_warn_but_validate() {
    let env = TestEnv::new();
    let yaml = format!("{}temperature: 0.2\n", skill_yaml("a", "file_read"));
    let (out, err) = validate_files(&env, &[("a.yaml", &yaml)]);
    assert_exit(&out, Exit::Success);
    assert!(err.contains("unknown field `temperature` ignored"), "{err}");
}

#[test]
fn user_skill_overrides_builtin_and_project_overrides_user() {
    let env = TestEnv::new();
    env.user_skill(
        "summarize.yaml",
        &skill_yaml("summarize", "file_read, file_write"),
    );
    let skills = list_json(&env);
    assert_eq!(skills.len(), 16);
    let s = skills.iter().find(|s| s["name"] == "summarize").unwrap();
    assert_eq!(s["source"], "user");
    assert_eq!(s["description"], "test skill summarize");
    assert_eq!(s["max_turns"], 3);

    env.project_skill(
        "summarize.yaml",
        &skill_yaml("summarize", "file_read").replace("max_turns: 3", "max_turns: 2"),
    );
    let skills = list_json(&env);
    let s = skills.iter().find(|s| s["name"] == "summarize").unwrap();
    assert_eq!(s["source"], "user");
    assert!(
        s["path"]
            .as_str()
            .unwrap()
            .ends_with(".zhi/skills/summarize.yaml"),
        "{s}"
    );
    assert_eq!(s["max_turns"], 2);
}

#[test]
fn broken_user_skill_beside_a_good_one() {
    let env = TestEnv::new();
    env.user_skill("good.yaml", &skill_yaml("good", "file_read"));
    env.user_skill("broken.yaml", "name: broken\ndescription: [oops\n");
    let out = env
        .zhi()
        .args(["skills", "list", "--json"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let skills: Vec<Value> = serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(skills.len(), 17);
    assert!(
        skills
            .iter()
            .any(|s| s["name"] == "good" && s["source"] == "user")
    );
    let err = env.filter(&stderr(&out));
    assert!(
        err.contains("skipped skill file [HOME]/.config/zhi/skills/broken.yaml: YAML syntax error"),
        "{err}"
    );

    let out = env.zhi().args(["skills", "validate"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("broken.yaml"));
}

#[test]
fn new_writes_a_valid_template_and_never_overwrites() {
    let env = TestEnv::new();
    let out = env
        .zhi()
        .args(["skills", "new", "my-skill"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert_eq!(stdout(&out).trim(), "created .zhi/skills/my-skill.yaml");
    let path = env.path(".zhi/skills/my-skill.yaml");
    let before = std::fs::read(&path).unwrap();

    let out = env
        .zhi()
        .args(["skills", "validate", ".zhi/skills/my-skill.yaml"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);

    std::fs::write(&path, [before.as_slice(), b"# edited\n"].concat()).unwrap();
    let out = env
        .zhi()
        .args(["skills", "new", "my-skill"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("already exists; not overwritten"));
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .ends_with("# edited\n")
    );

    let out = env
        .zhi()
        .args(["skills", "new", "bad name"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
}

/// Not on a terminal and with no `COLUMNS` (a pipe, `| grep`), `skills list` cuts nothing:
/// every description whole, on its skill's line, with every column.
#[test]
fn list_into_a_pipe_cuts_no_description() {
    let env = TestEnv::new();
    let out = env
        .zhi()
        .env_remove("COLUMNS")
        .args(["skills", "list"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let text = stdout(&out);
    assert!(!text.contains('…'), "{text}");
    assert!(text.lines().next().unwrap().contains("TOOLS"), "{text}");
    for skill in list_json(&env) {
        let (name, description) = (
            skill["name"].as_str().unwrap(),
            skill["description"].as_str().unwrap(),
        );
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no line for {name}: {text}"));
        assert!(line.ends_with(description.trim()), "{line}\n{description}");
    }
    // On a terminal of 100 columns the longest are cut, as before.
    let narrow = env.zhi().args(["skills", "list"]).output().unwrap();
    assert!(stdout(&narrow).contains('…'), "{}", stdout(&narrow));
}
