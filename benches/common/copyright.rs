//! Debian's machine-readable copyright files for the extraction bench
//! (`scripts/fetch-copyright.sh`): short English documents nobody here wrote, a cheap model
//! mostly reads right, each with its own header as the truth (`upstream_name`, `license`,
//! `source`). Cells are compared as [`super::manpages::cell_right`] compares them.

use super::manpages::{self, Page};
use std::path::PathBuf;

/// The fields of the truth that are scored, in the schema's order.
pub const FIELDS: [&str; 3] = ["upstream_name", "license", "source"];

/// The folder `scripts/fetch-copyright.sh` writes by default.
pub fn dir() -> PathBuf {
    super::docs_dir().join("copyright")
}

/// The first `n` files of `truth.jsonl` (all when `None`); `None` with a note when the
/// script has not been run. A truth the file does not show (`Upstream-Name: NAME` and
/// `Source: URL` on their own lines) is a bad fetch, not a score.
pub fn files(n: Option<usize>) -> Option<Vec<Page>> {
    let files = manpages::read(&dir(), n, &FIELDS, "scripts/fetch-copyright.sh")?;
    for f in &files {
        for (label, field) in [("Upstream-Name", "upstream_name"), ("Source", "source")] {
            let want = format!("{label}: {}", f.truth[field].as_str().unwrap_or(""));
            assert!(
                f.text.lines().any(|l| l.trim_end() == want),
                "{}: the truth says {want:?}, the file does not",
                f.file
            );
        }
    }
    Some(files)
}
