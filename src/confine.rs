//! Confinement by the kernel: folders and files are created, opened, listed and moved
//! *beneath* a folder handle, one part at a time, and no part is ever reached through a link.
//!
//! Checking a path and then opening it by path leaves a gap: a parent checked as a folder can
//! be swapped for a link before the open, and the open follows it. Here every part is opened
//! relative to the handle of the folder before it (`openat` with `O_NOFOLLOW | O_DIRECTORY`),
//! so what was checked is what is used: a part that is a link is refused by the kernel itself,
//! and a folder moved or replaced mid-walk cannot carry the walk anywhere else. The names
//! walked are plain (no `..`, no `/`), so nothing leaves the root.
//!
//! This is the one mechanism behind the output folder's layout ([`crate::layout`]: its
//! folders, and the renames that commit a job's staged outputs into its job folder or keep a
//! failed job's staging), zhi's own files in it (the run's records: `results.jsonl` appended
//! and `results.csv` and `manifest.json` put in place through the run folder's handle, held
//! from the run's start, and its transcripts; the lock; the commit journals, the cache
//! index, the checkpoints, the batch book's files and the extraction tables, each replaced
//! whole beneath its folder's handle: [`Walk::replace_file`]; a job's staging as zhi fills it
//! itself: a long document's joined pieces, a workflow's step files moved into place, and the
//! removals of staging, trash, checkpoints and scratch folders, trees included:
//! [`Walk::remove_tree`]) and the agent's sandbox (`agent::sandbox`: the tools' writes, and
//! their reads, listings and looks at files in the output folder); the policy (which names
//! are allowed, what a refusal says) stays with them. It works the same on every unix
//! (`openat2`'s `RESOLVE_BENEATH` is Linux-only and, for names without `..` and walked without
//! links, adds nothing).
//!
//! It must never follow a link below the root, nor open the root by anything but its path
//! (the one place where ambient authority is used: the root is what the person named).

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// How often a part is looked at again when it changes under the walk (created by a concurrent
/// job, removed again).
const ATTEMPTS: usize = 2;

/// Why a walk beneath the root stopped. `at` is the part where it stopped, relative to the
/// root (the path as far as it was walked). Never shown as it is: each caller (the sandbox,
/// the layout) says it in its own words.
#[derive(Debug)]
pub(crate) enum ConfineError {
    /// The part is a link: never followed.
    Link { at: PathBuf },
    /// The part is a file (or anything but a folder) where a folder is needed.
    NotAFolder { at: PathBuf },
    /// The part kept changing while it was created (created and removed by someone else).
    Unstable { at: PathBuf },
    /// The path is not a plain relative path (`..`, `/`, a prefix).
    NotPlain,
    /// The file system refused.
    Io(io::Error),
}

/// A folder opened once by its path; everything else is reached beneath it.
#[derive(Debug)]
pub(crate) struct Root {
    fd: OwnedFd,
}

impl Root {
    /// Open `path` as the root. It may be (or pass through) a link: the root is what the
    /// person or the run named; only what lies below it is confined.
    pub(crate) fn open(path: &Path) -> io::Result<Root> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Root { fd })
    }

    /// Create the folder `rel` and any missing parents beneath the root, refusing a link or
    /// a non-folder at any part. The returned [`Walk`] holds the folder open and knows which
    /// folders it created ([`Walk::undo`]).
    pub(crate) fn create_dirs(&self, rel: &Path) -> Result<Walk<'_>, ConfineError> {
        self.walk(rel, true)
    }

    /// Open the existing folder `rel` beneath the root, refusing a link or a non-folder at
    /// any part (a missing part is [`ConfineError::Io`] with `NotFound`). Nothing is created.
    pub(crate) fn open_dirs(&self, rel: &Path) -> Result<Walk<'_>, ConfineError> {
        self.walk(rel, false)
    }

    /// Open the existing file `rel` beneath the root for reading: every folder on the way and
    /// the file itself without following a link. What is read is the file that lies there
    /// when it is opened, never one a link leads to.
    pub(crate) fn open_file(&self, rel: &Path) -> Result<File, ConfineError> {
        let (parent, name) = split_last(rel)?;
        self.open_dirs(parent)?
            .open_file(name)
            .map_err(|e| link_or(e, parent.join(name)))
    }

    /// What the file or folder `rel` beneath the root is, not following a link at any part.
    pub(crate) fn stat(&self, rel: &Path) -> Result<rustix::fs::Stat, ConfineError> {
        if rel.components().all(|c| c == Component::CurDir) {
            return rustix::fs::fstat(&self.fd).map_err(|e| ConfineError::Io(e.into()));
        }
        let (parent, name) = split_last(rel)?;
        let walk = self.open_dirs(parent)?;
        rustix::fs::statat(walk.folder(), name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| ConfineError::Io(e.into()))
    }

    /// The same folder, held by a second handle.
    pub(crate) fn try_clone(&self) -> io::Result<Root> {
        Ok(Root {
            fd: self.fd.try_clone()?,
        })
    }

    /// The root itself, as a walk of no parts: its files are reached with [`Walk`]'s methods.
    pub(crate) fn top(&self) -> Walk<'_> {
        Walk {
            root: self,
            chain: Vec::new(),
            created_from: None,
        }
    }

    /// Walk to `rel` one part at a time; `create`: make missing folders on the way.
    fn walk(&self, rel: &Path, create: bool) -> Result<Walk<'_>, ConfineError> {
        let mut walk = Walk {
            root: self,
            chain: Vec::new(),
            created_from: None,
        };
        let mut at = PathBuf::new();
        for part in rel.components() {
            let name = match part {
                Component::Normal(name) => name,
                Component::CurDir => continue,
                _ => return Err(ConfineError::NotPlain),
            };
            at.push(name);
            let (fd, created) = open_or_create_dir(walk.folder(), name, &at, create)?;
            if created && walk.created_from.is_none() {
                walk.created_from = Some(walk.chain.len());
            }
            walk.chain.push((fd, name.to_os_string()));
        }
        Ok(walk)
    }
}

