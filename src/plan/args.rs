//! Skill arguments: `-a KEY=VALUE` checked against the skill's declared arguments, defaults
//! applied, and file-type templates (`{dir}`, `{stem}`, `{ext}`, `{name}`) expanded against
//! each job's primary input.

use super::PlanError;
use crate::error::{ErrorKind, JobError};
use crate::skills::{ArgType, Skill};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `KEY=VALUE`.
pub(crate) fn parse_arg(s: &str) -> Result<(String, String), PlanError> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(PlanError::NotKeyValue(s.to_string())),
    }
}

/// Check the given arguments against the skill before planning: unknown names, values of the
/// wrong type and missing required arguments are usage errors.
pub(super) fn check_args(skill: &Skill, given: &BTreeMap<String, String>) -> Result<(), PlanError> {
    let primary = skill.primary_arg().map(|a| a.name.as_str());
    for (k, v) in given {
        let Some(spec) = skill.input.args.iter().find(|a| &a.name == k) else {
            return Err(PlanError::NoSuchArgument {
                skill: skill.name.clone(),
                arg: k.clone(),
                known: skill
                    .input
                    .args
                    .iter()
                    .map(|a| a.name.clone())
                    .filter(|n| Some(n.as_str()) != primary)
                    .collect(),
            });
        };
        if Some(k.as_str()) == primary {
            return Err(PlanError::ArgumentIsTheInput(k.clone()));
        }
        let expected = match spec.kind {
            ArgType::Number if v.trim().parse::<f64>().is_err() => msg!("a number"),
            ArgType::Boolean if !matches!(v.trim(), "true" | "false") => msg!("true or false"),
            _ => continue,
        };
        return Err(PlanError::ArgumentType {
            arg: k.clone(),
            value: v.clone(),
            expected,
        });
    }
    for a in &skill.input.args {
        if a.required
            && Some(a.name.as_str()) != primary
            && a.default.is_none()
            && !given.contains_key(&a.name)
        {
            return Err(PlanError::MissingArgument {
                skill: skill.name.clone(),
                arg: a.name.clone(),
                kind: a.kind.as_str(),
            });
        }
    }
    Ok(())
}

/// The arguments of one job: defaults, then the given values with file templates expanded
/// against the primary input (`display` as shown, `path` on disk). Returns the arguments, the
/// extra input files, and a problem when a required paired file is missing.
#[allow(clippy::type_complexity)]
pub(crate) fn resolve_args(
    skill: &Skill,
    given: &BTreeMap<String, String>,
    display: &str,
    path: &Path,
) -> (
    BTreeMap<String, String>,
    Vec<(String, String, PathBuf)>,
    Option<JobError>,
) {
    let primary = skill.primary_arg().map(|a| a.name.as_str());
    let mut args = BTreeMap::new();
    let mut extra = Vec::new();
    let mut problem = None;
    for spec in &skill.input.args {
        if Some(spec.name.as_str()) == primary {
            continue;
        }
        let value = given
            .get(&spec.name)
            .cloned()
            .or_else(|| spec.default.clone());
        let Some(value) = value else { continue };
        if spec.kind != ArgType::File {
            args.insert(spec.name.clone(), value);
            continue;
        }
        let shown = expand_template(&value, display);
        let on_disk = expand_template_path(&value, display, path);
        if on_disk.is_file() {
            args.insert(spec.name.clone(), shown.clone());
            extra.push((spec.name.clone(), shown, on_disk));
        } else if spec.required {
            problem.get_or_insert_with(|| {
                JobError::new(
                    ErrorKind::InputError,
                    msg!("{} `{shown}` for {display} does not exist", spec.name),
                )
            });
            args.insert(spec.name.clone(), shown);
        }
        // An optional paired file that is missing is left out: the job runs without it.
    }
    (args, extra, problem)
}

fn parts(display: &str) -> (String, String, String, String) {
    let (dir, name) = match display.rsplit_once('/') {
        Some((d, n)) => (d.to_string(), n.to_string()),
        None => (".".to_string(), display.to_string()),
    };
    let (stem, ext) = match name.rfind('.') {
        Some(i) if i > 0 => (name[..i].to_string(), name[i..].to_string()),
        _ => (name.clone(), String::new()),
    };
    (dir, name, stem, ext)
}

/// `{dir}/{stem}.old{ext}` for `reports/q3.pdf` → `reports/q3.old.pdf`.
pub(super) fn expand_template(template: &str, display: &str) -> String {
    let (dir, name, stem, ext) = parts(display);
    let out = template
        .replace("{dir}", &dir)
        .replace("{name}", &name)
        .replace("{stem}", &stem)
        .replace("{ext}", &ext);
    out.strip_prefix("./").map(str::to_string).unwrap_or(out)
}

/// The same template on disk: `{dir}` is the primary input's real folder, so inputs outside
/// the current folder resolve beside themselves.
fn expand_template_path(template: &str, display: &str, path: &Path) -> PathBuf {
    let (_, name, stem, ext) = parts(display);
    let dir = path
        .parent()
        .map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        })
        .unwrap_or(Path::new("."));
    let out = template
        .replace("{dir}", &dir.to_string_lossy())
        .replace("{name}", &name)
        .replace("{stem}", &stem)
        .replace("{ext}", &ext);
    PathBuf::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates() {
        assert_eq!(
            expand_template("{dir}/{stem}.old{ext}", "reports/q3.pdf"),
            "reports/q3.old.pdf"
        );
        assert_eq!(
            expand_template("{dir}/{stem}.old{ext}", "q3.pdf"),
            "q3.old.pdf"
        );
        assert_eq!(expand_template("{name}.bak", "a/b/c"), "c.bak");
        assert_eq!(expand_template("fixed.txt", "a/b.txt"), "fixed.txt");
    }
}
