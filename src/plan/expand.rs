//! Paths, folders and globs → the documents (or folders) a run is about, in a sorted,
//! deterministic order. The output folder and everything under it is never an input.

use super::PlanError;
use crate::error::{ErrorKind, JobError};
use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

/// How inputs are walked.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExpandOptions {
    /// `--exclude`: globs matched against the path as shown and against the file name.
    pub excludes: Vec<String>,
    /// `--hidden`: include dot-files and dot-folders.
    pub hidden: bool,
    /// `--follow-links`: descend into symlinked folders.
    pub follow_links: bool,
    /// Directory skills: one entry per folder instead of per file.
    pub directories: bool,
}

/// One document (or folder) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// As shown to the user and the model, `/`-separated.
    pub display: String,
    /// On disk.
    pub path: PathBuf,
    /// Where its outputs go below `<OUT>/<skill>/`: the shown path when under the current
    /// folder, else relative to the input root it was found under (`docs/a.pdf` for
    /// `/data/docs`).
    /// `None` when it is the shown path itself (the usual case: not held twice).
    pub out_display: Option<String>,
    /// A problem reading it (broken link, unreadable folder), recorded as the job's failure.
    pub problem: Option<JobError>,
    /// Its canonical path, when known without asking the file system again (dedupe key).
    pub canonical: Option<PathBuf>,
}

/// Expand `inputs` (as typed) into documents, each handed to `each` as it is found (none is
/// held here). `cwd` is the current folder; `output_dir` is excluded wherever it appears. An
/// error of `each` ends the walk and is returned.
pub(crate) fn expand(
    inputs: &[String],
    opts: &ExpandOptions,
    cwd: &Path,
    output_dir: &Path,
    each: &mut dyn FnMut(Found) -> Result<(), PlanError>,
) -> Result<(), PlanError> {
    let excludes = build_set(&opts.excludes, "--exclude")?;
    let out_abs = absolute(cwd, output_dir);
    let out_canon = out_abs.canonicalize().unwrap_or(out_abs.clone());
    let mut sink = Sink {
        // One input walked without following links meets each document once: nothing to
        // tell apart, nothing held.
        seen: (inputs.len() > 1 || opts.follow_links).then(Seen::default),
        found: 0,
        each,
    };

    for input in inputs {
        let before = sink.found;
        if is_glob(input) {
            let (base, rest) = split_glob(input);
            let base_abs = walk_root(input, cwd);
            let pattern = format!("{}/{rest}", base_abs.display()).replace("//", "/");
            let glob = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .map_err(|source| PlanError::BadGlob {
                    input: input.clone(),
                    source,
                })?
                .compile_matcher();
            if !base_abs.is_dir() {
                return Err(PlanError::GlobFolderMissing {
                    input: input.clone(),
                    base,
                });
            }
            walk(&base_abs, cwd, opts, &excludes, &out_canon, &mut |f| {
                if glob.is_match(&f.path) {
                    sink.push(f)?;
                }
                Ok(())
            })?;
        } else {
            let path = walk_root(input, cwd);
            let meta = std::fs::symlink_metadata(&path);
            match meta {
                Err(_) => {
                    return Err(PlanError::InputMissing(input.clone()));
                }
                Ok(m) if m.is_dir() || (m.file_type().is_symlink() && path.is_dir()) => {
                    if inside(&path, &out_canon) {
                        return Err(PlanError::InputInsideOutput {
                            input: input.clone(),
                            output_dir: output_dir.to_path_buf(),
                        });
                    }
                    if opts.directories {
                        sink.push(found_entry(&path, cwd, &path, None))?;
                    } else {
                        walk(&path, cwd, opts, &excludes, &out_canon, &mut |f| {
                            sink.push(f)
                        })?;
                    }
                }
                Ok(_) => {
                    if inside(&path, &out_canon) {
                        return Err(PlanError::InputInsideOutput {
                            input: input.clone(),
                            output_dir: output_dir.to_path_buf(),
                        });
                    }
                    if opts.directories {
                        return Err(PlanError::FileForFolderSkill(input.clone()));
                    }
                    let problem = probe_file(&path);
                    sink.push(found_entry(&path, cwd, &path, problem))?;
                }
            }
        }
        if sink.found == before && is_glob(input) {
            tracing::warn!("{}", msg!("glob `{input}` matched nothing"));
        }
    }
    Ok(())
}

