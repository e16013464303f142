//! "Did you mean": the names close to one that was mistyped, for the error that names it
//! (a skill, a tool, a subcommand).

/// How alike two names must be (Jaro-Winkler, case ignored) to be suggested: `summarise` for
/// `summarize` is 0.96, `meeting` for `meeting-notes` 0.91, an unrelated name below 0.7. One
/// edit (a letter added, dropped, changed, or two swapped: `rnu` for `run`) is near too, however
/// short the name.
const ALIKE: f64 = 0.8;

/// The (at most three) names of `known` closest to `typed`, closest first.
pub fn near<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let typed = typed.to_lowercase();
    let mut near: Vec<(usize, f64, &str)> = known
        .into_iter()
        .filter_map(|k| {
            let lower = k.to_lowercase();
            let edits = strsim::osa_distance(&typed, &lower);
            let alike = strsim::jaro_winkler(&typed, &lower);
            (edits > 0 && (edits == 1 || alike >= ALIKE)).then_some((edits.min(2), alike, k))
        })
        .collect();
    near.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(b.2)));
    near.dedup_by(|a, b| a.2 == b.2);
    near.into_iter().take(3).map(|(_, _, k)| k).collect()
}

/// "did you mean `summarize`?" for `typed` (see [`near`]); empty when no name is near.
pub(crate) fn did_you_mean<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<String> = near(typed, known)
        .iter()
        .map(|k| format!("`{}`", crate::sanitize::one_line(k)))
        .collect();
    match names.as_slice() {
        [] => String::new(),
        [names] => format!("did you mean {names}?"),
        [rest @ .., last] => {
            let names = rest.join(", ");
            format!("did you mean {names} or {last}?")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{did_you_mean, near};

    const SKILLS: [&str; 6] = [
        "summarize",
        "translate",
        "translate-proofread",
        "meeting-notes",
        "meeting-followup",
        "proofread",
    ];

    #[test]
    fn a_misspelt_name_gets_the_closest_names() {
        assert_eq!(
            did_you_mean("summarise", SKILLS),
            "did you mean `summarize`?"
        );
        assert_eq!(
            near("Translte", SKILLS),
            ["translate", "translate-proofread"]
        );
        assert_eq!(
            did_you_mean("meeting", SKILLS),
            "did you mean `meeting-notes` or `meeting-followup`?"
        );
    }

    #[test]
    fn one_edit_is_near_however_short_the_name() {
        assert_eq!(near("rnu", ["run", "plan", "man"]), ["run"]);
        assert_eq!(near("mna", ["run", "plan", "man"]), ["man"]);
    }

    #[test]
    fn an_unrelated_or_exact_name_gets_none() {
        assert_eq!(did_you_mean("xyz", SKILLS), "");
        assert_eq!(did_you_mean("", SKILLS), "");
        assert!(near("summarize", SKILLS).is_empty());
    }
}
