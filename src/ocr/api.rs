//! The OCR engines that go through the model API (docs/documents.md#ocr-engines): `glm-ocr`
//! (Zhipu's layout-parsing endpoint), `file-extract` (Zhipu's files API) and `vision` (a vision
//! chat model).
//!
//! Every request goes through a [`ChatClient`], so OCR calls get the same retries, failure
//! classification (docs/model-api.md#error-classification), rate limits and cancellation as chat.
//! [`ApiOcr`] is blocking (extraction runs on blocking threads, and `zhi extract` has no async
//! runtime at all), so [`ZhipuOcr`] bridges: inside a multi-threaded tokio runtime it blocks in
//! place on that runtime; anywhere else it drives the request on a small runtime of its own.
//!
//! This module must never leave an uploaded file on the account (it holds at most 100 files):
//! the delete runs whatever happened to the content request, cancellation included. It must
//! never turn an `auth` or `quota` failure into a per-document failure (the run has to abort),
//! and never put the API key into a message (the client redacts server text that echoes it).

use super::{ApiEngine, ApiOcr};
use crate::config::Config;
use crate::error::{ErrorKind, JobError};
use crate::llm::{ApiError, ChatClient, ChatRequest, ContentPart, Endpoint, Message};
use crate::subprocess as process;
use base64::Engine as _;
use serde_json::{Value, json};
use std::future::Future;
use std::io::Read as _;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The model of the layout-parsing endpoint.
pub(crate) const GLM_OCR_MODEL: &str = "glm-ocr";

/// The vision chat model of the `vision` engine.
pub(crate) const VISION_MODEL: &str = "glm-4v-flash";

/// What the vision model is asked to do with the image.
const VISION_PROMPT: &str = "Transcribe all text in this image exactly, as Markdown. Keep the \
    reading order, headings, lists and tables. Do not translate, summarise, correct or comment; \
    output only the transcription. If the image contains no text, output nothing.";

/// How long the delete of an uploaded file may take, retries included. It runs with its own
/// cancellation (the run's may already be cancelled), so it needs a limit of its own.
const DELETE_LIMIT: Duration = Duration::from_secs(30);

/// How long `pdfinfo` may take to count the pages of a PDF.
const PDFINFO_LIMIT: Duration = Duration::from_secs(30);

const MIB: u64 = 1 << 20;

/// The API OCR engines on Zhipu's endpoints (or any server that speaks them).
///
/// Cheap to share: one value serves every extraction thread of a run.
pub struct ZhipuOcr {
    client: ChatClient,
    /// The run's cancellation: in-flight requests are dropped and the result is `cancelled`.
    cancel: Option<CancellationToken>,
    vision_model: String,
    /// Drives requests made outside any multi-threaded tokio runtime; built on first need.
    runtime: OnceLock<OwnRuntime>,
}

impl std::fmt::Debug for ZhipuOcr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZhipuOcr")
            .field("client", &self.client)
            .field("vision_model", &self.vision_model)
            .finish_non_exhaustive()
    }
}

impl ZhipuOcr {
    /// Engines over `client`, with the vision model [`VISION_MODEL`].
    pub fn new(client: ChatClient, cancel: Option<CancellationToken>) -> Self {
        ZhipuOcr {
            client,
            cancel,
            vision_model: VISION_MODEL.to_owned(),
            runtime: OnceLock::new(),
        }
    }

    async fn recognise_async(&self, engine: ApiEngine, file: &Upload) -> Result<String, ApiError> {
        let cancel = self.cancel.clone().unwrap_or_default();
        match engine {
            ApiEngine::GlmOcr => self.layout_parsing(file, &cancel).await,
            ApiEngine::FileExtract => self.file_extract(file, &cancel).await,
            ApiEngine::Vision => self.vision(file, &cancel).await,
        }
    }

