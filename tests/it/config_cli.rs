//! `zhi config show`: layering and the key that is never printed.

use crate::testenv::{TestEnv, assert_exit, stderr, stdout};

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
    assert_eq!(v["timeout"]["value"], "30s");
    assert_eq!(v["rpm"]["value"], "200");
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

#[test]
fn key_file_readable_by_others_warns() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let f = env.write("zhi.yaml", "api_key: sk-file-secret\n");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (v, err) = show_json(&env, |_| {});
    assert_eq!(v["api_key"]["value"], "<redacted>");
    assert!(err.contains("holds an API key but has mode 0644"), "{err}");
    assert!(!err.contains("sk-file-secret"));

    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (_, err) = show_json(&env, |_| {});
    assert!(!err.contains("mode"), "{err}");
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
