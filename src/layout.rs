//! The output folder's own layout: every path under `<OUT>/.zhi/` is named here and nowhere
//! else, so the executor, the cache, the batch book and the manifest readers agree on it.
//!
//! Folders under the output folder are created the way the sandbox creates the agent's: one
//! part at a time beneath the output folder's handle ([`crate::confine`]), never through a
//! link; a job's commit (and the keeping of a failed job's staging) renames beneath the same
//! handle ([`OutputLayout::rename`]). A link planted inside the output folder
//! (`zhi-output/summarize -> ../elsewhere`, `zhi-output/.zhi -> /tmp/x`) would otherwise
//! carry job outputs, records or manifests outside it.

use crate::confine::{ConfineError, Root};
use std::io;
use std::path::{Component, Path, PathBuf};

/// The name of the folder that holds an output folder's records: `<OUT>/.zhi/`.
pub(crate) const RECORDS_DIR: &str = ".zhi";

/// `<OUT>/.zhi/…`: zhi's records, journals and scratch space inside an output folder.
#[derive(Debug, Clone)]
pub(crate) struct OutputLayout {
    out: PathBuf,
    zhi: PathBuf,
}

/// The folders a run may create under `.zhi/` when they are missing (`runs/` always).
const RUN_FOLDERS: [&str; 6] = [
    "staging",
    "failed",
    "commits",
    "checkpoints",
    "trash",
    "batches",
];

impl OutputLayout {
    pub(crate) fn new(output_dir: impl Into<PathBuf>) -> OutputLayout {
        let out = output_dir.into();
        let zhi = out.join(RECORDS_DIR);
        OutputLayout { out, zhi }
    }

    /// The output folder itself.
    pub(crate) fn output_dir(&self) -> &Path {
        &self.out
    }

    /// `.zhi/`.
    pub(crate) fn zhi_dir(&self) -> &Path {
        &self.zhi
    }

    /// `.zhi/lock`: held by the run writing in this folder.
    pub(crate) fn lock(&self) -> PathBuf {
        self.zhi.join("lock")
    }

    /// `.zhi/runs/`: one folder per run, named by its id.
    pub(crate) fn runs(&self) -> PathBuf {
        self.zhi.join("runs")
    }

    /// `.zhi/runs/<run-id>/`: the run's records and manifest.
    pub(crate) fn run(&self, run_id: &str) -> PathBuf {
        self.runs().join(run_id)
    }

    /// `.zhi/runs/<run-id>/transcripts/<job-id>.jsonl`.
    pub(crate) fn transcript(&self, run_id: &str, job_id: &str) -> PathBuf {
        self.run(run_id)
            .join("transcripts")
            .join(format!("{job_id}.jsonl"))
    }

    /// The transcript's path as records give it: relative to the output folder.
    pub(crate) fn transcript_rel(run_id: &str, job_id: &str) -> String {
        format!(".zhi/runs/{run_id}/transcripts/{job_id}.jsonl")
    }

    /// `.zhi/staging/`: jobs write here first; a run removes what a crashed one left.
    pub(crate) fn staging(&self) -> PathBuf {
        self.zhi.join("staging")
    }

    /// `.zhi/staging/<run-id>/<job-id>/`.
    pub(crate) fn job_staging(&self, run_id: &str, job_id: &str) -> PathBuf {
        self.staging().join(run_id).join(job_id)
    }

    /// `.zhi/failed/<run-id>/<job-id>/`: a failed job's staging, kept for inspection.
    pub(crate) fn failed_staging(&self, run_id: &str, job_id: &str) -> PathBuf {
        self.zhi.join("failed").join(run_id).join(job_id)
    }

    /// `.zhi/trash/`: a job folder being replaced sits here between two renames.
    pub(crate) fn trash(&self) -> PathBuf {
        self.zhi.join("trash")
    }

    /// `.zhi/trash/<run-id>/<job-id>`.
    pub(crate) fn job_trash(&self, run_id: &str, job_id: &str) -> PathBuf {
        self.trash().join(run_id).join(job_id)
    }

    /// `.zhi/commits/<job-id>.json`: a commit's journal, from before its rename until the
    /// job's record is on disk.
    pub(crate) fn commit_journal(&self, job_id: &str) -> PathBuf {
        self.zhi.join("commits").join(format!("{job_id}.json"))
    }

    /// `.zhi/checkpoints/<job-id>/`: finished pieces of a long document.
    pub(crate) fn checkpoints(&self, job_id: &str) -> PathBuf {
        self.zhi.join("checkpoints").join(job_id)
    }

