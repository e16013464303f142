//! `file_read` and `ocr`: a checked path in, capped text out.

use super::{Args, DocumentReader, PATH_NAMES, READ_CAP_BYTES, ToolEnv, ToolOutcome, cap_text};
use crate::agent::sandbox::{ReadTarget, Sandbox};
use crate::error::{ErrorKind, JobError};
use crate::scratch::ScratchDir;
use std::ffi::OsStr;
use std::io;

pub(super) async fn file_read(mut args: Args, env: &ToolEnv) -> ToolOutcome {
    let path = match args.string(PATH_NAMES) {
        Ok(path) => path,
        Err(outcome) => return outcome,
    };
    let offset = match args.opt_usize(&["offset", "start"]) {
        Ok(offset) => offset.unwrap_or(0),
        Err(outcome) => return outcome,
    };
    let target = match env.sandbox.check_read(&path) {
        Ok(target) => target,
        Err(refusal) => return ToolOutcome::refused(refusal.message()),
    };
    let display = target.display().to_string();
    if target.is_dir() {
        return ToolOutcome::refused(format!(
            "`{display}` is a folder; use file_list to see what is in it"
        ));
    }
    let changed = || {
        ToolOutcome::refused(format!(
            "`{display}` is no longer the file the skill was loaded with (replaced, or a link put in its place); it is not read"
        ))
    };
    if !env.sandbox.unchanged(&target) {
        return changed();
    }
    let (reader, sandbox) = (env.reader.clone(), env.sandbox.clone());
    let read_from = target.clone();
    let read =
        tokio::task::spawn_blocking(move || read_checked(&*reader, &sandbox, &read_from)).await;
    if !env.sandbox.unchanged(&target) {
        return changed();
    }
    let text = match read {
        Ok(Ok(text)) => text,
        Ok(Err(error)) => {
            return ToolOutcome::failed(format!("could not read `{display}`: {error}"));
        }
        Err(_) => {
            return ToolOutcome::failed(format!("reading `{display}` failed unexpectedly"));
        }
    };
    if text.trim().is_empty() {
        return ToolOutcome::ok(format!(
            "[`{display}` contains no text. If it is a scan or a photo, try the ocr tool on it.]"
        ));
    }
    ToolOutcome::ok(cap_text(&text, offset, READ_CAP_BYTES, Some(&display)))
}

/// The text of a checked file. Something in the output folder is read from the file opened
/// beneath the output folder's handle ([`Sandbox::open`]): its bytes are copied into a private
/// scratch folder under the same name, and the reader (which may hand a path to a worker
/// process) reads that copy. So what is read is the file that passed the check, never what a
/// folder swapped for a link since leads to. An input is read by the path the check resolved.
fn read_checked(
    reader: &dyn DocumentReader,
    sandbox: &Sandbox,
    target: &ReadTarget,
) -> Result<String, JobError> {
    if target.origin().is_input() {
        return reader.read_text(target.path());
    }
    let unreadable =
        |e: io::Error| JobError::new(ErrorKind::InputError, msg!("cannot be read: {e}"));
    let mut file = sandbox.open(target).map_err(unreadable)?;
    let scratch = ScratchDir::new("read").map_err(unreadable)?;
    let name = target.path().file_name().unwrap_or(OsStr::new("file"));
    let copy = scratch.path().join(name);
    let mut to = std::fs::File::create_new(&copy).map_err(unreadable)?;
    io::copy(&mut file, &mut to).map_err(unreadable)?;
    drop(to);
    reader.read_text(&copy)
}

