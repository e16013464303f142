//! What a translation shares with its source, found by aligning the two: runs of Latin-script
//! words the answer writes as the source does — a command in plain quotes (`"for x in foo1
//! foo2 … ; do command ; done"`), a login banner kept in English, `setuid root`, a title — in any
//! quoting, fenced or not. Such a run is set aside before the answer's language is judged: it
//! is what the translator kept, not what they wrote.
//!
//! What it lets through is bounded by the source's prose: a run is set aside only while the
//! words of prose in all shared runs stay under [`HALF_COPY`] of the source's; past that the
//! answer is a half copy, and its shared runs are judged like the rest of it. Below that, shared
//! prose of [`COPIED_DOUBT`] of the source's or more is a doubt (`untranslated`), so a kept
//! passage is never silent.
//!
//! Linear: the source's word pairs and triples are put in sets once; each word of the answer is
//! looked up in them a bounded number of times.

use super::*;
use std::collections::HashSet;

/// Shared prose of this share of the source's prose words or more makes the answer a half
/// copy: its shared runs are not set aside.
pub(super) const HALF_COPY: f64 = 0.5;

/// Shared prose of this share of the source's prose words, and of [`COPIED_MIN_WORDS`] words
/// or more, is a doubt.
pub(super) const COPIED_DOUBT: f64 = 0.1;
pub(super) const COPIED_MIN_WORDS: usize = 5;

/// A word as the alignment compares it: its core, lowercased; punctuation alone is no word.
fn norm(token: &str) -> Option<String> {
    let c = core(token);
    c.chars()
        .any(char::is_alphanumeric)
        .then(|| c.to_lowercase())
}

/// A word of prose: one that counts as English left (a function word, a lowercase word of
/// three letters or more), not one of the source's code.
fn prose_word(core: &str, code: &HashSet<String>) -> bool {
    super::untranslated::countable(core) && !code.contains(core)
}

/// The source's words in order, as pairs and triples, and how many words of prose it has.
pub(super) struct SourceRuns {
    pairs: HashSet<(String, String)>,
    triples: HashSet<(String, String, String)>,
    /// Words of prose in the source.
    pub(super) prose: usize,
}

impl SourceRuns {
    pub(super) fn new(source: &str, code: &HashSet<String>, work: &Work) -> Self {
        let mut pairs = HashSet::new();
        let mut triples = HashSet::new();
        let mut prose = 0;
        let (mut a, mut b): (Option<String>, Option<String>) = (None, None);
        for token in source.split(breaks_token) {
            work.charge(token.len() + 1);
            if work.over() {
                break;
            }
            let Some(w) = norm(token) else { continue };
            if prose_word(core(token), code) {
                prose += 1;
            }
            if let Some(b) = &b {
                pairs.insert((b.clone(), w.clone()));
                if let Some(a) = &a {
                    triples.insert((a.clone(), b.clone(), w.clone()));
                }
            }
            a = b.take();
            b = Some(w);
        }
        Self {
            pairs,
            triples,
            prose,
        }
    }
}

/// The Latin-script words of one answer line the source shares runs of: for each word (by its
/// index in `tokens`), whether it is in a shared run; and the words of prose among them (in
/// runs where three or more of the shared words, and most of them, are prose).
///
/// Words follow one another in a run when only spaces and punctuation stand between them (a
/// Chinese character breaks it). A run shares with the source where three words in a row are
/// three words in a row of the source; a run of only two words, where they are two words in a
/// row of the source and both are words, neither a function word (`setuid root`, `foo
/// login:`; not `At 09:12`, which is prose with a time).
pub(super) fn shared_words(
    chars: &[char],
    tokens: &[Token],
    runs: &SourceRuns,
    code: &HashSet<String>,
) -> (Vec<bool>, usize) {
    let mut shared = vec![false; tokens.len()];
    let mut prose = 0;
    let words: Vec<Option<String>> = tokens.iter().map(|t| norm(&t.core)).collect();
    // Runs of tokens with only spaces and ASCII punctuation between them.
    let mut start = 0;
    for k in 1..=tokens.len() {
        let joined = k < tokens.len()
            && (tokens[k - 1].end..tokens[k].start)
                .all(|i| chars[i].is_whitespace() || chars[i].is_ascii_punctuation());
        if joined {
            continue;
        }
        // The run's words, by token index, punctuation alone left out.
        let idx: Vec<usize> = (start..k).filter(|&i| words[i].is_some()).collect();
        start = k;
        let w = |i: usize| words[idx[i]].clone().unwrap_or_default();
        if idx.len() == 2 {
            let (x, y) = (w(0), w(1));
            let word = |v: &str| v.chars().any(char::is_alphabetic) && !is_function_word(v);
            if word(&x) && word(&y) && runs.pairs.contains(&(x, y)) {
                shared[idx[0]] = true;
                shared[idx[1]] = true;
            }
            continue;
        }
        for j in 2..idx.len() {
            if runs.triples.contains(&(w(j - 2), w(j - 1), w(j))) {
                for &i in &idx[j - 2..=j] {
                    shared[i] = true;
                }
            }
        }
        // Its shared words are prose when three or more of them are, and most are: a
        // sentence, not a command line with a word or two in it.
        let kept: Vec<usize> = idx.iter().copied().filter(|&i| shared[i]).collect();
        let p = kept
            .iter()
            .filter(|&&i| prose_word(&tokens[i].core, code))
            .count();
        if p >= 3 && 2 * p > kept.len() {
            prose += p;
        }
    }
    (shared, prose)
}