    /// `.zhi/cache-index`: where each job's latest usable record is, derived from the records
    /// (docs/outputs.md#the-cache-index).
    pub(crate) fn cache_index(&self) -> PathBuf {
        self.zhi.join("cache-index")
    }

    /// `.zhi/batches/`: the batch book (batch mode).
    pub(crate) fn batches(&self) -> PathBuf {
        self.zhi.join("batches")
    }

    /// Creates the output folder (anything the user names, a link included) and, inside it,
    /// `.zhi/runs/` and any of zhi's folders that exist, refusing links among them.
    pub(crate) fn create(&self) -> io::Result<()> {
        std::fs::create_dir_all(&self.out)?;
        create_dir_within(&self.out, &self.runs())?;
        RUN_FOLDERS
            .iter()
            .map(|sub| self.zhi.join(sub))
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .try_for_each(|p| create_dir_within(&self.out, &p))
    }

    /// Creates `dir` (inside the output folder) the safe way: see [`create_dir_within`].
    pub(crate) fn create_dir(&self, dir: &Path) -> io::Result<()> {
        create_dir_within(&self.out, dir)
    }

    /// Moves `from` to `to` (both inside the output folder), creating `to`'s missing parents:
    /// see [`rename_within`].
    pub(crate) fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        rename_within(&self.out, from, to)
    }

    /// The folder `dir` (inside the output folder, or the output folder itself) reached
    /// beneath the output folder's handle and held open, created with its missing parents
    /// when `create`: see [`folder_within`].
    pub(crate) fn folder(&self, dir: &Path, create: bool) -> io::Result<Root> {
        folder_within(&self.out, dir, create)
    }

    /// Remove the file `path` (inside the output folder), its folder reached beneath the
    /// output folder's handle: a link on the way is refused, a link at `path` itself is
    /// removed, never what it leads to.
    pub(crate) fn remove_file(&self, path: &Path) -> io::Result<()> {
        let (parent, name) = split(path)?;
        self.folder(parent, false)?.top().unlink(name)
    }

    /// Write the file `path` (inside the output folder) as `std::fs::write` does (created or
    /// truncated), its missing folders created first: each folder reached beneath the output
    /// folder's handle and the file opened through its folder's, never through a link.
    pub(crate) fn write_file(&self, path: &Path, body: &[u8]) -> io::Result<()> {
        let mut f = self.create_file(path, true)?;
        std::io::Write::write_all(&mut f, body)
    }

    /// Create or truncate the file `path` (inside the output folder), its folder reached
    /// (and, with `parents`, created) beneath the output folder's handle, never through a link.
    fn create_file(&self, path: &Path, parents: bool) -> io::Result<std::fs::File> {
        let (parent, name) = split(path)?;
        self.folder(parent, parents)?
            .top()
            .create_file(name)
            .map_err(|e| link_refused(path, e))
    }

    /// Copy the file `from` to `to` (both inside the output folder; `to`'s folder must exist)
    /// as `std::fs::copy` does (contents and permissions), each opened beneath the output
    /// folder's handle, never through a link.
    pub(crate) fn copy_file(&self, from: &Path, to: &Path) -> io::Result<u64> {
        use std::os::unix::fs::PermissionsExt;
        let mut source = self.open_file(from)?;
        let perm = source.metadata()?.permissions();
        let mut dest = self.create_file(to, false)?;
        let n = io::copy(&mut source, &mut dest)?;
        dest.set_permissions(std::fs::Permissions::from_mode(perm.mode()))?;
        Ok(n)
    }

    /// Open the file `path` (inside the output folder) for reading, every part reached beneath
    /// the output folder's handle, never through a link.
    pub(crate) fn open_file(&self, path: &Path) -> io::Result<std::fs::File> {
        let (parent, name) = split(path)?;
        self.folder(parent, false)?
            .top()
            .open_file(name)
            .map_err(|e| link_refused(path, e))
    }

    /// The text of the file `path` (inside the output folder), read as [`Self::open_file`]
    /// opens it.
    pub(crate) fn read_to_string(&self, path: &Path) -> io::Result<String> {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut self.open_file(path)?, &mut text)?;
        Ok(text)
    }

    /// Remove the empty folder `path` (inside the output folder), reached beneath the output
    /// folder's handle; a link at `path` is refused.
    pub(crate) fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let (parent, name) = split(path)?;
        self.folder(parent, false)?.top().remove_dir(name)
    }

    /// Remove `path` (inside the output folder) with everything in it, as
    /// `std::fs::remove_dir_all` does, but beneath the output folder's handle: a link on the
    /// way to it is refused, a link in it (or at `path`) is removed, never what it leads to
    /// ([`crate::confine::Walk::remove_tree`]).
    pub(crate) fn remove_tree(&self, path: &Path) -> io::Result<()> {
        let (parent, name) = split(path)?;
        self.folder(parent, false)?.top().remove_tree(name)
    }

    /// Replace the file `path` (inside the output folder; its folder must exist) whole, its
    /// folder reached beneath the output folder's handle: a temporary file beside it, synced,
    /// then renamed over it ([`write_atomic_in`]).
    pub(crate) fn write_atomic(&self, path: &Path, body: &[u8]) -> io::Result<()> {
        self.write_atomic_with(path, |f| std::io::Write::write_all(f, body))
    }

    /// [`Self::write_atomic`], the content written by `write` as it is made.
    pub(crate) fn write_atomic_with(
        &self,
        path: &Path,
        write: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
    ) -> io::Result<()> {
        let parent = path.parent().unwrap_or(Path::new(""));
        let folder = self.folder(parent, false)?;
        write_atomic_in(&folder, path, write)
    }
}

