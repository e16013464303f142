//! Where skills come from: builtins compiled from the repo's `skills/` folder, then
//! `~/.config/zhi/skills/`, then `./.zhi/skills/` — a later place replaces an earlier skill of
//! the same name. A broken file is skipped with a warning and never hides the others.

use super::load::{LoadError, load_str};
use super::{Skill, graph};
use serde::{Serialize, Serializer};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The largest skill file read. The longest builtin is a few kilobytes; a megabyte of system
/// prompt would not fit a model's context anyway.
pub(crate) const MAX_SKILL_FILE_BYTES: u64 = 1 << 20;

/// Where a skill was loaded from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillSource {
    /// Compiled into the binary; the file name in the repo's `skills/` folder.
    Builtin(&'static str),
    /// `~/.config/zhi/skills/`.
    User(PathBuf),
    /// `./.zhi/skills/`.
    Project(PathBuf),
    /// A file named on the command line.
    File(PathBuf),
}

impl SkillSource {
    /// `builtin`, `user` (both user folders; `path` tells which) or `file`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            SkillSource::Builtin(_) => "builtin",
            SkillSource::User(_) | SkillSource::Project(_) => "user",
            SkillSource::File(_) => "file",
        }
    }
    /// The file, for messages: a path, or `skills/NAME.yaml (builtin)`.
    pub(crate) fn label(&self) -> String {
        match self {
            SkillSource::Builtin(f) => format!("skills/{f}"),
            SkillSource::User(p) | SkillSource::Project(p) | SkillSource::File(p) => {
                p.display().to_string()
            }
        }
    }
    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            SkillSource::Builtin(_) => None,
            SkillSource::User(p) | SkillSource::Project(p) | SkillSource::File(p) => Some(p),
        }
    }
}

impl Serialize for SkillSource {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.kind())
    }
}

macro_rules! builtins {
    ($($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/skills/", $file)))),*]
    };
}

/// The builtin skill files: (file name, YAML).
pub fn builtin_sources() -> &'static [(&'static str, &'static str)] {
    builtins!(
        "summarize.yaml",
        "translate.yaml",
        "extract-text.yaml",
        "extract-table.yaml",
        "extract.yaml",
        "analyze.yaml",
        "proofread.yaml",
        "reformat.yaml",
        "meeting-notes.yaml",
        "compare.yaml",
        "contract-review.yaml",
        "daily-digest.yaml",
        "invoice-to-excel.yaml",
        "meeting-followup.yaml",
        "report-polish.yaml",
        "translate-proofread.yaml",
    )
}

/// A warning from loading a skill: shown when that skill is used or validated, not on every
/// command that discovers skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SkillWarning {
    /// The skill it is about; `None` for a skill folder that could not be read at all.
    pub skill: Option<String>,
    /// `file: message`.
    pub text: String,
}

/// Every discovered skill, by name, with what went wrong on the way.
#[derive(Debug, Default, Clone)]
pub(crate) struct SkillSet {
    skills: BTreeMap<String, Skill>,
    /// Warnings about the skills loaded (a skill replaced by a later one of its name takes
    /// its warnings with it).
    pub warnings: Vec<SkillWarning>,
    /// Files that could not be loaded.
    pub broken: Vec<LoadError>,
    /// Problems a run tolerates but `skills validate` reports (e.g. clamped max_turns).
    pub strict_errors: Vec<LoadError>,
}

