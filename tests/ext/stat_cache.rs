//! The stat cache, counted by the kernel: a rerun over 2,000 unchanged documents opens none of
//! them nor their outputs, and a rerun after one changed opens that one only
//! (`strace -f -e trace=open,openat,…`).

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::testenv::{TestEnv, assert_exit, show};
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

/// What a traced run opened (a folder opened to list it is not counted): the names of the
/// documents under `docs/`, and of the outputs under `out/summarize/`.
struct Opened {
    docs: BTreeSet<String>,
    outputs: BTreeSet<String>,
}

/// `zhi run summarize docs` under strace, and what it opened.
fn traced_run(env: &TestEnv, api: &FakeApi, name: &str) -> Opened {
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
    let under = |folder: &str| -> BTreeSet<String> {
        let abs = env.path(folder);
        let abs = abs.to_string_lossy();
        text.lines()
            .filter(|l| !l.contains("O_DIRECTORY"))
            .filter_map(|l| {
                let start = l.find('"')? + 1;
                let end = start + l[start..].find('"')?;
                let path = &l[start..end];
                (path.starts_with(&format!("{folder}/")) || path.starts_with(abs.as_ref()))
                    .then(|| path.to_string())
            })
            .collect()
    };
    Opened {
        docs: under("docs")
            .iter()
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
            .collect(),
        outputs: under("out/summarize"),
    }
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

    // The first pass waited out the racy margin and settled its records' stats
    // (docs/outputs.md#what-a-rerun-writes): even the first rerun opens no output.
    let opened = traced_run(&env, &api, "rerun.trace");
    assert!(
        opened.docs.is_empty() && opened.outputs.is_empty(),
        "the first rerun opened {} documents and {} outputs: {:?}",
        opened.docs.len(),
        opened.outputs.len(),
        opened.outputs.iter().take(5).collect::<Vec<_>>()
    );
    assert_eq!(api.chat_requests().len(), DOCS, "the rerun sent a request");
    assert_eq!(counts(&env)["cached"], DOCS as u64);
    let opened = traced_run(&env, &api, "rerun2.trace");
    assert!(
        opened.docs.is_empty() && opened.outputs.is_empty(),
        "a second rerun opened {} documents and {} outputs: {:?}",
        opened.docs.len(),
        opened.outputs.len(),
        opened.outputs.iter().take(5).collect::<Vec<_>>()
    );
    assert_eq!(counts(&env)["cached"], DOCS as u64);

    // One document changes: the rerun opens it, and only it, and runs it.
    env.write("docs/b07/d0700.txt", "Report 700: the board rejected it.\n");
    let opened = traced_run(&env, &api, "changed.trace");
    assert_eq!(
        opened.docs,
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
