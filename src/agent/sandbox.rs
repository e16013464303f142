//! The job's sandbox: the only way a tool reaches the file system.
//!
//! Documents are untrusted and the model may obey instructions hidden in them, so every path a
//! model names is checked here before anything is opened. The checks produce [`ReadTarget`],
//! [`ListTarget`] and [`WriteTarget`] values; their fields are private and nothing else can build
//! them, so a tool that holds one holds a path that passed the check.
//!
//! Reads are confined to the job's own inputs (its files, and the files under its input folders)
//! and the job's output folder, compared after every symlink is resolved. A read, listing or
//! look at something in the output folder then goes beneath the output folder's handle by the
//! resolved path ([`Sandbox::open`], [`Sandbox::folder_entries`], [`Sandbox::file_len`]), so a
//! folder swapped for a link after the check is refused, not followed; an input (named by the
//! person, outside the output folder) is opened by its resolved path. Writes are confined to
//! the output folder: relative paths only, no `..`, no link followed anywhere on the way, and
//! never over an existing file. A write is carried out beneath the output folder's handle, one
//! part at a time (`crate::confine`), so a folder that passed cannot be swapped for a link
//! before the file is created.
//!
//! This module must never widen what a job may touch: no fallback to the current directory, no
//! following of links during a write, no overwriting.

pub(crate) use crate::confine::Entry;
use crate::confine::{ConfineError, Root, Walk};
use crate::small_file::Stamp;
use rustix::fs::FileType;
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// The largest single file `file_write` may create.
pub(crate) const MAX_WRITE_BYTES: usize = 10 * 1024 * 1024;
/// The longest path (in bytes) a tool may name.
const MAX_PATH_BYTES: usize = 1024;
/// The longest single file or folder name (in bytes); the limit of common file systems.
const MAX_NAME_BYTES: usize = 255;
/// How deep a written file may be nested under the output folder.
const MAX_WRITE_DEPTH: usize = 16;
/// How many files one job may write (a model in a loop of writes must not fill the disk).
pub(crate) const MAX_FILES_PER_JOB: usize = 1000;
/// How many bytes one job may write in all.
pub(crate) const MAX_BYTES_PER_JOB: u64 = 100 * 1024 * 1024;
/// How many inputs a refusal lists when it says what may be read.
const HINT_INPUTS: usize = 8;

/// The characters that reorder how text is shown (embeddings, overrides, isolates, marks).
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

/// A tool call the sandbox will not carry out. The message goes back to the model, so it says
/// what is allowed instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct Refusal {
    message: String,
}

impl Refusal {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Refusal {
            message: message.into(),
        }
    }

    /// The text for the model.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

/// A failed write: refused by the sandbox, or refused by the file system.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The name was free when checked and taken when written (another call of the same turn
    /// wrote it meanwhile): nothing is overwritten.
    #[error(transparent)]
    Exists(Refusal),
    #[error("could not write `{path}`: {source}")]
    Io { path: String, source: io::Error },
}

/// The sandbox could not be set up (a bug or a broken staging folder, not the model's doing).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SandboxError {
    #[error("the output folder `{0}` must be an absolute path")]
    NotAbsolute(PathBuf),
    #[error("the output folder `{path}` cannot be used: {source}")]
    OutputDir { path: PathBuf, source: io::Error },
    #[error("the output folder `{0}` is not a folder")]
    NotAFolder(PathBuf),
}

/// Where a readable path lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// One of the job's input files.
    Input,
    /// A file or folder under one of the job's input folders.
    InputDir,
    /// The job's output folder or something in it.
    Output,
}

impl Origin {
    /// Whether this is one of the job's documents (as opposed to something the model wrote).
    pub(crate) fn is_input(self) -> bool {
        matches!(self, Origin::Input | Origin::InputDir)
    }
}

/// A path that passed the read check. Only [`Sandbox`] builds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadTarget {
    path: PathBuf,
    display: String,
    origin: Origin,
    is_dir: bool,
}

impl ReadTarget {
    /// The canonical path (no symlinks left in it).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
    /// The path as the model knows it.
    pub(crate) fn display(&self) -> &str {
        &self.display
    }
    pub(crate) fn is_dir(&self) -> bool {
        self.is_dir
    }
    /// Where it lies: an input, or the output folder.
    pub(crate) fn origin(&self) -> Origin {
        self.origin
    }
}

/// What `file_list` may show. Only [`Sandbox`] builds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListTarget {
    target: Option<ReadTarget>,
}

impl ListTarget {
    /// The checked folder or file, or `None` for the overview (no path, or `.`): the job's
    /// inputs, its input folders and the top of the output folder.
    pub(crate) fn target(&self) -> Option<&ReadTarget> {
        self.target.as_ref()
    }
}

/// A path that passed the write check: relative, normalised, inside the output folder. Only
/// [`Sandbox`] builds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WriteTarget {
    rel: PathBuf,
}

impl WriteTarget {
    /// The path relative to the output folder.
    pub(crate) fn rel_path(&self) -> &Path {
        &self.rel
    }
    /// The lower-cased extension, if any.
    pub(crate) fn extension(&self) -> Option<String> {
        self.rel
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase())
    }
    /// The path as the model wrote it (with `/`).
    pub(crate) fn display(&self) -> String {
        self.rel.to_string_lossy().into_owned()
    }
}

#[derive(Debug)]
struct InputFile {
    display: PathBuf,
    real: PathBuf,
    canonical: Option<PathBuf>,
}

#[derive(Debug)]
struct InputDir {
    display: PathBuf,
    canonical: Option<PathBuf>,
}