impl SkillSet {
    pub(crate) fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.skills.keys().map(String::as_str)
    }

    /// The warnings a command that uses or validates `names` shows, each once: those about
    /// these skills, and about folders that could not be read.
    pub(crate) fn warnings_about<'a>(&'a self, names: &[&str]) -> Vec<&'a str> {
        let mut out: Vec<&str> = Vec::new();
        for w in &self.warnings {
            let about = w.skill.as_deref().is_none_or(|s| names.contains(&s));
            if about && !out.contains(&w.text.as_str()) {
                out.push(&w.text);
            }
        }
        out
    }

    /// The warnings a run of `skills` shows: those of the skills and of every skill they
    /// call, nested ones included.
    pub(crate) fn warnings_for_run(&self, skills: &[&str]) -> Vec<&str> {
        let mut used: Vec<&str> = Vec::new();
        for s in skills {
            for nested in self.closure(s) {
                if !used.contains(&nested.name.as_str()) {
                    used.push(&nested.name);
                }
            }
        }
        self.warnings_about(&used)
    }

    /// The error for a skill name that is not here, with the names it may have meant.
    pub(crate) fn unknown(&self, name: &str) -> String {
        unknown_skill(name, &crate::suggest::did_you_mean(name, self.names()))
    }

    /// Load one file's bytes into the set; a later skill of the same name replaces an earlier.
    pub(crate) fn add_bytes(&mut self, bytes: &[u8], source: SkillSource) -> Option<String> {
        self.add_loaded(load_str(bytes, source))
    }

    fn add_loaded(&mut self, loaded: Result<super::Loaded, LoadError>) -> Option<String> {
        match loaded {
            Ok(loaded) => {
                let label = loaded.skill.source.label();
                let name = loaded.skill.name.clone();
                self.warnings.retain(|w| w.skill.as_ref() != Some(&name));
                let about = |text: String| SkillWarning {
                    skill: Some(name.clone()),
                    text,
                };
                for w in loaded.warnings {
                    self.warnings.push(about(format!("{label}: {w}")));
                }
                for e in loaded.strict_errors {
                    self.strict_errors.push(LoadError {
                        file: label.clone(),
                        reason: e,
                    });
                }
                if let SkillSource::User(p) | SkillSource::Project(p) = &loaded.skill.source {
                    // A SKILL.md is named by its folder.
                    let named = if p.file_name().is_some_and(|n| n == SKILL_MD) {
                        p.parent().and_then(Path::file_name)
                    } else {
                        p.file_stem()
                    };
                    let stem = named.and_then(|s| s.to_str()).unwrap_or_default();
                    if stem != loaded.skill.name {
                        self.warnings.push(about(msg!(
                            "{label}: file name does not match the skill name `{}`",
                            loaded.skill.name
                        )));
                    }
                }
                self.skills.insert(name.clone(), loaded.skill);
                Some(name)
            }
            Err(e) => {
                self.broken.push(e);
                None
            }
        }
    }

    /// Load one file from disk into the set.
    ///
    /// Discovery reads every skill file for every command, builtin runs included, so a file
    /// that is not one — a FIFO, a link to a device, a folder, megabytes — is a broken skill
    /// (a warning naming it) and never a hang or an endless read; see [`crate::small_file`].
    pub(crate) fn add_file(&mut self, path: &Path, source: SkillSource) -> Option<String> {
        match crate::small_file::read(path, MAX_SKILL_FILE_BYTES) {
            Ok(bytes) => self.add_bytes(&bytes, source),
            Err(e) => {
                self.broken.push(LoadError {
                    file: path.display().to_string(),
                    reason: e.to_string(),
                });
                None
            }
        }
    }

    /// Load an Agent Skill folder (`dir/SKILL.md`, docs/skills.md#agent-skills-skillmd) into the
    /// set: its front matter and instructions, the files of `references/` and `assets/` its jobs
    /// may read (each at most [`MAX_RESOURCE_BYTES`]), its `scripts/` (never run), and a content
    /// hash over every file of the folder, so that a changed reference reruns the jobs.
    pub(crate) fn add_folder(
        &mut self,
        dir: &Path,
        make: fn(PathBuf) -> SkillSource,
    ) -> Option<String> {
        let md = dir.join(SKILL_MD);
        let bytes = match crate::small_file::read(&md, MAX_SKILL_FILE_BYTES) {
            Ok(b) => b,
            Err(e) => {
                self.broken.push(LoadError {
                    file: md.display().to_string(),
                    reason: e.to_string(),
                });
                return None;
            }
        };
        let walked = walk_folder(dir);
        let mut resources = Vec::new();
        let mut scripts = Vec::new();
        // Said of the skill once it has loaded (with the file's name, as every warning).
        let mut warnings = walked.warnings.clone();
        let mut stamps = std::collections::BTreeMap::new();
        for (rel, len, stamp) in &walked.files {
            let top = rel.split('/').next().unwrap_or_default();
            match top {
                "references" | "assets" if *len > MAX_RESOURCE_BYTES => warnings.push(msg!(
                    "{rel} is larger than {}, the limit for a skill's resource; it is not readable",
                    crate::small_file::human_bytes(MAX_RESOURCE_BYTES)
                )),
                "references" | "assets" => {
                    resources.push((rel.clone(), dir.join(rel)));
                    if let Some(stamp) = stamp {
                        stamps.insert(dir.join(rel), *stamp);
                    }
                }
                "scripts" => scripts.push(rel.clone()),
                _ => {}
            }
        }
        // The folder's own hash comes later, when a command needs it; SKILL.md's is now.
        let loaded = super::load::load_skill_md(
            &bytes,
            make(md.clone()),
            hex::encode(Sha256::digest(&bytes)),
            !resources.is_empty(),
        )
        .map(|mut l| {
            l.warnings = warnings.into_iter().chain(l.warnings).collect();
            // Instructions that name a script need a shell to follow them.
            let body = &l.skill.system_prompt;
            let used: Vec<&String> = scripts
                .iter()
                .filter(|s| {
                    body.contains(s.as_str())
                        || Path::new(s)
                            .file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| body.contains(n))
                })
                .collect();
            if !used.is_empty() || (!scripts.is_empty() && body.contains("scripts/")) {
                let named = if used.is_empty() {
                    "scripts/".to_string()
                } else {
                    used.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                };
                l.strict_errors.push(format!(
                    "its instructions use {named}, but zhi never runs a skill's scripts (there is no shell): this skill needs a shell zhi does not give"
                ));
                l.warnings.push(msg!(
                    "its instructions use {named}, which zhi will not run (there is no shell)"
                ));
            }
            let inline = inline_texts(&resources, &stamps);
            let files = walked.files.iter().map(|(r, n, _)| (r.clone(), *n)).collect();
            l.skill.folder = Some(super::SkillFolder {
                root: dir.to_path_buf(),
                resources,
                scripts,
                inline,
                stamps,
                files: std::sync::Arc::new(files),
                hash: std::sync::Arc::default(),
            });
            l
        });
        self.add_loaded(loaded)
    }

    /// Check the nested-skill graph of `roots` (all skills when `None`): unknown tools and
    /// skills, cycles, nesting deeper than [`super::MAX_NESTING`].
    pub(crate) fn check_graph(&self, roots: Option<&[&str]>) -> Vec<graph::GraphError> {
        graph::check(&self.skills, roots)
    }

    /// The skills a skill calls, transitively, itself included, in a stable order.
    pub(crate) fn closure(&self, name: &str) -> Vec<&Skill> {
        let mut seen: Vec<&str> = Vec::new();
        let mut stack = vec![name];
        while let Some(n) = stack.pop() {
            if seen.contains(&n) {
                continue;
            }
            if let Some(s) = self.skills.get(n) {
                seen.push(&s.name);
                stack.extend(s.children());
            }
        }
        seen.sort_unstable();
        seen.iter().filter_map(|n| self.skills.get(*n)).collect()
    }
}

