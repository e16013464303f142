//! The `tesseract` program: `chi_sim+eng`, automatic page segmentation (`--psm 3`), 300 dpi,
//! and `OMP_THREAD_LIMIT=1` so that parallelism comes from running pages side by side rather
//! than from OpenMP threads fighting over the same cores.

use super::{EngineSettings, ImageLimits, OcrEngine, join_cjk};
use crate::error::{ErrorKind, JobError};
use crate::subprocess as process;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The languages zhi asks for, in order of preference.
const WANTED: [&str; 2] = ["chi_sim", "eng"];

#[derive(Debug, Clone)]
pub(crate) struct Tesseract {
    program: PathBuf,
    /// The `-l` argument: the wanted languages that are installed.
    langs: String,
    missing: Vec<&'static str>,
    settings: EngineSettings,
}

/// `tesseract --list-langs`, asked once per process: (program, installed languages).
fn installed() -> Option<&'static (PathBuf, Vec<String>)> {
    static FOUND: OnceLock<Option<(PathBuf, Vec<String>)>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let program = process::find_program("tesseract")?;
            let done = process::run(
                process::command(&program, ["--list-langs"]),
                std::time::Duration::from_secs(30),
                1 << 20,
                None,
            )
            .ok()?;
            // Older versions print the list on stderr.
            let mut listing = String::from_utf8_lossy(&done.stdout).into_owned();
            listing.push_str(&String::from_utf8_lossy(&done.stderr));
            let langs = listing
                .lines()
                .skip_while(|l| !l.starts_with("List of available languages"))
                .skip(1)
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty())
                .collect();
            Some((program, langs))
        })
        .as_ref()
}

impl Tesseract {
    /// The installed tesseract, or `ocr_failed` saying how to install it.
    pub(crate) fn find(settings: &EngineSettings) -> Result<Tesseract, JobError> {
        let install = "apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim \
                       (macOS: brew install tesseract tesseract-lang)";
        let Some((program, langs)) = installed() else {
            return Err(JobError::new(
                ErrorKind::OcrFailed,
                msg!("tesseract is not installed: {install}"),
            ));
        };
        let have: Vec<&str> = WANTED
            .into_iter()
            .filter(|w| langs.iter().any(|l| l == w))
            .collect();
        if have.is_empty() {
            return Err(JobError::new(
                ErrorKind::OcrFailed,
                msg!(
                    "tesseract has neither Chinese (chi_sim) nor English (eng) language data: {install}"
                ),
            ));
        }
        let missing = WANTED.into_iter().filter(|w| !have.contains(w)).collect();
        Ok(Tesseract {
            program: program.clone(),
            langs: have.join("+"),
            missing,
            settings: settings.clone(),
        })
    }
}

impl OcrEngine for Tesseract {
    fn name(&self) -> &'static str {
        "tesseract"
    }

    fn limits(&self) -> ImageLimits {
        // Tesseract takes up to 32767 px a side; beyond ~10k a page only gets slower.
        ImageLimits {
            max_side: 10_000,
            max_bytes: 256 << 20,
        }
    }

    fn note(&self) -> Option<String> {
        (!self.missing.is_empty()).then(|| {
            format!(
                "tesseract lacks the {} language data, so that script is not recognised \
                 (apt-get install {})",
                self.missing.join(", "),
                self.missing
                    .iter()
                    .map(|l| format!("tesseract-ocr-{}", l.replace('_', "-")))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        })
    }

    fn image(&self, png: &Path) -> Result<String, JobError> {
        let mut cmd = process::command(&self.program, [png.as_os_str()]);
        cmd.args(["stdout", "-l", &self.langs, "--psm", "3", "--dpi", "300"])
            .env("OMP_THREAD_LIMIT", "1");
        let done = process::run(
            cmd,
            self.settings.timeout,
            self.settings.max_output_bytes,
            self.settings.cancel.as_ref(),
        )
        .map_err(|e| JobError::new(ErrorKind::OcrFailed, msg!("cannot run tesseract: {e}")))?;
        match done.end {
            process::End::Cancelled => Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled"))),
            process::End::TimedOut => Err(JobError::new(
                ErrorKind::OcrFailed,
                msg!("tesseract timed out after {:?}", self.settings.timeout),
            )),
            process::End::OutputTooLarge => Err(JobError::new(
                ErrorKind::OcrFailed,
                msg!("tesseract printed more text than zhi takes from one page"),
            )),
            process::End::Exited if !done.status.success() => Err(JobError::new(
                ErrorKind::OcrFailed,
                msg!("tesseract failed ({}): {}", done.status, done.stderr_tail()),
            )),
            process::End::Exited => Ok(join_cjk(&String::from_utf8_lossy(&done.stdout))),
        }
    }
}
