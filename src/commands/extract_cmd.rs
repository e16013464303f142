//! `zhi extract FILE`: exactly the text the model would be given, so a user can see what a
//! scan or a broken PDF turns into before spending tokens on it.

use super::{Ctx, print_json};
use crate::config::{OcrChoice, Overrides};
use crate::exit::{Exit, ExitError};
use crate::run::reader::PipelineReader;
use std::io::{IsTerminal, Write};
use std::path::Path;

pub(super) fn run(ctx: &Ctx, file: &Path, ocr: Option<OcrChoice>) -> Result<Exit, ExitError> {
    let config = ctx.config(Overrides {
        ocr,
        ..Overrides::default()
    })?;
    let path = if file.is_absolute() {
        file.to_path_buf()
    } else {
        ctx.cwd.join(file)
    };
    if std::fs::symlink_metadata(&path).is_err() {
        return Err(ExitError::usage(msg!("{} does not exist", file.display())));
    }
    let client = crate::run::context::client(&config).ok();
    let reader = PipelineReader::new(&config, client, 1, None);
    match crate::extract::extract(&path, reader.options()) {
        Ok(e) => {
            if ctx.global.json {
                let mut v = serde_json::to_value(&e).unwrap_or_default();
                v["file"] = serde_json::json!(file.display().to_string());
                print_json(&v);
            } else {
                let mut out = std::io::stdout().lock();
                // On a terminal, control characters from the document are neutralised;
                // piped, the text is exactly what the model gets.
                let text = if std::io::stdout().is_terminal() {
                    crate::sanitize::for_terminal(&e.text)
                } else {
                    e.text.clone()
                };
                let _ = out.write_all(text.as_bytes());
                if !text.ends_with('\n') {
                    let _ = out.write_all(b"\n");
                }
                for f in &e.fallbacks {
                    ctx.warn(&format!("{}: {f}", file.display()));
                }
            }
            Ok(Exit::Success)
        }
        Err(err) => {
            if ctx.global.json {
                print_json(&serde_json::json!({"file": file.display().to_string(), "error": err}));
            }
            crate::i18n::error(&format!(
                "{}: {}: {}",
                crate::sanitize::one_line(&file.display().to_string()),
                err.kind,
                crate::sanitize::one_line(&err.message)
            ));
            Ok(Exit::JobsFailed)
        }
    }
}
