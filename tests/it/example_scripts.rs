//! The example scripts a new user runs first (docs/guide.md#quick-start-no-api-key-a-real-local-model):
//! `examples/local-llm/stop.sh` says what it stopped, and `examples/local-demo.sh` leaves the
//! user's settings as the demo ran (its model, at temperature 0). Neither starts a model
//! here: stop.sh is given a folder of its own with a process of the test's, and the demo's
//! settings are read from the script.

use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn stop_says_what_it_stopped_and_what_was_not_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = server.id();
    std::fs::write(dir.path().join("server.pid"), pid.to_string()).unwrap();
    // Reaped as soon as it ends, so that stop.sh sees it gone.
    let (ended, end) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = ended.send(server.wait());
    });
    let out = Command::new("bash")
        .arg(repo().join("examples/local-llm/stop.sh"))
        .arg(dir.path())
        .output()
        .unwrap();
    let stopped = end.recv_timeout(std::time::Duration::from_secs(15)).is_ok();
    if !stopped {
        // Never leave a process behind, even when the script failed.
        let _ = Command::new("kill").arg(pid.to_string()).status();
    }
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(stopped, "the server is still running: {said}");
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("stopped the 0.5b model server (pid {pid})")),
        "{said}"
    );
    assert!(
        said.contains("the 1.5b model server was not running"),
        "{said}"
    );
    assert!(!dir.path().join("server.pid").exists());
    // Nothing left to stop: it says so.
    let again = Command::new("bash")
        .arg(repo().join("examples/local-llm/stop.sh"))
        .args(["--model", "0.5b"])
        .arg(dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&again.stdout);
    assert!(
        said.contains("the 0.5b model server was not running"),
        "{said}"
    );
}

/// The demo runs at temperature 0; the settings it writes for the user's next runs say so too.
#[test]
fn the_demo_leaves_the_settings_it_ran_with() {
    let script = std::fs::read_to_string(repo().join("examples/local-demo.sh")).unwrap();
    assert!(
        script.contains(r#"SETTINGS=("base_url: $URL" "temperature: 0")"#),
        "{script}"
    );
    // The user's file and the demo's own are written from the same lines.
    assert_eq!(
        script.matches(r#"printf '%s\n' "${SETTINGS[@]}""#).count(),
        2,
        "{script}"
    );
}