pub(super) async fn ocr(mut args: Args, env: &ToolEnv) -> ToolOutcome {
    let path = match args.string(PATH_NAMES) {
        Ok(path) => path,
        Err(outcome) => return outcome,
    };
    let target = match env.sandbox.check_input(&path) {
        Ok(target) => target,
        Err(refusal) => return ToolOutcome::refused(refusal.message()),
    };
    let display = target.display().to_string();
    if !env.sandbox.unchanged(&target) {
        return ToolOutcome::refused(format!(
            "`{display}` is no longer the file the skill was loaded with (replaced, or a link put in its place); it is not read"
        ));
    }
    let reader = env.reader.clone();
    match tokio::task::spawn_blocking(move || reader.ocr(target.path())).await {
        Ok(Ok(text)) if text.trim().is_empty() => {
            ToolOutcome::ok(format!("[OCR found no text in `{display}`]"))
        }
        Ok(Ok(text)) => ToolOutcome::ok(cap_text(&text, 0, READ_CAP_BYTES, None)),
        Ok(Err(error)) => ToolOutcome::failed(format!("OCR of `{display}` failed: {error}")),
        Err(_) => ToolOutcome::failed(format!("OCR of `{display}` failed unexpectedly")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ToolKind, Toolbox};
    use super::*;
    use crate::agent::sandbox::Sandbox;
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::Path;
    use tempfile::TempDir;

    fn env(root: &Path) -> ToolEnv {
        let out = root.join("out");
        fs::create_dir_all(&out).unwrap();
        fs::create_dir_all(root.join("docs")).unwrap();
        fs::write(root.join("docs/q3.txt"), "revenue grew").unwrap();
        let sandbox = Sandbox::builder(&out)
            .input("reports/q3.txt", root.join("docs/q3.txt"))
            .build()
            .unwrap();
        ToolEnv::plain(sandbox)
    }

    async fn call(env: &ToolEnv, kind: ToolKind, args: &str) -> ToolOutcome {
        Toolbox::new().execute(kind, args, env).await
    }

    #[tokio::test]
    async fn reads_the_input_by_display_path() {
        let root = TempDir::new().unwrap();
        let env = env(root.path());
        let out = call(&env, ToolKind::FileRead, r#"{"path": "reports/q3.txt"}"#).await;
        assert_eq!(out.content, "revenue grew");
        assert!(!out.refused);
    }

    #[tokio::test]
    async fn refuses_reads_outside_the_sandbox() {
        let root = TempDir::new().unwrap();
        let env = env(root.path());
        fs::write(root.path().join("secret.txt"), "top secret").unwrap();
        symlink(
            root.path().join("secret.txt"),
            root.path().join("out/link.txt"),
        )
        .unwrap();
        for path in [
            "/etc/passwd",
            "../../etc/passwd",
            "../secret.txt",
            "link.txt",
        ] {
            let args = serde_json::json!({ "path": path }).to_string();
            let out = call(&env, ToolKind::FileRead, &args).await;
            assert!(out.refused, "{path}: {}", out.content);
            assert!(!out.content.contains("top secret"));
            assert!(!out.content.contains("root:"));
            assert!(out.content.contains("reports/q3.txt"), "{}", out.content);
        }
    }

    /// The race the reads by path had: `a` checked as a folder in the output folder, then
    /// swapped for a link to outside before the file was opened by path, which followed it. A
    /// thread swaps `a` and a link to outside again and again while `a/x.md` is read: each read
    /// gives the file inside or fails, never the one outside.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_folder_swapped_for_a_link_mid_read_never_reads_outside() {
        let root = TempDir::new().unwrap();
        let env = env(root.path());
        let (out, outside) = (root.path().join("out"), root.path().join("outside"));
        fs::create_dir_all(out.join("a")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(out.join("a/x.md"), "inside").unwrap();
        fs::write(outside.join("x.md"), "top secret").unwrap();
        symlink(&outside, out.join("swap")).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (mut read, mut leaked) = (0, 0);
        crate::confine::while_swapping(&out.join("a"), &out.join("swap"), |_| {
            let got = rt.block_on(call(&env, ToolKind::FileRead, r#"{"path": "a/x.md"}"#));
            leaked += usize::from(got.content.contains("top secret"));
            read += usize::from(got.content == "inside");
        });
        assert_eq!(leaked, 0, "a read went outside the output folder");
        assert!(read > 0, "no read got through at all");
    }

    #[tokio::test]
    async fn long_text_is_capped_with_a_marker_and_can_be_continued() {
        let root = TempDir::new().unwrap();
        let env = env(root.path());
        let body = "长".repeat(20_000); // 60 000 bytes
        fs::write(root.path().join("out/long.md"), &body).unwrap();
        let out = call(&env, ToolKind::FileRead, r#"{"path": "long.md"}"#).await;
        assert!(!out.refused);
        let cut = out.content.find("\n\n[cut here").unwrap();
        assert!(cut <= READ_CAP_BYTES);
        assert!(out.content[..cut].chars().all(|c| c == '长'));
        let left = 60_000 - cut;
        assert!(
            out.content
                .contains(&format!("{left} more bytes were left out")),
            "{}",
            &out.content[cut..]
        );
        let next = format!(r#"{{"path": "long.md", "offset": {cut}}}"#);
        assert!(out.content.contains(&next));
        let rest = call(&env, ToolKind::FileRead, &next).await;
        assert!(rest.content.ends_with(&"长".repeat(left / 3)));
        assert!(!rest.content.contains("cut here"));
    }

    #[tokio::test]
    async fn folders_binary_and_ocr() {
        let root = TempDir::new().unwrap();
        let env = env(root.path());
        let out = call(&env, ToolKind::FileRead, r#"{"path": "."}"#).await;
        assert!(out.refused && out.content.contains("file_list"));
        fs::write(root.path().join("out/x.bin"), [0u8, 0, 0, 1]).unwrap();
        let out = call(&env, ToolKind::FileRead, r#"{"path": "x.bin"}"#).await;
        assert!(!out.refused);
        assert!(out.content.contains("unsupported_type"), "{}", out.content);
        let out = call(&env, ToolKind::Ocr, r#"{"path": "reports/q3.txt"}"#).await;
        assert!(!out.refused);
        assert!(out.content.contains("no OCR engine configured"));
        let out = call(&env, ToolKind::Ocr, r#"{"path": "x.bin"}"#).await;
        assert!(out.refused, "{}", out.content);
    }

    #[tokio::test]
    async fn invalid_arguments_are_refused() {
        let root = TempDir::new().unwrap();
        let env = env(root.path());
        let out = call(&env, ToolKind::FileRead, "{\"path\": ").await;
        assert!(out.refused);
        assert!(out.content.contains("not valid JSON"));
        let out = call(&env, ToolKind::FileRead, r#"{"offset": 3}"#).await;
        assert!(out.refused && out.content.contains("`path` is missing"));
    }
}