    /// `POST <base>/layout_parsing` with the file as a data URL; the markdown of the answer.
    async fn layout_parsing(
        &self,
        file: &Upload,
        cancel: &CancellationToken,
    ) -> Result<String, ApiError> {
        let url = self.client.endpoint(Endpoint::LayoutParsing, &[])?;
        let body = serde_json::to_vec(&json!({"model": GLM_OCR_MODEL, "file": file.data_url()}))
            .map_err(|e| {
                ApiError::new(
                    ErrorKind::ApiError,
                    false,
                    msg!("cannot encode request: {e}"),
                )
            })?;
        let response = self
            .client
            .send(
                |http| {
                    http.post(url.clone())
                        .header(reqwest::header::CONTENT_TYPE, "application/json")
                        .body(body.clone())
                },
                cancel,
            )
            .await?;
        let value: Value = response.json()?;
        layout_markdown(&value).ok_or_else(|| {
            shape_error(
                "the layout_parsing response has no md_results, markdown, content or \
                 layout_details text",
                &value,
            )
        })
    }

    /// Upload with `purpose=file-extract`, read the content, and delete the upload whatever
    /// happened to the read.
    async fn file_extract(
        &self,
        file: &Upload,
        cancel: &CancellationToken,
    ) -> Result<String, ApiError> {
        let files_url = self.client.endpoint(Endpoint::Files, &[])?;
        let uploaded = self
            .client
            .send(
                |http| {
                    let form = reqwest::multipart::Form::new()
                        .text("purpose", "file-extract")
                        .part("file", file.part());
                    http.post(files_url.clone()).multipart(form)
                },
                cancel,
            )
            .await?;
        let value: Value = uploaded.json()?;
        let id = match value.get("id") {
            Some(Value::String(id)) if !id.is_empty() => id.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(shape_error("the upload response has no file id", &value)),
        };
        let file_url = self.file_url(&id)?;
        let content = self.file_content(&file_url, cancel).await;
        self.delete_upload(&id, &file_url).await;
        content
    }

    /// `<base>/files/<id>`, the id encoded as one path segment (it comes from the server).
    fn file_url(&self, id: &str) -> Result<reqwest::Url, ApiError> {
        self.client.endpoint(Endpoint::Files, &[id])
    }

    async fn file_content(
        &self,
        file_url: &reqwest::Url,
        cancel: &CancellationToken,
    ) -> Result<String, ApiError> {
        let mut url = file_url.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.push("content");
        }
        let response = self
            .client
            .send(|http| http.get(url.clone()), cancel)
            .await?;
        let value: Value = response.json()?;
        let content = value
            .get("content")
            .or_else(|| value.get("data").and_then(|d| d.get("content")));
        match content {
            Some(Value::String(text)) => Ok(text.clone()),
            _ => Err(shape_error(
                "the file content response has no content text",
                &value,
            )),
        }
    }

    /// `DELETE <base>/files/<id>` under its own cancellation and time limit: it must run even
    /// when the run was just cancelled. A failure is logged, never the job's failure.
    async fn delete_upload(&self, id: &str, file_url: &reqwest::Url) {
        let own = CancellationToken::new();
        let delete = self.client.send(|http| http.delete(file_url.clone()), &own);
        match tokio::time::timeout(DELETE_LIMIT, delete).await {
            Ok(Ok(_)) => tracing::debug!(file_id = id, "deleted the uploaded file"),
            Ok(Err(e)) => tracing::warn!(
                file_id = id,
                error = %e,
                "{}",
                msg!(
                    "could not delete the file uploaded for OCR; the account holds at most 100 \
                     files, delete it in the API console"
                )
            ),
            Err(_) => tracing::warn!(
                file_id = id,
                "{}",
                msg!(
                    "deleting the file uploaded for OCR took more than {DELETE_LIMIT:?}; delete \
                     it in the API console"
                )
            ),
        }
    }

    /// A chat request to the vision model with the prompt and the image as a data URL.
    async fn vision(&self, file: &Upload, cancel: &CancellationToken) -> Result<String, ApiError> {
        let request = ChatRequest::new(
            self.vision_model.clone(),
            vec![Message::user_parts(vec![
                ContentPart::text(VISION_PROMPT),
                ContentPart::image_url(file.data_url()),
            ])],
        );
        let reply = self.client.chat(&request, cancel).await?;
        Ok(strip_fence(reply.message.content.as_deref().unwrap_or("")).to_owned())
    }

    /// Runs `fut` to its end from this blocking call, whatever thread we are on.
    fn block_on<F>(&self, fut: F) -> Result<F::Output, JobError>
    where
        F: Future + Send,
        F::Output: Send,
    {
        use tokio::runtime::{Handle, RuntimeFlavor};
        match Handle::try_current() {
            // A blocking-pool thread or a worker of the run's runtime: block in place there,
            // so the request uses the run's runtime (a worker hands its other tasks off first).
            Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
                Ok(tokio::task::block_in_place(|| handle.block_on(fut)))
            }
            // A current-thread runtime cannot lend its only thread, and blocking on it from
            // one of its own tasks would panic: drive the request from a helper thread.
            Ok(_) => {
                let runtime = self.runtime()?;
                Ok(std::thread::scope(|scope| {
                    scope
                        .spawn(|| runtime.block_on(fut))
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                }))
            }
            Err(_) => Ok(self.runtime()?.block_on(fut)),
        }
    }

    fn runtime(&self) -> Result<&tokio::runtime::Runtime, JobError> {
        if self.runtime.get().is_none() {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("zhi-ocr-api")
                .enable_all()
                .build()
                .map_err(|e| {
                    JobError::new(
                        ErrorKind::OcrFailed,
                        msg!("cannot start the OCR API runtime: {e}"),
                    )
                })?;
            // Another thread may have won the race; the loser is shut down without blocking.
            let _ = self.runtime.set(OwnRuntime(Some(runtime)));
        }
        self.runtime
            .get()
            .and_then(|own| own.0.as_ref())
            .ok_or_else(|| JobError::new(ErrorKind::OcrFailed, msg!("the OCR API runtime is gone")))
    }
}