/// Collects a job's inputs; [`SandboxBuilder::build`] checks the output folder.
#[derive(Debug)]
pub(crate) struct SandboxBuilder {
    output_dir: PathBuf,
    inputs: Vec<(String, PathBuf)>,
    pins: BTreeMap<PathBuf, Stamp>,
    input_dirs: Vec<(String, PathBuf)>,
    excluded: Vec<PathBuf>,
    /// The output folder's handle when the caller opened it (confined) already.
    opened: Option<Root>,
}

impl SandboxBuilder {
    /// The output folder as the caller already opened it, beneath its own root (a job's
    /// staging, reached beneath the run's output folder): writes go beneath this handle, so a
    /// parent swapped for a link after it was opened leads nowhere.
    pub(crate) fn opened(mut self, root: Root) -> Self {
        self.opened = Some(root);
        self
    }

    /// An input file: `display` is the path the model is told (e.g. `reports/q3.txt`), `real`
    /// the file on disk.
    pub(crate) fn input(mut self, display: impl Into<String>, real: impl Into<PathBuf>) -> Self {
        self.inputs.push((display.into(), real.into()));
        self
    }

    /// A file read like an input but pinned to the file `stamp` names (an Agent Skill's
    /// reference): never reached through a link, and read only while its path still names
    /// that very file ([`Sandbox::unchanged`]).
    pub(crate) fn pinned(
        mut self,
        display: impl Into<String>,
        real: impl Into<PathBuf>,
        stamp: Stamp,
    ) -> Self {
        let real = real.into();
        self.pins.insert(real.clone(), stamp);
        self.inputs.push((display.into(), real));
        self
    }

    /// An input folder (directory-type jobs): every file under it may be read and listed.
    pub(crate) fn input_dir(
        mut self,
        display: impl Into<String>,
        real: impl Into<PathBuf>,
    ) -> Self {
        self.input_dirs.push((display.into(), real.into()));
        self
    }

    /// A folder never readable through an input folder, even when it lies inside one (the
    /// run's output root: other jobs' outputs and the run's records).
    pub(crate) fn exclude(mut self, path: impl Into<PathBuf>) -> Self {
        self.excluded.push(path.into());
        self
    }

    pub(crate) fn build(mut self) -> Result<Sandbox, SandboxError> {
        if !self.output_dir.is_absolute() {
            return Err(SandboxError::NotAbsolute(self.output_dir));
        }
        let output_dir =
            fs::canonicalize(&self.output_dir).map_err(|source| SandboxError::OutputDir {
                path: self.output_dir.clone(),
                source,
            })?;
        if !output_dir.is_dir() {
            return Err(SandboxError::NotAFolder(self.output_dir));
        }
        // Writes happen beneath this handle, never by path.
        let root = match self.opened.take() {
            Some(root) => root,
            None => Root::open(&output_dir).map_err(|source| SandboxError::OutputDir {
                path: self.output_dir.clone(),
                source,
            })?,
        };
        // An input that cannot be resolved (gone, broken link) stays listed by its display
        // path but can never be read.
        let inputs = self
            .inputs
            .into_iter()
            .map(|(display, real)| InputFile {
                display: normalize(&display),
                canonical: match self.pins.get(&real) {
                    // Pinned: the path itself, while it names the pinned file; never a link's
                    // target.
                    Some(pin) => {
                        (Stamp::of_file(&real).as_ref() == Some(pin)).then(|| real.clone())
                    }
                    None => fs::canonicalize(&real).ok(),
                },
                real,
            })
            .collect();
        let input_dirs = self
            .input_dirs
            .into_iter()
            .map(|(display, real)| InputDir {
                display: normalize(&display),
                canonical: fs::canonicalize(&real).ok().filter(|p| p.is_dir()),
            })
            .collect();
        let excluded = self
            .excluded
            .iter()
            .filter_map(|p| fs::canonicalize(p).ok())
            .collect();
        Ok(Sandbox {
            output_dir,
            root,
            inputs,
            pins: self.pins,
            input_dirs,
            excluded,
            written: Mutex::new(Vec::new()),
            reserved: Mutex::new((0, 0)),
            fatal: Mutex::new(None),
        })
    }
}

/// A file's place within the job's output limits, held while it is written; given back
/// unless the write succeeded.
struct Reservation<'a> {
    sandbox: &'a Sandbox,
    bytes: u64,
    kept: bool,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.kept {
            let mut reserved = self
                .sandbox
                .reserved
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            reserved.0 = reserved.0.saturating_sub(1);
            reserved.1 = reserved.1.saturating_sub(self.bytes);
        }
    }
}

/// One job's confinement: what its tools may read and where they may write.
#[derive(Debug)]
pub(crate) struct Sandbox {
    output_dir: PathBuf,
    /// The output folder, opened once: every write is created beneath it.
    root: Root,
    inputs: Vec<InputFile>,
    pins: BTreeMap<PathBuf, Stamp>,
    input_dirs: Vec<InputDir>,
    excluded: Vec<PathBuf>,
    written: Mutex<Vec<PathBuf>>,
    /// Files and bytes written or being written, against the per-job limits.
    reserved: Mutex<(usize, u64)>,
    /// Set when a write went over the per-job limits, or the disk refused it: the job then
    /// fails, whatever the model does next.
    fatal: Mutex<Option<(crate::error::ErrorKind, String)>>,
}

impl Sandbox {
    /// Start a sandbox whose writes go into `output_dir` (the job's staging folder: it must
    /// exist and be absolute).
    pub(crate) fn builder(output_dir: impl Into<PathBuf>) -> SandboxBuilder {
        SandboxBuilder {
            output_dir: output_dir.into(),
            inputs: Vec::new(),
            pins: BTreeMap::new(),
            input_dirs: Vec::new(),
            excluded: Vec::new(),
            opened: None,
        }
    }