/// A folder reached beneath a [`Root`], and the folders on the way to it.
#[derive(Debug)]
pub(crate) struct Walk<'a> {
    root: &'a Root,
    /// Each folder opened, with its name in the folder before it.
    chain: Vec<(OwnedFd, OsString)>,
    /// The first folder of `chain` this walk created (all after it were created too).
    created_from: Option<usize>,
}

impl Walk<'_> {
    /// The folder walked to.
    pub(crate) fn folder(&self) -> BorrowedFd<'_> {
        self.chain
            .last()
            .map_or(self.root.fd.as_fd(), |(fd, _)| fd.as_fd())
    }

    /// Create `name` in the folder as a new file (never over an existing one, never through
    /// a link planted in its place), open for writing.
    pub(crate) fn create_new_file(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        self.open_for_writing(name, OFlags::EXCL, mode)
    }

    /// Open the file `name` in the folder for appending, creating it when missing (as
    /// `OpenOptions::new().create(true).append(true)` does), never through a link (`ELOOP`
    /// when a link lies there).
    pub(crate) fn open_append(&self, name: &OsStr) -> io::Result<File> {
        self.open_for_writing(name, OFlags::APPEND, 0o666)
    }

    /// Create or truncate the file `name` in the folder, open for writing (as `File::create`
    /// does), never through a link (`ELOOP` when a link lies there).
    pub(crate) fn create_file(&self, name: &OsStr) -> io::Result<File> {
        self.open_for_writing(name, OFlags::TRUNC, 0o666)
    }

    /// Open `name` in the folder for writing, created when missing, never through a link;
    /// `how` says the rest (new only, appending, truncating).
    fn open_for_writing(&self, name: &OsStr, how: OFlags, mode: u32) -> io::Result<File> {
        let fd = rustix::fs::openat(
            self.folder(),
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC | how,
            Mode::from_raw_mode(mode as rustix::fs::RawMode),
        )?;
        Ok(File::from(fd))
    }

    /// Replace `name` in the folder whole: the content is written by `write` into `tmp` (in
    /// the same folder, never through a link), synced, and renamed over `name`, so a reader
    /// sees the old content or the new, never a part. A failure removes `tmp`.
    pub(crate) fn replace_file(
        &self,
        tmp: &OsStr,
        name: &OsStr,
        write: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> io::Result<()> {
        let written = (|| {
            let mut f = self.create_file(tmp)?;
            write(&mut f)?;
            f.sync_all()?;
            self.rename(tmp, self, name)
        })();
        // A full disk must not leave half-written temporary files behind.
        if written.is_err() {
            self.remove_file(tmp);
        }
        written
    }

    /// The folder walked to, as a root of its own: what lies below it is reached beneath it
    /// (a run's folder, held for the run's writes).
    pub(crate) fn into_root(mut self) -> io::Result<Root> {
        let fd = match self.chain.pop() {
            Some((fd, _)) => fd,
            None => self.root.fd.try_clone()?,
        };
        Ok(Root { fd })
    }

    /// Open the file `name` in the folder for reading, never through a link (`ELOOP` when a
    /// link lies there), and without blocking on a fifo.
    pub(crate) fn open_file(&self, name: &OsStr) -> io::Result<File> {
        let fd = rustix::fs::openat(
            self.folder(),
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(File::from(fd))
    }

    /// The entries of the folder (not `.` and `..`), each with what it is (a link is a link,
    /// never followed) and, when it can be looked at, its size.
    pub(crate) fn entries(&self) -> io::Result<Vec<Entry>> {
        let mut found = Vec::new();
        for entry in rustix::fs::Dir::read_from(self.folder())? {
            let entry = entry?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            let stat = rustix::fs::statat(self.folder(), name, AtFlags::SYMLINK_NOFOLLOW).ok();
            found.push(Entry {
                name: name.to_os_string(),
                kind: stat.as_ref().map(|st| FileType::from_raw_mode(st.st_mode)),
                len: stat.map(|st| st.st_size as u64),
            });
        }
        Ok(found)
    }

    /// Move `name` from this folder to `to_name` in the folder `to` (both reached beneath
    /// the root): the rename acts on the entries themselves, so neither end can be carried
    /// elsewhere by a link put in place of a folder on the way.
    pub(crate) fn rename(&self, name: &OsStr, to: &Walk<'_>, to_name: &OsStr) -> io::Result<()> {
        rustix::fs::renameat(self.folder(), name, to.folder(), to_name)?;
        Ok(())
    }

    /// Whether `name` in the folder is a link (not followed).
    pub(crate) fn is_link(&self, name: &OsStr) -> bool {
        kind_of(self.folder(), name) == Some(FileType::Symlink)
    }

    /// Remove the file `name` from the folder (a write that failed half-way).
    pub(crate) fn remove_file(&self, name: &OsStr) {
        let _ = self.unlink(name);
    }

    /// Remove the file `name` from the folder (a link there is removed, never followed), or
    /// say why not.
    pub(crate) fn unlink(&self, name: &OsStr) -> io::Result<()> {
        rustix::fs::unlinkat(self.folder(), name, AtFlags::empty())?;
        Ok(())
    }

    /// Remove the empty folder `name` from the folder (a link there is refused: `ENOTDIR`).
    pub(crate) fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        rustix::fs::unlinkat(self.folder(), name, AtFlags::REMOVEDIR)?;
        Ok(())
    }

    /// Remove `name` from the folder with everything in it (as `std::fs::remove_dir_all`
    /// does): each folder inside is opened beneath the one before it without following a
    /// link, so a link inside, or one swapped in for a folder meanwhile, is removed itself,
    /// never what it leads to. `name` itself may be a file or a link (then removed alone).
    pub(crate) fn remove_tree(&self, name: &OsStr) -> io::Result<()> {
        remove_tree_at(self.folder(), name)
    }

    /// Remove the folders this walk created, deepest first, each only if still empty.
    pub(crate) fn undo(self) {
        let Some(from) = self.created_from else {
            return;
        };
        for i in (from..self.chain.len()).rev() {
            let parent = match i {
                0 => self.root.fd.as_fd(),
                _ => self.chain[i - 1].0.as_fd(),
            };
            let _ = rustix::fs::unlinkat(parent, &self.chain[i].1, AtFlags::REMOVEDIR);
        }
    }
}