impl ApiOcr for ZhipuOcr {
    fn recognise(&self, engine: ApiEngine, file: &Path) -> Result<String, JobError> {
        let upload = Upload::read(engine, file)?;
        if self.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            return Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled")));
        }
        self.block_on(self.recognise_async(engine, &upload))?
            .map_err(|e| ocr_error(engine, &e))
    }
}

/// A runtime that may be dropped anywhere, async contexts included (a plain `Runtime` panics
/// when dropped inside one): it is shut down in the background.
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// The API engines for a run, on the run's client: `Some` when an API key is configured or the base URL is on this
/// machine (a local server needs no key); `None` otherwise, and then `--ocr glm-ocr`, `vision`
/// and `file-extract` fail with a message that says to set a key.
pub(crate) fn api_engine(
    config: &Config,
    client: ChatClient,
    cancel: Option<CancellationToken>,
) -> Option<Arc<dyn ApiOcr>> {
    if config.api.key.is_none() && !config.api.base_url_is_local() {
        return None;
    }
    Some(Arc::new(ZhipuOcr::new(client, cancel)))
}

/// An API failure as the job's: `auth` and `quota` keep their kind (the run aborts) and so
/// does `cancelled`; everything else is `ocr_failed`, with the API's kind kept in the message.
fn ocr_error(engine: ApiEngine, e: &ApiError) -> JobError {
    let kind = if e.aborts_run() || e.kind == ErrorKind::Cancelled {
        e.kind
    } else {
        ErrorKind::OcrFailed
    };
    JobError::new(kind, format!("{}: {e}", engine.as_str()))
}

/// A response of the wrong shape: not retried, with a short excerpt of what came.
fn shape_error(what: &str, value: &Value) -> ApiError {
    let text = value.to_string();
    let excerpt: String = text.chars().take(200).collect();
    let more = if excerpt.len() < text.len() {
        "…"
    } else {
        ""
    };
    ApiError::new(
        ErrorKind::ApiError,
        false,
        format!("{what}: {}{more}", crate::sanitize::one_line(&excerpt)),
    )
}

