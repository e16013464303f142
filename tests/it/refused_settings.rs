//! Values that would make a run do something other than what the user asked — silently — are usage
//! errors (exit 2, nothing ran: docs/exit-codes.md#usage-errors): limits of zero, settings out of
//! their range, a settings file that is a folder or a FIFO, a jobs file that does not say what is
//! wrong with it, a lock file that is a FIFO. Each message names the file or the flag and the
//! reason. Every zhi here runs under a deadline, so a hang fails the test instead of hanging it.

use crate::support::testenv::{TestEnv, output_within, stderr, stdout};
use crate::support::testenv::{assert_exit, assert_exit_for, show};
use crate::support::{FakeApi, Reply};
use zhi::exit::Exit;

const DEADLINE_SECS: u64 = 20;

/// A working folder with one document and a fake API that must never be asked.
fn setup() -> (TestEnv, FakeApi) {
    let env = TestEnv::new();
    env.write("docs/a.txt", "A short document about rivers.\n");
    let api = FakeApi::always(Reply::text("Rivers carry water to the sea."));
    (env, api)
}

/// `zhi run summarize docs EXTRA… --base-url FAKE -o out` exits 2 with every needle in its
/// error, sends no request and starts no run.
fn refused(env: &TestEnv, api: &FakeApi, extra: &[&str], needles: &[&str]) {
    let mut cmd = env.zhi();
    cmd.args(["--no-progress", "run", "summarize", "docs"])
        .args(extra)
        .args(["--base-url", &api.base_url(), "-o", "out"]);
    let out = output_within(&mut cmd, DEADLINE_SECS);
    assert_exit_for(&out, Exit::Usage, format!("{extra:?}"));
    let err = env.filter(&stderr(&out));
    for needle in needles {
        assert!(err.contains(needle), "{extra:?}: `{needle}` in\n{err}");
    }
    assert_eq!(api.count(), 0, "{extra:?}: a refused run sent a request");
    assert!(no_run_started(env), "{extra:?}: a refused run started");
}

/// No run folder in `out/.zhi/runs` (the folder itself may be there: it is made before the lock).
pub fn no_run_started(env: &TestEnv) -> bool {
    std::fs::read_dir(env.path("out/.zhi/runs")).map_or(true, |mut d| d.next().is_none())
}

#[test]
fn zero_limits_on_the_command_line_are_refused() {
    let (env, api) = setup();
    refused(&env, &api, &["--budget-tokens", "0"], &["--budget-tokens"]);
    refused(&env, &api, &["--max-failures", "0"], &["--max-failures"]);
    refused(&env, &api, &["--rpm", "0"], &["--rpm"]);
    refused(&env, &api, &["--tpm", "0"], &["--tpm"]);
    refused(&env, &api, &["--limit", "0"], &["--limit"]);
}

#[test]
fn settings_out_of_range_are_refused_naming_the_file_and_the_setting() {
    let cases: &[(&str, &[&str])] = &[
        ("log_level: loud\n", &["log_level", "`loud`"]),
        (
            "retry: {max_attempts: 0}\n",
            &["retry.max_attempts", "at least 1"],
        ),
        (
            "retry: {base_delay_ms: 5000, max_delay_ms: 100}\n",
            &["retry.max_delay_ms 100", "below retry.base_delay_ms 5000"],
        ),
        (
            "models:\n  glm-4-flash: {context_window: 0}\n",
            &["models.glm-4-flash.context_window", "at least 1"],
        ),
        (
            "models:\n  glm-4-flash: {max_output: 0}\n",
            &["models.glm-4-flash.max_output", "at least 1"],
        ),
        (
            "models:\n  glm-4-flash: {context_window: lots}\n",
            &["models.glm-4-flash.context_window", "whole number"],
        ),
        (
            "models:\n  glm-4-flash: {context_window: 4000, max_output: 4000}\n",
            &[
                "models.glm-4-flash",
                "max_output",
                "smaller than context_window",
            ],
        ),
        (
            "models:\n  glm-4-flash: 4096\n",
            &["models.glm-4-flash", "mapping"],
        ),
        // The same as `--rpm 0`, which is refused: a config file may not mean "unlimited" by it.
        ("rpm: 0\n", &["rpm", "at least 1"]),
        ("tpm: 0\n", &["tpm", "at least 1"]),
        ("rpm: 4294967296\n", &["rpm"]),
    ];
    for (yaml, needles) in cases {
        let (env, api) = setup();
        env.write("zhi.yaml", yaml);
        let mut all = vec!["[WORK]/zhi.yaml"];
        all.extend_from_slice(needles);
        refused(&env, &api, &[], &all);
    }
}

