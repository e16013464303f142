//! The README's commands are true (docs/tests.md): every `zhi` command in its `sh` blocks
//! names commands and flags the binary has, and those that need no model run as written, on
//! the files the repository ships.

use crate::support::testenv::{TestEnv, show};
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `zhi` command lines of the README's `sh` blocks, continuation lines joined and
/// comments cut, as words.
fn readme_commands() -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut line = String::new();
    for raw in text.lines() {
        if raw.starts_with("```") {
            in_sh = !in_sh && raw.trim() == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        line.push_str(raw.strip_suffix('\\').unwrap_or(raw));
        if raw.ends_with('\\') {
            continue;
        }
        let code = match line.find(" #") {
            Some(at) => &line[..at],
            None => &line[..],
        };
        let words = shlex::split(code).unwrap_or_else(|| panic!("not shell words: {code}"));
        if words.first().map(String::as_str) == Some("zhi") {
            commands.push(words);
        }
        line.clear();
    }
    commands
}

/// `zhi WORDS --help`'s text, when those words name a command.
fn help(env: &TestEnv, words: &[String]) -> Option<String> {
    let out = env.zhi().args(words).arg("--help").output().unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The subcommands a help text lists under `Commands:`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn every_readme_command_names_commands_and_flags_zhi_has() {
    let env = TestEnv::new();
    let commands = readme_commands();
    assert!(commands.len() >= 10, "{commands:?}");
    for words in &commands {
        let mut path: Vec<String> = Vec::new();
        let mut text = help(&env, &path).unwrap();
        let mut rest = &words[1..];
        while let Some(next) = rest.first()
            && subcommands(&text).contains(next)
        {
            path.push(next.clone());
            text = help(&env, &path).unwrap_or_else(|| panic!("zhi {path:?} --help fails"));
            rest = &rest[1..];
        }
        assert!(!path.is_empty(), "no command in {words:?}");
        for word in rest.iter().filter(|w| w.starts_with('-') && w.len() > 1) {
            let flag = word.split('=').next().unwrap();
            let listed = if flag.starts_with("--") {
                text.contains(&format!("{flag} ")) || text.contains(&format!("{flag}\n"))
            } else {
                text.contains(&format!("{flag},")) || text.contains(&format!("{flag} "))
            };
            assert!(
                listed,
                "`{}`: `zhi {}` has no {flag}",
                words.join(" "),
                path.join(" ")
            );
        }
    }
}

/// Copies `from` into `to`, files and folders.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn the_readme_commands_that_need_no_model_run_as_written() {
    let env = TestEnv::new();
    copy_tree(&repo().join("examples"), &env.path("examples"));
    env.write(
        "reports/q3.txt",
        "Sales rose in the third quarter, led by the new region.\n",
    );
    let needs_no_model = |w: &[String]| {
        matches!(
            w.get(1).map(String::as_str),
            Some("plan" | "skills" | "completions" | "man")
        )
    };
    let mut ran = 0;
    for words in readme_commands().iter().filter(|w| needs_no_model(w)) {
        let out = env.zhi().args(&words[1..]).output().unwrap();
        assert!(
            out.status.success(),
            "`{}` failed as written:\n{}",
            words.join(" "),
            show(&out)
        );
        ran += 1;
    }
    assert!(
        ran >= 3,
        "only {ran} command(s) of the README need no model"
    );
}