/// The markdown of a layout-parsing answer. Accepted, first match wins, also under a `data`
/// wrapper: `md_results` as a string (even empty: a page without text) or an array of strings
/// (one per page); `markdown` or `content` as a string; `layout_details` as an array of pages
/// (each an array of blocks) or of blocks, where blocks with a string `content` are joined
/// with blank lines. `None` when none of these is there.
fn layout_markdown(value: &Value) -> Option<String> {
    let strings = |v: &Value| -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Array(items) if items.iter().all(Value::is_string) && !items.is_empty() => Some(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("\n\n"),
            ),
            _ => None,
        }
    };
    let direct = ["md_results", "markdown", "content"]
        .iter()
        .find_map(|field| value.get(field).and_then(strings));
    if direct.is_some() {
        return direct;
    }
    if let Some(Value::Array(details)) = value.get("layout_details") {
        let mut blocks = Vec::new();
        for item in details {
            match item {
                Value::Array(page) => blocks.extend(page.iter().filter_map(block_text)),
                block => blocks.extend(block_text(block)),
            }
        }
        if !blocks.is_empty() {
            return Some(blocks.join("\n\n"));
        }
    }
    match value.get("data") {
        Some(data @ Value::Object(_)) => layout_markdown(data),
        _ => None,
    }
}

fn block_text(block: &Value) -> Option<&str> {
    block
        .get("content")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// A vision model's answer without the code fence it may wrap the whole transcription in.
fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return text;
    };
    let Some((info, body)) = rest.split_once('\n') else {
        return text;
    };
    let info = info.trim();
    if !(info.is_empty() || info.eq_ignore_ascii_case("markdown") || info == "md") {
        return text;
    }
    match body.trim_end().strip_suffix("```") {
        Some(inner) if !inner.contains("\n```") => inner.trim_end(),
        _ => text,
    }
}

/// The kinds of file the API engines send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Media {
    Png,
    Jpeg,
    Pdf,
}

impl Media {
    /// By content, not by name.
    fn sniff(bytes: &[u8]) -> Option<Media> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Media::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Media::Jpeg)
        } else if bytes.len() >= 5
            && bytes[..bytes.len().min(1024)]
                .windows(5)
                .any(|w| w == b"%PDF-")
        {
            Some(Media::Pdf)
        } else {
            None
        }
    }

    fn mime(self) -> &'static str {
        match self {
            Media::Png => "image/png",
            Media::Jpeg => "image/jpeg",
            Media::Pdf => "application/pdf",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Media::Png => "png",
            Media::Jpeg => "jpg",
            Media::Pdf => "pdf",
        }
    }
}

/// What an engine's API takes (the provider's published limits).
struct Accepts {
    media: &'static [Media],
    /// What the message lists as accepted.
    names: &'static str,
    image_bytes: u64,
    pdf_bytes: u64,
    pdf_pages: Option<u32>,
}

fn accepts(engine: ApiEngine) -> Accepts {
    match engine {
        ApiEngine::GlmOcr => Accepts {
            media: &[Media::Pdf, Media::Jpeg, Media::Png],
            names: "PDF, JPG and PNG",
            image_bytes: 10 * MIB,
            pdf_bytes: 50 * MIB,
            pdf_pages: Some(100),
        },
        ApiEngine::FileExtract => Accepts {
            media: &[Media::Pdf, Media::Jpeg, Media::Png],
            names: "PDF, JPG and PNG",
            image_bytes: 5 * MIB,
            pdf_bytes: 50 * MIB,
            pdf_pages: None,
        },
        ApiEngine::Vision => Accepts {
            media: &[Media::Jpeg, Media::Png],
            names: "JPG and PNG",
            image_bytes: ApiEngine::Vision.limits().max_bytes,
            pdf_bytes: 0,
            pdf_pages: None,
        },
    }
}

/// A file checked against its engine's limits and read into memory.
struct Upload {
    bytes: Vec<u8>,
    media: Media,
    name: String,
}

impl Upload {
    fn read(engine: ApiEngine, path: &Path) -> Result<Upload, JobError> {
        Self::read_counting(engine, path, pdf_pages)
    }