/// A path's folder and its last name, or why it names no file.
fn split(path: &Path) -> io::Result<(&Path, &std::ffi::OsStr)> {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(io::Error::other(format!(
            "{} is not a plain path inside the output folder",
            path.display()
        ))),
    }
}

/// `dir` relative to `root`, as a plain path (no `..`, not absolute), or why not.
fn plain_rel<'a>(root: &Path, dir: &'a Path) -> io::Result<&'a Path> {
    let rel = dir.strip_prefix(root).map_err(|_| {
        io::Error::other(format!(
            "{} is not inside the output folder {}",
            dir.display(),
            root.display()
        ))
    })?;
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(io::Error::other(format!(
            "{} is not a plain path inside the output folder",
            dir.display()
        )));
    }
    Ok(rel)
}

/// Move `from` to `to` below `root` with one `renameat`, each end reached beneath the root's
/// handle ([`crate::confine`]): `to`'s parents are created the way [`create_dir_within`]
/// creates them, and a folder on the way swapped for a link, before or during the move,
/// refuses it instead of carrying the files outside. `to` itself is replaced only as
/// `rename(2)` would (an empty folder, or a file).
pub(crate) fn rename_within(root: &Path, from: &Path, to: &Path) -> io::Result<()> {
    let (from_rel, to_rel) = (plain_rel(root, from)?, plain_rel(root, to)?);
    let (Some(from_name), Some(to_name)) = (from_rel.file_name(), to_rel.file_name()) else {
        return Err(io::Error::other(format!(
            "{} is not a plain path inside the output folder",
            to.display()
        )));
    };
    let root_dir = Root::open(root)?;
    let parent = |rel: &Path| rel.parent().unwrap_or(Path::new("")).to_path_buf();
    let source = root_dir
        .open_dirs(&parent(from_rel))
        .map_err(|e| confine_error(root, from, e))?;
    let dest = root_dir
        .create_dirs(&parent(to_rel))
        .map_err(|e| confine_error(root, to, e))?;
    source.rename(from_name, &dest, to_name)
}

/// Create `dir` and any missing parents below `root` (which must exist), refusing a link or
/// a non-folder at any part between them. `dir` must be under `root`. Each part is created
/// beneath the one before it ([`crate::confine`]), so no part checked can be swapped for a
/// link before it is used.
pub(crate) fn create_dir_within(root: &Path, dir: &Path) -> io::Result<()> {
    let rel = plain_rel(root, dir)?;
    let root_dir = Root::open(root)?;
    let walk = root_dir.create_dirs(rel);
    walk.map(drop).map_err(|e| confine_error(root, dir, e))
}

/// The folder `dir` below `root` (or `root` itself), held open: reached one part at a time
/// beneath the root's handle, created with its missing parents when `create`, refusing a link
/// or a non-folder at any part. What is then written in it through the handle stays in it,
/// whatever is later put in place of a folder on the way.
pub(crate) fn folder_within(root: &Path, dir: &Path, create: bool) -> io::Result<Root> {
    let rel = plain_rel(root, dir)?;
    let root_dir = Root::open(root)?;
    let walk = match create {
        true => root_dir.create_dirs(rel),
        false => root_dir.open_dirs(rel),
    }
    .map_err(|e| confine_error(root, dir, e))?;
    walk.into_root()
}

