//! An Agent Skill folder holding large files: commands that do not need the folder's hash
//! never read them (counted with strace: no `open` of the large files at all).

use crate::support::testenv::{TestEnv, assert_exit};
use zhi::exit::Exit;

pub fn tests() -> Vec<crate::Test> {
    vec![crate::Test::new(
        "skill_folders::listing_and_showing_skills_never_reads_a_skills_large_files",
        &[crate::need::Need::Program("strace")],
        listing_and_showing_skills_never_reads_a_skills_large_files,
    )]
}

pub fn listing_and_showing_skills_never_reads_a_skills_large_files() {
    let env = TestEnv::new();
    env.write(
        ".zhi/skills/big-refs/SKILL.md",
        "---\nname: big-refs\ndescription: Brief a document with large references\n---\n\n\
         Write a brief of the document.\n",
    );
    env.write(
        ".zhi/skills/big-refs/references/style.md",
        "Short sentences.\n",
    );
    // Sparse files of 16 MiB: cheap to make, slow to hash.
    for i in 0..20 {
        let path = env.write(
            &format!(".zhi/skills/big-refs/references/big-{i:02}.bin"),
            "",
        );
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(16 << 20)
            .unwrap();
    }
    for args in [&["skills", "list"][..], &["skills", "show", "big-refs"][..]] {
        let log = env.work.join("strace.log");
        let out = std::process::Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=openat,open", "-o"])
            .arg(&log)
            .arg(env!("CARGO_BIN_EXE_zhi"))
            .args(args)
            .current_dir(&env.work)
            .env("HOME", &env.home)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert_exit(&out, Exit::Success);
        let trace = std::fs::read_to_string(&log).unwrap();
        let opened: Vec<&str> = trace
            .lines()
            .filter(|l| l.contains("references/big-"))
            .collect();
        assert!(opened.is_empty(), "zhi {args:?} opened: {opened:#?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("big-refs"),
            "{args:?}"
        );
    }
}