    /// [`Upload::read`], counting a PDF's pages with `pages` (`pdfinfo`'s count in `read`).
    fn read_counting(
        engine: ApiEngine,
        path: &Path,
        pages: fn(&Path) -> Option<u32>,
    ) -> Result<Upload, JobError> {
        let failed =
            |m: String| JobError::new(ErrorKind::OcrFailed, format!("{}: {m}", engine.as_str()));
        let rules = accepts(engine);
        let cannot_read = |e: std::io::Error| failed(msg!("cannot read the file: {e}"));
        // The kind first (from the head of the file), then its size: a file that is too large
        // is never read whole.
        let mut file = std::fs::File::open(path).map_err(cannot_read)?;
        let mut head = Vec::with_capacity(1024);
        (&mut file)
            .take(1024)
            .read_to_end(&mut head)
            .map_err(cannot_read)?;
        let media = Media::sniff(&head)
            .filter(|m| rules.media.contains(m))
            .ok_or_else(|| {
                failed(msg!(
                    "the API reads {} files; this is none of them",
                    rules.names
                ))
            })?;
        let limit = match media {
            Media::Pdf => rules.pdf_bytes,
            Media::Png | Media::Jpeg => rules.image_bytes,
        };
        let len = file.metadata().map_err(cannot_read)?.len();
        let mut bytes = head;
        if len <= limit {
            // At most one byte past the limit, should the file grow meanwhile.
            let rest = (limit + 1).saturating_sub(bytes.len() as u64);
            file.take(rest)
                .read_to_end(&mut bytes)
                .map_err(cannot_read)?;
        }
        let len = len.max(bytes.len() as u64);
        let what = if media == Media::Pdf { "PDF" } else { "image" };
        if len > limit {
            return Err(failed(msg!(
                "the {what} is {}; the API takes {what}s of at most {}",
                size(len),
                size(limit)
            )));
        }
        if media == Media::Pdf
            && let (Some(max), Some(pages)) = (rules.pdf_pages, pages(path))
            && pages > max
        {
            return Err(failed(msg!(
                "the PDF has {pages} pages; the API takes at most {max}"
            )));
        }
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "page".to_owned());
        Ok(Upload {
            name: format!("{stem}.{}", media.extension()),
            bytes,
            media,
        })
    }

    fn data_url(&self) -> String {
        format!(
            "data:{};base64,{}",
            self.media.mime(),
            base64::engine::general_purpose::STANDARD.encode(&self.bytes)
        )
    }

    /// The multipart file part; built once per attempt (a form cannot be reused).
    fn part(&self) -> reqwest::multipart::Part {
        let part =
            || reqwest::multipart::Part::bytes(self.bytes.clone()).file_name(self.name.clone());
        // The MIME types above are constants that always parse; without one the server goes
        // by the file name.
        part()
            .mime_str(self.media.mime())
            .unwrap_or_else(|_| part())
    }
}

/// A PDF's page count from `pdfinfo`, when it is installed; otherwise the API checks.
fn pdf_pages(path: &Path) -> Option<u32> {
    let pdfinfo = process::find_program("pdfinfo")?;
    let mut cmd = process::command(&pdfinfo, std::iter::empty::<&str>());
    cmd.arg(path);
    let done = process::run(cmd, PDFINFO_LIMIT, 1 << 20, None).ok()?;
    pages_from_pdfinfo(&String::from_utf8_lossy(&done.stdout))
}

/// The page count in `pdfinfo`'s output (`Pages:           2`).
fn pages_from_pdfinfo(out: &str) -> Option<u32> {
    out.lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .and_then(|n| n.trim().parse().ok())
}

