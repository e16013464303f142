//! The folders a person lets an agent use (`zhi mcp --root DIR`): every input and output path
//! the agent names is resolved here, canonically, and refused unless it lies inside one. Paths
//! outside them never appear in what the server says back either ([`Roots::redact`]).
//!
//! This is a check before a child `zhi` is started, not a confinement of its reads: what keeps
//! a run's writes inside its output folder is the run's own confinement (src/confine.rs), and
//! what keeps its walks inside the inputs is that links are not followed (docs/cli.md).

use std::path::{Path, PathBuf};

/// The roots, canonical; the first is where relative paths start.
#[derive(Debug, Clone)]
pub(crate) struct Roots {
    dirs: Vec<PathBuf>,
}

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RootError {
    /// The path lies outside every root.
    #[error("`{path}` is outside the folders this server may use ({roots})")]
    Outside { path: String, roots: String },
    /// A `..` after a glob's first wildcard, where it cannot be resolved before the walk.
    #[error("`{path}` climbs out with `..` after a wildcard")]
    Climbs { path: String },
    /// A root given to `zhi mcp` that is not a folder.
    #[error("root {path} is not a folder: {reason}")]
    BadRoot { path: String, reason: String },
}

impl Roots {
    /// Canonical roots from the command line's (relative to `cwd`); none given means `cwd`.
    pub(crate) fn new(given: &[PathBuf], cwd: &Path) -> Result<Roots, RootError> {
        let given = if given.is_empty() {
            vec![cwd.to_path_buf()]
        } else {
            given.to_vec()
        };
        let mut dirs = Vec::new();
        for g in given {
            let p = cwd.join(&g);
            let bad = |reason: String| RootError::BadRoot {
                path: g.display().to_string(),
                reason,
            };
            let c = p.canonicalize().map_err(|e| bad(e.to_string()))?;
            if !c.is_dir() {
                return Err(bad(msg!("not a directory")));
            }
            if !dirs.contains(&c) {
                dirs.push(c);
            }
        }
        Ok(Roots { dirs })
    }

    /// The first root: relative paths start here, and child runs work here.
    pub(crate) fn first(&self) -> &Path {
        &self.dirs[0]
    }

    /// `a, b`: the roots as the refusals name them.
    pub(crate) fn names(&self) -> String {
        self.dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether a canonical path lies inside a root (a root itself included).
    pub(crate) fn contains(&self, canonical: &Path) -> bool {
        self.dirs.iter().any(|d| canonical.starts_with(d))
    }

    /// A path the agent named (it need not exist yet: an output folder), canonical, if it lies
    /// inside a root. Links on the way are resolved, so a link inside a root that leads out is
    /// refused.
    pub(crate) fn resolve(&self, given: &str) -> Result<PathBuf, RootError> {
        let joined = self.first().join(given);
        let resolved =
            crate::layout::canonical_prefix(&joined).ok_or_else(|| RootError::Climbs {
                path: given.to_string(),
            })?;
        if self.contains(&resolved) {
            Ok(resolved)
        } else {
            Err(self.outside(given))
        }
    }

    /// An input: a path or a glob (`docs/**/*.pdf`). The part before the first wildcard is
    /// resolved as [`Roots::resolve`] does; the rest is kept, and may not hold `..`.
    pub(crate) fn resolve_input(&self, given: &str) -> Result<String, RootError> {
        let parts: Vec<&str> = given.split('/').collect();
        let Some(wild) = parts.iter().position(|p| is_glob(p)) else {
            return Ok(self.resolve(given)?.display().to_string());
        };
        if parts[wild..].contains(&"..") {
            return Err(RootError::Climbs {
                path: given.to_string(),
            });
        }
        let literal = parts[..wild].join("/");
        let base = if given.starts_with('/') && literal.is_empty() {
            // `/**/x`: the whole file system.
            return Err(self.outside(given));
        } else if literal.is_empty() {
            self.first().to_path_buf()
        } else {
            self.resolve(&literal)?
        };
        Ok(format!("{}/{}", base.display(), parts[wild..].join("/")))
    }

    /// A file argument: a path, resolved as [`Roots::resolve`] does, or a template filled per
    /// input (`{dir}/{stem}.old{ext}`, docs/cli.md#skill-arguments). A template that starts
    /// with a placeholder lies beside the input, which is inside the roots; one with a literal
    /// folder first has that folder resolved. Neither may climb with `..`.
    pub(crate) fn resolve_template(&self, given: &str) -> Result<String, RootError> {
        let Some(brace) = given.find('{') else {
            return Ok(self.resolve(given)?.display().to_string());
        };
        if given.split('/').any(|p| p == "..") {
            return Err(RootError::Climbs {
                path: given.to_string(),
            });
        }
        match given[..brace].rfind('/') {
            None if given.starts_with('{') => Ok(given.to_string()),
            // `x{stem}`: a name in the first root.
            None => Ok(format!("{}/{given}", self.first().display())),
            Some(0) => Err(self.outside(given)),
            Some(slash) => {
                let folder = self.resolve(&given[..slash])?;
                Ok(format!("{}{}", folder.display(), &given[slash..]))
            }
        }
    }

    fn outside(&self, given: &str) -> RootError {
        RootError::Outside {
            path: given.to_string(),
            roots: self.names(),
        }
    }

    /// A path for a tool's answer: relative to the first root when inside it, as it is inside
    /// another root, and only its name when outside every root.
    pub(crate) fn shown(&self, path: &Path) -> String {
        if let Ok(rel) = path.strip_prefix(self.first()) {
            let s = rel.display().to_string();
            return if s.is_empty() { ".".into() } else { s };
        }
        if self.contains(path) {
            return path.display().to_string();
        }
        path.file_name()
            .map(|n| format!("…/{}", n.to_string_lossy()))
            .unwrap_or_else(|| "…".into())
    }

    /// `text` with every absolute path in it that is outside the roots shortened to `…/name`
    /// (a child's message naming a settings file or a skill in the home folder).
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find('/') {
            let starts_word = i == 0
                || rest[..i]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_whitespace() || "`'\"(=:,[{".contains(c));
            if !starts_word {
                out.push_str(&rest[..=i]);
                rest = &rest[i + 1..];
                continue;
            }
            out.push_str(&rest[..i]);
            let end = rest[i..]
                .find(|c: char| c.is_whitespace() || "`'\")],;}".contains(c))
                .map_or(rest.len(), |e| i + e);
            let word = &rest[i..end];
            let path = Path::new(word.trim_end_matches([':', '.']));
            if self.contains(path) {
                out.push_str(word);
            } else {
                let trail = &word[path.as_os_str().len()..];
                out.push_str(&self.shown(path));
                out.push_str(trail);
            }
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
    }

