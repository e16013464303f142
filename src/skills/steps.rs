//! Workflows (docs/skills.md#workflows): a skill that lists `steps:` runs them in order of
//! their inputs instead of asking the model to call helpers. A fixed sequence is not a decision,
//! so a cheap model is never asked to make it: each step is one skill in its own mode (a direct
//! skill is one request) or one direct request of the workflow's own (`prompt:`).
//!
//! This module is the schema: parsing a step list and checking it before anything runs
//! (ids, references, cycles, which step writes each declared file). Running it is
//! `run::workflow`'s job.

use serde::Serialize;
use serde_norway::{Mapping, Value};
use std::collections::BTreeMap;

/// One step of a workflow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Step {
    /// The step's name, for references (`{steps.ID.output}`) and the record.
    pub id: String,
    /// What the step runs.
    pub run: StepRun,
    /// The step's arguments, as templates of the job's arguments and earlier steps' outputs.
    /// A skill step's first file argument defaults to the job's document.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, String>,
    /// The file the step leaves in the job's folder (a template); a skill step without it
    /// keeps its skill's one declared file name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Steps whose outputs this one is given (besides those its templates name).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
    /// Run only when this holds of the job's arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<Condition>,
    /// A failure of this step does not fail the job; the steps that need it are skipped.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// For a folder job: run the step's skill once per document of the folder.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub for_each_document: bool,
}

/// What a step runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StepRun {
    /// Another skill (builtin or user), in its own mode.
    Skill(String),
    /// One direct request of the workflow's own: these instructions, the job's document and
    /// the outputs of the steps it needs; `task` is what to answer with.
    Prompt {
        prompt: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        task: Option<String>,
    },
    /// No request: the outputs of these steps, joined in this order (a heading line between
    /// them is theirs to write).
    Join(Vec<String>),
}

/// `when:` — `NAME` (the argument is given and not empty), `NAME == VALUE`, `NAME != VALUE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Condition {
    pub arg: String,
    /// `Some((true, v))`: equals v; `Some((false, v))`: differs from v; `None`: given.
    pub test: Option<(bool, String)>,
    /// As written, for messages.
    pub text: String,
}

impl Condition {
    pub(crate) fn parse(text: &str) -> Result<Condition, String> {
        let t = text.trim();
        let (arg, test) = if let Some((a, v)) = t.split_once("!=") {
            (a.trim(), Some((false, unquote(v))))
        } else if let Some((a, v)) = t.split_once("==") {
            (a.trim(), Some((true, unquote(v))))
        } else {
            (t, None)
        };
        let arg = arg.trim_start_matches('{').trim_end_matches('}');
        if arg.is_empty()
            || !arg
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            let value = t;
            return Err(msg!(
                "`when: {value}` must be an argument name, `NAME == VALUE` or `NAME != VALUE`"
            ));
        }
        Ok(Condition {
            arg: arg.to_string(),
            test,
            text: t.to_string(),
        })
    }

    /// Whether it holds for these arguments (an argument not given is empty).
    pub(crate) fn holds(&self, args: &BTreeMap<String, String>) -> bool {
        let value = args.get(&self.arg).map(|v| v.trim()).unwrap_or("");
        match &self.test {
            None => !value.is_empty(),
            Some((true, v)) => value.eq_ignore_ascii_case(v),
            Some((false, v)) => !value.eq_ignore_ascii_case(v),
        }
    }
}

fn unquote(v: &str) -> String {
    v.trim().trim_matches(['"', '\'']).to_string()
}

impl Step {
    /// The steps this one needs: those named in `needs` and those its templates refer to.
    pub(crate) fn dependencies(&self) -> Vec<String> {
        let mut deps = self.needs.clone();
        let mut texts: Vec<&str> = self.args.values().map(String::as_str).collect();
        match &self.run {
            StepRun::Prompt { prompt, task } => {
                texts.push(prompt);
                texts.extend(task.as_deref());
            }
            StepRun::Join(ids) => {
                for id in ids {
                    if !deps.contains(id) {
                        deps.push(id.clone());
                    }
                }
            }
            StepRun::Skill(_) => {}
        }
        texts.extend(self.output.as_deref());
        for t in texts {
            for r in step_refs(t) {
                if !deps.contains(&r.0) {
                    deps.push(r.0);
                }
            }
        }
        deps
    }

    /// The skill the step runs, if it runs one.
    pub(crate) fn skill(&self) -> Option<&str> {
        match &self.run {
            StepRun::Skill(s) => Some(s),
            StepRun::Prompt { .. } | StepRun::Join(_) => None,
        }
    }
}

