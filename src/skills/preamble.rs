//! The language preamble that precedes every skill's system prompt (SPEC §3). It lives in one
//! place so that every skill, builtin or user-written, speaks the reader's language.

use super::Skill;

/// Prepended to every system prompt.
pub const LANGUAGE_PREAMBLE: &str = "\
Language rule: write your answer and every file you write in the language of the input \
document. If an argument names a target language (`to`, `translate_to`, `target`), write \
what is meant for that language entirely in it. Headings, labels, list markers and table \
headers follow the same rule. Never mix languages within one text.";

/// The system prompt sent to the model: the preamble, then the skill's own prompt.
pub fn system_prompt(skill: &Skill) -> String {
    format!("{LANGUAGE_PREAMBLE}\n\n{}", skill.system_prompt.trim_end())
}
