//! How `file_read` and `ocr` turn a checked path into text.
//!
//! The tools never parse documents themselves: extraction (PDF workers, office files, OCR
//! engines) lives in its own module and is handed in through [`DocumentReader`]. The reader only
//! ever receives paths that passed the sandbox's checks.

use std::path::Path;

use crate::error::JobError;
#[cfg(test)]
use {crate::error::ErrorKind, std::fs::File, std::io::Read};

/// Turns a document into the text the model is given.
pub(crate) trait DocumentReader: Send + Sync {
    /// The document's text (extracted for PDFs, office files and images).
    fn read_text(&self, path: &Path) -> Result<String, JobError>;
    /// The document's text and what a person should know about how it was read (pages whose
    /// text was lost).
    fn read_document(&self, path: &Path) -> Result<(String, Vec<String>), JobError> {
        self.read_text(path).map(|t| (t, Vec::new()))
    }
    /// The document's text by OCR, with the configured engine.
    fn ocr(&self, path: &Path) -> Result<String, JobError>;
}

/// The largest file [`PlainTextReader`] loads.
#[cfg(test)]
const PLAIN_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// How much of the start of a file decides whether it is binary.
#[cfg(test)]
const SNIFF_BYTES: usize = 8 * 1024;

/// Reads text files only (UTF-8, or UTF-16 with a byte-order mark; invalid bytes replaced).
/// Binary files are `unsupported_type`; there is no OCR engine.
#[cfg(test)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PlainTextReader;

#[cfg(test)]
impl DocumentReader for PlainTextReader {
    fn read_text(&self, path: &Path) -> Result<String, JobError> {
        // Messages leave the path out: the caller names the file the way the model knows it.
        let io_error = |e: std::io::Error| {
            JobError::new(ErrorKind::InputError, format!("cannot be read: {e}"))
        };
        let file = File::open(path).map_err(io_error)?;
        let mut bytes = Vec::new();
        file.take(PLAIN_MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io_error)?;
        if bytes.len() as u64 > PLAIN_MAX_BYTES {
            return Err(JobError::new(
                ErrorKind::TooLarge,
                format!("larger than {} MB", PLAIN_MAX_BYTES / (1024 * 1024)),
            ));
        }
        if let Some((encoding, bom_len)) = encoding_rs::Encoding::for_bom(&bytes) {
            let (text, _) = encoding.decode_without_bom_handling(&bytes[bom_len..]);
            return Ok(text.into_owned());
        }
        if is_binary(&bytes) {
            return Err(JobError::new(
                ErrorKind::UnsupportedType,
                msg!("not a text file"),
            ));
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn ocr(&self, _path: &Path) -> Result<String, JobError> {
        Err(JobError::new(
            ErrorKind::OcrFailed,
            msg!("no OCR engine configured"),
        ))
    }
}

/// NUL bytes in the first few KB mark a binary file (text has none, outside UTF-16).
#[cfg(test)]
fn is_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    let nuls = head.iter().filter(|b| **b == 0).count();
    let heavy = nuls > 0 && nuls * 100 >= head.len();
    heavy || head.windows(2).any(|w| w == [0, 0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use tempfile::TempDir;

    #[test]
    fn reads_utf8_utf16_and_refuses_binary() {
        let dir = TempDir::new().unwrap();
        let utf8 = dir.path().join("a.txt");
        fs::write(&utf8, "季度报告 q3\n").unwrap();
        assert_eq!(PlainTextReader.read_text(&utf8).unwrap(), "季度报告 q3\n");

        let utf16 = dir.path().join("b.txt");
        let mut bytes = vec![0xFF, 0xFE];
        for unit in "报告".encode_utf16() {
            bytes.extend_from_slice(&unit.to_le_bytes());
        }
        fs::write(&utf16, bytes).unwrap();
        assert_eq!(PlainTextReader.read_text(&utf16).unwrap(), "报告");

        let binary = dir.path().join("c.bin");
        fs::write(&binary, [0x89, b'P', b'N', b'G', 0, 0, 0, 13, 1, 2, 3]).unwrap();
        let err = PlainTextReader.read_text(&binary).unwrap_err();
        assert_eq!(err.kind, ErrorKind::UnsupportedType);

        let lossy = dir.path().join("d.txt");
        fs::write(&lossy, [b'o', b'k', 0xFF, b'!']).unwrap();
        assert_eq!(PlainTextReader.read_text(&lossy).unwrap(), "ok\u{FFFD}!");

        let err = PlainTextReader.ocr(&utf8).unwrap_err();
        assert_eq!(err.kind, ErrorKind::OcrFailed);
        assert!(err.message.contains("no OCR engine"));
        let err = PlainTextReader
            .read_text(&dir.path().join("missing.txt"))
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InputError);
    }
}
