//! Folders under the output folder are created the way the sandbox creates the agent's: one
//! part at a time, never through a link. A link planted inside the output folder
//! (`zhi-output/summarize -> ../elsewhere`, `zhi-output/.zhi -> /tmp/x`) would otherwise carry
//! job outputs, records or manifests outside it.

use std::io;
use std::path::{Component, Path};

/// Create `dir` and any missing parents below `root` (which must exist), refusing a link or
/// a non-folder at any part between them. `dir` must be under `root`.
pub fn create_dir_within(root: &Path, dir: &Path) -> io::Result<()> {
    let rel = dir.strip_prefix(root).map_err(|_| {
        io::Error::other(format!(
            "{} is not inside the output folder {}",
            dir.display(),
            root.display()
        ))
    })?;
    let mut current = root.to_path_buf();
    for part in rel.components() {
        let Component::Normal(name) = part else {
            return Err(io::Error::other(format!(
                "{} is not a plain path inside the output folder",
                dir.display()
            )));
        };
        current.push(name);
        check_or_create(&current)?;
    }
    Ok(())
}

fn check_or_create(path: &Path) -> io::Result<()> {
    for _ in 0..2 {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(io::Error::other(format!(
                    "{} is a link; zhi never follows links inside its output folder",
                    path.display()
                )));
            }
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => {
                return Err(io::Error::other(format!(
                    "{} is in the way: it is not a folder",
                    path.display()
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => match std::fs::create_dir(path) {
                Ok(()) => return Ok(()),
                // Created by another job meanwhile: look again.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "{} keeps changing while zhi creates it",
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::create_dir_within;

    #[test]
    fn creates_folders_but_never_through_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("out");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        create_dir_within(&root, &root.join("a/b/c")).unwrap();
        assert!(root.join("a/b/c").is_dir());
        std::os::unix::fs::symlink(&outside, root.join("summarize")).unwrap();
        let e = create_dir_within(&root, &root.join("summarize/docs")).unwrap_err();
        assert!(e.to_string().contains("is a link"), "{e}");
        assert!(!outside.join("docs").exists());
        std::fs::write(root.join("file"), "x").unwrap();
        assert!(create_dir_within(&root, &root.join("file/x")).is_err());
        assert!(create_dir_within(&root, &tmp.path().join("elsewhere")).is_err());
    }
}