    /// Whether a read target is still the file it was when the skill was loaded (for a
    /// pinned file; anything else always is): checked before a read and after it, so a link
    /// or another file put in its place mid-run is never sent to the model.
    pub(crate) fn unchanged(&self, target: &ReadTarget) -> bool {
        match self.pins.get(target.path()) {
            Some(pin) => Stamp::of_file(target.path()).as_ref() == Some(pin),
            None => true,
        }
    }

    /// The canonical output folder.
    pub(crate) fn output_dir(&self) -> &Path {
        &self.output_dir
    }

    /// Why the job must fail, once a write went over its output limits
    /// ([`MAX_FILES_PER_JOB`], [`MAX_BYTES_PER_JOB`]: `too_large`) or the disk refused a write
    /// (full, quota, read-only: `io`).
    pub(crate) fn fatal(&self) -> Option<(crate::error::ErrorKind, String)> {
        self.fatal
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn set_fatal(&self, kind: crate::error::ErrorKind, why: String) {
        self.fatal
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get_or_insert((kind, why));
    }

    /// The files written so far, relative to the output folder, in the order they were written.
    pub(crate) fn written(&self) -> Vec<PathBuf> {
        self.written
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The job's input files that can be read, as read targets (for an overview listing).
    pub(crate) fn input_targets(&self) -> Vec<ReadTarget> {
        self.inputs
            .iter()
            .filter_map(|f| {
                let canonical = f.canonical.as_ref()?;
                Some(ReadTarget {
                    path: canonical.clone(),
                    display: display_string(&f.display),
                    origin: Origin::Input,
                    is_dir: canonical.is_dir(),
                })
            })
            .collect()
    }

    /// The job's input folders, as read targets.
    pub(crate) fn input_dir_targets(&self) -> Vec<ReadTarget> {
        self.input_dirs
            .iter()
            .filter_map(|d| {
                Some(ReadTarget {
                    path: d.canonical.clone()?,
                    display: display_string(&d.display),
                    origin: Origin::InputDir,
                    is_dir: true,
                })
            })
            .collect()
    }

    /// The output folder itself, as a read target.
    pub(crate) fn output_target(&self) -> ReadTarget {
        ReadTarget {
            path: self.output_dir.clone(),
            display: ".".to_string(),
            origin: Origin::Output,
            is_dir: true,
        }
    }

    /// Open a checked file for reading. Something in the output folder is opened beneath the
    /// output folder's handle, by the path the check resolved, one part at a time and never
    /// through a link (`crate::confine`): a folder swapped for a link since the check makes the
    /// open fail (`ELOOP`), never read what the link leads to. An input is opened by the path
    /// the check resolved (the person named it; links to it were judged where they lead).
    pub(crate) fn open(&self, target: &ReadTarget) -> io::Result<fs::File> {
        match self.output_rel(target) {
            Some(rel) => self.root.open_file(rel).map_err(confine_io),
            None => fs::File::open(&target.path),
        }
    }

    /// The entries of a checked folder: in the output folder read beneath its handle (links
    /// listed as links, never followed), elsewhere by the path the check resolved.
    pub(crate) fn folder_entries(&self, target: &ReadTarget) -> io::Result<Vec<Entry>> {
        let Some(rel) = self.output_rel(target) else {
            return fs::read_dir(&target.path)?
                .map(|entry| {
                    let entry = entry?;
                    let kind = entry.file_type().ok().map(kind_of_std);
                    let len = fs::metadata(entry.path()).ok().map(|m| m.len());
                    Ok(Entry {
                        name: entry.file_name(),
                        kind,
                        len,
                    })
                })
                .collect();
        };
        self.root.open_dirs(rel).map_err(confine_io)?.entries()
    }

    /// The size of a checked file (`None` for a folder): in the output folder looked at beneath
    /// its handle, elsewhere by the path the check resolved.
    pub(crate) fn file_len(&self, target: &ReadTarget) -> io::Result<Option<u64>> {
        let Some(rel) = self.output_rel(target) else {
            let meta = fs::metadata(&target.path)?;
            return Ok((!meta.is_dir()).then_some(meta.len()));
        };
        let st = self.root.stat(rel).map_err(confine_io)?;
        Ok((FileType::from_raw_mode(st.st_mode) != FileType::Directory)
            .then_some(st.st_size as u64))
    }

    /// A target's path relative to the output folder, when it lies there.
    fn output_rel<'t>(&self, target: &'t ReadTarget) -> Option<&'t Path> {
        match target.origin {
            Origin::Output => target.path.strip_prefix(&self.output_dir).ok(),
            Origin::Input | Origin::InputDir => None,
        }
    }

    /// Check a path for `file_read`: a job input or something in the output folder.
    pub(crate) fn check_read(&self, raw: &str) -> Result<ReadTarget, Refusal> {
        self.resolve_read(raw)
    }

    /// Check a path for `ocr`: one of the job's input documents only.
    pub(crate) fn check_input(&self, raw: &str) -> Result<ReadTarget, Refusal> {
        let target = self.resolve_read(raw)?;
        if !target.origin.is_input() {
            return Err(Refusal::new(format!(
                "`{}` is not one of the job's input documents; ocr works on inputs only. {}",
                raw.trim(),
                self.allowed_inputs_hint()
            )));
        }
        if target.is_dir {
            return Err(Refusal::new(format!(
                "`{}` is a folder; ocr needs a file (use file_list to see its files)",
                raw.trim()
            )));
        }
        Ok(target)
    }