/// The `{steps.ID.FIELD}` references in a template: (id, field).
pub(crate) fn step_refs(template: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(at) = rest.find("{steps.") {
        let after = &rest[at + "{steps.".len()..];
        let Some(close) = after.find('}') else { break };
        let inner = &after[..close];
        if let Some((id, field)) = inner.rsplit_once('.') {
            out.push((id.to_string(), field.to_string()));
        }
        rest = &after[close..];
    }
    out
}

/// Parse `steps:`. Warnings (unknown keys) go to `warnings`.
pub(crate) fn parse(v: &Value, warnings: &mut Vec<String>) -> Result<Vec<Step>, String> {
    let Value::Sequence(items) = v else {
        return Err("`steps` must be a list of steps".into());
    };
    if items.is_empty() {
        return Err("`steps` is empty: list at least one step, or leave the field out".into());
    }
    let mut steps: Vec<Step> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Value::Mapping(m) = item else {
            return Err(msg!(
                "steps[{i}] must be a mapping (`id`, `skill` or `prompt`, `args`…)"
            ));
        };
        let step = parse_step(i, m, warnings)?;
        if steps.iter().any(|s| s.id == step.id) {
            let id = &step.id;
            return Err(msg!("two steps are named `{id}`"));
        }
        steps.push(step);
    }
    check_order(&steps)?;
    Ok(steps)
}

fn text_field(m: &Mapping, field: &str) -> Result<Option<String>, String> {
    match m.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(Value::Bool(b)) => Ok(Some(b.to_string())),
        Some(_) => Err(msg!("`{field}` must be a string")),
    }
}

const STEP_FIELDS: &[&str] = &[
    "id", "skill", "prompt", "task", "join", "args", "output", "needs", "when", "optional",
    "for_each",
];

fn parse_step(i: usize, m: &Mapping, warnings: &mut Vec<String>) -> Result<Step, String> {
    let id = text_field(m, "id")
        .ok()
        .flatten()
        .ok_or_else(|| format!("steps[{i}] has no `id`"))?;
    super::name::check_name(&id)
        .map_err(|reason| format!("steps[{i}]: invalid id `{id}`: {reason}"))?;
    for k in m.keys() {
        match k.as_str() {
            Some(field) if STEP_FIELDS.contains(&field) => {}
            Some(field) => warnings.push(msg!("step `{id}`: unknown field `{field}` ignored")),
            None => warnings.push(msg!("step `{id}`: a key that is not a string is ignored")),
        }
    }
    step_fields(m)
        .map(|mut step| {
            step.id = id.clone();
            step
        })
        .map_err(|reason| format!("step `{id}`: {reason}"))
}

/// The step's fields but its id.
fn step_fields(m: &Mapping) -> Result<Step, String> {
    let skill = text_field(m, "skill")?;
    let prompt = text_field(m, "prompt")?;
    let task = text_field(m, "task")?;
    let join = match m.get("join") {
        None | Some(Value::Null) => None,
        Some(Value::Sequence(v)) if !v.is_empty() => Some(
            v.iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| msg!("`join` must list step ids"))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => return Err(msg!("`join` must list step ids")),
    };
    let run = match (skill, prompt, join) {
        (Some(s), None, None) if !s.trim().is_empty() => StepRun::Skill(s.trim().to_string()),
        (None, Some(p), None) if !p.trim().is_empty() => StepRun::Prompt { prompt: p, task },
        (None, None, Some(ids)) => StepRun::Join(ids),
        (None, None, None) => {
            return Err(msg!(
                "it needs `skill` (a skill to run), `prompt` or `join`"
            ));
        }
        _ => {
            return Err(msg!(
                "it has more than one of `skill`, `prompt` and `join`: a step does one"
            ));
        }
    };
    let args = step_args(m)?;
    let output = text_field(m, "output")?;
    if let Some(file) = &output {
        let bad = file.trim().is_empty()
            || file.starts_with('/')
            || file.split('/').any(|c| c == ".." || c.is_empty());
        if bad {
            return Err(msg!(
                "`output` `{file}` must be a relative file name inside the job's folder"
            ));
        }
    }
    if !matches!(run, StepRun::Skill(_)) && output.is_none() {
        return Err(msg!(
            "a `prompt` or `join` step needs `output`, the file it writes"
        ));
    }
    let needs = match m.get("needs") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Sequence(v)) => v
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| msg!("`needs` must list step ids"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(msg!("`needs` must list step ids")),
    };
    let when = text_field(m, "when")?
        .map(|w| Condition::parse(&w))
        .transpose()?;
    let optional = match m.get("optional") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(msg!("`optional` must be true or false")),
    };
    let for_each_document = match text_field(m, "for_each")?.as_deref() {
        None => false,
        Some("document") => true,
        Some(value) => {
            return Err(msg!(
                "`for_each: {value}` is not known (only `for_each: document`)"
            ));
        }
    };
    if for_each_document && !matches!(run, StepRun::Skill(_)) {
        return Err(msg!("`for_each` needs a `skill` step"));
    }
    Ok(Step {
        id: String::new(),
        run,
        args,
        output,
        needs,
        when,
        optional,
        for_each_document,
    })
}

