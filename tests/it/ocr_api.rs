//! The OCR engines that go through the model API (docs/documents.md#ocr-engines): `glm-ocr`,
//! `file-extract`, `vision` and `auto`'s fallback to glm-ocr, against the fake API. The `zhi
//! extract` tests drive the real binary (no async runtime there); the library tests call the engine
//! from every kind of thread extraction runs on (a runtime's blocking pool and workers, a
//! current-thread runtime, no runtime at all).

use crate::support::testenv::{TestEnv, stderr, stdout};
use crate::support::testenv::{assert_exit, show};
use crate::support::{FakeApi, Recorded, Reply};
use base64::Engine as _;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use zhi::error::ErrorKind;
use zhi::exit::Exit;
use zhi::llm::{ChatClient, ClientSettings};
use zhi::ocr::api::ZhipuOcr;
use zhi::ocr::{ApiEngine, ApiOcr};

const KEY: &str = "sk-ocr-test-0123456789";

/// Retries without real waiting (the default base delay is 1 s).
const FAST_RETRY: &str = "retry: {max_attempts: 2, base_delay_ms: 10, max_delay_ms: 20}\n";

/// A small picture of a page: a white sheet with a few dark bars, as a PNG.
pub fn page_png() -> Vec<u8> {
    let img = image::GrayImage::from_fn(120, 60, |x, y| {
        if (10..110).contains(&x) && y % 12 < 4 {
            image::Luma([20])
        } else {
            image::Luma([250])
        }
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .expect("encode PNG");
    out.into_inner()
}

fn env_with_png() -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", FAST_RETRY);
    env.write("scan.png", page_png());
    env
}

/// `zhi extract --ocr ENGINE scan.png` against `api` with the key set.
fn extract(env: &TestEnv, api: &FakeApi, engine: &str) -> std::process::Output {
    env.zhi()
        .args(["extract", "--ocr", engine, "scan.png"])
        .env("ZHI_BASE_URL", api.zhipu_base_url())
        .env("ZHI_API_KEY", KEY)
        .output()
        .expect("run zhi")
}

/// The image a data URL carries, checked to be `mime`.
fn data_url_bytes(url: &str, mime: &str) -> Vec<u8> {
    let prefix = format!("data:{mime};base64,");
    let b64 = url
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("not a {mime} data URL: {}", &url[..url.len().min(60)]));
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("valid base64")
}

fn route(req: &Recorded) -> (String, String) {
    (req.method.clone(), req.path.clone())
}

fn routes(api: &FakeApi) -> Vec<(String, String)> {
    api.requests().iter().map(route).collect()
}

fn r(method: &str, path: &str) -> (String, String) {
    (method.to_owned(), format!("/api/paas/v4{path}"))
}

/// The layout-parsing API's answer with `md` as the page's Markdown.
pub fn layout_answer(md: &str) -> Reply {
    Reply::status(
        200,
        json!({
            "id": "task_1",
            "created": 1_727_156_815,
            "model": "GLM-OCR",
            "md_results": md,
            "layout_details": [[{"index": 1, "label": "text", "content": "ignored"}]],
            "data_info": {"num_pages": 1},
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            "request_id": "req_1"
        }),
    )
}

#[test]
fn glm_ocr_sends_the_image_as_a_data_url_and_prints_the_markdown() {
    let env = env_with_png();
    let api = FakeApi::start(|req| {
        if req.path.ends_with("/layout_parsing") {
            layout_answer("# Invoice 42\n\nTotal: 12.50 元")
        } else {
            Reply::status(404, json!({"error": {"message": "no route"}}))
        }
    });
    let out = extract(&env, &api, "glm-ocr");
    assert_exit(&out, Exit::Success);
    assert_eq!(stdout(&out), "# Invoice 42\n\nTotal: 12.50 元\n");

    let reqs = api.requests();
    assert_eq!(routes(&api), vec![r("POST", "/layout_parsing")]);
    let req = &reqs[0];
    assert_eq!(req.bearer(), Some(KEY));
    assert_eq!(req.model(), Some("glm-ocr"));
    let sent = data_url_bytes(
        req.body["file"].as_str().expect("a file field"),
        "image/png",
    );
    let img = image::load_from_memory(&sent).expect("the sent file is an image");
    assert_eq!((img.width(), img.height()), (120, 60));
}

