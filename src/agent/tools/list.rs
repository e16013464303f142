//! `file_list`: what the job may read, as a short table the model can act on.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use super::{Args, LIST_CAP_ENTRIES, PATH_NAMES, ToolEnv, ToolOutcome};
use crate::agent::sandbox::{ListTarget, ReadTarget, Sandbox};
use rustix::fs::FileType;

pub(super) async fn file_list(mut args: Args, env: &ToolEnv) -> ToolOutcome {
    let path = match args.opt_string(PATH_NAMES) {
        Ok(path) => path.unwrap_or_default(),
        Err(outcome) => return outcome,
    };
    let target = match env.sandbox.check_list(&path) {
        Ok(target) => target,
        Err(refusal) => return ToolOutcome::refused(refusal.message()),
    };
    let sandbox = Arc::clone(&env.sandbox);
    match tokio::task::spawn_blocking(move || render(&sandbox, &target)).await {
        Ok(Ok(listing)) => ToolOutcome::ok(listing),
        Ok(Err(message)) => ToolOutcome::failed(message),
        Err(_) => ToolOutcome::failed("listing failed unexpectedly"),
    }
}

fn render(sandbox: &Sandbox, target: &ListTarget) -> Result<String, String> {
    match target.target() {
        None => Ok(overview(sandbox)),
        Some(t) if t.is_dir() => folder(sandbox, t),
        Some(t) => {
            let len = sandbox
                .file_len(t)
                .map_err(|e| format!("cannot look at `{}`: {e}", t.display()))?;
            Ok(format!("{}\tfile\t{} bytes", t.display(), len.unwrap_or(0)))
        }
    }
}

fn overview(sandbox: &Sandbox) -> String {
    let mut out = String::new();
    let inputs = sandbox.input_targets();
    let dirs = sandbox.input_dir_targets();
    if !inputs.is_empty() {
        out.push_str("Input documents (read with file_read):\n");
        for t in &inputs {
            out.push_str(&format!("  {}\n", describe(t.display(), t.path())));
        }
    }
    if !dirs.is_empty() {
        out.push_str("Input folders (list with file_list, e.g. {\"path\": \"<folder>\"}):\n");
        for t in &dirs {
            out.push_str(&format!("  {}/\tfolder\n", t.display()));
        }
    }
    if inputs.is_empty() && dirs.is_empty() {
        out.push_str("This job has no input documents.\n");
    }
    out.push_str("Output folder (your files; write with file_write, relative paths):\n");
    match entries(sandbox, &sandbox.output_target()) {
        Ok((lines, _)) if lines.is_empty() => out.push_str("  (empty)\n"),
        Ok((lines, _)) => {
            for line in lines {
                out.push_str(&format!("  {line}\n"));
            }
        }
        Err(e) => out.push_str(&format!("  (cannot be listed: {e})\n")),
    }
    out
}

fn folder(sandbox: &Sandbox, target: &ReadTarget) -> Result<String, String> {
    let (lines, total) = entries(sandbox, target)?;
    let mut out = format!("{}/ ({total} entries):\n", target.display());
    if lines.is_empty() {
        out.push_str("  (empty)\n");
    }
    for line in lines {
        out.push_str(&format!("  {line}\n"));
    }
    Ok(out)
}

/// One line per entry, sorted by name, at most [`LIST_CAP_ENTRIES`] plus a note; and how many
/// entries there are.
fn entries(sandbox: &Sandbox, target: &ReadTarget) -> Result<(Vec<String>, usize), String> {
    let read = sandbox
        .folder_entries(target)
        .map_err(|e| format!("cannot list `{}`: {e}", target.display()))?;
    let mut found: Vec<(String, String)> = Vec::new();
    for entry in read {
        if sandbox.is_excluded(&target.path().join(&entry.name)) {
            continue;
        }
        let name = entry.name.to_string_lossy().into_owned();
        let line = match (entry.kind, entry.len) {
            (Some(FileType::Symlink), _) => format!("{name}\tlink"),
            (Some(FileType::Directory), _) => format!("{name}/\tfolder"),
            (_, Some(len)) => format!("{name}\tfile\t{len} bytes"),
            (_, None) => format!("{name}\tunreadable"),
        };
        found.push((name, line));
    }
    found.sort();
    let total = found.len();
    let mut lines: Vec<String> = found
        .into_iter()
        .take(LIST_CAP_ENTRIES)
        .map(|(_, line)| line)
        .collect();
    if total > LIST_CAP_ENTRIES {
        lines.push(format!(
            "[… {} more entries not shown]",
            total - LIST_CAP_ENTRIES
        ));
    }
    Ok((lines, total))
}

fn describe(name: &str, path: &Path) -> String {
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => format!("{name}/\tfolder"),
        Ok(meta) => format!("{name}\tfile\t{} bytes", meta.len()),
        Err(_) => format!("{name}\tunreadable"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ToolKind, Toolbox};
    use super::*;
    use std::os::unix::fs::symlink;
    use tempfile::TempDir;

    fn setup(root: &Path) -> ToolEnv {
        let out = root.join("run/.zhi/staging/job");
        let inbox = root.join("inbox");
        fs::create_dir_all(&out).unwrap();
        fs::create_dir_all(inbox.join("sub")).unwrap();
        fs::write(inbox.join("b.txt"), "bb").unwrap();
        fs::write(inbox.join("a.txt"), "a").unwrap();
        fs::write(out.join("summary.md"), "s").unwrap();
        fs::create_dir_all(root.join("outside")).unwrap();
        symlink(root.join("outside"), inbox.join("escape")).unwrap();
        let sandbox = Sandbox::builder(&out)
            .input_dir("inbox", &inbox)
            .exclude(root.join("run"))
            .build()
            .unwrap();
        ToolEnv::plain(sandbox)
    }

    #[tokio::test]
    async fn overview_and_folder_listing() {
        let root = TempDir::new().unwrap();
        let env = setup(root.path());
        let tools = Toolbox::new();
        let out = tools.execute(ToolKind::FileList, "{}", &env).await;
        assert!(!out.refused);
        assert!(out.content.contains("inbox/\tfolder"), "{}", out.content);
        assert!(out.content.contains("summary.md\tfile\t1 bytes"));

        let out = tools
            .execute(ToolKind::FileList, r#"{"path": "inbox"}"#, &env)
            .await;
        let expected = "inbox/ (4 entries):\n  a.txt\tfile\t1 bytes\n  b.txt\tfile\t2 bytes\n  \
                        escape\tlink\n  sub/\tfolder\n";
        assert_eq!(out.content, expected);

        // The link is listed but cannot be followed.
        let out = tools
            .execute(ToolKind::FileList, r#"{"path": "inbox/escape"}"#, &env)
            .await;
        assert!(out.refused, "{}", out.content);
        let out = tools
            .execute(ToolKind::FileList, r#"{"path": "/etc"}"#, &env)
            .await;
        assert!(out.refused);
    }

    #[tokio::test]
    async fn listing_is_capped() {
        let root = TempDir::new().unwrap();
        let env = setup(root.path());
        let many = root.path().join("inbox/many");
        fs::create_dir_all(&many).unwrap();
        for i in 0..LIST_CAP_ENTRIES + 3 {
            fs::write(many.join(format!("f{i:04}.txt")), "").unwrap();
        }
        let out = Toolbox::new()
            .execute(ToolKind::FileList, r#"{"path": "inbox/many"}"#, &env)
            .await;
        assert!(out.content.contains("[… 3 more entries not shown]"));
        assert_eq!(out.content.lines().count(), LIST_CAP_ENTRIES + 2);
    }
}