fn size(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / MIB as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApiKey;
    use crate::llm::ClientSettings;

    #[test]
    fn markdown_is_found_in_every_documented_shape() {
        let md = |v: Value| layout_markdown(&v);
        assert_eq!(
            md(json!({"md_results": "# T\nbody", "layout_details": [[{"content": "x"}]]})),
            Some("# T\nbody".into())
        );
        assert_eq!(md(json!({"md_results": ""})), Some(String::new()));
        assert_eq!(
            md(json!({"md_results": ["page 1", "page 2"]})),
            Some("page 1\n\npage 2".into())
        );
        assert_eq!(
            md(json!({"layout_details": [
                [{"label": "text", "content": "a"}, {"label": "image"}],
                [{"label": "text", "content": "b"}]
            ]})),
            Some("a\n\nb".into())
        );
        assert_eq!(
            md(json!({"layout_details": [{"content": "flat"}]})),
            Some("flat".into())
        );
        assert_eq!(
            md(json!({"data": {"markdown": "wrapped"}})),
            Some("wrapped".into())
        );
        assert_eq!(md(json!({"id": "task", "usage": {}})), None);
        assert_eq!(md(json!({"layout_details": [[{"label": "image"}]]})), None);
    }

    #[test]
    fn one_outer_fence_is_stripped_inner_code_kept() {
        assert_eq!(
            strip_fence("```markdown\n# Title\n\ntext\n```\n"),
            "# Title\n\ntext"
        );
        assert_eq!(strip_fence("```\nplain\n```"), "plain");
        assert_eq!(strip_fence("no fence"), "no fence");
        let two = "```\na\n```\nmiddle\n```\nb\n```";
        assert_eq!(strip_fence(two), two);
        let rust = "```rust\nfn main() {}\n```";
        assert_eq!(strip_fence(rust), rust);
    }

    #[test]
    fn files_are_sniffed_by_content() {
        assert_eq!(Media::sniff(b"\x89PNG\r\n\x1a\nrest"), Some(Media::Png));
        assert_eq!(Media::sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some(Media::Jpeg));
        assert_eq!(Media::sniff(b"%PDF-1.7\n"), Some(Media::Pdf));
        assert_eq!(Media::sniff(b"GIF89a"), None);
        assert_eq!(Media::sniff(b""), None);
    }

    fn scratch(name: &str, bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    #[test]
    fn limits_are_checked_before_anything_is_sent() {
        let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
        big.resize((10 * MIB + 1) as usize, 0);
        let (_d, png) = scratch("big.png", &big);
        let err = Upload::read(ApiEngine::GlmOcr, &png).err().unwrap();
        assert_eq!(err.kind, ErrorKind::OcrFailed);
        assert!(err.message.contains("glm-ocr"), "{}", err.message);
        assert!(
            err.message.contains("images of at most 10.0 MiB"),
            "{}",
            err.message
        );
        // The same bytes as a PDF are within glm-ocr's 50 MiB.
        big[..8].copy_from_slice(b"%PDF-1.4");
        let (_d2, pdf) = scratch("big.pdf", &big);
        assert!(Upload::read(ApiEngine::GlmOcr, &pdf).is_ok());
        // file-extract takes images of 5 MiB, vision takes no PDF.
        let (_d3, mid) = scratch("mid.png", &{
            let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
            v.resize((6 * MIB) as usize, 0);
            v
        });
        let err = Upload::read(ApiEngine::FileExtract, &mid).err().unwrap();
        assert!(err.message.contains("at most 5.0 MiB"), "{}", err.message);
        let err = Upload::read(ApiEngine::Vision, &pdf).err().unwrap();
        assert!(err.message.contains("JPG and PNG"), "{}", err.message);
        let (_d4, gif) = scratch("a.gif", b"GIF89a....");
        let err = Upload::read(ApiEngine::GlmOcr, &gif).err().unwrap();
        assert!(err.message.contains("PDF, JPG and PNG"), "{}", err.message);
    }

    /// What `pdfinfo` 22.12 prints for a two-page PDF.
    const PDFINFO_OUT: &str = "Custom Metadata: no\nMetadata Stream: no\nTagged:          no\n\
        UserProperties:  no\nSuspects:        no\nForm:            none\nJavaScript:      no\n\
        Pages:           2\nEncrypted:       no\nPage size:       612 x 792 pts (letter)\n\
        Page rot:        0\nFile size:       296 bytes\nOptimized:       no\nPDF version:     1.4\n";

    #[test]
    fn page_counts_are_read_from_pdfinfo() {
        assert_eq!(pages_from_pdfinfo(PDFINFO_OUT), Some(2));
        assert_eq!(pages_from_pdfinfo("Syntax Error: not a PDF\n"), None);
    }

    /// The real `pdfinfo` is run by `tests/ext` (`ocr_api::`), where its absence is reported.
    #[test]
    fn pdfs_of_more_than_100_pages_are_refused_for_glm_ocr() {
        let (_d, pdf) = scratch("long.pdf", b"%PDF-1.4\n%%EOF\n");
        let err = Upload::read_counting(ApiEngine::GlmOcr, &pdf, |_| Some(101))
            .err()
            .unwrap();
        assert_eq!(err.kind, ErrorKind::OcrFailed);
        assert!(err.message.contains("101 pages"), "{}", err.message);
        assert!(Upload::read_counting(ApiEngine::FileExtract, &pdf, |_| Some(101)).is_ok());
        assert!(Upload::read_counting(ApiEngine::GlmOcr, &pdf, |_| Some(100)).is_ok());
        // No count (no pdfinfo): the API checks.
        assert!(Upload::read_counting(ApiEngine::GlmOcr, &pdf, |_| None).is_ok());
    }

    #[test]
    fn uploads_are_named_for_what_they_are() {
        let (_d, path) = scratch("page", b"\xFF\xD8\xFF\xE0jpeg");
        let upload = Upload::read(ApiEngine::FileExtract, &path).unwrap();
        assert_eq!(upload.name, "page.jpg");
        assert!(upload.data_url().starts_with("data:image/jpeg;base64,/9j/"));
    }

    #[test]
    fn auth_and_quota_keep_their_kind_everything_else_is_ocr_failed() {
        let mut auth = ApiError::new(ErrorKind::Auth, false, "HTTP 401: invalid key");
        auth.status = Some(401);
        assert_eq!(ocr_error(ApiEngine::GlmOcr, &auth).kind, ErrorKind::Auth);
        let quota = ApiError::new(ErrorKind::Quota, false, "1113 arrears");
        assert_eq!(ocr_error(ApiEngine::Vision, &quota).kind, ErrorKind::Quota);
        assert_eq!(
            ocr_error(ApiEngine::Vision, &ApiError::cancelled()).kind,
            ErrorKind::Cancelled
        );
        for kind in [
            ErrorKind::ApiError,
            ErrorKind::RateLimited,
            ErrorKind::Timeout,
            ErrorKind::ContentFilter,
        ] {
            let err = ocr_error(ApiEngine::FileExtract, &ApiError::new(kind, true, "boom"));
            assert_eq!(err.kind, ErrorKind::OcrFailed);
            assert!(err.message.starts_with("file-extract: "), "{}", err.message);
            assert!(err.message.contains(kind.as_str()), "{}", err.message);
        }
    }

    fn config(base_url: &str, key: Option<&str>) -> Config {
        let dir = tempfile::tempdir().unwrap();
        let mut config =
            Config::resolve(&crate::config::Overrides::default(), &|_| None, dir.path()).unwrap();
        config.api.base_url = base_url.to_owned();
        config.api.key = key.map(ApiKey::new);
        config
    }

    #[test]
    fn engines_exist_with_a_key_or_a_local_server() {
        let engine = |c: Config| {
            let client = crate::run::context::client(&c).unwrap();
            api_engine(&c, client, None).is_some()
        };
        assert!(!engine(config(
            "https://open.bigmodel.cn/api/paas/v4",
            None
        )));
        assert!(engine(config(
            "https://open.bigmodel.cn/api/paas/v4",
            Some("k")
        )));
        assert!(engine(config("http://127.0.0.1:8080/v1", None)));
    }

    #[test]
    fn file_ids_are_one_escaped_path_segment() {
        let client =
            ChatClient::new(ClientSettings::new("http://127.0.0.1:9/api/paas/v4/", None)).unwrap();
        let ocr = ZhipuOcr::new(client, None);
        assert_eq!(
            ocr.file_url("abc-1").unwrap().as_str(),
            "http://127.0.0.1:9/api/paas/v4/files/abc-1"
        );
        assert_eq!(
            ocr.file_url("../x?y").unwrap().as_str(),
            "http://127.0.0.1:9/api/paas/v4/files/..%2Fx%3Fy"
        );
    }

    #[test]
    fn a_cancelled_run_sends_nothing() {
        let client = ChatClient::new(ClientSettings::new("http://127.0.0.1:9/v1", None)).unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let ocr = ZhipuOcr::new(client.clone(), Some(cancel));
        let (_d, png) = scratch("a.png", b"\x89PNG\r\n\x1a\nx");
        let err = ocr.recognise(ApiEngine::GlmOcr, &png).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Cancelled);
        assert_eq!(client.requests_sent(), 0);
    }
}