    /// A JSON value with every string [`Roots::redact`]ed.
    pub(crate) fn redact_json(&self, v: &mut serde_json::Value) {
        use serde_json::Value;
        match v {
            Value::String(s) if s.contains('/') => *s = self.redact(s),
            Value::Array(a) => a.iter_mut().for_each(|x| self.redact_json(x)),
            Value::Object(o) => o.values_mut().for_each(|x| self.redact_json(x)),
            _ => {}
        }
    }
}

/// Whether a path component is a glob pattern.
fn is_glob(part: &str) -> bool {
    part.contains(['*', '?', '[', '{'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots() -> (tempfile::TempDir, Roots) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("docs")).unwrap();
        std::fs::write(dir.path().join("docs/a.md"), "a").unwrap();
        let roots = Roots::new(&[], dir.path()).unwrap();
        (dir, roots)
    }

    #[test]
    fn a_path_inside_is_resolved_and_one_outside_refused() {
        let (_dir, r) = roots();
        assert!(r.resolve("docs/a.md").unwrap().ends_with("docs/a.md"));
        assert!(r.resolve("out/new/deeper").is_ok());
        assert!(matches!(
            r.resolve("../elsewhere"),
            Err(RootError::Outside { .. })
        ));
        assert!(matches!(
            r.resolve("/etc/passwd"),
            Err(RootError::Outside { .. })
        ));
        assert!(r.resolve("missing/../../x").is_err());
    }

    #[test]
    fn a_link_leading_out_is_refused() {
        let (dir, r) = roots();
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        assert!(matches!(
            r.resolve("etc/passwd"),
            Err(RootError::Outside { .. })
        ));
    }

    #[test]
    fn globs_keep_their_wildcards_and_may_not_climb() {
        let (_dir, r) = roots();
        assert!(
            r.resolve_input("docs/**/*.md")
                .unwrap()
                .ends_with("docs/**/*.md")
        );
        assert!(r.resolve_input("*.md").is_ok());
        assert!(r.resolve_input("docs/*/../../x").is_err());
        assert!(r.resolve_input("/*/passwd").is_err());
        assert!(r.resolve_input("/etc/*").is_err());
    }

    #[test]
    fn file_arguments_and_their_templates_are_held_to_the_roots() {
        let (_dir, r) = roots();
        assert!(
            r.resolve_template("docs/a.md")
                .unwrap()
                .ends_with("docs/a.md")
        );
        assert_eq!(
            r.resolve_template("{dir}/{stem}.old{ext}").unwrap(),
            "{dir}/{stem}.old{ext}"
        );
        assert!(
            r.resolve_template("docs/{stem}.md")
                .unwrap()
                .ends_with("docs/{stem}.md")
        );
        assert!(r.resolve_template("/etc/passwd").is_err());
        assert!(r.resolve_template("/etc/{name}").is_err());
        assert!(r.resolve_template("{dir}/../../../etc/passwd").is_err());
        assert!(r.resolve_template("../x/{name}").is_err());
    }

    #[test]
    fn paths_outside_are_shortened_in_messages() {
        let (dir, r) = roots();
        let inside = dir.path().canonicalize().unwrap().join("docs/a.md");
        let text = format!(
            "cannot read `/home/me/.config/zhi/config.yaml`: no; {} is fine",
            inside.display()
        );
        let shown = r.redact(&text);
        assert!(shown.contains("`…/config.yaml`"), "{shown}");
        assert!(shown.contains(&inside.display().to_string()), "{shown}");
        assert_eq!(r.redact("a/b and 1/2"), "a/b and 1/2");
    }
}