    /// Check a path for `file_list`. An empty path or `.` asks for the overview.
    pub(crate) fn check_list(&self, raw: &str) -> Result<ListTarget, Refusal> {
        let trimmed = raw.trim();
        if trimmed.is_empty() || normalize(trimmed).as_os_str().is_empty() {
            return Ok(ListTarget { target: None });
        }
        self.resolve_read(raw).map(|target| ListTarget {
            target: Some(target),
        })
    }

    /// Whether a path found while listing an input folder must stay hidden.
    pub(crate) fn is_excluded(&self, canonical_or_child: &Path) -> bool {
        self.excluded
            .iter()
            .any(|e| canonical_or_child.starts_with(e))
            && !canonical_or_child.starts_with(&self.output_dir)
    }

    fn resolve_read(&self, raw: &str) -> Result<ReadTarget, Refusal> {
        let raw = raw.trim();
        check_raw(raw)?;
        let requested = normalize(raw);
        if requested.as_os_str().is_empty() {
            return Err(Refusal::new(format!(
                "give the path of a file (use file_list to see the files). {}",
                self.allowed_hint()
            )));
        }

        // The display paths the model was told come first.
        for input in &self.inputs {
            if input.display == requested {
                let canonical = input.canonical.as_ref().ok_or_else(|| {
                    Refusal::new(format!(
                        "the input `{raw}` could not be opened (it is missing or a broken link)"
                    ))
                })?;
                return Ok(ReadTarget {
                    path: canonical.clone(),
                    display: display_string(&input.display),
                    origin: Origin::Input,
                    is_dir: canonical.is_dir(),
                });
            }
        }
        // The input folder a missing path was looked for in, for a helpful refusal.
        let mut missing_in: Option<&Path> = None;
        for dir in &self.input_dirs {
            let Some(dir_canonical) = &dir.canonical else {
                continue;
            };
            // A folder shown as `.` has no prefix to match; it is tried below.
            if dir.display.as_os_str().is_empty() {
                continue;
            }
            if let Ok(rest) = requested.strip_prefix(&dir.display) {
                match fs::canonicalize(dir_canonical.join(rest)) {
                    Ok(canonical) => return self.classify(raw, canonical),
                    // The model may have written a file of the same name into the output
                    // folder: look there too.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        missing_in = Some(&dir.display);
                        break;
                    }
                    Err(_) => return Err(self.outside(raw)),
                }
            }
        }

