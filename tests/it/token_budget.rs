//! `--tpm` (docs/model-api.md#rate-limits): a per-minute token budget smaller than one request used
//! to stall a run without a word — every request waited for a full minute's budget. A budget that
//! no request can fit is refused at the start (exit 2, naming the setting, its value and the
//! smallest value that works); a long document is split into pieces whose requests fit it; a
//! document a skill cannot split and that does not fit fails as `too_large`, naming `--tpm`.

use crate::support::testenv::assert_exit;
use crate::support::testenv::{TestEnv, output_within, stderr, stdout};
use crate::support::{FakeApi, Reply};
use serde_json::Value;
use zhi::exit::Exit;

const DEADLINE_SECS: u64 = 30;

fn setup() -> (TestEnv, FakeApi) {
    let env = TestEnv::new();
    env.write("docs/a.txt", "A short document about rivers.\n");
    let api = FakeApi::always(Reply::text("Rivers carry water to the sea."));
    (env, api)
}

fn run(env: &TestEnv, api: &FakeApi, extra: &[&str]) -> std::process::Output {
    let mut cmd = env.zhi();
    cmd.args(["--no-progress", "run", "summarize", "docs"])
        .args(extra)
        .args(["--base-url", &api.base_url(), "-o", "out"]);
    output_within(&mut cmd, DEADLINE_SECS)
}

/// The number in "… --tpm N or more …".
fn smallest_that_works(err: &str) -> u32 {
    let rest = &err[err
        .find("give --tpm ")
        .unwrap_or_else(|| panic!("no advice in {err}"))
        + 11..];
    rest.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number in {err}"))
}

#[test]
fn a_tpm_below_one_request_is_refused_naming_the_smallest_that_works() {
    let (env, api) = setup();
    let out = run(&env, &api, &["--tpm", "1000"]);
    assert_exit(&out, Exit::Usage);
    let err = stderr(&out);
    assert!(err.contains("--tpm 1000"), "{err}");
    assert!(err.contains("glm-4-flash"), "names the model: {err}");
    let floor = smallest_that_works(&err);
    assert!(
        floor > 4096,
        "a request reserves glm-4-flash's 4096-token answer: {err}"
    );
    assert_eq!(api.count(), 0, "nothing was sent");
    assert!(
        crate::refused_settings::no_run_started(&env),
        "no run started"
    );

    // `zhi plan` says the same, before any run.
    let out = output_within(
        env.zhi()
            .args(["plan", "summarize", "docs", "--tpm", "1000"]),
        DEADLINE_SECS,
    );
    assert_exit(&out, Exit::Usage);
    assert_eq!(smallest_that_works(&stderr(&out)), floor);

    // One less is still refused; the value given works, promptly.
    let out = run(&env, &api, &["--tpm", &(floor - 1).to_string()]);
    assert_exit(&out, Exit::Usage);
    let out = run(&env, &api, &["--tpm", &floor.to_string()]);
    assert_exit(&out, Exit::Success);
    assert!(env.path("out/summarize/docs/a.txt/summary.md").is_file());
}

#[test]
fn a_tpm_from_a_config_file_is_checked_the_same_way() {
    let (env, api) = setup();
    env.write("zhi.yaml", "tpm: 1000\n");
    let out = run(&env, &api, &[]);
    assert_exit(&out, Exit::Usage);
    let err = env.filter(&stderr(&out));
    assert!(
        err.contains("tpm 1000") && err.contains("[WORK]/zhi.yaml"),
        "names the setting and its file: {err}"
    );
    assert_eq!(api.count(), 0);
}

/// A document of about 3,000 tokens on a model whose answers are capped at 100 tokens.
fn long_document(env: &TestEnv) {
    env.write(
        "zhi.yaml",
        "models:\n  glm-4-flash: {context_window: 128000, max_output: 100}\n",
    );
    let paragraph =
        "Rivers carry water from the hills down to the sea, and towns grow on their banks.\n\n";
    env.write(
        "docs/long.txt",
        paragraph.repeat(12_000 / paragraph.len() + 1),
    );
}

fn pieces(env: &TestEnv, extra: &[&str]) -> u64 {
    let out = output_within(
        env.zhi()
            .args(["--json", "plan", "summarize", "docs/long.txt"])
            .args(extra),
        DEADLINE_SECS,
    );
    assert_exit(&out, Exit::Success);
    let job: Value = serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
    job["pieces"].as_u64().unwrap()
}

#[test]
fn a_long_document_is_split_so_that_each_request_fits_the_tpm() {
    let env = TestEnv::new();
    long_document(&env);
    assert_eq!(
        pieces(&env, &[]),
        1,
        "fits the model's window in one request"
    );
    // 1,000 tokens a minute: a request holds the answer (100), the prompt, and the rest of
    // the minute's budget in document text: a few hundred tokens per piece.
    let n = pieces(&env, &["--tpm", "1000"]);
    assert!(
        n >= 10,
        "{n} pieces of a 3,000-token document under --tpm 1000"
    );
}

#[test]
fn a_document_that_cannot_be_split_and_exceeds_the_tpm_is_too_large() {
    let (env, api) = setup();
    long_document(&env);
    env.write("docs/other.txt", "Another short text.\n");
    let out = output_within(
        env.zhi().args([
            "--no-progress",
            "run",
            "compare",
            "docs/long.txt",
            "-a",
            "file2=docs/other.txt",
            "--tpm",
            "1000",
            "--base-url",
            &api.base_url(),
            "-o",
            "out",
        ]),
        DEADLINE_SECS,
    );
    assert_exit(&out, Exit::JobsFailed);
    let records = crate::support::testenv::latest_records(&env.path("out"));
    assert_eq!(records.len(), 1);
    let e = &records[0]["error"];
    assert_eq!(e["kind"], "too_large", "{e}");
    assert!(e["message"].as_str().unwrap().contains("--tpm 1000"), "{e}");
    assert_eq!(api.chat_requests().len(), 0, "nothing was sent");
}
