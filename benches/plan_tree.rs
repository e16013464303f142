//! Planning a large tree: `zhi plan --json` over 100,000 files in nested folders, beside `fd`
//! and `find` listing the same tree. zhi does more than list: for each file it also hashes the
//! content (cache status) and reads text files for the token estimate, so this is an upper
//! bound on what planning costs, and the listers are the floor.
//!
//! `cargo bench --bench plan_tree` (`ZHI_BENCH_FILES` for another count, `ZHI_BENCH_RUNS` for
//! other than best of 3). `fd` is `fdfind` on Debian (package fd-find); skipped when missing.

#[path = "common/mod.rs"]
mod common;

use common::{Timed, best_of, on_path, program, runs, table, zhi};
use std::path::Path;
use std::process::{Command, Stdio};

fn main() {
    let files: usize = std::env::var("ZHI_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let runs = runs(3);
    let root = tempfile::tempdir().expect("temp dir");
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let tree = root.path().join("tree");
    let (folders, bytes) = make_tree(&tree, files);
    println!(
        "plan_tree: {files} files ({:.1} MiB) in {folders} folders three levels deep; best of {runs}",
        bytes as f64 / (1 << 20) as f64
    );

    // Each lister once, to check that it sees every file (and to warm the page cache).
    let zhi_plan = || {
        let mut c = zhi(&home);
        c.current_dir(root.path())
            .args(["--json", "plan", "summarize", "tree"]);
        c
    };
    let jobs = count_lines(zhi_plan());
    assert_eq!(jobs, files, "zhi plans one job per file");
    let mut rows = Vec::new();
    // Max RSS is shown for zhi only: a child started with vfork reports the bench's own RSS
    // as its peak until it execs, which swamps the few MiB a lister needs.
    let mut row = |what: &str, command: String, t: Timed, rss: bool| {
        rows.push(vec![
            what.to_string(),
            command,
            format!("{:.3}", t.wall.as_secs_f64()),
            format!("{:.0}", files as f64 / t.wall.as_secs_f64()),
            if rss {
                format!("{:.1}", t.maxrss_kib as f64 / 1024.0)
            } else {
                "–".to_string()
            },
        ]);
    };
    let t = best_of(runs, zhi_plan);
    row("zhi plan", "zhi --json plan summarize tree".into(), t, true);

    // Debian's fd-find installs it as `fdfind`.
    let fd = on_path("fd").or_else(|| program("fdfind"));
    if let Some(fd) = &fd {
        let name = fd.file_name().unwrap().to_string_lossy().into_owned();
        let fd_cmd = |threads: Option<&str>| {
            let mut c = Command::new(fd);
            c.current_dir(root.path())
                .args(["--type", "f", "--no-ignore"]);
            if let Some(j) = threads {
                c.args(["--threads", j]);
            }
            c.args([".", "tree"]).stdout(Stdio::null());
            c
        };
        assert_eq!(count_lines(fd_cmd(None)), files, "fd sees every file");
        let t = best_of(runs, || fd_cmd(None));
        row(
            "fd",
            format!("{name} --type f --no-ignore . tree"),
            t,
            false,
        );
        let t = best_of(runs, || fd_cmd(Some("1")));
        row(
            "fd, 1 thread",
            format!("{name} --type f --no-ignore --threads 1 . tree"),
            t,
            false,
        );
    }
    if let Some(find) = program("find") {
        let find_cmd = || {
            let mut c = Command::new(&find);
            c.current_dir(root.path())
                .args(["tree", "-type", "f"])
                .stdout(Stdio::null());
            c
        };
        assert_eq!(count_lines(find_cmd()), files, "find sees every file");
        let t = best_of(runs, find_cmd);
        row("find", "find tree -type f".into(), t, false);
    }
    table(
        &["lister", "command", "best s", "files/s", "max RSS MiB"],
        &rows,
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("({cores} cores; the tree is in the page cache; zhi also hashes and reads each file)");
}

/// `tree/a0/b0/c0/f000.txt`…: 10 × 10 × 10 folders of `files / 1000` files (at least one
/// folder per 100 files). Returns (folders, bytes).
fn make_tree(tree: &Path, files: usize) -> (usize, u64) {
    let per_leaf = files.div_ceil(1000).max(1);
    let mut made = 0;
    let mut folders = 0;
    let mut bytes = 0u64;
    'outer: for a in 0..10 {
        for b in 0..10 {
            for c in 0..10 {
                let dir = tree.join(format!("a{a}/b{b}/c{c}"));
                std::fs::create_dir_all(&dir).unwrap();
                folders += 1;
                for f in 0..per_leaf {
                    if made == files {
                        break 'outer;
                    }
                    let body = format!("Note {made}: the minutes of meeting {a}{b}{c}-{f}.\n");
                    bytes += body.len() as u64;
                    std::fs::write(dir.join(format!("f{f:03}.txt")), body).unwrap();
                    made += 1;
                }
            }
        }
    }
    assert_eq!(made, files, "the tree holds every file");
    (folders, bytes)
}

/// Lines a command prints (it must succeed).
fn count_lines(mut cmd: Command) -> usize {
    let out = cmd
        .stdout(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", out.status);
    out.stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count()
}
