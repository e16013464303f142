//! The bridge between the agent's tools and the extraction room: `file_read` and the first
//! message get extracted text (PDF text layers, office files, OCR for images and scans); the
//! `ocr` tool gets OCR of every page. The tools only ever pass paths the sandbox checked.

use crate::agent::tools::DocumentReader;
use crate::config::Config;
use crate::error::JobError;
use crate::extract::{self, ExtractOptions};
use crate::llm::ChatClient;
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// Reads documents the way the pipeline does.
pub(crate) struct PipelineReader {
    opts: ExtractOptions,
}

impl PipelineReader {
    /// Options for a run: the configured OCR engine (its API engines on the run's `client`,
    /// so OCR requests share the run's rate budget), OCR workers shared out among the
    /// documents in flight, and the run's cancellation.
    pub(crate) fn new(
        config: &Config,
        client: Option<ChatClient>,
        concurrency: usize,
        cancel: Option<CancellationToken>,
    ) -> PipelineReader {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let opts = ExtractOptions {
            ocr: config.run.ocr,
            api_ocr: client.and_then(|c| crate::ocr::api::api_engine(config, c, cancel.clone())),
            ocr_parallelism: (cores / concurrency.max(1)).max(1),
            cancel,
            ..ExtractOptions::default()
        };
        PipelineReader { opts }
    }

    pub(crate) fn options(&self) -> &ExtractOptions {
        &self.opts
    }
}

impl DocumentReader for PipelineReader {
    fn read_text(&self, path: &Path) -> Result<String, JobError> {
        extract::extract(path, &self.opts).map(|e| e.text)
    }

    fn read_document(&self, path: &Path) -> Result<(String, Vec<String>), JobError> {
        extract::extract(path, &self.opts).map(|e| (e.text, e.warnings))
    }

    fn ocr(&self, path: &Path) -> Result<String, JobError> {
        extract::ocr_file(path, &self.opts).map(|e| e.text)
    }
}
