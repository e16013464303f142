//! The graph of nested skills: a skill listed in another's `tools` becomes a tool of it. The
//! graph must be finite and shallow before anything runs: no unknown names, no cycles, at most
//! [`MAX_NESTING`] levels of nesting below the skill a job starts with.

use super::{BUILTIN_TOOLS, Skill};
use std::collections::BTreeMap;

/// How many levels of skills may nest below the top skill (a → b → c → d is 3).
pub(crate) const MAX_NESTING: usize = 3;

/// A problem in the skill graph, with the chain that shows it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GraphError {
    #[error("skill `{skill}`: unknown tool or skill `{name}`{hint} (tools are {tools}, or other skills' names)", tools = BUILTIN_TOOLS.join(", "))]
    Unknown {
        skill: String,
        name: String,
        /// ", did you mean `summarize`?", or empty.
        hint: String,
    },
    #[error("skill cycle: {}", chain.join(" -> "))]
    Cycle { chain: Vec<String> },
    #[error("skills nest deeper than {MAX_NESTING}: {}", chain.join(" -> "))]
    TooDeep { chain: Vec<String> },
    #[error("skill `{skill}`: {reason}")]
    Workflow { skill: String, reason: String },
    #[error(
        "skill `{skill}` lists the MCP tool `{tool}`, but only agent skills call MCP tools; it is {mode} (one request without tools)"
    )]
    McpNotAgent {
        skill: String,
        tool: String,
        /// `extract` or `workflow`.
        mode: &'static str,
    },
}

pub(super) fn check(skills: &BTreeMap<String, Skill>, roots: Option<&[&str]>) -> Vec<GraphError> {
    let mut errors = Vec::new();
    let roots: Vec<&str> = match roots {
        Some(r) => r.to_vec(),
        None => skills.keys().map(String::as_str).collect(),
    };
    for root in &roots {
        let mut chain = vec![root.to_string()];
        walk(skills, &mut chain, &mut errors);
    }
    for skill in reachable(skills, &roots) {
        let mode = if skill.is_workflow() {
            "workflow"
        } else if skill.schema().is_some() {
            "extract"
        } else {
            continue;
        };
        if let Some(t) = skill.mcp_tools().next() {
            push_once(
                &mut errors,
                GraphError::McpNotAgent {
                    skill: skill.name.clone(),
                    tool: format!("{}{}/{}", super::MCP_TOOL_PREFIX, t.server, t.tool),
                    mode,
                },
            );
        }
    }
    for skill in skills.values().filter(|s| s.is_workflow()) {
        for reason in workflow_problems(skills, skill) {
            push_once(
                &mut errors,
                GraphError::Workflow {
                    skill: skill.name.clone(),
                    reason,
                },
            );
        }
    }
    errors
}

/// The skills `roots` use, themselves included, each once.
fn reachable<'a>(skills: &'a BTreeMap<String, Skill>, roots: &[&str]) -> Vec<&'a Skill> {
    let mut seen: Vec<&str> = Vec::new();
    let mut todo: Vec<&str> = roots.to_vec();
    let mut out = Vec::new();
    while let Some(name) = todo.pop() {
        let Some((key, skill)) = skills.get_key_value(name) else {
            continue;
        };
        if seen.contains(&key.as_str()) {
            continue;
        }
        seen.push(key);
        out.push(skill);
        todo.extend(skill.children());
    }
    out
}

/// What is wrong with a workflow's steps given the skills they run: each declared file must
/// be some step's output, and a skill step without `output` must run a skill that declares
/// its files.
fn workflow_problems(skills: &BTreeMap<String, Skill>, w: &Skill) -> Vec<String> {
    let mut problems = Vec::new();
    let mut outputs: Vec<&str> = Vec::new();
    for step in &w.steps {
        if let Some(o) = &step.output {
            outputs.push(o);
            continue;
        }
        let Some(name) = step.skill() else { continue };
        let Some(child) = skills.get(name) else {
            continue;
        };
        let files = child.output.iter().flat_map(|o| o.files.iter());
        let before = outputs.len();
        outputs.extend(files.map(String::as_str));
        if outputs.len() == before && !step.for_each_document {
            problems.push(format!(
                "step `{}` runs `{name}`, which declares no output file: give the step an `output`",
                step.id
            ));
        }
    }
    for f in w.output.iter().flat_map(|o| o.files.iter()) {
        if !outputs.contains(&f.as_str()) {
            problems.push(format!(
                "declares {f}, but no step writes it (set a step's `output: {f}`)"
            ));
        }
    }
    problems
}