/// An entry of a folder read beneath a [`Root`] ([`Walk::entries`]).
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub name: OsString,
    /// What it is, not following a link (`None`: gone, or cannot be looked at).
    pub kind: Option<FileType>,
    /// Its size in bytes, when it could be looked at.
    pub len: Option<u64>,
}

/// A plain relative path's folder part and its last name.
fn split_last(rel: &Path) -> Result<(&Path, &OsStr), ConfineError> {
    match (rel.parent(), rel.components().next_back()) {
        (Some(parent), Some(Component::Normal(name))) => Ok((parent, name)),
        _ => Err(ConfineError::NotPlain),
    }
}

/// A refused open of `at`: a link in its place is [`ConfineError::Link`].
pub(crate) fn link_or(e: io::Error, at: PathBuf) -> ConfineError {
    match e.raw_os_error() {
        Some(code) if code == libc::ELOOP => ConfineError::Link { at },
        _ => ConfineError::Io(e),
    }
}

/// Open the folder `name` in `parent` without following a link, creating it when missing
/// (`create`). Returns the folder and whether this call created it.
fn open_or_create_dir(
    parent: BorrowedFd<'_>,
    name: &OsStr,
    at: &Path,
    create: bool,
) -> Result<(OwnedFd, bool), ConfineError> {
    let io_error = |e: rustix::io::Errno| ConfineError::Io(e.into());
    let mut created = false;
    for _ in 0..ATTEMPTS {
        match open_dir(parent, name) {
            Ok(fd) => return Ok((fd, created)),
            Err(rustix::io::Errno::NOENT) if !create => {
                return Err(io_error(rustix::io::Errno::NOENT));
            }
            Err(rustix::io::Errno::NOENT) => {}
            // A link or a file in the way (which error a unix gives differs: ask what it is).
            Err(e) => {
                return Err(match kind_of(parent, name) {
                    Some(FileType::Symlink) => ConfineError::Link {
                        at: at.to_path_buf(),
                    },
                    Some(FileType::Directory) | None => io_error(e),
                    Some(_) => ConfineError::NotAFolder {
                        at: at.to_path_buf(),
                    },
                });
            }
        }
        match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(0o777)) {
            Ok(()) => created = true,
            // Created by another job meanwhile: open it (or judge it) again.
            Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(io_error(e)),
        }
    }
    Err(ConfineError::Unstable {
        at: at.to_path_buf(),
    })
}