/// Discover every skill: builtins, then `<config_dir>/skills/`, then `<cwd>/.zhi/skills/`.
pub(crate) fn discover(config_dir: Option<&Path>, cwd: &Path) -> SkillSet {
    let mut set = SkillSet::default();
    for (file, yaml) in builtin_sources() {
        set.add_bytes(yaml.as_bytes(), SkillSource::Builtin(file));
    }
    if let Some(dir) = config_dir {
        load_dir(&mut set, &dir.join("skills"), SkillSource::User);
    }
    load_dir(
        &mut set,
        &cwd.join(".zhi").join("skills"),
        SkillSource::Project,
    );
    set
}

/// The resources' texts, when every one is UTF-8 text and all fit in
/// [`super::INLINE_RESOURCES_BYTES`].
/// Each is read only while its path names the very file the walk saw (a link swapped in is
/// never followed).
fn inline_texts(
    resources: &[(String, PathBuf)],
    stamps: &std::collections::BTreeMap<PathBuf, crate::small_file::Stamp>,
) -> Option<Vec<(String, String)>> {
    let mut left = super::INLINE_RESOURCES_BYTES;
    let mut out = Vec::new();
    for (name, path) in resources {
        let pinned = stamps.get(path)?;
        let same = || crate::small_file::Stamp::of_file(path).as_ref() == Some(pinned);
        if !same() {
            return None;
        }
        let bytes = crate::small_file::read(path, left).ok()?;
        if !same() {
            return None;
        }
        left -= bytes.len() as u64;
        out.push((name.clone(), String::from_utf8(bytes).ok()?));
    }
    Some(out)
}

