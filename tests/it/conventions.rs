//! What a command-line tool is expected to have: shell completions and a man page.

use crate::testenv::{TestEnv, stderr, stdout};

#[test]
fn completions_for_every_shell_name_the_subcommands() {
    let env = TestEnv::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = env.zhi().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        for word in ["run", "plan", "skills", "manifest", "base-url", "jobs"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    let out = env.zhi().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bash"), "{}", stderr(&out));
}

#[test]
fn the_man_page_is_roff_naming_every_command() {
    let env = TestEnv::new();
    let out = env.zhi().arg("man").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
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

    let out = env.zhi().args(["man", "--out", "man1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
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
}