        let candidate = if requested.is_absolute() {
            requested.clone()
        } else {
            self.output_dir.join(&requested)
        };
        match fs::canonicalize(&candidate) {
            Ok(canonical) => self.classify(raw, canonical),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // A bare file name that is the name of exactly one input means that input:
                // small models often drop the folder part.
                if let Some(target) = self.input_by_file_name(&requested) {
                    return Ok(target);
                }
                if requested.is_absolute()
                    || requested.components().any(|c| c == Component::ParentDir)
                {
                    return Err(self.outside(raw));
                }
                // A relative path that is not in the output folder may name a file under an
                // input folder, relative to that folder.
                for dir in &self.input_dirs {
                    let Some(dir_canonical) = &dir.canonical else {
                        continue;
                    };
                    if let Ok(canonical) = fs::canonicalize(dir_canonical.join(&requested)) {
                        return self.classify(raw, canonical);
                    }
                }
                Err(Refusal::new(match missing_in {
                    Some(dir) => format!(
                        "`{raw}` does not exist. Use file_list on `{}` to see its files.",
                        display_string(dir)
                    ),
                    None => format!(
                        "`{raw}` does not exist in the output folder. {}",
                        self.allowed_hint()
                    ),
                }))
            }
            Err(_) => Err(self.outside(raw)),
        }
    }

    fn input_by_file_name(&self, requested: &Path) -> Option<ReadTarget> {
        if requested.components().count() != 1 {
            return None;
        }
        let name = requested.file_name()?;
        let mut matches = self
            .inputs
            .iter()
            .filter(|f| f.display.file_name() == Some(name) || f.real.file_name() == Some(name));
        let found = matches.next()?;
        if matches.next().is_some() {
            return None;
        }
        let canonical = found.canonical.as_ref()?;
        Some(ReadTarget {
            path: canonical.clone(),
            display: display_string(&found.display),
            origin: Origin::Input,
            is_dir: canonical.is_dir(),
        })
    }

    /// Decide on a fully resolved path.
    fn classify(&self, raw: &str, canonical: PathBuf) -> Result<ReadTarget, Refusal> {
        let is_dir = canonical.is_dir();
        if let Ok(rest) = canonical.strip_prefix(&self.output_dir) {
            let display = if rest.as_os_str().is_empty() {
                ".".to_string()
            } else {
                display_string(rest)
            };
            return Ok(ReadTarget {
                path: canonical,
                display,
                origin: Origin::Output,
                is_dir,
            });
        }
        for input in &self.inputs {
            if input.canonical.as_ref() == Some(&canonical) {
                return Ok(ReadTarget {
                    path: canonical,
                    display: display_string(&input.display),
                    origin: Origin::Input,
                    is_dir,
                });
            }
        }
        if !self.is_excluded(&canonical) {
            for dir in &self.input_dirs {
                let Some(dir_canonical) = &dir.canonical else {
                    continue;
                };
                if let Ok(rest) = canonical.strip_prefix(dir_canonical) {
                    let display = if rest.as_os_str().is_empty() {
                        display_string(&dir.display)
                    } else {
                        display_string(&dir.display.join(rest))
                    };
                    return Ok(ReadTarget {
                        path: canonical,
                        display,
                        origin: Origin::InputDir,
                        is_dir,
                    });
                }
            }
        }
        Err(self.outside(raw))
    }

    fn outside(&self, raw: &str) -> Refusal {
        Refusal::new(format!(
            "`{raw}` is outside what this job may read. {}",
            self.allowed_hint()
        ))
    }

    fn allowed_inputs_hint(&self) -> String {
        let mut names: Vec<String> = self
            .inputs
            .iter()
            .map(|f| format!("`{}`", display_string(&f.display)))
            .chain(
                self.input_dirs
                    .iter()
                    .map(|d| format!("`{}/` (folder)", display_string(&d.display))),
            )
            .collect();
        if names.is_empty() {
            return "This job has no input documents.".to_string();
        }
        let more = names.len().saturating_sub(HINT_INPUTS);
        names.truncate(HINT_INPUTS);
        let mut hint = format!("The job's inputs: {}", names.join(", "));
        if more > 0 {
            hint.push_str(&format!(" and {more} more"));
        }
        hint.push('.');
        hint
    }

    fn allowed_hint(&self) -> String {
        format!(
            "You may read the job's inputs and files you wrote in the output folder (relative \
             paths like `notes.md`). {}",
            self.allowed_inputs_hint()
        )
    }

    /// Check a path for `file_write`: relative, no `..`, a plain name in each part.
    pub(crate) fn check_write(&self, raw: &str) -> Result<WriteTarget, Refusal> {
        let raw = raw.trim();
        const ALLOWED: &str = "Write paths are relative to your output folder: a plain file \
                               name, or folder/name.";
        if raw.is_empty() {
            return Err(Refusal::new(format!("the path is empty. {ALLOWED}")));
        }
        check_raw(raw)?;
        if raw.chars().any(char::is_control) {
            return Err(Refusal::new(format!(
                "the path contains control characters. {ALLOWED}"
            )));
        }
        // Bidirectional controls make a name read differently from what it is
        // (`invoice\u{202E}fdp.exe` shows as `invoiceexe.pdf`).
        if raw.chars().any(is_bidi_control) {
            return Err(Refusal::new(format!(
                "the path contains invisible text-direction characters. {ALLOWED}"
            )));
        }
        if raw.contains('\\') {
            return Err(Refusal::new(format!(
                "`{raw}` contains `\\`; separate folders with `/`. {ALLOWED}"
            )));
        }
        if raw.ends_with('/') {
            return Err(Refusal::new(format!(
                "`{raw}` names a folder; give a file name. {ALLOWED}"
            )));
        }
        let mut rel = PathBuf::new();
        for component in Path::new(raw).components() {
            match component {
                Component::Normal(name) => {
                    if name.len() > MAX_NAME_BYTES {
                        return Err(Refusal::new(format!(
                            "a name in `{raw}` is longer than {MAX_NAME_BYTES} bytes; use a \
                             shorter name"
                        )));
                    }
                    rel.push(name);
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(Refusal::new(format!(
                        "`{raw}` contains `..`; writes must stay inside the output folder. \
                         {ALLOWED}"
                    )));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(Refusal::new(format!(
                        "`{raw}` is an absolute path; only relative paths may be written. \
                         {ALLOWED}"
                    )));
                }
            }
        }
        let depth = rel.components().count();
        if depth == 0 {
            return Err(Refusal::new(format!("`{raw}` names no file. {ALLOWED}")));
        }
        if depth > MAX_WRITE_DEPTH {
            return Err(Refusal::new(format!(
                "`{raw}` is nested more than {MAX_WRITE_DEPTH} folders deep. {ALLOWED}"
            )));
        }
        Ok(WriteTarget { rel })
    }

    /// Create the target as a new file holding `bytes`. Parent folders are created inside the
    /// output folder, refusing any link on the way; the file is opened with `O_NOFOLLOW` and
    /// `O_EXCL`, so an existing file (or a link planted in its place) is never written through.
    /// A write that fails leaves nothing behind. Returns the path relative to the output folder.
    pub(crate) fn write_new(
        &self,
        target: &WriteTarget,
        bytes: &[u8],
    ) -> Result<PathBuf, WriteError> {
        let shown = target.display();
        if bytes.len() > MAX_WRITE_BYTES {
            return Err(Refusal::new(format!(
                "`{shown}` would be {} bytes; a single file may be at most {} MB. Split it into \
                 several files.",
                bytes.len(),
                MAX_WRITE_BYTES / (1024 * 1024)
            ))
            .into());
        }
        // The file and its bytes are reserved against the job's limits before the write (the
        // calls of one turn write concurrently), and given back if the write does not happen.
        let mut reservation = self.reserve(&shown, bytes.len() as u64)?;
        let io_error = |source: io::Error| {
            self.set_fatal(
                crate::error::ErrorKind::Io,
                format!("cannot write `{shown}`: {source}"),
            );
            WriteError::Io {
                path: shown.clone(),
                source,
            }
        };

        let walk = self.make_parents(target)?;
        // `check_write` proved the path has at least one component, so it has a file name.
        let Some(name) = target.rel.file_name() else {
            walk.undo();
            return Err(Refusal::new(format!("`{shown}` names no file")).into());
        };
        let mut file = match walk.create_new_file(name, 0o644) {
            Ok(file) => file,
            Err(e) => {
                let is_link = walk.is_link(name);
                walk.undo();
                return Err(match e.kind() {
                    // A link is in the way (O_EXCL does not follow it): refused below.
                    io::ErrorKind::AlreadyExists if !is_link => {
                        WriteError::Exists(Refusal::new(format!(
                            "`{shown}` already exists and is never overwritten; choose another name"
                        )))
                    }
                    _ if e.raw_os_error() == Some(libc::ELOOP) || is_link => Refusal::new(format!(
                        "`{shown}` is a link; links are never written through. Choose another \
                         name"
                    ))
                    .into(),
                    io::ErrorKind::IsADirectory => {
                        Refusal::new(format!("`{shown}` is a folder; choose a file name")).into()
                    }
                    _ => io_error(e),
                });
            }
        };
        if let Err(e) = file.write_all(bytes).and_then(|()| file.flush()) {
            drop(file);
            walk.remove_file(name);
            walk.undo();
            return Err(io_error(e));
        }
        reservation.kept = true;
        self.written
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(target.rel.clone());
        Ok(target.rel.clone())
    }

    /// Reserve one more file of `bytes` against the job's limits, or refuse it (the job then
    /// fails as too large).
    fn reserve(&self, shown: &str, bytes: u64) -> Result<Reservation<'_>, WriteError> {
        let mut reserved = self
            .reserved
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (files, so_far) = *reserved;
        let over = if files >= MAX_FILES_PER_JOB {
            Some(format!(
                "the job tried to write more than {MAX_FILES_PER_JOB} files, the limit for one job"
            ))
        } else if so_far + bytes > MAX_BYTES_PER_JOB {
            Some(format!(
                "the job tried to write more than {} MB in all, the limit for one job",
                MAX_BYTES_PER_JOB / (1024 * 1024)
            ))
        } else {
            None
        };
        if let Some(why) = over {
            drop(reserved);
            self.set_fatal(crate::error::ErrorKind::TooLarge, why.clone());
            return Err(Refusal::new(format!("`{shown}` was not written: {why}")).into());
        }
        reserved.0 += 1;
        reserved.1 += bytes;
        Ok(Reservation {
            sandbox: self,
            bytes,
            kept: false,
        })
    }

    /// Open (and create) the parent folders beneath the output folder's handle, refusing
    /// links and non-folders (`crate::confine`): no part can be swapped for a link between
    /// its check and its use.
    fn make_parents(&self, target: &WriteTarget) -> Result<Walk<'_>, WriteError> {
        let shown = target.display();
        let parent = target.rel.parent().unwrap_or(Path::new(""));
        self.root.create_dirs(parent).map_err(|e| match e {
            ConfineError::Link { at } => Refusal::new(format!(
                "`{}` is a link; links are never followed when writing. Write into \
                 another folder.",
                at.display()
            ))
            .into(),
            ConfineError::NotAFolder { at } => Refusal::new(format!(
                "`{}` is a file, not a folder; choose another path",
                at.display()
            ))
            .into(),
            // A concurrent write (a nested skill) made and removed it meanwhile.
            ConfineError::Unstable { at } => Refusal::new(format!(
                "`{}` is not a folder; choose another path",
                at.display()
            ))
            .into(),
            // `check_write` only keeps normal components.
            ConfineError::NotPlain => {
                Refusal::new(format!("`{shown}` is not a plain relative path")).into()
            }
            ConfineError::Io(source) => WriteError::Io {
                path: shown.clone(),
                source,
            },
        })
    }
}