/// A step's `args`: names to values, numbers and booleans as they are written.
fn step_args(m: &Mapping) -> Result<BTreeMap<String, String>, String> {
    let mut args = BTreeMap::new();
    match m.get("args") {
        None | Some(Value::Null) => {}
        Some(Value::Mapping(a)) => {
            for (k, v) in a {
                let Some(name) = k.as_str() else {
                    return Err(msg!("`args` names must be strings"));
                };
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => return Err(msg!("argument `{name}` must be a string")),
                };
                args.insert(name.to_string(), v);
            }
        }
        Some(_) => return Err(msg!("`args` must be a mapping of names to values")),
    }
    Ok(args)
}

/// Every reference names an earlier-declared or later step that exists, and the steps form no
/// cycle.
fn check_order(steps: &[Step]) -> Result<(), String> {
    for s in steps {
        let id = &s.id;
        for name in s.dependencies() {
            if &name == id {
                return Err(msg!("step `{id}` refers to itself"));
            }
            if !steps.iter().any(|x| x.id == name) {
                let list = steps
                    .iter()
                    .map(|x| x.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(msg!(
                    "step `{id}` refers to step `{name}`, which does not exist (the steps are {list})"
                ));
            }
        }
    }
    // Kahn's order; what is left is a cycle.
    let mut done: Vec<&str> = Vec::new();
    while done.len() < steps.len() {
        let ready: Vec<&str> = steps
            .iter()
            .filter(|s| !done.contains(&s.id.as_str()))
            .filter(|s| s.dependencies().iter().all(|d| done.contains(&d.as_str())))
            .map(|s| s.id.as_str())
            .collect();
        if ready.is_empty() {
            let left: Vec<&str> = steps
                .iter()
                .map(|s| s.id.as_str())
                .filter(|id| !done.contains(id))
                .collect();
            let chain = left.join(" -> ");
            return Err(msg!("the steps form a cycle: {chain}"));
        }
        done.extend(ready);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(y: &str) -> Result<Vec<Step>, String> {
        let v: Value = serde_norway::from_str(y).unwrap();
        parse(&v, &mut Vec::new())
    }

    #[test]
    fn references_become_dependencies() {
        let s = steps(
            "- {id: a, skill: analyze}\n- {id: b, skill: proofread, args: {file: '{steps.a.output}'}}\n- {id: c, prompt: p, output: c.md, needs: [a]}\n",
        )
        .unwrap();
        assert_eq!(s[1].dependencies(), ["a"]);
        assert_eq!(s[2].dependencies(), ["a"]);
        assert!(s[0].dependencies().is_empty());
    }

    #[test]
    fn bad_step_lists_are_refused_with_the_step_named() {
        let e = steps("- {id: a, skill: x, args: {file: '{steps.b.text}'}}\n").unwrap_err();
        assert!(e.contains("step `a` refers to step `b`"), "{e}");
        let e = steps("- {id: a, skill: x, needs: [b]}\n- {id: b, skill: y, needs: [a]}\n")
            .unwrap_err();
        assert!(e.contains("cycle"), "{e}");
        let e = steps("- {id: a, prompt: p}\n").unwrap_err();
        assert!(e.contains("needs `output`"), "{e}");
        let e = steps("- {id: a, skill: x}\n- {id: b, join: [a, c], output: b.md}\n").unwrap_err();
        assert!(e.contains("step `c`"), "{e}");
        let e = steps("- {id: a, skill: x}\n- {id: a, skill: y}\n").unwrap_err();
        assert!(e.contains("two steps"), "{e}");
        let e = steps("- {id: a, skill: x, prompt: p}\n").unwrap_err();
        assert!(e.contains("more than one"), "{e}");
    }

    #[test]
    fn conditions_test_the_job_arguments() {
        let args: BTreeMap<String, String> = [
            ("file2".to_string(), "b.txt".to_string()),
            ("format".into(), "markdown".into()),
        ]
        .into();
        assert!(Condition::parse("file2").unwrap().holds(&args));
        assert!(!Condition::parse("to").unwrap().holds(&args));
        assert!(!Condition::parse("format != markdown").unwrap().holds(&args));
        assert!(
            Condition::parse("format == 'Markdown'")
                .unwrap()
                .holds(&args)
        );
        assert!(Condition::parse("a b").is_err());
    }
}