/// The file that makes a folder an Agent Skill.
pub(crate) const SKILL_MD: &str = "SKILL.md";

/// The largest file of a skill's `references/` or `assets/` that its jobs may read.
pub(crate) const MAX_RESOURCE_BYTES: u64 = 1 << 20;

/// How many files of a skill folder are looked at (and hashed).
const MAX_FOLDER_FILES: usize = 1000;

/// What an Agent Skill folder holds: its files (relative path with `/`, size, stamp), and
/// what was skipped. Nothing is read: listing skills costs a walk, not the folder's bytes.
struct Walked {
    files: Vec<(String, u64, Option<crate::small_file::Stamp>)>,
    warnings: Vec<String>,
}

/// The hash of a skill folder, over each file's relative path and content: part of every
/// job's cache key, so a change to any file a job can read changes the skill. Computed only
/// when a command needs it (a run's cache keys, `skills show --json`), once per process.
/// A file larger than a job may read ([`MAX_RESOURCE_BYTES`]) is hashed by its size and
/// modification time, never read.
pub(super) fn folder_hash(root: &Path, files: &[(String, u64)]) -> String {
    let mut h = Sha256::new();
    h.update(b"zhi-skill-folder-v2\0");
    for (rel, len) in files {
        let path = root.join(rel);
        h.update(rel.as_bytes());
        h.update(b"\0");
        let read = (*len <= MAX_RESOURCE_BYTES)
            .then(|| crate::small_file::read(&path, MAX_RESOURCE_BYTES).ok())
            .flatten();
        match read {
            Some(bytes) => h.update(Sha256::digest(&bytes)),
            None => {
                let mtime = std::fs::symlink_metadata(&path)
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                h.update(format!("unread:{len}:{mtime}").as_bytes());
            }
        }
        h.update(b"\n");
    }
    hex::encode(h.finalize())
}

/// Every regular file of a skill folder, in path order, without following links, with its
/// size and stamp (from the walk itself: nothing is opened).
fn walk_folder(dir: &Path) -> Walked {
    let mut files = Vec::new();
    let mut warnings = Vec::new();
    let walk = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .max_depth(8)
        .sort_by_file_name();
    for entry in walk.into_iter().filter_map(Result::ok) {
        if !entry.file_type().is_file() {
            continue;
        }
        if files.len() >= MAX_FOLDER_FILES {
            warnings.push(msg!(
                "more than {MAX_FOLDER_FILES} files; the rest are not read"
            ));
            break;
        }
        let Ok(rel) = entry.path().strip_prefix(dir) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        let meta = entry.metadata().ok();
        let len = meta.as_ref().map_or(0, |m| m.len());
        let stamp = meta.as_ref().and_then(crate::small_file::Stamp::of_meta);
        files.push((rel, len, stamp));
    }
    Walked { files, warnings }
}

fn load_dir(set: &mut SkillSet, dir: &Path, make: fn(PathBuf) -> SkillSource) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            set.warnings.push(SkillWarning {
                skill: None,
                text: msg!("{}: cannot read skill folder: {e}", dir.display()),
            });
            return;
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml") | Some("yml")
            )
        })
        .collect();
    files.sort();
    // Agent Skills: folders holding a SKILL.md, beside the YAML files, in the same places.
    let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| std::fs::symlink_metadata(p.join(SKILL_MD)).is_ok())
        .collect();
    folders.sort();
    for f in files {
        set.add_file(&f.clone(), make(f));
    }
    for f in folders {
        set.add_folder(&f, make);
    }
}

/// "unknown skill `x`; [did you mean `y`?] `zhi skills list` shows the available ones".
pub(crate) fn unknown_skill(skill: &str, hint: &str) -> String {
    let skill = crate::sanitize::one_line(skill);
    if hint.is_empty() {
        format!("unknown skill `{skill}`; `zhi skills list` shows the available ones")
    } else {
        format!("unknown skill `{skill}`; {hint} `zhi skills list` shows the available ones")
    }
}