#[test]
fn a_bad_log_level_in_the_environment_is_refused() {
    let (env, api) = setup();
    let out = output_within(
        env.zhi().env("ZHI_LOG_LEVEL", "loud").args([
            "run",
            "summarize",
            "docs",
            "--base-url",
            &api.base_url(),
        ]),
        DEADLINE_SECS,
    );
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("ZHI_LOG_LEVEL"), "{}", show(&out));
    assert_eq!(api.count(), 0);
    // The levels the README names all work.
    for level in ["error", "warn", "info", "debug"] {
        let out = output_within(
            env.zhi()
                .env("ZHI_LOG_LEVEL", level)
                .args(["config", "show"]),
            DEADLINE_SECS,
        );
        assert_exit_for(&out, Exit::Success, level);
    }
}

#[test]
fn a_settings_file_that_is_no_file_is_refused() {
    // A folder named zhi.yaml.
    let (env, api) = setup();
    std::fs::create_dir_all(env.path("zhi.yaml")).unwrap();
    refused(&env, &api, &[], &["[WORK]/zhi.yaml", "folder"]);

    // A FIFO named zhi.yaml: refused at once, never opened for a blocking read.
    let (env, api) = setup();
    mkfifo(&env.path("zhi.yaml"));
    refused(&env, &api, &[], &["[WORK]/zhi.yaml", "FIFO"]);

    // The user's config.yaml a folder, and `--config` naming a folder.
    let (env, api) = setup();
    std::fs::create_dir_all(env.home.join(".config/zhi/config.yaml")).unwrap();
    refused(
        &env,
        &api,
        &[],
        &["[HOME]/.config/zhi/config.yaml", "folder"],
    );
    let (env, api) = setup();
    std::fs::create_dir_all(env.path("conf")).unwrap();
    refused(&env, &api, &["--config", "conf"], &["conf", "folder"]);

    // A link to nothing where the settings should be.
    let (env, api) = setup();
    std::os::unix::fs::symlink(env.path("missing.yaml"), env.path("zhi.yaml")).unwrap();
    refused(&env, &api, &[], &["[WORK]/zhi.yaml", "link"]);
}

fn mkfifo(path: &std::path::Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// `zhi plan --jobs FILE` exits 2 with every needle in its error.
fn jobs_refused(env: &TestEnv, file: &str, needles: &[&str]) {
    let out = output_within(env.zhi().args(["plan", "--jobs", file]), DEADLINE_SECS);
    assert_exit_for(&out, Exit::Usage, file);
    let err = stderr(&out);
    assert!(
        !err.contains("untagged enum"),
        "{file}: says what is wrong, not how it was parsed:\n{err}"
    );
    for needle in needles {
        assert!(err.contains(needle), "{file}: `{needle}` in\n{err}");
    }
    assert!(stdout(&out).is_empty(), "{file}: {}", show(&out));
}

#[test]
fn a_malformed_jobs_file_names_the_field_and_the_line() {
    let (env, _api) = setup();
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "typo.yaml",
            "jobs:\n  - skill: summarize\n    inputs: [docs]\n  - skil: translate\n    inputs: [docs]\n",
            &["typo.yaml", "`skil`", "line 4"],
        ),
        (
            "missing.yaml",
            "jobs:\n  - skill: summarize\n    args: {to: english}\n",
            &["missing.yaml", "`inputs`", "line 2"],
        ),
        (
            "number.yaml",
            "jobs:\n  - skill: summarize\n    inputs: 5\n",
            &["number.yaml", "inputs", "line 3"],
        ),
        (
            "top.yaml",
            "jbos:\n  - skill: summarize\n    inputs: [docs]\n",
            &["top.yaml", "`jbos`", "line 1"],
        ),
        (
            "list.yaml",
            "- skill: summarize\n  inputs: [docs]\n- skill: translate\n  inputs: [docs]\n  exclud: [x]\n",
            &["list.yaml", "`exclud`", "line 5"],
        ),
        (
            "scalar.yaml",
            "summarize docs\n",
            &["scalar.yaml", "`jobs:`", "list"],
        ),
    ];
    for (file, yaml, needles) in cases {
        env.write(file, yaml);
        jobs_refused(&env, file, needles);
    }
}