#[test]
fn glm_ocr_failures_are_ocr_failed_but_auth_keeps_its_kind_and_the_key_stays_hidden() {
    let env = env_with_png();
    let api = FakeApi::always(Reply::zhipu_error(400, "1214", "file cannot be parsed"));
    let out = extract(&env, &api, "glm-ocr");
    assert_exit(&out, Exit::JobsFailed);
    let err = stderr(&out);
    assert!(err.contains("ocr_failed"), "{err}");
    assert!(err.contains("glm-ocr"), "{err}");
    assert!(err.contains("file cannot be parsed"), "{err}");
    assert_eq!(api.count(), 1, "a 400 is not retried");

    let api = FakeApi::always(Reply::zhipu_error(
        401,
        "1001",
        &format!("token {KEY} is invalid"),
    ));
    let out = extract(&env, &api, "glm-ocr");
    let err = stderr(&out);
    assert!(err.contains(": auth: "), "{}", show(&out));
    assert!(!err.contains(KEY), "the key leaked: {err}");
    assert!(!stdout(&out).contains(KEY));
}

/// A `files` API fake: upload → id, content → `content`, delete → deleted; `content` and
/// `delete` can be made to fail.
fn files_api(content: Reply, delete: Reply) -> FakeApi {
    FakeApi::start(move |req| match (req.method.as_str(), req.path.as_str()) {
        ("POST", "/api/paas/v4/files") => Reply::status(
            200,
            json!({"id": "file-7f3a", "object": "file", "bytes": req.body_bytes.len(),
                   "created_at": 1_727_156_815, "filename": "scan.png", "purpose": "file-extract"}),
        ),
        ("GET", "/api/paas/v4/files/file-7f3a/content") => content.clone(),
        ("DELETE", "/api/paas/v4/files/file-7f3a") => delete.clone(),
        _ => Reply::status(404, json!({"error": {"message": "no route"}})),
    })
}

fn content_answer(text: &str) -> Reply {
    Reply::status(
        200,
        json!({"content": text, "file_type": "image/png", "filename": "scan.png",
               "title": "", "type": "file"}),
    )
}

fn deleted() -> Reply {
    Reply::status(
        200,
        json!({"id": "file-7f3a", "object": "file", "deleted": true}),
    )
}

#[test]
fn file_extract_uploads_reads_and_deletes_in_that_order() {
    let env = env_with_png();
    let api = files_api(content_answer("Extracted words 提取的文字"), deleted());
    let out = extract(&env, &api, "file-extract");
    assert_exit(&out, Exit::Success);
    assert_eq!(stdout(&out), "Extracted words 提取的文字\n");
    assert_eq!(
        routes(&api),
        vec![
            r("POST", "/files"),
            r("GET", "/files/file-7f3a/content"),
            r("DELETE", "/files/file-7f3a"),
        ]
    );
    let reqs = api.requests();
    assert!(reqs.iter().all(|q| q.bearer() == Some(KEY)));
    let upload = &reqs[0];
    assert!(
        upload
            .header("content-type")
            .is_some_and(|v| v.starts_with("multipart/form-data; boundary=")),
        "{:?}",
        upload.headers
    );
    let body = &upload.body_bytes;
    let text = String::from_utf8_lossy(body);
    assert!(
        text.contains("name=\"purpose\"\r\n\r\nfile-extract\r\n"),
        "{text:.300}"
    );
    assert!(
        // The engine is handed the prepared page (`page.png`), not the user's file.
        text.contains("name=\"file\"; filename=\"page.png\""),
        "{text:.300}"
    );
    assert!(text.contains("Content-Type: image/png"), "{text:.300}");
    let png = page_png();
    assert!(
        body.windows(8).any(|w| w == &png[..8]),
        "the upload carries a PNG"
    );
}

#[test]
fn file_extract_deletes_the_upload_when_the_content_is_refused() {
    let env = env_with_png();
    let api = files_api(
        Reply::zhipu_error(400, "1214", "unsupported content"),
        deleted(),
    );
    let out = extract(&env, &api, "file-extract");
    assert_exit(&out, Exit::JobsFailed);
    let err = stderr(&out);
    assert!(err.contains("ocr_failed"), "{err}");
    assert!(err.contains("unsupported content"), "{err}");
    assert_eq!(
        routes(&api),
        vec![
            r("POST", "/files"),
            r("GET", "/files/file-7f3a/content"),
            r("DELETE", "/files/file-7f3a"),
        ]
    );
}