/// Where the documents found go: each once.
struct Sink<'e> {
    /// The documents found so far, when the same one may be met twice.
    seen: Option<Seen>,
    found: usize,
    each: &'e mut dyn FnMut(Found) -> Result<(), PlanError>,
}

impl Sink<'_> {
    fn push(&mut self, mut f: Found) -> Result<(), PlanError> {
        // The same document reached twice (a folder and a file in it, a link) is planned once.
        let canonical = f.canonical.take();
        if let Some(seen) = &mut self.seen {
            let key = match canonical {
                Some(c) => c,
                None => f.path.canonicalize().unwrap_or_else(|_| f.path.clone()),
            };
            if !seen.first_time(&key) {
                return Ok(());
            }
        }
        self.found += 1;
        (self.each)(f)
    }
}

/// The documents already found, by a digest of their canonical path ([`super::digest`]): 8
/// bytes a document, not a copy of each path (an archive of a million documents is planned
/// in one pass).
#[derive(Default)]
struct Seen(HashSet<u64>);

impl Seen {
    fn first_time(&mut self, canonical: &Path) -> bool {
        self.0.insert(super::digest(canonical.as_os_str()))
    }
}

/// Walk a folder in sorted order, calling `each` with every document.
fn walk(
    root: &Path,
    cwd: &Path,
    opts: &ExpandOptions,
    excludes: &GlobSet,
    out_canon: &Path,
    each: &mut dyn FnMut(Found) -> Result<(), PlanError>,
) -> Result<(), PlanError> {
    let root_canon = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let walked = Walked {
        root,
        root_canon: &root_canon,
        cwd,
        opts,
        excludes,
        out_canon,
    };
    let mut emit = |f: Found| each(f);
    let mut it = walkdir::WalkDir::new(root)
        .follow_links(opts.follow_links)
        .sort_by_file_name()
        .into_iter();
    while let Some(entry) = it.next() {
        let entry = match entry {
            Ok(e) => e,
            // A folder that cannot be read is a failed job of its own; directory skills plan
            // the folders they can see.
            Err(e) if !opts.directories => {
                emit(unreadable(&e, root, cwd))?;
                continue;
            }
            Err(_) => continue,
        };
        let dir = entry.file_type().is_dir();
        let Some(f) = walked.admit(&entry) else {
            // Nothing below a skipped folder is a document either.
            if dir {
                it.skip_current_dir();
            }
            continue;
        };
        let ft = entry.file_type();
        if opts.directories {
            if dir {
                emit(f)?;
            }
        } else if ft.is_symlink() {
            if let Some(broken) = broken_link(entry.path(), f) {
                emit(broken)?;
            }
        } else if ft.is_file() {
            // An unreadable file fails its job when it is read, with the reason.
            emit(f)?;
        }
        // Folders are walked into; sockets, FIFOs and devices are not documents (reading a
        // FIFO would block).
    }
    Ok(())
}

/// What a walk needs to know of each entry.
struct Walked<'a> {
    root: &'a Path,
    root_canon: &'a Path,
    cwd: &'a Path,
    opts: &'a ExpandOptions,
    excludes: &'a GlobSet,
    out_canon: &'a Path,
}

