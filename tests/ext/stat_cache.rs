//! The stat cache, counted by the kernel: a rerun over 2,000 unchanged documents opens none of
//! them, and a rerun after one changed opens that one only (`strace -f -e trace=%file`).

use crate::support::fake_api::{FakeApi, Reply};
use crate::testenv::{TestEnv, assert_exit, show};
use std::collections::BTreeSet;
use zhi::exit::Exit;

/// The tests of this module and what each needs.
pub fn tests() -> Vec<crate::Test> {
    vec![crate::Test::new(
        "stat_cache::a_rerun_over_2000_unchanged_documents_opens_none_of_them",
        &[crate::need::Need::Program("strace")],
        a_rerun_over_2000_unchanged_documents_opens_none_of_them,
    )]
}

const DOCS: usize = 2000;

/// `zhi run summarize docs` under strace; the regular files under `docs/` it opened (a
/// folder opened to list it is not counted).
fn traced_run(env: &TestEnv, api: &FakeApi, name: &str) -> BTreeSet<String> {
    let trace = env.path(name);
    let out = std::process::Command::new("strace")
        .current_dir(&env.work)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .arg("-f")
        .args(["-e", "trace=open,openat,openat2,creat"])
        .arg("-o")
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_zhi"))
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .args(["--base-url", &api.base_url()])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let text = std::fs::read_to_string(&trace).unwrap();
    let docs = env.path("docs");
    let docs = docs.to_string_lossy();
    text.lines()
        .filter(|l| !l.contains("O_DIRECTORY"))
        .filter_map(|l| {
            let start = l.find('"')? + 1;
            let end = start + l[start..].find('"')?;
            let path = &l[start..end];
            (path.starts_with("docs/") || path.starts_with(docs.as_ref()))
                .then(|| path.rsplit('/').next().unwrap_or(path).to_string())
        })
        .collect()
}

fn counts(env: &TestEnv) -> serde_json::Value {
    let text = std::fs::read_to_string(env.path("out/manifest.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&text).unwrap()["counts"].clone()
}

pub fn a_rerun_over_2000_unchanged_documents_opens_none_of_them() {
    let env = TestEnv::new();
    for i in 0..DOCS {
        env.write(
            &format!("docs/b{:02}/d{i:04}.txt", i / 100),
            format!("Report {i}: the board approved budget line {i}.\n"),
        );
    }
    // A file changed less than two seconds before it was hashed is hashed again on the next
    // run (docs/outputs.md#the-stat-cache): the documents are made to be older than that.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let api = FakeApi::always(Reply::text("# Summary\n\nA budget line was approved."));
    let first = env
        .zhi()
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .args(["--base-url", &api.base_url()])
        .output()
        .unwrap();
    assert_exit(&first, Exit::Success);
    assert_eq!(api.chat_requests().len(), DOCS, "{}", show(&first));

    let opened = traced_run(&env, &api, "rerun.trace");
    assert!(
        opened.is_empty(),
        "a rerun over unchanged documents opened {} of them: {:?}",
        opened.len(),
        opened.iter().take(5).collect::<Vec<_>>()
    );
    assert_eq!(api.chat_requests().len(), DOCS, "the rerun sent a request");
    assert_eq!(counts(&env)["cached"], DOCS as u64);

    // One document changes: the rerun opens it, and only it, and runs it.
    env.write("docs/b07/d0700.txt", "Report 700: the board rejected it.\n");
    let opened = traced_run(&env, &api, "changed.trace");
    assert_eq!(
        opened,
        BTreeSet::from(["d0700.txt".to_string()]),
        "the rerun after one change opened other documents"
    );
    assert_eq!(api.chat_requests().len(), DOCS + 1);
    let c = counts(&env);
    assert_eq!(
        (c["succeeded"].clone(), c["cached"].clone()),
        (1.into(), (DOCS as u64 - 1).into())
    );
}
