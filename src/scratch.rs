//! Private scratch folders for intermediate files (re-encoded images, rasterised pages).
//!
//! Each is created fresh with mode 0700 under the system temp dir and removed when dropped, so
//! nothing of a document outlives its extraction, and no other user can read it meanwhile.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// A folder that is deleted, with its contents, when this value is dropped.
#[derive(Debug)]
pub(crate) struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    pub(crate) fn new(purpose: &str) -> io::Result<ScratchDir> {
        let base = std::env::temp_dir();
        let mut last = None;
        for _ in 0..16 {
            let path = base.join(format!(
                "zhi-{purpose}-{}-{:016x}",
                std::process::id(),
                fastrand::u64(..)
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(ScratchDir { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free scratch folder name")))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Best effort: a failure here leaves a folder in the temp dir, nothing worse.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn private_and_removed_on_drop() {
        let dir = ScratchDir::new("test").unwrap();
        let path = dir.path().to_path_buf();
        std::fs::write(path.join("x"), b"1").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        drop(dir);
        assert!(!path.exists());
    }
}
