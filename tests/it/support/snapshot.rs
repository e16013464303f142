//! What a person sees, pinned one way: [`zhi_snapshot!`](crate::zhi_snapshot) takes a command's
//! whole stdout and stderr, replaces what differs from one machine or run to the next (this
//! test's folders, run ids, times, durations, hashes, the fake server's port, zhi's version)
//! and asserts it against its `.snap` file. One set of filters for every test that pins console
//! output, as uv's `uv_snapshot!` does, so a change in wording shows up as a reviewed change.

use super::testenv::{TestEnv, stderr, stdout};
use std::process::Output;

/// What varies between machines and runs, replaced; durations too unless `settings` (a
/// setting's value is what it is, a run's time is not).
pub fn filters(settings: bool) -> Vec<(&'static str, &'static str)> {
    let mut filters = vec![
        // 2025-01-31T12:34:56.789Z
        (
            r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
            "[timestamp]",
        ),
        // sha256 of inputs, cache keys, job ids
        (r"\b[0-9a-f]{16,64}\b", "[hash]"),
        (r"\b127\.0\.0\.1:\d+\b", "127.0.0.1:[port]"),
        (r"\bzhi \d+\.\d+\.\d+\S*", "zhi [version]"),
        (r"/tmp/[^\s]+", "[TMP]"),
    ];
    if !settings {
        // `(0.4s)`, `0.3s`, `850 ms`, `1.2 s`, `4 min 05 s`, and in Chinese.
        filters.extend([
            (r"\d+ min \d+ s\b", "[duration]"),
            (r"\d+ 分 \d+ 秒", "[duration]"),
            (r"\b\d+(\.\d+)? ?(ms|s)\b", "[duration]"),
            (r"\d+(\.\d+)? ?(毫秒|秒)", "[duration]"),
        ]);
    }
    filters
}

/// `text` with this test's own folders, binary and run ids replaced (the runs in `out/` as
/// `[run 1]`, `[run 2]`… oldest first).
pub fn stable(env: &TestEnv, text: &str) -> String {
    let mut runs: Vec<String> = std::fs::read_dir(env.path("out/.zhi/runs"))
        .map(|dir| {
            dir.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    runs.sort();
    let mut text = env.filter(text).replace(env!("CARGO_BIN_EXE_zhi"), "[zhi]");
    for (i, run) in runs.iter().enumerate() {
        text = text.replace(run.as_str(), &format!("[run {}]", i + 1));
    }
    text
}

/// The whole of what a command printed, as a person sees it.
pub fn shown(env: &TestEnv, out: &Output) -> String {
    format!(
        "--- stdout\n{}--- stderr\n{}",
        stable(env, &stdout(out)),
        stable(env, &stderr(out))
    )
}

/// `zhi_snapshot!(name, env, &output)`: a command's whole output, filtered, against the
/// snapshot `name` of the calling test module; `zhi_snapshot!(name, env, &output, settings)`
/// keeps durations (for views of settings). `zhi_snapshot!(env, &output)` names it after the
/// test.
#[macro_export]
macro_rules! zhi_snapshot {
    ($env:expr, $out:expr) => {{
        let shown = $crate::support::snapshot::shown($env, $out);
        insta::with_settings!({filters => $crate::support::snapshot::filters(false)}, {
            insta::assert_snapshot!(shown);
        });
    }};
    ($name:expr, $env:expr, $out:expr) => {
        $crate::zhi_snapshot!($name, $env, $out, false)
    };
    ($name:expr, $env:expr, $out:expr, $settings:expr) => {{
        let shown = $crate::support::snapshot::shown($env, $out);
        insta::with_settings!({filters => $crate::support::snapshot::filters($settings)}, {
            insta::assert_snapshot!(::std::string::ToString::to_string(&$name), shown);
        });
    }};
}