#[test]
fn a_jobs_file_that_is_no_file_is_refused_at_once() {
    let (env, api) = setup();
    mkfifo(&env.path("jobs.yaml"));
    jobs_refused(&env, "jobs.yaml", &["jobs.yaml", "FIFO"]);
    let out = output_within(
        env.zhi().args([
            "run",
            "--jobs",
            "jobs.yaml",
            "--base-url",
            &api.base_url(),
            "-o",
            "out",
        ]),
        DEADLINE_SECS,
    );
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("FIFO"), "{}", show(&out));
    std::fs::create_dir_all(env.path("jobs-dir")).unwrap();
    jobs_refused(&env, "jobs-dir", &["jobs-dir", "folder"]);
    assert_eq!(api.count(), 0);
}

#[test]
fn a_fifo_as_the_run_lock_is_refused_at_once() {
    let (env, api) = setup();
    mkfifo(&env.path("out/.zhi/lock"));
    refused(&env, &api, &[], &["[WORK]/out/.zhi/lock", "FIFO"]);
}

/// The error line of a refused `zhi run`, with the place it names cut off: what is left is the
/// setting's own check speaking, which must not depend on where the value came from.
fn refusal(env: &TestEnv, api: &FakeApi, extra: &[&str], vars: &[(&str, &str)]) -> String {
    let mut cmd = env.zhi();
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.args(["--no-progress", "run", "summarize", "docs"])
        .args(extra)
        .args(["-o", "out"]);
    if !extra.contains(&"--base-url") {
        cmd.args(["--base-url", &api.base_url()]);
    }
    let out = output_within(&mut cmd, DEADLINE_SECS);
    assert_exit_for(&out, Exit::Usage, format!("{extra:?} {vars:?}"));
    assert_eq!(api.count(), 0);
    assert!(no_run_started(env));
    env.filter(&stderr(&out)).trim().to_string()
}

#[test]
fn a_setting_is_refused_in_the_same_words_from_a_file_a_variable_or_a_flag() {
    // `rpm: 0` in zhi.yaml is what `--rpm 0` is: refused, never "unlimited".
    let (env, api) = setup();
    let flag = refusal(&env, &api, &["--rpm", "0"], &[]);
    env.write("zhi.yaml", "rpm: 0\n");
    let file = refusal(&env, &api, &[], &[]);
    let problem = flag
        .strip_prefix("error: --rpm ")
        .unwrap_or_else(|| panic!("{flag}"));
    assert!(problem.contains("at least 1"), "{flag}");
    assert_eq!(
        file,
        format!("error: config file [WORK]/zhi.yaml: rpm {problem}")
    );

    // `log_level: loud` and `ZHI_LOG_LEVEL=loud`.
    let (env, api) = setup();
    let var = refusal(&env, &api, &[], &[("ZHI_LOG_LEVEL", "loud")]);
    env.write("zhi.yaml", "log_level: loud\n");
    let file = refusal(&env, &api, &[], &[]);
    let problem = var
        .strip_prefix("error: ZHI_LOG_LEVEL: ")
        .unwrap_or_else(|| panic!("{var}"));
    assert_eq!(
        file,
        format!("error: config file [WORK]/zhi.yaml: log_level {problem}")
    );

    // A base URL that is no http(s) URL, from all three.
    let (env, api) = setup();
    let flag = refusal(&env, &api, &["--base-url", "ftp://x"], &[]);
    let var = refusal(&env, &api, &[], &[("ZHI_BASE_URL", "ftp://x")]);
    let problem = "`ftp://x` must start with http:// or https://";
    assert_eq!(flag, format!("error: --base-url {problem}"));
    // The flag wins over the variable, but a bad variable is refused even so.
    assert_eq!(var, format!("error: ZHI_BASE_URL: {problem}"));
    env.write("zhi.yaml", "base_url: ftp://x\n");
    let file = refusal(&env, &api, &[], &[]);
    assert_eq!(
        file,
        format!("error: config file [WORK]/zhi.yaml: base_url {problem}")
    );
}