/// ", did you mean `summarize`?" for an unknown name among the tools and skills, or empty.
fn hint(name: &str, skills: &BTreeMap<String, Skill>) -> String {
    let known = BUILTIN_TOOLS
        .iter()
        .copied()
        .chain(skills.keys().map(String::as_str));
    let hint = crate::suggest::did_you_mean(name, known);
    if hint.is_empty() {
        hint
    } else {
        format!(", {hint}")
    }
}

fn walk(skills: &BTreeMap<String, Skill>, chain: &mut Vec<String>, errors: &mut Vec<GraphError>) {
    let Some(skill) = chain.last().and_then(|n| skills.get(n)) else {
        return;
    };
    for name in skill.children() {
        if !skills.contains_key(name) {
            push_once(
                errors,
                GraphError::Unknown {
                    skill: skill.name.clone(),
                    name: name.to_string(),
                    hint: hint(name, skills),
                },
            );
            continue;
        }
        if let Some(pos) = chain.iter().position(|n| n == name) {
            let mut cyc: Vec<String> = chain[pos..].to_vec();
            cyc.push(name.to_string());
            push_once(
                errors,
                GraphError::Cycle {
                    chain: canonical_cycle(cyc),
                },
            );
            continue;
        }
        chain.push(name.to_string());
        if chain.len() - 1 > MAX_NESTING {
            push_once(
                errors,
                GraphError::TooDeep {
                    chain: chain.clone(),
                },
            );
        } else {
            walk(skills, chain, errors);
        }
        chain.pop();
    }
}

/// A cycle found from different starting points is reported once, starting at its smallest
/// name: `b -> a -> b` and `a -> b -> a` are the same cycle.
fn canonical_cycle(mut cyc: Vec<String>) -> Vec<String> {
    cyc.pop();
    if let Some(min) = cyc
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.cmp(b.1))
        .map(|(i, _)| i)
    {
        cyc.rotate_left(min);
    }
    if let Some(first) = cyc.first().cloned() {
        cyc.push(first);
    }
    cyc
}

fn push_once(errors: &mut Vec<GraphError>, e: GraphError) {
    if !errors.contains(&e) {
        errors.push(e);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SkillSet, SkillSource};
    use super::*;

    fn set(defs: &[(&str, &str)]) -> SkillSet {
        let mut s = SkillSet::default();
        for (name, tools) in defs {
            let y = format!("name: {name}\ndescription: d\nsystem_prompt: p\ntools: [{tools}]\n");
            s.add_bytes(
                y.as_bytes(),
                SkillSource::File(format!("{name}.yaml").into()),
            )
            .unwrap();
        }
        s
    }

    #[test]
    fn cycles_and_depth() {
        let s = set(&[("a", "b"), ("b", "a")]);
        assert_eq!(
            s.check_graph(None),
            vec![GraphError::Cycle {
                chain: vec!["a".into(), "b".into(), "a".into()]
            }]
        );
        let s = set(&[("a", "file_read, a")]);
        assert_eq!(s.check_graph(None)[0].to_string(), "skill cycle: a -> a");
        let s = set(&[
            ("a", "b"),
            ("b", "c"),
            ("c", "d"),
            ("d", "e"),
            ("e", "file_read"),
        ]);
        let errs = s.check_graph(Some(&["a"]));
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].to_string(),
            "skills nest deeper than 3: a -> b -> c -> d -> e"
        );
        assert!(s.check_graph(Some(&["b"])).is_empty());
        let s = set(&[("a", "nope")]);
        assert!(
            s.check_graph(None)[0]
                .to_string()
                .contains("unknown tool or skill `nope`")
        );
    }
}