#[test]
fn file_extract_deletes_the_upload_after_every_content_retry_failed() {
    let env = env_with_png();
    let api = files_api(Reply::raw(500, "<html>oops</html>"), deleted());
    let out = extract(&env, &api, "file-extract");
    assert_exit(&out, Exit::JobsFailed);
    assert!(stderr(&out).contains("ocr_failed"), "{}", show(&out));
    assert_eq!(
        routes(&api),
        vec![
            r("POST", "/files"),
            r("GET", "/files/file-7f3a/content"),
            r("GET", "/files/file-7f3a/content"),
            r("DELETE", "/files/file-7f3a"),
        ],
        "two attempts (retry.max_attempts: 2), then the delete"
    );
}

#[test]
fn a_failed_delete_does_not_fail_the_document() {
    let env = env_with_png();
    let api = files_api(
        content_answer("still here"),
        Reply::raw(500, "delete broke"),
    );
    let out = extract(&env, &api, "file-extract");
    assert_exit(&out, Exit::Success);
    assert_eq!(stdout(&out), "still here\n");
    let deletes = api
        .requests()
        .iter()
        .filter(|q| q.method == "DELETE")
        .count();
    assert_eq!(deletes, 2, "the delete is retried like any request");
}

#[test]
fn vision_sends_a_prompt_and_an_image_part_to_glm_4v_flash() {
    let env = env_with_png();
    let api = FakeApi::start(|req| {
        if req.is_chat() {
            Reply::text("```markdown\n# Menu\n\n- Tea 茶\n```")
        } else {
            Reply::status(404, json!({"error": {"message": "no route"}}))
        }
    });
    let out = extract(&env, &api, "vision");
    assert_exit(&out, Exit::Success);
    assert_eq!(stdout(&out), "# Menu\n\n- Tea 茶\n");

    let reqs = api.chat_requests();
    assert_eq!(api.count(), 1);
    let req = &reqs[0];
    assert_eq!(req.path, "/api/paas/v4/chat/completions");
    assert_eq!(req.bearer(), Some(KEY));
    assert_eq!(req.model(), Some("glm-4v-flash"));
    let messages = req.messages();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["role"], "user");
    let parts = messages[0]["content"].as_array().expect("content parts");
    let text = parts
        .iter()
        .find(|p| p["type"] == "text")
        .and_then(|p| p["text"].as_str())
        .expect("a text part");
    assert!(text.starts_with("Transcribe all text in this image exactly, as Markdown"));
    let image = parts
        .iter()
        .find(|p| p["type"] == "image_url")
        .and_then(|p| p["image_url"]["url"].as_str())
        .expect("an image_url part");
    image::load_from_memory(&data_url_bytes(image, "image/png")).expect("an image");
}

/// A folder for `PATH` with no tesseract (nor anything else) in it.
fn empty_path(env: &TestEnv) -> PathBuf {
    let dir = env.home.join("empty-bin");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn auto_without_tesseract_uses_glm_ocr_when_a_key_is_set() {
    let env = env_with_png();
    let api = FakeApi::always(layout_answer("auto picked glm-ocr"));
    let out = env
        .zhi()
        .args(["--json", "extract", "scan.png"])
        .env("PATH", empty_path(&env))
        .env("ZHI_BASE_URL", api.zhipu_base_url())
        .env("ZHI_API_KEY", KEY)
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&out)));
    assert_eq!(v["text"], "auto picked glm-ocr");
    assert_eq!(v["ocr_engine"], "glm-ocr");
    assert_eq!(routes(&api), vec![r("POST", "/layout_parsing")]);
}

#[test]
fn auto_without_tesseract_or_key_says_how_to_get_an_engine() {
    let env = env_with_png();
    let out = env
        .zhi()
        .args(["extract", "scan.png"])
        .env("PATH", empty_path(&env))
        .output()
        .unwrap();
    assert_exit(&out, Exit::JobsFailed);
    let err = stderr(&out);
    assert!(err.contains("ocr_failed"), "{err}");
    assert!(err.contains("install tesseract"), "{err}");
    assert!(err.contains("ZHI_API_KEY"), "{err}");
}

