//! Skill files that are not what they seem (docs/skills.md#discovery): a FIFO, a link to an endless
//! device, a file nested a hundred thousand levels deep, a file of megabytes. Discovery reads
//! every skill file for every command, so each must be skipped with a warning naming the file
//! and the reason — never a hang, a crash or minutes of CPU — and `zhi skills validate` must
//! report it with exit 2. Every zhi here runs under a deadline, so a regression fails the test
//! instead of hanging it.

use crate::support::testenv::{TestEnv, output_within, stderr, stdout};
use crate::support::testenv::{assert_exit, show};
use crate::support::{FakeApi, Reply};
use zhi::exit::Exit;

/// Long enough for a debug build on a busy machine; far shorter than any of the old failures
/// (a FIFO blocked forever, `/dev/zero` grew until killed, deep nesting took 36 s).
const DEADLINE_SECS: u64 = 20;

/// `zhi skills list`, a run of a builtin against the fake API and `zhi skills validate` all end
/// promptly; the first two succeed with a warning naming `file` and `reason`, the last exits 2.
fn skipped_promptly(env: &TestEnv, file: &str, reason: &str) {
    let out = output_within(env.zhi().args(["skills", "list"]), DEADLINE_SECS);
    assert_exit(&out, Exit::Success);
    let err = stderr(&out);
    assert!(
        err.contains("warning: skipped skill file") && err.contains(file) && err.contains(reason),
        "skills list names {file} and `{reason}`:\n{err}"
    );
    assert!(stdout(&out).contains("summarize"), "{}", show(&out));

    env.write("docs/a.txt", "A short document about rivers.\n");
    let api = FakeApi::always(Reply::text("Rivers carry water to the sea."));
    let out = output_within(
        env.zhi().args([
            "--no-progress",
            "run",
            "summarize",
            "docs/a.txt",
            "--base-url",
            &api.base_url(),
            "-o",
            "out",
        ]),
        DEADLINE_SECS,
    );
    assert_exit(&out, Exit::Success);
    let err = stderr(&out);
    assert!(
        err.contains(file) && err.contains(reason),
        "run names {file} and `{reason}`:\n{err}"
    );
    assert!(env.path("out/summarize/docs/a.txt/summary.md").is_file());

    let out = output_within(env.zhi().args(["skills", "validate"]), DEADLINE_SECS);
    assert_exit(&out, Exit::Usage);
    let err = stderr(&out);
    assert!(
        err.contains("error:") && err.contains(file) && err.contains(reason),
        "validate names {file} and `{reason}`:\n{err}"
    );
}

fn mkfifo(path: &std::path::Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn a_fifo_among_skills_never_blocks() {
    let env = TestEnv::new();
    let fifo = env.path(".zhi/skills/z.yaml");
    mkfifo(&fifo);
    skipped_promptly(&env, "z.yaml", "FIFO");

    // Named on the command line, too.
    let out = output_within(
        env.zhi().args(["skills", "validate", ".zhi/skills/z.yaml"]),
        DEADLINE_SECS,
    );
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("FIFO"), "{}", show(&out));
}

#[test]
fn a_link_to_dev_zero_among_skills_is_not_read() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home.join(".config/zhi/skills")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", env.home.join(".config/zhi/skills/z.yaml")).unwrap();
    skipped_promptly(&env, "z.yaml", "character device");
}

#[test]
fn a_deeply_nested_skill_file_is_refused_before_parsing() {
    let env = TestEnv::new();
    // 200 KB of `[`: the YAML parser's cost is quadratic in the depth.
    env.project_skill(
        "z.yaml",
        &format!("name: z\ndescription: {}\n", "[".repeat(200_000)),
    );
    skipped_promptly(&env, "z.yaml", "nested deeper than 64");
}

#[test]
fn an_oversize_skill_file_is_refused() {
    let env = TestEnv::new();
    // A valid skill, but 2 MiB of it: over the 1 MiB cap.
    let prompt = "Summarize the document carefully. ".repeat(2 * 1024 * 1024 / 34 + 1);
    env.project_skill(
        "z.yaml",
        &format!("name: z\ndescription: d\nsystem_prompt: {prompt}\ntools: [file_read]\n"),
    );
    skipped_promptly(&env, "z.yaml", "larger than 1 MiB");
}
