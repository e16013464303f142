//! A run with failures for `zhi report` to show, shared by the report's file tests
//! (`tests/it/report.rs`) and its browser test (`tests/ext/browser.rs`).

use crate::support::testenv::{TestEnv, assert_exit, run_skill, stdout};
use crate::support::{FakeApi, Reply};
use std::path::{Path, PathBuf};
use std::time::Duration;
use zhi::exit::Exit;

/// A file name that is markup: the report must show it as text.
pub const HOSTILE: &str = "docs/<script>alert(1)</script>.txt";
/// A server message that is markup too.
pub const HOSTILE_MESSAGE: &str = "<img src=x onerror=alert(2)> bad request";

/// `summarize` over five documents: three succeed (one slowly), `docs/bad.txt` fails with
/// `content_filter`, and [`HOSTILE`] with `api_error` and a [`HOSTILE_MESSAGE`].
pub fn run_with_failures() -> (TestEnv, FakeApi) {
    let env = TestEnv::new();
    for name in ["a", "b", "c", "bad"] {
        env.write(&format!("docs/{name}.txt"), format!("Document {name}.\n"));
    }
    env.write(HOSTILE, "A document with a hostile name.\n");
    // Each document is told by its text (a summarize request does not name its document).
    let api = FakeApi::start(|req| match req.document_text().as_str() {
        "Document bad." => Reply::zhipu_error(400, "1301", "sensitive content"),
        "A document with a hostile name." => Reply::zhipu_error(400, "1214", HOSTILE_MESSAGE),
        "Document c." => Reply::delay(
            Duration::from_millis(300),
            Reply::text("# c\n\nA slow summary.\n").with_usage(900, 300),
        ),
        doc => Reply::text(format!("# {doc}\n\nA summary.\n")).with_usage(120, 40),
    });
    let out = run_skill(&env, &api, "summarize", &["docs", "-j", "2"]);
    assert_exit(&out, Exit::JobsFailed);
    (env, api)
}

/// `zhi report ARGS…` in `env`; the report's path as printed, made absolute.
pub fn report(env: &TestEnv, args: &[&str], lang: &str) -> PathBuf {
    let out = env
        .zhi()
        .env("ZHI_LANGUAGE", lang)
        .arg("report")
        .args(args)
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    // An absolute file:// link.
    let printed = stdout(&out);
    let url = reqwest::Url::parse(printed.trim_end())
        .unwrap_or_else(|e| panic!("not a link ({e}): {printed}"));
    assert_eq!(url.scheme(), "file", "{printed}");
    let path = url.to_file_path().unwrap();
    assert!(
        path.is_absolute() && path.is_file(),
        "no report at {}",
        path.display()
    );
    path
}

pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// The part of a page from the element with `id` to the end of its section.
pub fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the page"));
    let end = html[start..]
        .find("</section>")
        .map_or(html.len(), |e| start + e);
    &html[start..end]
}
