//! `zhi report` in a real browser: headless Chromium renders the report of a run with failures
//! (the failures visible, the sorting script run, the page in Chinese under `ZHI_LANGUAGE=zh`).

use crate::support::report_fixture::{read, report, run_with_failures, section};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The tests of this module and what each needs.
pub fn tests() -> Vec<crate::Test> {
    vec![crate::Test::new(
        "browser::report_renders_in_headless_chromium",
        &[crate::need::Need::Program("chromium")],
        report_renders_in_headless_chromium,
    )]
}

/// Chromium from the system's packages, if installed.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// Headless Chromium on `url`, in its own process group (killed whole when it ends or after a
/// minute) with a throw-away profile; `extra` adds flags (`--screenshot=…`). Its stdout.
fn chromium_run(chrome: &Path, url: &str, extra: &[String]) -> String {
    use std::os::unix::process::CommandExt;
    let profile = tempfile::tempdir().unwrap();
    let out_file = profile.path().join("stdout");
    let mut child = std::process::Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ])
        .arg(format!(
            "--user-data-dir={}",
            profile.path().join("p").display()
        ))
        .args(extra)
        .arg(url)
        .env("HOME", profile.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out_file).unwrap())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start chromium");
    let group = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Chromium's helpers (zygote, renderer, GPU) live in its group: none outlives the test.
    // SAFETY: kill(2) on our own child's process group; no memory is involved.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
    if status.is_none() {
        let _ = child.wait();
        panic!("chromium did not finish within a minute on {url}");
    }
    read(&out_file)
}

/// The rendered page: the failures are visible (names, kinds, in red above the fold), the
/// sorting script ran, a sort asked for in the address is applied, and the Chinese page
/// renders as Chinese. Needs Chromium (Debian's `chromium` package).
pub fn report_renders_in_headless_chromium() {
    let chrome = chromium().expect("chromium on PATH (checked as a need)");
    let (env, _api) = run_with_failures();
    let path = report(&env, &["-o", "out"], "en");
    let url = format!("file://{}", path.display());

    let dom = chromium_run(&chrome, &url, &["--dump-dom".into()]);
    assert!(dom.contains("</html>"), "no DOM from chromium: {dom}");
    assert!(
        dom.contains("id=\"jobs\" data-sorted=\"status:asc\" data-sortable=\"ready\""),
        "the sorting script did not run"
    );
    // Headers became buttons, and the hint that they sort is shown, by the script only.
    assert!(dom.contains("<button type=\"button\">Duration</button>"));
    assert!(dom.contains("id=\"sort-hint\">Click a column header"));
    let failures = section(&dom, "failures");
    for text in [
        "2 jobs failed",
        "docs/bad.txt",
        "content_filter",
        "api_error",
        "docs/&lt;script&gt;alert(1)&lt;/script&gt;.txt",
        "&lt;img src=x onerror=alert(2)&gt;",
    ] {
        assert!(failures.contains(text), "{text} not rendered: {failures}");
    }
    assert_eq!(
        dom.matches("<script").count(),
        1,
        "only the page's own script"
    );
    assert!(!dom.contains("<img"));

    // A sort named in the address: slowest first.
    let sorted = chromium_run(
        &chrome,
        &format!("{url}#sort=duration:desc"),
        &["--dump-dom".into()],
    );
    assert!(
        sorted.contains("data-sorted=\"duration:desc\""),
        "not sorted"
    );
    let durations: Vec<u64> = sorted
        .split("<tr data-i=")
        .skip(1)
        .map(|row| {
            let cell = row.split("<td class=\"num\" data-v=\"").nth(1).unwrap();
            cell[..cell.find('"').unwrap()].parse().unwrap()
        })
        .collect();
    assert_eq!(durations.len(), 5);
    assert!(
        durations.windows(2).all(|w| w[0] >= w[1]),
        "rows not slowest first: {durations:?}"
    );
    assert!(durations[0] >= 300, "the slow job first: {durations:?}");

    // What a person sees: the failures box in red in the first screen.
    let shot = tempfile::tempdir().unwrap();
    let png = shot.path().join("report.png");
    chromium_run(
        &chrome,
        &url,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1280,900".into(),
            "--hide-scrollbars".into(),
        ],
    );
    let img = image::open(&png)
        .unwrap_or_else(|e| panic!("no screenshot: {e}"))
        .to_rgb8();
    // #cf222e, the failures' border and badges.
    let red = img
        .pixels()
        .filter(|p| {
            p[0].abs_diff(0xcf) < 12 && p[1].abs_diff(0x22) < 12 && p[2].abs_diff(0x2e) < 12
        })
        .count();
    assert!(
        red > 2_000,
        "the failures are not visible in red: {red} red pixels"
    );

    // In Chinese.
    let zh = report(&env, &["-o", "out", "--out", "zh.html"], "zh");
    let dom = chromium_run(
        &chrome,
        &format!("file://{}", zh.display()),
        &["--dump-dom".into()],
    );
    assert!(dom.contains("<html lang=\"zh\">"));
    assert!(dom.contains("data-sortable=\"ready\""));
    assert!(section(&dom, "failures").contains("2 个任务失败"));
    assert!(dom.contains("<button type=\"button\">耗时</button>"));
}
