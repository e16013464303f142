//! A full disk, made with a small tmpfs in a private mount namespace (`unshare -rm`): the run
//! stops with exit 75 and leaves no temporary file behind.

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::testenv::{TestEnv, assert_exit, files_under, show, stderr};
use serde_json::Value;
use zhi::exit::Exit;

/// The tests of this module and what each needs.
pub fn tests() -> Vec<crate::Test> {
    vec![crate::Test::new(
        "full_disk::a_full_disk_stops_the_run_with_exit_75_and_leaves_no_temporary_files",
        &[crate::need::Need::PrivateMount],
        a_full_disk_stops_the_run_with_exit_75_and_leaves_no_temporary_files,
    )]
}

pub fn a_full_disk_stops_the_run_with_exit_75_and_leaves_no_temporary_files() {
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        "retry: {max_attempts: 3, base_delay_ms: 5, max_delay_ms: 10}\n",
    );
    for i in 0..40 {
        env.write(
            &format!("docs/d{i:02}.txt"),
            format!("Report {i}: the board approved budget line {i}.\n"),
        );
    }
    // Each summary is 12 KB: a 192 KB output folder is full after a few jobs.
    // Prose that does not repeat itself (a repeated sentence would be a loop, not a summary).
    let words = [
        "budget", "river", "plant", "export", "harbour", "copper", "ledger", "tariff", "north",
        "quarter", "supplier", "freight", "margin", "winter", "contract", "audit", "grain",
        "signal", "bridge", "cotton", "silver", "harvest", "engine", "credit", "orchard",
        "lantern", "meadow", "granite", "canal", "festival", "quarry",
    ];
    let mut seed = 7u64;
    let summary: String = (0..3000)
        .map(|_| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            format!("{} ", words[(seed >> 33) as usize % words.len()])
        })
        .collect();
    let api = FakeApi::always(Reply::text(format!("# Summary\n\n{}", &summary[..12_000])));
    std::fs::create_dir_all(env.path("out")).unwrap();
    std::fs::create_dir_all(env.path("saved")).unwrap();
    // A private mount namespace with a small tmpfs as the output folder; what zhi left there
    // is copied out before the namespace (and the tmpfs) goes away.
    let script = "mount -t tmpfs -o size=192k tmpfs out || exit 99; \
                  \"$0\" \"$@\"; code=$?; cp -a out/. saved/; exit $code";
    let out = std::process::Command::new("unshare")
        .current_dir(&env.work)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .env("LANG", "C.UTF-8")
        .args(["-rm", "sh", "-c", script, env!("CARGO_BIN_EXE_zhi")])
        .args([
            "--no-progress",
            "run",
            "summarize",
            "docs",
            "-j",
            "2",
            "-o",
            "out",
        ])
        .args(["--base-url", &api.base_url()])
        .output()
        .unwrap();
    // The need (a private mount namespace) was checked before the test ran. 99 is not zhi's
    // exit but the wrapping shell's, when it could not mount the tmpfs.
    assert_ne!(out.status.code(), Some(99), "no tmpfs: {}", show(&out));
    assert_exit(&out, Exit::TempFail);
    assert!(stderr(&out).contains("cannot be written"), "{}", show(&out));
    // Scheduling stopped: far fewer requests than documents.
    let asked = api
        .chat_requests()
        .iter()
        .map(|r| r.first_user_text())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert!(
        asked < 30,
        "{asked} jobs were asked after the disk was full: {}",
        show(&out)
    );
    let saved = env.path("saved");
    let records: Vec<Value> = std::fs::read_dir(saved.join(".zhi/runs"))
        .unwrap()
        .flat_map(|d| {
            std::fs::read_to_string(d.unwrap().path().join("results.jsonl"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        records.iter().any(|r| r["status"] == "succeeded"),
        "jobs that fitted were committed: {records:?} {}",
        show(&out)
    );
    for f in files_under(&saved) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            !name.contains(".tmp-") && !name.starts_with(".write-probe"),
            "left behind: {}",
            f.display()
        );
    }
}
