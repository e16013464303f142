//! What a command-line tool is expected to have: shell completions, a man page, a suggestion
//! for a mistyped subcommand or skill, tables that fit the terminal, and a release build a
//! user would install.

use crate::support::testenv::{TestEnv, assert_exit, assert_exit_for, skill_yaml, stderr, stdout};

use zhi::exit::Exit;

#[test]
fn completions_for_every_shell_name_the_subcommands() {
    let env = TestEnv::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = env.zhi().args(["completions", shell]).output().unwrap();
        assert_exit_for(&out, Exit::Success, shell);
        let script = stdout(&out);
        for word in ["run", "plan", "skills", "manifest", "base-url", "jobs"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    let out = env.zhi().args(["completions", "tcsh"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("bash"), "{}", stderr(&out));
}

#[test]
fn the_man_page_is_roff_naming_every_command() {
    let env = TestEnv::new();
    let out = env.zhi().arg("man").output().unwrap();
    assert_exit(&out, Exit::Success);
    let page = stdout(&out);
    assert!(page.lines().any(|l| l.starts_with(".TH zhi 1")), "{page}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "no {section}");
    }
    for command in ["run", "plan", "skills", "manifest", "batch", "completions"] {
        // Roff escapes a hyphen as `\-`.
        assert!(
            page.contains(&format!("zhi\\-{command}(1)")),
            "no zhi-{command}(1)"
        );
    }

    // What cron and CI need: the exit codes (75: try later) and the key's variable; the
    // examples under their own name.
    for section in [
        ".SH \"EXIT STATUS\"",
        ".SH ENVIRONMENT",
        "ZHI_API_KEY",
        "\\fB75\\fR",
    ] {
        assert!(page.contains(section), "no {section}");
    }
    assert!(!page.contains(".SH EXTRA"), "{page}");

    let out = env.zhi().args(["man", "--dir", "man1"]).output().unwrap();
    assert_exit(&out, Exit::Success);
    // The earlier spelling still works.
    let out = env.zhi().args(["man", "--out", "man2"]).output().unwrap();
    assert_exit(&out, Exit::Success);
    assert!(env.path("man2/zhi.1").exists());
    for file in [
        "zhi.1",
        "zhi-run.1",
        "zhi-skills-list.1",
        "zhi-manifest-merge.1",
    ] {
        let page = std::fs::read_to_string(env.path("man1").join(file)).unwrap();
        assert!(page.contains(".SH NAME"), "{file}");
    }
    let run = std::fs::read_to_string(env.path("man1/zhi-run.1")).unwrap();
    assert!(
        run.contains("\\-\\-base\\-url"),
        "the run page lists its flags"
    );
    assert!(
        run.contains(".SH EXAMPLES") && !run.contains(".SH EXTRA"),
        "{run}"
    );
}

#[test]
fn a_mistyped_subcommand_gets_a_suggestion() {
    let env = TestEnv::new();
    for (args, near) in [
        (&["rnu"][..], "'run'"),
        (&["mna"][..], "'man'"),
        (&["skills", "shwo"][..], "'show'"),
    ] {
        let out = env.zhi().args(args).output().unwrap();
        assert_exit_for(&out, Exit::Usage, format!("{args:?}"));
        let err = stderr(&out);
        assert!(err.contains("similar subcommand"), "{args:?}: {err}");
        assert!(err.contains(near), "{args:?}: {err}");
    }
}

#[test]
fn a_mistyped_skill_gets_a_suggestion_wherever_it_is_named() {
    let env = TestEnv::new();
    env.write("docs/a.txt", "The board approved the budget.\n");
    env.write(
        "jobs.yaml",
        "jobs:\n  - skill: translte\n    inputs: [docs]\n",
    );
    // A local base URL: no key is needed, and nothing is ever sent to it.
    let url = "--base-url=http://127.0.0.1:9/v1";
    let cases: [(&[&str], &str); 5] = [
        (
            &["run", "summarise", "docs", url],
            "did you mean `summarize`?",
        ),
        (&["plan", "summarise", "docs"], "did you mean `summarize`?"),
        (
            &["skills", "show", "proofraed"],
            "did you mean `proofread`?",
        ),
        (
            &["run", "--jobs", "jobs.yaml", url],
            "did you mean `translate`",
        ),
        (
            &["run", "meeting", "docs", url],
            "`meeting-notes` or `meeting-followup`",
        ),
    ];
    for (args, hint) in cases {
        let out = env.zhi().args(args).output().unwrap();
        let err = stderr(&out);
        assert_exit_for(&out, Exit::Usage, format!("{args:?}"));
        assert!(err.contains(hint), "{args:?}: {err}");
    }
    // Nothing near: no guess.
    let out = env.zhi().args(["plan", "xyz", "docs"]).output().unwrap();
    assert!(!stderr(&out).contains("did you mean"), "{}", stderr(&out));
    // A skill's own `tools` naming a skill that does not exist.
    env.project_skill("mine.yaml", &skill_yaml("mine", "file_read, summarise"));
    let out = env.zhi().args(["skills", "validate"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).contains("unknown tool or skill `summarise`, did you mean `summarize`?"),
        "{}",
        stderr(&out)
    );
}

/// Display columns, CJK counted double.
fn width(line: &str) -> usize {
    line.chars()
        .map(|c| {
            if ('\u{2E80}'..='\u{A4CF}').contains(&c) {
                2
            } else {
                1
            }
        })
        .sum()
}

#[test]
fn tables_fit_the_width() {
    let env = TestEnv::new();
    for columns in ["100", "72"] {
        for args in [&["skills", "list"][..], &["config", "show"][..]] {
            let out = env
                .zhi()
                .args(args)
                .env("COLUMNS", columns)
                .output()
                .unwrap();
            assert_exit(&out, Exit::Success);
            let text = stdout(&out);
            let widest = text.lines().map(width).max().unwrap_or(0);
            let max: usize = columns.parse().unwrap();
            assert!(
                widest <= max,
                "{args:?} at {columns}: {widest} columns\n{text}"
            );
        }
    }
    // The description wraps in its own column, every word kept, in order.
    let out = env
        .zhi()
        .args(["--json", "skills", "list"])
        .output()
        .unwrap();
    let skills: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = env.zhi().args(["skills", "list"]).output().unwrap();
    let text = stdout(&out);
    let column = text.lines().next().unwrap().find("DESCRIPTION").unwrap();
    let mut lines = text.lines().skip_while(|l| !l.starts_with("summarize "));
    let first = lines.next().unwrap();
    // One line a skill: the description is cut after a word, with `…`.
    assert!(lines.next().is_none_or(|l| !l.starts_with(' ')), "{text}");
    let summarize = skills
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "summarize")
        .unwrap();
    let whole = summarize["description"].as_str().unwrap();
    let shown = first[column..].trim();
    match shown.strip_suffix('…') {
        Some(cut) => assert!(
            whole.starts_with(cut) && whole[cut.len()..].starts_with([' ', ',', ';', ':']),
            "{shown:?} is not {whole:?} cut after a word"
        ),
        None => assert_eq!(shown, whole),
    }
}

/// `cargo install` builds the release profile: no debug info in what a user installs (line
/// tables made it 200 MB), while the benches, which are profiled, keep their line tables.
#[test]
fn the_release_profile_is_one_a_user_would_install_and_benches_keep_line_tables() {
    let manifest =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let profile = |name: &str| -> Vec<String> {
        let head = format!("[profile.{name}]");
        let at = manifest.find(&head).unwrap_or_else(|| panic!("no {head}"));
        manifest[at + head.len()..]
            .lines()
            .take_while(|l| !l.starts_with('['))
            .map(|l| l.split('#').next().unwrap().replace(' ', ""))
            .filter(|l| !l.is_empty())
            .collect()
    };
    let release = profile("release");
    assert!(release.contains(&"debug=false".to_string()), "{release:?}");
    assert!(
        release
            .iter()
            .any(|l| l.starts_with("strip=") && l != "strip=\"none\""),
        "{release:?}"
    );
    let bench = profile("bench");
    assert!(
        bench.contains(&"debug=\"line-tables-only\"".to_string()),
        "{bench:?}"
    );
    assert!(bench.contains(&"strip=\"none\"".to_string()), "{bench:?}");
}
