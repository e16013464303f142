//! zhi's own messages in Chinese (docs/display.md#languages, docs/config.md#environment-variables):
//! `ZHI_LANGUAGE=zh`, or a Chinese `LANG`, and a bad input is told in Chinese only — errors,
//! warnings, clap's parse errors, a job's failure. File names, paths, values as typed, skill names
//! and error kinds stay as they are.
//!
//! What is checked is every line before the end-of-run summary (the summary's words are
//! another module's; a run's summary starts after its first empty line and is left out here).

use crate::support::FakeApi;
use crate::support::testenv::{TestEnv, assert_exit, assert_exit_for, show, stderr};
use zhi::exit::Exit;

/// Latin words a Chinese message may hold: the product, formats and acronyms, and the names
/// the tests use (skills, files).
const ALLOWED: &[&str] = &[
    "zhi",
    "summarize",
    "nosuch",
    "PDF",
    "API",
    "JSON",
    "URL",
    "YAML",
];

/// The English words left in `text` once code spans (`…`), quoted values ('…'), paths, file
/// names, flags, identifiers (`extract_failed`) and upper-case names (`INPUT`, `OCR`) are
/// taken out.
fn english_words(text: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut quote = None;
    for c in text.chars() {
        match (quote, c) {
            (None, '`' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => {
                quote = None;
                plain.push(' ');
            }
            (Some(_), _) => {}
            (None, c) => plain.push(c),
        }
    }
    let mut words = Vec::new();
    for token in plain.split(|c: char| c.is_whitespace() || !c.is_ascii()) {
        let flag = token.trim_start_matches(['(', '[', '<']).starts_with('-');
        let token = token.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        // A model's name (`glm-4-flash`) is a name, not English.
        let model = token.contains('-') && token.chars().any(|c| c.is_ascii_digit());
        if flag
            || model
            || token.contains(['/', '.', '_', '=', ':'])
            || !token.chars().any(|c| c.is_ascii_lowercase())
        {
            continue;
        }
        for w in token.split(|c: char| !c.is_ascii_alphabetic()) {
            if w.len() >= 3 && !ALLOWED.contains(&w) {
                words.push(w.to_string());
            }
        }
    }
    words
}

/// The lines of stderr before the run summary.
fn message_lines(out: &std::process::Output) -> Vec<String> {
    stderr(out)
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

fn has_chinese(s: &str) -> bool {
    s.chars().any(|c| ('\u{4E00}'..='\u{9FFF}').contains(&c))
}

/// Every message line is Chinese and says nothing in English.
fn assert_only_chinese(out: &std::process::Output) {
    let lines = message_lines(out);
    assert!(!lines.is_empty(), "no message\n{}", show(out));
    for line in &lines {
        let english = english_words(line);
        assert!(
            english.is_empty(),
            "English words {english:?} in {line:?}\n{}",
            show(out)
        );
    }
    assert!(
        lines.iter().any(|l| has_chinese(l)),
        "no Chinese at all\n{}",
        show(out)
    );
}

fn zh(env: &TestEnv) -> assert_cmd::Command {
    let mut c = env.zhi();
    c.env("ZHI_LANGUAGE", "zh");
    c
}

#[test]
fn the_language_check_sees_english() {
    assert_eq!(
        english_words("错误：输入 `missing.pdf` 不存在；see docs/a.txt --rpm INPUT extract_failed"),
        vec!["see"]
    );
    assert!(english_words("错误：'abc' 不是参数 '--rpm <N>' 的有效值").is_empty());
}

#[test]
fn a_missing_input_is_told_in_chinese() {
    let env = TestEnv::new();
    let out = zh(&env)
        .args([
            "run",
            "summarize",
            "missing.pdf",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert_eq!(stderr(&out), "错误：输入 `missing.pdf` 不存在\n");
}

#[test]
fn a_folder_where_a_file_belongs_is_told_in_chinese() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.path("jobs.d")).unwrap();
    let out = zh(&env)
        .args([
            "run",
            "--jobs",
            "jobs.d",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).contains("任务文件 jobs.d：是文件夹，不是文件"),
        "{}",
        show(&out)
    );
    assert_only_chinese(&out);
}

#[test]
fn an_unknown_skill_is_told_in_chinese() {
    let env = TestEnv::new();
    env.write("a.txt", "hello");
    let out = zh(&env).args(["run", "nosuch", "a.txt"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).starts_with("错误：未知技能 `nosuch`"),
        "{}",
        show(&out)
    );
    assert_only_chinese(&out);
}

#[test]
fn bad_flag_values_are_told_in_chinese() {
    let env = TestEnv::new();
    env.write("a.txt", "hello");
    // clap's own check of a number, zhi's check of a value, and a subcommand mistyped.
    for args in [
        &["run", "summarize", "a.txt", "--rpm", "abc"][..],
        &["run", "summarize", "a.txt", "--rpm", "0"],
        &["run", "summarize", "a.txt", "--concurrency", "lots"],
        &["run", "summarize", "a.txt", "--shard", "3/2"],
        &["run", "summarize", "a.txt", "--ocr", "magic"],
        &["run", "summarize", "a.txt", "--frobnicate"],
        &["runn", "summarize", "a.txt"],
    ] {
        let out = zh(&env).args(args).output().unwrap();
        assert_exit_for(&out, Exit::Usage, format!("{args:?}"));
        assert!(
            stderr(&out).starts_with("错误："),
            "{args:?}\n{}",
            show(&out)
        );
        // The usage line clap adds is a command's syntax, not a sentence.
        let lines: Vec<String> = message_lines(&out)
            .into_iter()
            .filter(|l| !l.starts_with("用法："))
            .collect();
        for line in lines {
            assert!(
                english_words(&line).is_empty(),
                "{args:?}: {line:?}\n{}",
                show(&out)
            );
        }
    }
    let out = zh(&env)
        .args(["run", "summarize", "a.txt", "--rpm", "abc"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("'abc' 不是参数 '--rpm <N>' 的有效值"),
        "the value as typed is kept\n{}",
        show(&out)
    );
    let out = zh(&env).args(["runn"]).output().unwrap();
    assert!(
        stderr(&out).contains("'run'"),
        "clap's suggestion is kept\n{}",
        show(&out)
    );
}

#[test]
fn a_bad_setting_in_zhi_yaml_is_told_in_chinese() {
    let env = TestEnv::new();
    env.write("a.txt", "hello");
    env.write("zhi.yaml", "timeout: soon\n");
    let out = zh(&env)
        .args(["plan", "summarize", "a.txt"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).contains("zhi.yaml：`timeout` 必须是整数，实际为 `soon`"),
        "{}",
        show(&out)
    );
    assert_only_chinese(&out);

    // An unknown setting is a warning, and the plan goes on.
    env.write("zhi.yaml", "colour: blue\n");
    let out = zh(&env)
        .args(["plan", "summarize", "a.txt"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert!(
        stderr(&out).starts_with("警告：配置文件 ")
            && stderr(&out).contains("已忽略未知设置 `colour`"),
        "{}",
        show(&out)
    );
    assert_only_chinese(&out);
}

#[test]
fn a_log_warning_is_in_chinese() {
    let env = TestEnv::new();
    env.write("a.txt", "hello");
    let out = zh(&env)
        .args(["plan", "summarize", "*.md", "a.txt"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert!(
        stderr(&out).starts_with("警告：通配符 `*.md` 没有匹配到任何文件\n"),
        "{}",
        show(&out)
    );
    assert_only_chinese(&out);
}

#[test]
fn a_document_that_cannot_be_read_fails_in_chinese() {
    let env = TestEnv::new();
    env.write("docs/broken.pdf", "%PDF-1.4\nthis is no PDF at all\n");
    let api = FakeApi::always(crate::support::Reply::text("never asked"));
    // pdftotext's complaint is another program's text, shown as it is (like a server's);
    // with no pdftotext on the PATH the message is zhi's and lopdf's alone.
    let bin = env.path("empty-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let out = zh(&env)
        .env("PATH", &bin)
        .args(["--no-progress", "run", "summarize", "docs/broken.pdf"])
        .args(["--base-url", &api.base_url(), "-o", "out"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::JobsFailed);
    assert_eq!(
        api.count(),
        0,
        "nothing is sent for a document that cannot be read"
    );
    assert!(
        stderr(&out).starts_with("失败：docs/broken.pdf（extract_failed）：无法读取 PDF："),
        "{}",
        show(&out)
    );
    assert_only_chinese(&out);
    // The record keeps the contract's English: scripts read it.
    let record = crate::support::testenv::record(&env, "docs/broken.pdf");
    assert_eq!(record["error"]["kind"], "extract_failed");
    assert!(
        record["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("cannot read the PDF"),
        "{record}"
    );
}

#[test]
fn a_chinese_locale_alone_chooses_chinese() {
    let env = TestEnv::new();
    let out = env
        .zhi()
        .env("LANG", "zh_CN.UTF-8")
        .args(["run", "summarize", "missing.pdf"])
        .output()
        .unwrap();
    assert_eq!(stderr(&out), "错误：输入 `missing.pdf` 不存在\n");
}

#[test]
fn zhi_language_en_wins_over_a_chinese_locale() {
    let env = TestEnv::new();
    let out = env
        .zhi()
        .env("LANG", "zh_CN.UTF-8")
        .env("ZHI_LANGUAGE", "en")
        .args(["run", "summarize", "missing.pdf"])
        .output()
        .unwrap();
    assert_eq!(stderr(&out), "error: input `missing.pdf` does not exist\n");
    let out = env
        .zhi()
        .env("LANG", "zh_CN.UTF-8")
        .env("ZHI_LANGUAGE", "en")
        .args(["run", "summarize", "a.txt", "--rpm", "abc"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).starts_with("error: invalid value 'abc' for '--rpm <N>'"),
        "{}",
        show(&out)
    );
}
