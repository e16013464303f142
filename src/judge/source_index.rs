//! Whether short strings occur in one text, asked many times over: a figure tied to a letter
//! (`Q3`) in its source, a phrase an answer kept (`apt-get install pkg12`) in the document.
//! Asking `str::contains` per string is a pass over the source each, and an answer of 200,000
//! such strings costs the source 200,000 times; here each run of four chars (and each pair,
//! for shorter strings) of the text is indexed once, and a string is looked for only at the
//! places of its rarest run (as grounding looks values up). The answer is `str::contains`'s;
//! the work is charged to the check's [`Work`], and a look-up it cuts short says so.

use super::work::Work;
use std::collections::{HashMap, HashSet};

/// The chars a string is first looked up by, when it has that many.
const GRAM: usize = 4;

/// A text indexed by its chars, its pairs and its runs of [`GRAM`] chars.
pub(crate) struct SourceIndex {
    chars: Vec<char>,
    singles: HashSet<char>,
    /// Where each pair of adjacent chars starts, ascending.
    pairs: HashMap<[char; 2], Vec<u32>>,
    /// Where each run of [`GRAM`] chars starts, ascending.
    grams: HashMap<[char; GRAM], Vec<u32>>,
}

impl SourceIndex {
    /// The index of `text`, its building charged to `work`.
    pub(crate) fn new(text: &str, work: &Work) -> SourceIndex {
        let chars: Vec<char> = text.chars().collect();
        work.charge(2 * chars.len());
        // A text handed to a model is far below 4 G chars, so a place fits in a u32.
        let mut pairs: HashMap<[char; 2], Vec<u32>> = HashMap::new();
        for (k, w) in chars.windows(2).enumerate() {
            pairs.entry([w[0], w[1]]).or_default().push(k as u32);
        }
        let mut grams: HashMap<[char; GRAM], Vec<u32>> = HashMap::new();
        for (k, w) in chars.windows(GRAM).enumerate() {
            grams
                .entry([w[0], w[1], w[2], w[3]])
                .or_default()
                .push(k as u32);
        }
        SourceIndex {
            singles: chars.iter().copied().collect(),
            chars,
            pairs,
            grams,
        }
    }

    /// Whether `needle` occurs in the text; `None` when the work ran out (or the run stopped)
    /// before that was told.
    pub(crate) fn contains(&self, needle: &str, work: &Work) -> Option<bool> {
        let needle: Vec<char> = needle.chars().collect();
        let n = needle.len();
        work.charge(n);
        let places = match n {
            0 => return Some(true),
            1 => return Some(self.singles.contains(&needle[0])),
            _ if n > self.chars.len() => return Some(false),
            2..GRAM => self.rarest(&needle, |w: &[char]| self.pairs.get(&[w[0], w[1]]), 2),
            _ => self.rarest(
                &needle,
                |w: &[char]| self.grams.get(&[w[0], w[1], w[2], w[3]]),
                GRAM,
            ),
        };
        let Some((offset, places)) = places else {
            return Some(false);
        };
        for &p in places {
            if work.over() {
                return None;
            }
            work.charge(n);
            let Some(k) = (p as usize).checked_sub(offset) else {
                continue;
            };
            if self.chars.get(k..k + n) == Some(&needle[..]) {
                return Some(true);
            }
        }
        Some(false)
    }

    /// The run of `len` chars of `needle` with the fewest places in the text (its offset in
    /// the needle, and the places); `None` when one has none, and the needle is not there.
    fn rarest<'s>(
        &'s self,
        needle: &[char],
        places: impl Fn(&[char]) -> Option<&'s Vec<u32>>,
        len: usize,
    ) -> Option<(usize, &'s [u32])> {
        let mut rarest: Option<(usize, &[u32])> = None;
        for (i, w) in needle.windows(len).enumerate() {
            let at = places(w)?;
            if rarest.is_none_or(|(_, r)| at.len() < r.len()) {
                rarest = Some((i, at));
            }
        }
        rarest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_answers_as_contains_does() {
        let text = "Q3 revenue, q30 and v2.1 — 第3季度 abcabcab ｑ";
        let work = Work::new(&|| false);
        let index = SourceIndex::new(text, &work);
        for needle in [
            "",
            "q",
            "Q3",
            "q3",
            "q30",
            "v2.1",
            "v2.10",
            "2.1",
            "第3",
            "3季度",
            "abcab",
            "bcabc",
            "cabca",
            "abcabcabc",
            "ｑ",
            "x",
            " —",
            "b",
            "abc",
            "bca",
            "q30 ",
            "ev",
            "nue,",
            "Q3 revenue, q30 and v2.1 — 第3季度 abcabcab ｑ",
            "ab ｑ",
            "ab ｑ!",
        ] {
            assert_eq!(
                index.contains(needle, &work),
                Some(text.contains(needle)),
                "{needle:?}"
            );
        }
    }

    #[test]
    fn a_look_up_cut_short_says_so() {
        let text = "aab".repeat(700);
        let work = Work::bounded(4400, &|| false);
        let index = SourceIndex::new(&text, &work);
        // Every place of "aa" is a candidate for "aaa", and none holds it.
        assert_eq!(index.contains("aaa", &work), None);
        assert_eq!(index.contains("aaa", &Work::new(&|| false)), Some(false));
        let stopped = Work::new(&|| true);
        assert_eq!(index.contains("aba", &stopped), None);
    }
}
