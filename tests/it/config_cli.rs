//! `zhi config show`: layering and the key that is never printed.

use crate::support::testenv::{TestEnv, assert_exit, stderr, stdout};

use serde_json::Value;
use zhi::exit::Exit;

fn show_json(env: &TestEnv, f: impl FnOnce(&mut assert_cmd::Command)) -> (Value, String) {
    let mut cmd = env.zhi();
    cmd.args(["config", "show", "--json"]);
    f(&mut cmd);
    let out = cmd.output().unwrap();
    assert_exit(&out, Exit::Success);
    (serde_json::from_slice(&out.stdout).unwrap(), stderr(&out))
}

#[test]
fn precedence_env_over_files_over_defaults() {
    let env = TestEnv::new();
    let (v, _) = show_json(&env, |_| {});
    assert_eq!(
        v["base_url"]["value"],
        "https://open.bigmodel.cn/api/paas/v4"
    );
    assert_eq!(v["base_url"]["origin"], "default");

    std::fs::create_dir_all(env.home.join(".config/zhi")).unwrap();
    std::fs::write(
        env.home.join(".config/zhi/config.yaml"),
        "timeout: 30\nrpm: 100\n",
    )
    .unwrap();
    env.write("zhi.yaml", "rpm: 200\nconcurrency: auto\n");
    let (v, _) = show_json(&env, |c| {
        c.env("ZHI_OUTPUT_DIR", "from-env");
    });
    // Typed: numbers as numbers, seconds as seconds, null for no limit.
    assert_eq!(v["timeout"]["value"], 30);
    assert_eq!(v["rpm"]["value"], 200);
    assert_eq!(v["tpm"]["value"], Value::Null);
    assert_eq!(v["checksum"]["value"], false);
    assert_eq!(v["grace_period"]["value"], 30);
    assert_eq!(v["retry"]["value"]["max_attempts"], 5);
    assert_eq!(v["escalate"]["value"], serde_json::json!([]));
    assert_eq!(
        v["rpm"]["origin"],
        format!("file {}", env.path("zhi.yaml").display())
    );
    assert_eq!(v["concurrency"]["value"], "auto");
    assert_eq!(v["output_dir"]["value"], "from-env");
    assert_eq!(v["output_dir"]["origin"], "env ZHI_OUTPUT_DIR");

    let (v, _) = show_json(&env, |c| {
        c.env("ZHI_BASE_URL", "http://127.0.0.1:1/v1");
    });
    assert_eq!(v["base_url"]["value"], "http://127.0.0.1:1/v1");
}

#[test]
fn key_is_never_printed() {
    let env = TestEnv::new();
    let (v, err) = show_json(&env, |c| {
        c.env("ZHI_API_KEY", "sk-very-secret-123");
    });
    assert_eq!(v["api_key"]["value"], "<redacted>");
    assert_eq!(v["api_key"]["origin"], "env ZHI_API_KEY");
    assert!(!v.to_string().contains("sk-very-secret-123"));
    assert!(!err.contains("sk-very-secret-123"));

    let out = env
        .zhi()
        .args(["config", "show"])
        .env("ZHI_API_KEY", "sk-very-secret-123")
        .output()
        .unwrap();
    assert!(!stdout(&out).contains("sk-very-secret-123"));
}

/// The key's warnings (a file others can read, a key too short to be one) are said by the
/// commands that send the key, and by no other (docs/config.md#the-api-key).
#[test]
fn key_warnings_only_where_the_key_is_sent() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let f = env.write("zhi.yaml", "api_key: sk-x\n");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    env.write("docs/a.txt", "A line.\n");
    let (v, err) = show_json(&env, |_| {});
    assert_eq!(v["api_key"]["value"], "<redacted>");
    assert!(!err.contains("warning"), "{err}");
    for args in [
        &["skills", "list"][..],
        &["extract", "docs/a.txt"][..],
        &["plan", "summarize", "docs"][..],
        &["manifest", "show", "-o", "nowhere"][..],
    ] {
        let out = env.zhi().args(args).output().unwrap();
        let err = stderr(&out);
        assert!(
            !err.contains("mode 0644") && !err.contains("shorter than"),
            "{args:?}: {err}"
        );
    }
    // `run` sends it: both are said.
    let api = crate::support::FakeApi::always(crate::support::Reply::text(
        "A summary of the line, in two sentences. It says little more.",
    ));
    let out = env
        .zhi()
        .args([
            "run",
            "summarize",
            "docs",
            "-o",
            "out",
            "--base-url",
            &api.base_url(),
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(err.contains("holds an API key but has mode 0644"), "{err}");
    assert!(err.contains("shorter than"), "{err}");
    assert!(!err.contains("sk-x"), "{err}");

    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = env
        .zhi()
        .args(["batch", "status", "-o", "out"])
        .output()
        .unwrap();
    assert!(!stderr(&out).contains("mode"), "{}", stderr(&out));
}

/// A mistyped setting is answered with the settings close to it.
#[test]
fn a_mistyped_setting_gets_a_did_you_mean() {
    let env = TestEnv::new();
    env.write("zhi.yaml", "concurency: 8\n");
    let (v, err) = show_json(&env, |_| {});
    assert!(
        err.contains("unknown setting `concurency` ignored; did you mean `concurrency`?"),
        "{err}"
    );
    assert_eq!(v["concurrency"]["value"], 4);
}

#[test]
fn bad_config_is_a_usage_error() {
    let env = TestEnv::new();
    env.write("zhi.yaml", "concurrency: lots\n");
    let out = env.zhi().args(["config", "show"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).contains("zhi.yaml: concurrency `lots`"),
        "{}",
        stderr(&out)
    );
}