/// `zhi run` over a picture: the job's extraction (on the run's runtime) reads it with glm-ocr
/// and the model is given the markdown.
#[test]
fn a_run_over_an_image_gives_the_model_the_ocr_text() {
    let env = env_with_png();
    let marker = format!("OCR-MARK-{:08x}", fastrand::u32(..));
    let md = format!("# Scanned letter\n\nReference {marker}");
    let api = FakeApi::start(move |req| {
        if req.path.ends_with("/layout_parsing") {
            layout_answer(&md)
        } else if req.is_chat() {
            Reply::text("A short summary.")
        } else {
            Reply::status(404, json!({"error": {"message": "no route"}}))
        }
    });
    let base = api.base_url();
    let out = env
        .zhi()
        .args([
            "--no-progress",
            "run",
            "summarize",
            "scan.png",
            "--ocr",
            "glm-ocr",
        ])
        .args(["--base-url", &base, "-o", "out"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let reqs = api.requests();
    assert_eq!(reqs[0].path, "/v1/layout_parsing");
    let chat = api.chat_requests();
    let first_user = chat[0].last_user_text().unwrap_or_default();
    assert!(
        first_user.contains(&marker),
        "the model was not given the OCR text: {first_user}"
    );
}

// The library, from every kind of thread extraction runs on.

fn engine(base_url: String, cancel: Option<CancellationToken>) -> Arc<ZhipuOcr> {
    let mut settings = ClientSettings::new(base_url, None);
    settings.retry.base_delay = Duration::from_millis(10);
    settings.retry.max_delay = Duration::from_millis(20);
    Arc::new(ZhipuOcr::new(ChatClient::new(settings).unwrap(), cancel))
}

fn png_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("page.png");
    std::fs::write(&path, page_png()).unwrap();
    (dir, path)
}

fn read(ocr: &ZhipuOcr, path: &Path) -> String {
    ocr.recognise(ApiEngine::GlmOcr, path).expect("recognised")
}

#[test]
fn works_without_a_runtime_and_from_several_threads_at_once() {
    let api = FakeApi::always(layout_answer("plain thread"));
    let ocr = engine(api.base_url(), None);
    let (_dir, png) = png_file();
    assert_eq!(read(&ocr, &png), "plain thread");
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| read(&ocr, &png))).collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), "plain thread");
        }
    });
    assert_eq!(api.count(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_on_a_runtimes_blocking_pool_and_on_its_workers() {
    let api = FakeApi::always(layout_answer("in a runtime"));
    let ocr = engine(api.base_url(), None);
    let (_dir, png) = png_file();
    let (o, p) = (Arc::clone(&ocr), png.clone());
    let text = tokio::task::spawn_blocking(move || read(&o, &p))
        .await
        .unwrap();
    assert_eq!(text, "in a runtime");
    // Straight from an async task (a careless caller): blocks in place, no panic.
    assert_eq!(read(&ocr, &png), "in a runtime");
    assert_eq!(api.count(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn works_inside_a_current_thread_runtime() {
    let api = FakeApi::always(layout_answer("current thread"));
    let ocr = engine(api.base_url(), None);
    let (_dir, png) = png_file();
    assert_eq!(read(&ocr, &png), "current thread");
    let (o, p) = (Arc::clone(&ocr), png.clone());
    let text = tokio::task::spawn_blocking(move || read(&o, &p))
        .await
        .unwrap();
    assert_eq!(text, "current thread");
    // Dropped inside the runtime: its own runtime shuts down without a panic.
    drop(ocr);
}

#[test]
fn a_cancelled_content_read_still_deletes_the_upload() {
    let api = files_api(Reply::hang(), deleted());
    let cancel = CancellationToken::new();
    let ocr = engine(api.zhipu_base_url(), Some(cancel.clone()));
    let (_dir, png) = png_file();
    let started = Instant::now();
    let result = std::thread::scope(|s| {
        let reader = s.spawn(|| ocr.recognise(ApiEngine::FileExtract, &png));
        while !api.requests().iter().any(|q| q.method == "GET") {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no content request"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        cancel.cancel();
        reader.join().unwrap()
    });
    let err = result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Cancelled, "{err}");
    assert_eq!(
        routes(&api),
        vec![
            r("POST", "/files"),
            r("GET", "/files/file-7f3a/content"),
            r("DELETE", "/files/file-7f3a"),
        ]
    );
}