/// A walk beneath the output folder that stopped, as the file system would say it (a link in
/// the way is `ELOOP`, as an open with `O_NOFOLLOW` says it).
fn confine_io(e: ConfineError) -> io::Error {
    match e {
        ConfineError::Link { .. } => io::Error::from_raw_os_error(libc::ELOOP),
        ConfineError::NotAFolder { .. } => io::Error::from_raw_os_error(libc::ENOTDIR),
        ConfineError::Unstable { .. } | ConfineError::NotPlain => {
            io::Error::from_raw_os_error(libc::EINVAL)
        }
        ConfineError::Io(e) => e,
    }
}

/// A `std` file type as `rustix` says it.
fn kind_of_std(kind: fs::FileType) -> FileType {
    if kind.is_symlink() {
        FileType::Symlink
    } else if kind.is_dir() {
        FileType::Directory
    } else if kind.is_file() {
        FileType::RegularFile
    } else {
        FileType::Unknown
    }
}

/// Checks every raw path shares: no NUL, bounded length.
fn check_raw(raw: &str) -> Result<(), Refusal> {
    if raw.contains('\0') {
        return Err(Refusal::new("the path contains a NUL character"));
    }
    if raw.len() > MAX_PATH_BYTES {
        return Err(Refusal::new(format!(
            "the path is longer than {MAX_PATH_BYTES} bytes"
        )));
    }
    Ok(())
}

/// A path without `.` parts, so `./a/b/` and `a/b` compare equal. `..` is kept: it is resolved
/// (and judged) only after canonicalisation.
fn normalize(raw: &str) -> PathBuf {
    Path::new(raw)
        .components()
        .filter(|c| *c != Component::CurDir)
        .collect()
}

