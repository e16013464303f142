//! chrF, the character n-gram F-score of a translation against a reference (Popović 2015), as
//! sacrebleu computes it by default: character n-grams of orders 1 to 6 with all whitespace
//! removed first, precision and recall averaged over the orders both texts have n-grams of,
//! then their F-score with recall weighted by beta = 2, on a 0–100 scale. Characters are
//! Unicode scalar values, as Python's string slices are, so Chinese is scored character by
//! character.

use std::collections::HashMap;

/// The highest n-gram order.
pub const ORDER: usize = 6;
/// Recall weighs beta times as much as precision.
pub const BETA: f64 = 2.0;

/// Per order: n-grams in the hypothesis, in the reference, and in both (clipped counts).
fn statistics(hypothesis: &str, reference: &str) -> [[usize; 3]; ORDER] {
    let strip = |s: &str| -> Vec<char> { s.chars().filter(|c| !c.is_whitespace()).collect() };
    let (hyp, reference) = (strip(hypothesis), strip(reference));
    let mut stats = [[0usize; 3]; ORDER];
    for (i, stat) in stats.iter_mut().enumerate() {
        let n = i + 1;
        let ngrams = |chars: &[char]| -> HashMap<Vec<char>, usize> {
            let mut counts = HashMap::new();
            for w in chars.windows(n) {
                *counts.entry(w.to_vec()).or_insert(0) += 1;
            }
            counts
        };
        let (h, r) = (ngrams(&hyp), ngrams(&reference));
        let common = h
            .iter()
            .map(|(g, &c)| c.min(r.get(g).copied().unwrap_or(0)))
            .sum();
        *stat = [h.values().sum(), r.values().sum(), common];
    }
    stats
}

/// chrF of `hypothesis` against `reference`, 0 to 100.
pub fn chrf(hypothesis: &str, reference: &str) -> f64 {
    let (mut precision, mut recall, mut orders) = (0.0, 0.0, 0usize);
    for [hyp, reference, common] in statistics(hypothesis, reference) {
        if hyp > 0 && reference > 0 {
            precision += common as f64 / hyp as f64;
            recall += common as f64 / reference as f64;
            orders += 1;
        }
    }
    if orders == 0 {
        return 0.0;
    }
    let (precision, recall) = (precision / orders as f64, recall / orders as f64);
    if precision + recall == 0.0 {
        return 0.0;
    }
    let b2 = BETA * BETA;
    100.0 * (1.0 + b2) * precision * recall / (b2 * precision + recall)
}

/// The unit checks, run by `cargo test --bench ladder` (a bench without libtest's harness runs
/// its `main`, which calls this when not given `--bench`).
pub fn check() {
    // sacrebleu's sentence chrF (chrF2, n=6, whitespace removed) of this pair, as quoted in the
    // Hugging Face chrF metric card: 61.576379378113785.
    let score = chrf(
        "The relationship between Obama and Netanyahu is not exactly friendly.",
        "The ties between Obama and Netanyahu are not particularly friendly.",
    );
    assert!((score - 61.576_379_378_113_785).abs() < 1e-9, "{score}");

    assert!((chrf("安装软件包", "安装软件包") - 100.0).abs() < 1e-12);
    assert_eq!(chrf("abc", "xyz"), 0.0);
    assert_eq!(chrf("", "安装"), 0.0);
    // Whitespace is removed before n-grams are taken.
    assert!((chrf("安 装\n软件包", "安装软件包") - 100.0).abs() < 1e-12);

    // Recall weighs more than precision: half the reference, all of it right, scores below
    // the reference twice over.
    let short = chrf("安装", "安装软件");
    let long = chrf("安装软件安装软件", "安装软件");
    assert!(short < long, "{short} {long}");
}
