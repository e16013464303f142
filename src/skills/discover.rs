//! Where skills come from: builtins compiled from the repo's `skills/` folder, then
//! `~/.config/zhi/skills/`, then `./.zhi/skills/` — a later place replaces an earlier skill of
//! the same name. A broken file is skipped with a warning and never hides the others.

use super::load::{LoadError, load_str};
use super::{Skill, graph};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The largest skill file read. The longest builtin is a few kilobytes; a megabyte of system
/// prompt would not fit a model's context anyway.
pub const MAX_SKILL_FILE_BYTES: u64 = 1 << 20;

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
    pub fn kind(&self) -> &'static str {
        match self {
            SkillSource::Builtin(_) => "builtin",
            SkillSource::User(_) | SkillSource::Project(_) => "user",
            SkillSource::File(_) => "file",
        }
    }
    /// The file, for messages: a path, or `skills/NAME.yaml (builtin)`.
    pub fn label(&self) -> String {
        match self {
            SkillSource::Builtin(f) => format!("skills/{f}"),
            SkillSource::User(p) | SkillSource::Project(p) | SkillSource::File(p) => {
                p.display().to_string()
            }
        }
    }
    pub fn path(&self) -> Option<&Path> {
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

/// Every discovered skill, by name, with what went wrong on the way.
#[derive(Debug, Default, Clone)]
pub struct SkillSet {
    skills: BTreeMap<String, Skill>,
    /// Per-file warnings: `file: message`.
    pub warnings: Vec<String>,
    /// Files that could not be loaded.
    pub broken: Vec<LoadError>,
    /// Problems a run tolerates but `skills validate` reports (e.g. clamped max_turns).
    pub strict_errors: Vec<LoadError>,
}

impl SkillSet {
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.skills.keys().map(String::as_str)
    }
    pub fn contains(&self, name: &str) -> bool {
        self.skills.contains_key(name)
    }

    /// Load one file's bytes into the set; a later skill of the same name replaces an earlier.
    pub fn add_bytes(&mut self, bytes: &[u8], source: SkillSource) -> Option<String> {
        match load_str(bytes, source) {
            Ok(loaded) => {
                let label = loaded.skill.source.label();
                for w in loaded.warnings {
                    self.warnings.push(format!("{label}: {w}"));
                }
                for e in loaded.strict_errors {
                    self.strict_errors.push(LoadError {
                        file: label.clone(),
                        reason: e,
                    });
                }
                if let SkillSource::User(p) | SkillSource::Project(p) = &loaded.skill.source {
                    let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
                    if stem != loaded.skill.name {
                        self.warnings.push(format!(
                            "{label}: file name does not match the skill name `{}`",
                            loaded.skill.name
                        ));
                    }
                }
                let name = loaded.skill.name.clone();
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
    pub fn add_file(&mut self, path: &Path, source: SkillSource) -> Option<String> {
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

    /// Check the nested-skill graph of `roots` (all skills when `None`): unknown tools and
    /// skills, cycles, nesting deeper than [`super::MAX_NESTING`].
    pub fn check_graph(&self, roots: Option<&[&str]>) -> Vec<graph::GraphError> {
        graph::check(&self.skills, roots)
    }

    /// The skills a skill calls, transitively, itself included, in a stable order.
    pub fn closure(&self, name: &str) -> Vec<&Skill> {
        let mut seen: Vec<&str> = Vec::new();
        let mut stack = vec![name];
        while let Some(n) = stack.pop() {
            if seen.contains(&n) {
                continue;
            }
            if let Some(s) = self.skills.get(n) {
                seen.push(&s.name);
                stack.extend(s.nested_skill_names());
            }
        }
        seen.sort_unstable();
        seen.iter().filter_map(|n| self.skills.get(*n)).collect()
    }
}

/// Discover every skill: builtins, then `<config_dir>/skills/`, then `<cwd>/.zhi/skills/`.
pub fn discover(config_dir: Option<&Path>, cwd: &Path) -> SkillSet {
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

fn load_dir(set: &mut SkillSet, dir: &Path, make: fn(PathBuf) -> SkillSource) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            set.warnings
                .push(format!("{}: cannot read skill folder: {e}", dir.display()));
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
    for f in files {
        set.add_file(&f.clone(), make(f));
    }
}
