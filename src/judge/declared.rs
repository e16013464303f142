//! Declared outputs (docs/skills.md#declared-outputs): which files a step must leave, found
//! among what it wrote (a renamed variant `name-2.ext` counts), each judged by its
//! [`Acceptance`]. It catches a file missing or not the result; it lets through any file the
//! skill does not declare (those are listed as extra files, never judged).

use super::accept::Acceptance;
use super::junk::Problem;
use crate::skills::Skill;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a run of a skill must leave: one [`Acceptance`] per declared file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Expected {
    pub declared: Vec<Acceptance>,
}

impl Expected {
    /// The checks for every file `skill` declares with these arguments, given `source`.
    pub(crate) fn of(
        skill: &Skill,
        args: &std::collections::BTreeMap<String, String>,
        source: Option<Arc<str>>,
    ) -> Expected {
        Expected {
            declared: skill
                .declared_files(args)
                .iter()
                .map(|f| Acceptance::new(skill, args, f, source.clone()))
                .collect(),
        }
    }

    /// The declared file names.
    pub(crate) fn files(&self) -> Vec<String> {
        self.declared.iter().map(|a| a.file.clone()).collect()
    }

    /// The declared files not (properly) written among `written` (relative to `root`), with
    /// why. `stop` is asked between checks.
    pub(crate) fn problems(
        &self,
        root: &Path,
        written: &[PathBuf],
        stop: &dyn Fn() -> bool,
    ) -> Vec<(String, Problem)> {
        check_declared(root, &self.declared, written, stop)
    }
}

/// The file name of a declared output, or zhi's renamed variant of it (`name-2.ext`), among
/// the files written: the latest one wins.
pub(crate) fn find_written<'a>(declared: &str, written: &'a [PathBuf]) -> Option<&'a PathBuf> {
    written.iter().rev().find(|w| {
        let w = w.to_string_lossy();
        w == declared || is_numbered_variant(&w, declared)
    })
}

fn is_numbered_variant(candidate: &str, declared: &str) -> bool {
    let (stem, ext) = match declared.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() && !s.ends_with('/') => (s, Some(e)),
        _ => (declared, None),
    };
    let rest = match ext {
        Some(e) => candidate.strip_suffix(e).and_then(|c| c.strip_suffix('.')),
        None => Some(candidate),
    };
    rest.and_then(|r| r.strip_prefix(stem))
        .and_then(|r| r.strip_prefix('-'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The declared files (one [`Acceptance`] each) that are not (properly) among `written`
/// (paths relative to `root`), each with why.
pub(crate) fn check_declared(
    root: &Path,
    declared: &[Acceptance],
    written: &[PathBuf],
    stop: &dyn Fn() -> bool,
) -> Vec<(String, Problem)> {
    declared
        .iter()
        .filter_map(|a| {
            let problem = match find_written(&a.file, written) {
                None => Some(Problem::Missing),
                Some(rel) => a.file(&root.join(rel), stop),
            };
            problem.map(|p| (a.file.clone(), p))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamed_variants_count_as_the_declared_file() {
        let written = vec![PathBuf::from("notes.md"), PathBuf::from("summary-2.md")];
        assert_eq!(find_written("summary.md", &written), Some(&written[1]));
        assert_eq!(find_written("notes.md", &written), Some(&written[0]));
        assert_eq!(find_written("summary-x.md", &written), None);
        assert_eq!(find_written("analysis.md", &written), None);
    }
}