impl Walked<'_> {
    /// The entry as found, unless it is hidden (without `--hidden`), inside the output folder
    /// or excluded. The walk's root is never hidden nor excluded.
    fn admit(&self, entry: &walkdir::DirEntry) -> Option<Found> {
        let name = entry.file_name().to_string_lossy();
        if entry.depth() > 0 && !self.opts.hidden && name.starts_with('.') {
            return None;
        }
        let canon = canonical(entry, self.root, self.root_canon, self.opts.follow_links);
        if canon.starts_with(self.out_canon) {
            return None;
        }
        let mut f = found_entry(entry.path(), self.cwd, self.root, None);
        f.canonical = Some(canon);
        let excluded = self.excludes.is_match(&f.display) || self.excludes.is_match(name.as_ref());
        (entry.depth() == 0 || !excluded).then_some(f)
    }
}

/// The canonical path of a walked entry. Derived from the root's, without a system call per
/// entry, unless a symbolic link is on the way (then the file system is asked).
fn canonical(entry: &walkdir::DirEntry, root: &Path, root_canon: &Path, follow: bool) -> PathBuf {
    if follow || entry.path_is_symlink() {
        return entry
            .path()
            .canonicalize()
            .unwrap_or_else(|_| entry.path().to_path_buf());
    }
    match entry.path().strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => root_canon.to_path_buf(),
        Ok(rel) => root_canon.join(rel),
        Err(_) => entry.path().to_path_buf(),
    }
}

/// An entry the walk could not read, as a failed job that says why.
fn unreadable(e: &walkdir::Error, root: &Path, cwd: &Path) -> Found {
    let path = e
        .path()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root.to_path_buf());
    let msg = if e.loop_ancestor().is_some() {
        msg!("symbolic link loop")
    } else {
        e.io_error()
            .map(ToString::to_string)
            .unwrap_or_else(|| e.to_string())
    };
    found_entry(
        &path,
        cwd,
        root,
        Some(JobError::new(
            ErrorKind::InputError,
            msg!("cannot read {}: {msg}", path.display()),
        )),
    )
}

/// A symbolic link met in a walk. Not following links (docs/cli.md#symbolic-links), a link is
/// skipped, whatever it points to — a link inside a folder of documents may lead anywhere on the
/// machine. A broken link is a failed job (returned), so the person hears about it.
fn broken_link(path: &Path, f: Found) -> Option<Found> {
    match std::fs::metadata(path) {
        Ok(_) => {
            tracing::info!(
                "{}",
                msg!("skipping symbolic link {} (use --follow-links)", f.display)
            );
            None
        }
        Err(e) => {
            let target = std::fs::read_link(path)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            Some(Found {
                problem: Some(JobError::new(
                    ErrorKind::InputError,
                    msg!("broken symbolic link {} -> {target}: {e}", f.display),
                )),
                ..f
            })
        }
    }
}

/// A file that cannot be opened fails its job with the reason.
fn probe_file(path: &Path) -> Option<JobError> {
    // A device, FIFO or socket named as an input is no document: reading `/dev/zero` never
    // ends and opening a FIFO blocks until someone writes to it. Looked at before opening.
    if let Ok(m) = std::fs::metadata(path)
        && !m.is_file()
    {
        use std::os::unix::fs::FileTypeExt;
        let ft = m.file_type();
        let what = if ft.is_char_device() {
            msg!("a character device")
        } else if ft.is_block_device() {
            msg!("a block device")
        } else if ft.is_fifo() {
            msg!("a FIFO (named pipe)")
        } else if ft.is_socket() {
            msg!("a socket")
        } else {
            msg!("not a regular file")
        };
        return Some(JobError::new(
            ErrorKind::InputError,
            msg!("{} is {what}, not a document zhi can read", path.display()),
        ));
    }
    match std::fs::File::open(path) {
        Ok(_) => None,
        Err(e) => Some(JobError::new(
            ErrorKind::InputError,
            msg!("cannot read {}: {e}", path.display()),
        )),
    }
}

fn found_entry(path: &Path, cwd: &Path, root: &Path, problem: Option<JobError>) -> Found {
    let display = display_path(path, cwd);
    let out_display = Path::new(&display).is_absolute().then(|| {
        let root_name = root
            .file_name()
            .map(|n| shown(Path::new(n)))
            .unwrap_or_else(|| "root".into());
        match path.strip_prefix(root) {
            Ok(rel) if !rel.as_os_str().is_empty() => {
                format!("{root_name}/{}", shown(rel))
            }
            _ => root_name,
        }
    });
    Found {
        display,
        path: path.to_path_buf(),
        out_display,
        problem,
        canonical: None,
    }
}

