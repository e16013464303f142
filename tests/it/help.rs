//! `--help` is documentation: its text is snapshotted so a change to it is a reviewed change.

use crate::support::testenv::{TestEnv, assert_exit_for, stdout};

use zhi::exit::Exit;

fn help(args: &[&str]) -> String {
    let env = TestEnv::new();
    let out = env.zhi().args(args).arg("--help").output().unwrap();
    assert_exit_for(&out, Exit::Success, format!("{args:?} --help"));
    stdout(&out)
}

#[test]
fn top_level_help() {
    insta::assert_snapshot!(help(&[]));
}

#[test]
fn skills_help() {
    insta::assert_snapshot!("skills", help(&["skills"]));
    insta::assert_snapshot!("skills_list", help(&["skills", "list"]));
    insta::assert_snapshot!("skills_show", help(&["skills", "show"]));
    insta::assert_snapshot!("skills_validate", help(&["skills", "validate"]));
    insta::assert_snapshot!("skills_new", help(&["skills", "new"]));
}

#[test]
fn config_help() {
    insta::assert_snapshot!("config", help(&["config"]));
    insta::assert_snapshot!("config_show", help(&["config", "show"]));
}

#[test]
fn run_plan_extract_manifest_help() {
    insta::assert_snapshot!("run", help(&["run"]));
    insta::assert_snapshot!("plan", help(&["plan"]));
    insta::assert_snapshot!("extract", help(&["extract"]));
    insta::assert_snapshot!("manifest", help(&["manifest"]));
    insta::assert_snapshot!("manifest_show", help(&["manifest", "show"]));
    insta::assert_snapshot!("manifest_merge", help(&["manifest", "merge"]));
}

#[test]
fn batch_help() {
    insta::assert_snapshot!("batch", help(&["batch"]));
    insta::assert_snapshot!("batch_status", help(&["batch", "status"]));
    insta::assert_snapshot!("batch_cancel", help(&["batch", "cancel"]));
}

#[test]
fn report_help() {
    insta::assert_snapshot!("report", help(&["report"]));
}

#[test]
fn completions_and_man_help() {
    insta::assert_snapshot!("completions", help(&["completions"]));
    insta::assert_snapshot!("man", help(&["man"]));
}