fn display_string(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use tempfile::TempDir;

    struct Fixture {
        _root: TempDir,
        out: PathBuf,
        outside: PathBuf,
        docs: PathBuf,
        sandbox: Sandbox,
    }

    /// root/{out, outside/secret.txt, docs/q3.txt, inbox/{a.txt, sub/b.txt}}
    fn fixture() -> Fixture {
        let root = TempDir::new().unwrap();
        let out = root.path().join("out");
        let outside = root.path().join("outside");
        let docs = root.path().join("docs");
        let inbox = root.path().join("inbox");
        fs::create_dir_all(&out).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::create_dir_all(&docs).unwrap();
        fs::create_dir_all(inbox.join("sub")).unwrap();
        fs::write(outside.join("secret.txt"), "secret").unwrap();
        fs::write(docs.join("q3.txt"), "quarter three").unwrap();
        fs::write(inbox.join("a.txt"), "a").unwrap();
        fs::write(inbox.join("sub/b.txt"), "b").unwrap();
        let sandbox = Sandbox::builder(&out)
            .input("reports/q3.txt", docs.join("q3.txt"))
            .input_dir("inbox", &inbox)
            .build()
            .unwrap();
        Fixture {
            _root: root,
            out,
            outside,
            docs,
            sandbox,
        }
    }

    fn tree(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = walkdir::WalkDir::new(dir)
            .into_iter()
            .map(|e| e.unwrap().path().display().to_string())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn output_folder_must_exist_and_be_absolute() {
        assert!(matches!(
            Sandbox::builder("relative/out").build(),
            Err(SandboxError::NotAbsolute(_))
        ));
        let root = TempDir::new().unwrap();
        assert!(matches!(
            Sandbox::builder(root.path().join("missing")).build(),
            Err(SandboxError::OutputDir { .. })
        ));
    }

    #[test]
    fn reads_inputs_by_display_real_and_bare_name() {
        let f = fixture();
        let by_display = f.sandbox.check_read("reports/q3.txt").unwrap();
        assert_eq!(by_display.origin, Origin::Input);
        assert_eq!(by_display.display(), "reports/q3.txt");
        let real = f.docs.join("q3.txt");
        let by_real = f.sandbox.check_read(real.to_str().unwrap()).unwrap();
        assert_eq!(by_real.path(), by_display.path());
        assert_eq!(by_real.display(), "reports/q3.txt");
        assert_eq!(
            f.sandbox.check_read("./reports/q3.txt").unwrap().path(),
            by_display.path()
        );
        assert_eq!(
            f.sandbox.check_read("q3.txt").unwrap().path(),
            by_display.path()
        );
    }

    #[test]
    fn reads_files_under_input_folders() {
        let f = fixture();
        let t = f.sandbox.check_read("inbox/sub/b.txt").unwrap();
        assert_eq!(t.origin, Origin::InputDir);
        assert_eq!(t.display(), "inbox/sub/b.txt");
        assert!(f.sandbox.check_read("inbox/../outside/secret.txt").is_err());
        assert!(f.sandbox.check_read("inbox/../../etc/passwd").is_err());
        let listed = f.sandbox.check_list("inbox").unwrap();
        let listed = listed.target().unwrap();
        assert!(listed.is_dir());
        assert_eq!(listed.display(), "inbox");
        // A path relative to the input folder, as small models send it.
        assert_eq!(
            f.sandbox.check_read("sub/b.txt").unwrap().display(),
            "inbox/sub/b.txt"
        );
        // A file the model wrote under a name that shadows the input folder.
        fs::create_dir_all(f.out.join("inbox")).unwrap();
        fs::write(f.out.join("inbox/mine.md"), "m").unwrap();
        let mine = f.sandbox.check_read("inbox/mine.md").unwrap();
        assert_eq!(mine.origin, Origin::Output);
        let missing = f.sandbox.check_read("inbox/nope.txt").unwrap_err();
        assert!(missing.message().contains("file_list on `inbox`"));
    }

    #[test]
    fn reads_in_output_folder_resolve_relative() {
        let f = fixture();
        fs::write(f.out.join("notes.md"), "n").unwrap();
        let t = f.sandbox.check_read("notes.md").unwrap();
        assert_eq!(t.origin, Origin::Output);
        assert_eq!(t.display(), "notes.md");
        assert_eq!(f.sandbox.check_list(".").unwrap().target(), None);
        assert_eq!(f.sandbox.check_list(" ./ ").unwrap().target(), None);
        assert_eq!(f.sandbox.check_list("").unwrap().target(), None);
    }

    #[test]
    fn refuses_reads_outside() {
        let f = fixture();
        for path in [
            "/etc/passwd",
            "../../etc/passwd",
            "../outside/secret.txt",
            "../x",
            f.outside.join("secret.txt").to_str().unwrap(),
            "/",
        ] {
            let refusal = f.sandbox.check_read(path).unwrap_err();
            assert!(
                refusal.message().contains("reports/q3.txt"),
                "{path}: {}",
                refusal.message()
            );
        }
        // A link inside the output folder pointing out is judged where it leads.
        symlink(f.outside.join("secret.txt"), f.out.join("link.txt")).unwrap();
        symlink(&f.outside, f.out.join("linkdir")).unwrap();
        assert!(f.sandbox.check_read("link.txt").is_err());
        assert!(f.sandbox.check_read("linkdir/secret.txt").is_err());
        assert!(f.sandbox.check_list("linkdir").is_err());
        // A link under an input folder pointing out is refused too.
        let inbox_link = f.out.parent().unwrap().join("inbox/escape.txt");
        symlink(f.outside.join("secret.txt"), &inbox_link).unwrap();
        assert!(f.sandbox.check_read("inbox/escape.txt").is_err());
        assert!(f.sandbox.check_read("bad\0path").is_err());
    }

    #[test]
    fn ocr_only_on_inputs() {
        let f = fixture();
        fs::write(f.out.join("notes.md"), "n").unwrap();
        assert!(f.sandbox.check_input("reports/q3.txt").is_ok());
        assert!(f.sandbox.check_input("inbox/a.txt").is_ok());
        let refusal = f.sandbox.check_input("notes.md").unwrap_err();
        assert!(refusal.message().contains("inputs only"));
        assert!(f.sandbox.check_input("inbox").is_err());
    }

    #[test]
    fn excluded_folder_inside_input_folder_is_hidden() {
        let root = TempDir::new().unwrap();
        let inbox = root.path().join("inbox");
        let run_out = inbox.join("zhi-output");
        let staging = run_out.join(".zhi/staging/job");
        fs::create_dir_all(&staging).unwrap();
        fs::write(run_out.join("manifest.json"), "{}").unwrap();
        fs::write(inbox.join("a.txt"), "a").unwrap();
        let sandbox = Sandbox::builder(&staging)
            .input_dir("inbox", &inbox)
            .exclude(&run_out)
            .build()
            .unwrap();
        assert!(sandbox.check_read("inbox/a.txt").is_ok());
        assert!(
            sandbox
                .check_read("inbox/zhi-output/manifest.json")
                .is_err()
        );
        fs::write(staging.join("mine.md"), "m").unwrap();
        assert!(sandbox.check_read("mine.md").is_ok());
    }

    #[test]
    fn write_path_checks() {
        let f = fixture();
        for bad in [
            "../x",
            "/tmp/abs",
            "a/../../x",
            "a/..",
            "",
            "  ",
            "dir/",
            "a\\b.md",
            "bad\0name.md",
            "line\nbreak.md",
            ".",
        ] {
            assert!(f.sandbox.check_write(bad).is_err(), "{bad:?} accepted");
        }
        let long = "x".repeat(300) + ".md";
        assert!(f.sandbox.check_write(&long).is_err());
        let ok = f.sandbox.check_write("./tables/q3.csv").unwrap();
        assert_eq!(ok.rel_path(), Path::new("tables/q3.csv"));
        assert_eq!(ok.extension().as_deref(), Some("csv"));
    }

    #[test]
    fn writes_new_files_and_tracks_them() {
        let f = fixture();
        let t = f.sandbox.check_write("deep/er/summary.md").unwrap();
        let rel = f.sandbox.write_new(&t, b"hello").unwrap();
        assert_eq!(rel, Path::new("deep/er/summary.md"));
        assert_eq!(
            fs::read_to_string(f.out.join("deep/er/summary.md")).unwrap(),
            "hello"
        );
        assert_eq!(
            f.sandbox.written(),
            vec![PathBuf::from("deep/er/summary.md")]
        );
    }

    #[test]
    fn never_overwrites() {
        let f = fixture();
        let t = f.sandbox.check_write("a.md").unwrap();
        f.sandbox.write_new(&t, b"first").unwrap();
        let err = f.sandbox.write_new(&t, b"second").unwrap_err();
        match err {
            WriteError::Exists(r) => {
                assert!(r.message().contains("already exists"), "{}", r.message());
                assert!(r.message().contains("another name"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(fs::read_to_string(f.out.join("a.md")).unwrap(), "first");
        assert_eq!(f.sandbox.written().len(), 1);
    }

    #[test]
    fn never_writes_through_links() {
        let f = fixture();
        let before = tree(&f.outside);
        // A file link in place of the target.
        symlink(f.outside.join("secret.txt"), f.out.join("x.txt")).unwrap();
        let t = f.sandbox.check_write("x.txt").unwrap();
        assert!(matches!(
            f.sandbox.write_new(&t, b"pwned"),
            Err(WriteError::Refused(_))
        ));
        // A dangling link to a file that does not exist yet outside.
        symlink(f.outside.join("new.txt"), f.out.join("y.txt")).unwrap();
        let t = f.sandbox.check_write("y.txt").unwrap();
        assert!(matches!(
            f.sandbox.write_new(&t, b"pwned"),
            Err(WriteError::Refused(_))
        ));
        // A folder link on the way.
        symlink(&f.outside, f.out.join("linkdir")).unwrap();
        let t = f.sandbox.check_write("linkdir/new.txt").unwrap();
        match f.sandbox.write_new(&t, b"pwned") {
            Err(WriteError::Refused(r)) => assert!(r.message().contains("link")),
            other => panic!("unexpected {other:?}"),
        }
        let t = f.sandbox.check_write("linkdir/sub/new.txt").unwrap();
        assert!(f.sandbox.write_new(&t, b"pwned").is_err());
        assert_eq!(tree(&f.outside), before);
        assert_eq!(
            fs::read_to_string(f.outside.join("secret.txt")).unwrap(),
            "secret"
        );
        assert!(f.sandbox.written().is_empty());
    }

    /// The race the path checks had: a parent checked as a folder, then swapped for a link to
    /// outside before the next part was created and the file opened by path. A thread swaps
    /// `a` (a folder) and a link to outside atomically, again and again, while writes go to
    /// `a/b/<n>.md`: each either lands inside the output folder or is refused.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_parent_swapped_for_a_link_mid_write_never_leads_outside() {
        let f = fixture();
        let before = tree(&f.outside);
        fs::create_dir(f.out.join("a")).unwrap();
        symlink(&f.outside, f.out.join("swap")).unwrap();
        let mut written = 0;
        crate::confine::while_swapping(&f.out.join("a"), &f.out.join("swap"), |n| {
            let t = f.sandbox.check_write(&format!("a/b/{n}.md")).unwrap();
            if f.sandbox.write_new(&t, b"x").is_ok() {
                written += 1;
            }
        });
        assert_eq!(tree(&f.outside), before);
        assert!(written > 0, "no write got through at all");
    }

    #[test]
    fn file_in_place_of_folder_is_refused_and_cleanup_leaves_nothing() {
        let f = fixture();
        fs::write(f.out.join("plain"), "p").unwrap();
        let t = f.sandbox.check_write("plain/x.md").unwrap();
        assert!(matches!(
            f.sandbox.write_new(&t, b"no"),
            Err(WriteError::Refused(_))
        ));
        assert_eq!(fs::read_to_string(f.out.join("plain")).unwrap(), "p");
        // A refused write inside fresh folders leaves no empty folders behind.
        let t = f.sandbox.check_write("other/two/x.md").unwrap();
        let big = vec![b'a'; MAX_WRITE_BYTES + 1];
        assert!(matches!(
            f.sandbox.write_new(&t, &big),
            Err(WriteError::Refused(_))
        ));
        assert!(!f.out.join("other").exists());
    }
}