/// [`Walk::remove_tree`]: `name` in `parent`, a folder emptied beneath its own handle and then
/// removed, or anything else unlinked.
fn remove_tree_at(parent: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let folder = match open_dir(parent, name) {
        Ok(fd) => fd,
        // A file, a link (never followed) or anything but a folder: removed itself.
        Err(rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) => {
            rustix::fs::unlinkat(parent, name, AtFlags::empty())?;
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(&folder)? {
        let entry = entry?;
        let child = OsStr::from_bytes(entry.file_name().to_bytes());
        if child != "." && child != ".." {
            names.push(child.to_os_string());
        }
    }
    for child in &names {
        match remove_tree_at(folder.as_fd(), child) {
            // Removed by someone else meanwhile: what was wanted.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => other?,
        }
    }
    rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)?;
    Ok(())
}

fn open_dir(parent: BorrowedFd<'_>, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// What `name` in `parent` is, without following a link (`None`: nothing, or unreadable).
fn kind_of(parent: BorrowedFd<'_>, name: &OsStr) -> Option<FileType> {
    rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|st| FileType::from_raw_mode(st.st_mode))
}

/// Test support for the race the path checks had: runs `attempt(n)` again and again while
/// another thread swaps `a` and `b` atomically (a folder and a link to outside), until both
/// have run thousands of times (or ten seconds passed).
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn while_swapping(a: &Path, b: &Path, mut attempt: impl FnMut(usize)) {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    const ROUNDS: usize = 10_000;
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (stop, swaps, a, b) = (stop.clone(), swaps.clone(), a.to_owned(), b.to_owned());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut n = 0;
    while (n < ROUNDS || swaps.load(Ordering::Relaxed) < ROUNDS)
        && std::time::Instant::now() < deadline
    {
        attempt(n);
        n += 1;
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::io::Write;
    use std::os::unix::fs::symlink;

    #[test]
    fn creates_beneath_and_undoes_only_what_it_created() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::open(tmp.path()).unwrap();
        fs::create_dir(tmp.path().join("a")).unwrap();
        let walk = root.create_dirs(Path::new("a/b/c")).unwrap();
        let mut f = walk.create_new_file(OsStr::new("x.md"), 0o644).unwrap();
        f.write_all(b"x").unwrap();
        assert_eq!(
            fs::read_to_string(tmp.path().join("a/b/c/x.md")).unwrap(),
            "x"
        );
        let err = walk.create_new_file(OsStr::new("x.md"), 0o644).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        walk.remove_file(OsStr::new("x.md"));
        walk.undo();
        assert!(tmp.path().join("a").is_dir());
        assert!(!tmp.path().join("a/b").exists());
    }

    #[test]
    fn refuses_links_files_and_dot_dot() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let outside = tmp.path().join("outside");
        fs::create_dir_all(&out).unwrap();
        fs::create_dir_all(&outside).unwrap();
        symlink(&outside, out.join("link")).unwrap();
        fs::write(out.join("file"), "f").unwrap();
        let root = Root::open(&out).unwrap();
        match root.create_dirs(Path::new("link/x")) {
            Err(ConfineError::Link { at }) => assert_eq!(at, Path::new("link")),
            other => panic!("unexpected {other:?}"),
        }
        match root.create_dirs(Path::new("file/x")) {
            Err(ConfineError::NotAFolder { at }) => assert_eq!(at, Path::new("file")),
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            root.create_dirs(Path::new("../outside/x")),
            Err(ConfineError::NotPlain)
        ));
        assert!(fs::read_dir(&outside).unwrap().next().is_none());
    }

    #[test]
    fn removes_a_tree_but_never_what_a_link_in_it_leads_to() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let outside = tmp.path().join("outside");
        fs::create_dir_all(out.join("tree/a/b")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("keep"), "k").unwrap();
        fs::write(out.join("tree/a/b/x"), "x").unwrap();
        symlink(&outside, out.join("tree/a/link")).unwrap();
        symlink(&outside, out.join("link")).unwrap();
        let root = Root::open(&out).unwrap();
        root.top().remove_tree(OsStr::new("tree")).unwrap();
        assert!(!out.join("tree").exists());
        // A link in place of the tree is removed itself.
        root.top().remove_tree(OsStr::new("link")).unwrap();
        assert!(fs::symlink_metadata(out.join("link")).is_err());
        assert!(outside.join("keep").is_file());
    }
}