/// The path as shown: relative to the current folder when under it; else the path itself.
pub(super) fn display_path(path: &Path, cwd: &Path) -> String {
    let p = normalize(path);
    let shown = match p.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        Ok(_) => PathBuf::from("."),
        Err(_) => p.clone(),
    };
    self::shown(&shown)
}

/// A path as text that tells every byte name apart: its parts joined by `/`, bytes that are
/// not UTF-8 written `\xNN` and a backslash written `\\`, so two different names never
/// show (or plan, or get an output folder) as one, and the text leads back to the name.
pub(super) fn shown(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    // Sized once: the plan holds one of these a job.
    let mut out = String::with_capacity(path.as_os_str().len() + 8);
    for (i, part) in path.iter().enumerate() {
        if i > 0 && !out.ends_with('/') {
            out.push('/');
        }
        let mut bytes = part.as_bytes();
        while !bytes.is_empty() {
            let (valid, rest) = match std::str::from_utf8(bytes) {
                Ok(s) => (s, &[][..]),
                Err(e) => {
                    let (good, bad) = bytes.split_at(e.valid_up_to());
                    // `valid_up_to` marks a UTF-8 boundary.
                    (std::str::from_utf8(good).unwrap_or_default(), bad)
                }
            };
            out.push_str(&valid.replace('\\', "\\\\"));
            match rest.split_first() {
                Some((b, tail)) => {
                    out.push_str(&format!("\\x{b:02x}"));
                    bytes = tail;
                }
                None => bytes = rest,
            }
        }
    }
    out
}

fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    normalize(&if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    })
}

/// Remove `.` and resolve `..` lexically (the path need not exist).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn inside(path: &Path, out_canon: &Path) -> bool {
    let canon = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    canon.starts_with(out_canon)
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// Whether an input's folder holds the current folder (`..`, or a glob from it): its documents
/// under the current folder are shown relative to it, and the others by their path, laid out
/// under the input folder's name, so a job of each kind can be given one job folder.
pub(super) fn holds_current_folder(input: &str, cwd: &Path) -> bool {
    let root = walk_root(input, cwd);
    root != cwd && cwd.starts_with(&root)
}

/// Where an input is walked from: a glob's literal folder, else the input itself; absolute.
fn walk_root(input: &str, cwd: &Path) -> PathBuf {
    if is_glob(input) {
        absolute(cwd, &split_glob(input).0)
    } else {
        absolute(cwd, Path::new(input))
    }
}

/// `docs/**/*.pdf` → (`docs`, `**/*.pdf`): the literal folder to walk and the pattern below it.
fn split_glob(s: &str) -> (PathBuf, String) {
    let mut base = PathBuf::new();
    let parts: Vec<&str> = s.split('/').collect();
    let mut i = 0;
    while i < parts.len() && !is_glob(parts[i]) {
        if parts[i].is_empty() && i == 0 {
            base.push("/");
        } else {
            base.push(parts[i]);
        }
        i += 1;
    }
    if base.as_os_str().is_empty() {
        base.push(".");
    }
    (base, parts[i.min(parts.len())..].join("/"))
}

fn build_set(globs: &[String], flag: &'static str) -> Result<GlobSet, PlanError> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        let glob = Glob::new(g).map_err(|source| PlanError::BadExclude {
            flag,
            glob: g.clone(),
            source,
        })?;
        b.add(glob);
        // `--exclude drafts` also excludes everything under drafts/.
        if !g.ends_with("/**")
            && let Ok(under) = Glob::new(&format!("{}/**", g.trim_end_matches('/')))
        {
            b.add(under);
        }
    }
    b.build()
        .map_err(|source| PlanError::BadExcludes { flag, source })
}
