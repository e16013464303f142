//! A temporary world for one test: a home folder (for `~/.config/zhi`), a working folder, and
//! `zhi` commands that see only them — no real user config, no real API key.

#![allow(dead_code)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use zhi::exit::Exit;

pub struct TestEnv {
    _root: tempfile::TempDir,
    pub home: PathBuf,
    pub work: PathBuf,
}

impl TestEnv {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let home = root.path().join("home");
        let work = root.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        TestEnv {
            _root: root,
            home,
            work,
        }
    }

    /// `zhi ARGS…` in the working folder, with a clean environment.
    pub fn zhi(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_zhi"));
        c.current_dir(&self.work)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("NO_COLOR", "1")
            .env("LANG", "C.UTF-8")
            .env("COLUMNS", "100");
        c
    }

    /// The same as [`TestEnv::zhi`], as a `std` command that can be spawned and signalled.
    pub fn zhi_process(&self) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_zhi"));
        c.current_dir(&self.work)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("NO_COLOR", "1")
            .env("LANG", "C.UTF-8")
            .env("COLUMNS", "100")
            .stdin(std::process::Stdio::null());
        c
    }

    /// Write a file under the working folder, creating its parents.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.work.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    /// Write a user skill into `~/.config/zhi/skills/`.
    pub fn user_skill(&self, file: &str, yaml: &str) -> PathBuf {
        let p = self.home.join(".config/zhi/skills").join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, yaml).unwrap();
        p
    }

    /// Write a project skill into `./.zhi/skills/`.
    pub fn project_skill(&self, file: &str, yaml: &str) -> PathBuf {
        self.write(&format!(".zhi/skills/{file}"), yaml)
    }

    /// Replace this env's temp paths in text so snapshots are stable.
    pub fn filter(&self, text: &str) -> String {
        text.replace(&self.home.display().to_string(), "[HOME]")
            .replace(&self.work.display().to_string(), "[WORK]")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.work.join(rel)
    }

    /// The records of the latest run in the output folder `out` (relative to the working
    /// folder), in the order they were written.
    pub fn latest_records(&self, out: &str) -> Vec<serde_json::Value> {
        latest_records(&self.path(out))
    }
}

/// The records of the latest run in an output folder, in the order they were written.
pub fn latest_records(out: &Path) -> Vec<serde_json::Value> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(out.join(".zhi/runs"))
        .unwrap_or_else(|e| panic!("no runs in {}: {e}", out.display()))
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    let text = std::fs::read_to_string(runs.last().unwrap().join("results.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The same records by input path; each input has exactly one.
pub fn records_by_input(out: &Path) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut by_input = std::collections::BTreeMap::new();
    for r in latest_records(out) {
        let input = r["input"].as_str().unwrap().to_owned();
        assert!(
            by_input.insert(input.clone(), r).is_none(),
            "two records for {input}"
        );
    }
    by_input
}

/// A minimal valid skill with the given name and tools.
pub fn skill_yaml(name: &str, tools: &str) -> String {
    format!(
        "name: {name}\ndescription: test skill {name}\nsystem_prompt: Do the thing.\ntools: [{tools}]\nmax_turns: 3\n"
    )
}

pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}

/// Run `cmd`, killing it after `secs` seconds: a command that should end promptly (a hostile
/// file must never make zhi hang) fails the test instead of hanging it.
pub fn output_within(cmd: &mut Command, secs: u64) -> std::process::Output {
    let start = std::time::Instant::now();
    let out = cmd
        .timeout(std::time::Duration::from_secs(secs))
        .output()
        .expect("run zhi");
    assert!(
        out.status.code().is_some(),
        "zhi did not end by itself within {secs} s (after {:?}: {:?})\n--- stderr\n{}",
        start.elapsed(),
        out.status,
        stderr(&out)
    );
    out
}

/// Exit (by name), stdout and stderr, for assertion messages.
pub fn show(o: &std::process::Output) -> String {
    format!(
        "exit {}\n--- stdout\n{}\n--- stderr\n{}",
        exit_name(o.status),
        stdout(o),
        stderr(o)
    )
}

/// Every exit zhi ends with (docs/exit-codes.md), to name the code a process ended with.
const EXITS: [Exit; 7] = [
    Exit::Success,
    Exit::JobsFailed,
    Exit::Usage,
    Exit::Aborted,
    Exit::TempFail,
    Exit::Interrupted,
    Exit::Terminated,
];

/// A new exit does not compile here until it is in [`EXITS`] too.
const _: fn(Exit) = |e| match e {
    Exit::Success
    | Exit::JobsFailed
    | Exit::Usage
    | Exit::Aborted
    | Exit::TempFail
    | Exit::Interrupted
    | Exit::Terminated => {}
};

/// How a process ended, by zhi's name for it: `JobsFailed (1)`, `exit 42 (not a zhi exit)`,
/// `killed by signal 9`.
pub fn exit_name(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.code() {
        Some(code) => match EXITS.iter().find(|e| i32::from(e.code()) == code) {
            Some(e) => format!("{e:?} ({code})"),
            None => format!("exit {code} (not a zhi exit)"),
        },
        None => match status.signal() {
            Some(sig) => format!("killed by signal {sig}"),
            None => format!("{status:?}"),
        },
    }
}

/// Panic unless zhi ended with `want`, naming both exits and showing stdout and stderr.
#[track_caller]
pub fn assert_exit(out: &std::process::Output, want: Exit) {
    assert_exit_for(out, want, "");
}

/// [`assert_exit`] for one case of several (`{args:?}`, a file name), named in the message.
#[track_caller]
pub fn assert_exit_for(out: &std::process::Output, want: Exit, case: impl std::fmt::Display) {
    if out.status.code() == Some(i32::from(want.code())) {
        return;
    }
    let case = case.to_string();
    let case = if case.is_empty() {
        String::new()
    } else {
        format!(" ({case})")
    };
    panic!(
        "zhi should have ended with {want:?} ({}) but ended with {}{case}\n--- stdout\n{}\n--- stderr\n{}",
        want.code(),
        exit_name(out.status),
        stdout(out),
        stderr(out)
    );
}

/// `zhi --no-progress run SKILL ARGS… --base-url FAKE -o out`.
pub fn run_skill(
    env: &TestEnv,
    api: &crate::support::FakeApi,
    skill: &str,
    args: &[&str],
) -> std::process::Output {
    let base = api.base_url();
    let mut all = vec!["--no-progress", "run", skill];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--base-url", &base, "-o", "out"]);
    env.zhi().args(&all).output().expect("run zhi")
}

/// The latest record of `input` in the output folder `out`.
pub fn record(env: &TestEnv, input: &str) -> serde_json::Value {
    records_by_input(&env.path("out"))
        .remove(input)
        .unwrap_or_else(|| panic!("no record for {input}"))
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}