/// `crate::manifest::write_atomic` in `folder`, the folder `path` lies in, held open (reached
/// beneath the output folder's handle: [`OutputLayout::folder`]): the temporary file (named as
/// `write_atomic` names it) is created and renamed over `path`'s name through the handle,
/// never through a link; `path` names the file in errors. The content is written by `write`
/// (a table of 100,000 rows is not held whole in memory).
pub(crate) fn write_atomic_in(
    folder: &Root,
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
) -> io::Result<()> {
    let name = file_name(path)?;
    let tmp = file_name(&path.with_extension(format!("tmp-{}", std::process::id())))?;
    folder
        .top()
        .replace_file(&tmp, &name, write)
        .map_err(|e| link_refused(path, e))
}

/// The last part of `path`, the name of a file in its folder.
fn file_name(path: &Path) -> io::Result<std::ffi::OsString> {
    path.file_name()
        .map(std::ffi::OsStr::to_os_string)
        .ok_or_else(|| io::Error::other(format!("{} names no file", path.display())))
}

/// A file write or open refused because `path` (or its temporary name) is a link: said the
/// way a link among the folders is; any other failure as it is.
pub(crate) fn link_refused(path: &Path, e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) if code == libc::ELOOP => io::Error::other(format!(
            "{} is a link; zhi never follows links inside its output folder",
            path.display()
        )),
        _ => e,
    }
}

/// `path` made canonical as far as it exists, the rest appended as written: an output folder
/// not yet made. `None` when the part that does not exist climbs with `..`.
pub(crate) fn canonical_prefix(path: &Path) -> Option<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut tail = Vec::new();
    loop {
        if let Ok(c) = existing.canonicalize() {
            let mut out = c;
            for part in tail.iter().rev() {
                out.push(part);
            }
            return Some(out);
        }
        let name = existing.file_name()?.to_os_string();
        tail.push(name);
        if !existing.pop() {
            return None;
        }
        // `a/missing/..` cannot be resolved without the folder: refused.
        if path
            .components()
            .skip(existing.components().count())
            .any(|c| matches!(c, Component::ParentDir))
        {
            return None;
        }
    }
}

/// A walk below `root` towards `dir` that stopped, in the layout's words.
pub(crate) fn confine_error(root: &Path, dir: &Path, e: ConfineError) -> io::Error {
    match e {
        ConfineError::Link { at } => io::Error::other(format!(
            "{} is a link; zhi never follows links inside its output folder",
            root.join(at).display()
        )),
        ConfineError::NotAFolder { at } => io::Error::other(format!(
            "{} is in the way: it is not a folder",
            root.join(at).display()
        )),
        ConfineError::Unstable { at } => io::Error::other(format!(
            "{} keeps changing while zhi creates it",
            root.join(at).display()
        )),
        ConfineError::NotPlain => io::Error::other(format!(
            "{} is not a plain path inside the output folder",
            dir.display()
        )),
        ConfineError::Io(source) => source,
    }
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

    /// A tree removed beneath the output folder's handle: a parent that is a link refuses
    /// the removal, naming the link, and what it leads to stays.
    #[test]
    fn removes_a_tree_never_through_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(out.join(".zhi")).unwrap();
        std::fs::create_dir_all(outside.join("run/job")).unwrap();
        std::fs::write(outside.join("run/job/f"), "f").unwrap();
        std::os::unix::fs::symlink(&outside, out.join(".zhi/staging")).unwrap();
        let layout = super::OutputLayout::new(&out);
        let e = layout
            .remove_tree(&layout.staging().join("run"))
            .unwrap_err();
        assert!(e.to_string().contains("is a link"), "{e}");
        assert!(outside.join("run/job/f").is_file());
        let e = layout
            .remove_dir(&layout.staging().join("run"))
            .unwrap_err();
        assert!(e.to_string().contains("is a link"), "{e}");
        assert!(outside.join("run").is_dir());
    }

    /// `.zhi` swapped for a link to outside (atomically, again and again) while folders are
    /// created under it: each lands inside the output folder or is refused, never outside.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_folder_swapped_for_a_link_mid_walk_never_leads_outside() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("out");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(root.join(".zhi")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("swap")).unwrap();
        crate::confine::while_swapping(&root.join(".zhi"), &root.join("swap"), |n| {
            let _ = create_dir_within(&root, &root.join(format!(".zhi/staging/{n}/job")));
        });
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
    }
}
