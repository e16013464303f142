//! Where a run may write. Not where zhi keeps an output folder's records (any `.zhi/`), and not
//! where it reads its settings: a folder an agent or a document's text names there (`-o
//! zhi.yaml`, `"output": "main/.zhi/runs"`) would stop every later command in that folder, or
//! be counted and pruned as another folder's runs. Refused before anything is planned, for
//! `run` and `plan` alike, as an input inside the output folder is (docs/cli.md#the-output-folder).

use super::PlanError;
use crate::layout::{RECORDS_DIR, canonical_prefix};
use std::path::{Component, Path, PathBuf};

/// Refuse `out` (absolute) as an output folder when it is, or lies inside, a `.zhi` folder, a
/// folder named as the project's settings file (`zhi.yaml`, in any case: any folder may be the
/// one zhi runs in next), or one of `settings` (the user's file, `--config FILE`). The path is
/// checked as written and with its links resolved as far as it exists.
pub(crate) fn check_output_folder(out: &Path, settings: &[PathBuf]) -> Result<(), PlanError> {
    match forbidden(out, settings) {
        None => Ok(()),
        Some(Forbidden::Records(records)) => Err(PlanError::OutputInRecords {
            output_dir: out.to_path_buf(),
            records,
        }),
        Some(Forbidden::Settings(file)) => Err(PlanError::OutputIsSettings {
            output_dir: out.to_path_buf(),
            file,
        }),
    }
}

/// Why zhi may write nothing at a place: the `.zhi` folder, or the settings file, it is or
/// lies inside.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Forbidden {
    Records(PathBuf),
    Settings(PathBuf),
}

/// Whether `path` (absolute) is, or lies inside, a place zhi writes nothing of a user's: a
/// `.zhi` folder, a `zhi.yaml` in any case, or one of `settings`; as written and with its
/// links resolved as far as it exists. An output folder, a report's file and a merge's folder
/// are checked alike.
pub(crate) fn forbidden(path: &Path, settings: &[PathBuf]) -> Option<Forbidden> {
    let files: Vec<PathBuf> = settings
        .iter()
        .flat_map(|f| std::iter::once(normal(f)).chain(canonical_prefix(f)))
        .collect();
    for path in std::iter::once(normal(path)).chain(canonical_prefix(path)) {
        let mut prefix = PathBuf::new();
        for part in path.components() {
            prefix.push(part);
            let name = part.as_os_str();
            if name.eq_ignore_ascii_case(RECORDS_DIR) {
                return Some(Forbidden::Records(prefix));
            }
            if name.eq_ignore_ascii_case(crate::config::PROJECT_FILE) {
                return Some(Forbidden::Settings(prefix));
            }
        }
        if let Some(file) = files.iter().find(|f| path.starts_with(f)) {
            return Some(Forbidden::Settings(file.clone()));
        }
    }
    None
}

/// `path` as written, `.` left out and each `..` taking away the part before it (links are
/// not resolved: [`canonical_prefix`] does that).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(out: &Path, settings: &[PathBuf]) -> Option<String> {
        check_output_folder(out, settings)
            .err()
            .map(|e| e.to_string())
    }

    #[test]
    fn records_and_settings_files_are_refused_however_spelled() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let user = root.join("home/.config/zhi/config.yaml");
        let settings = [user.clone()];
        for ok in ["out", "docs/zhi-output", "zhi.yaml.d", "a/.zhi-old"] {
            assert_eq!(refused(&root.join(ok), &settings), None, "{ok}");
        }
        for (out, reason) in [
            ("zhi.yaml", "where zhi reads a settings file"),
            ("sub/ZHI.yaml/x", "where zhi reads a settings file"),
            ("a/../zhi.yaml", "where zhi reads a settings file"),
            (
                "home/.config/zhi/config.yaml",
                "where zhi reads a settings file",
            ),
            (
                "home/.config/zhi/x/../config.yaml/y",
                "where zhi reads a settings file",
            ),
            (".zhi", "where zhi keeps an output folder's records"),
            (
                "main/.zhi/runs",
                "where zhi keeps an output folder's records",
            ),
            ("main/.ZHI", "where zhi keeps an output folder's records"),
        ] {
            let e = refused(&root.join(out), &settings).unwrap_or_else(|| panic!("{out}"));
            assert!(e.contains(reason), "{out}: {e}");
        }
        // Through a link, as far as the path exists.
        std::fs::create_dir_all(root.join("main/.zhi/runs")).unwrap();
        std::os::unix::fs::symlink(root.join("main/.zhi"), root.join("records")).unwrap();
        let e = refused(&root.join("records/runs/new"), &settings).unwrap();
        assert!(
            e.contains(&root.join("main/.zhi").display().to_string()),
            "{e}"
        );
        std::fs::create_dir_all(user.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(user.parent().unwrap(), root.join("conf")).unwrap();
        let e = refused(&root.join("conf/config.yaml"), &settings).unwrap();
        assert!(e.contains(&user.display().to_string()), "{e}");
    }
}
