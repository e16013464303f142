//! Agreement between two answers to one job (docs/escalation.md#audit): an extraction field by
//! field, by value (numbers, dates and currencies through [`super::numbers`], text as grounding
//! normalises it), a prose file by chrF. It catches a cheap answer that differs from the strong
//! one; it lets through two answers that say the same value in different spellings (`1,356.00`
//! and `1356`, `14 March 2026` and `2026-03-14`), and says nothing of which one is right.

use super::numbers;
use super::work::Work;
use serde_json::Value;
use std::collections::HashMap;

/// A chrF (character 6-gram F-score, β = 2, 0–100) at or above this between two prose answers
/// counts as agreement.
pub(crate) const PROSE_AGREE_CHRF: f64 = 50.0;

/// Two extracted objects compared field by field (the schema's top-level fields; an array as
/// a whole), values normalised as grounding normalises them: numbers by value, text by case,
/// width and space.
pub(crate) fn compare_objects(
    cheap: Option<&Value>,
    strong: &Value,
    fields: &[crate::skills::schema::Field],
) -> Vec<(String, bool)> {
    fields
        .iter()
        .map(|f| {
            let a = cheap.and_then(|c| crate::skills::schema::at(c, &f.path));
            let b = crate::skills::schema::at(strong, &f.path);
            (f.path.clone(), cheap.is_some() && same(a, b))
        })
        .collect()
}

fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None | Some(Value::Null), None | Some(Value::Null)) => true,
        (Some(a), Some(b)) => norm(a) == norm(b),
        _ => false,
    }
}

/// A value as the audit compares it: a number (or a string that reads as one, by the one
/// reader of numbers) by value, a date by its day, text as grounding normalises it.
fn norm(v: &Value) -> String {
    match v {
        Value::Number(n) => n
            .as_f64()
            .map_or_else(|| n.to_string(), |f| format!("{f:.4}")),
        Value::String(s) => {
            if let Some(f) = numbers::number(s) {
                format!("{f:.4}")
            } else if let Some((y, m, d)) = numbers::date(s) {
                format!("{y:04}-{m:02}-{d:02}")
            } else {
                super::grounding::normalize(s)
                    .trim_end_matches(['.', '。'])
                    .to_string()
            }
        }
        Value::Array(items) => items.iter().map(norm).collect::<Vec<_>>().join("|"),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", norm(v)))
            .collect::<Vec<_>>()
            .join(";"),
        other => other.to_string(),
    }
}

/// chrF (character n-grams 1–6, β = 2, white space removed; 0–100) of `hypothesis` against
/// `reference`, as sacrebleu computes it; `None` when `stop` said so first.
///
/// Linear in the two texts: each order's n-grams are counted in a hash map, once per text.
/// `stop` is asked every [`super::work::POLL`] n-grams counted. Its cost is the texts' length
/// six times over, nothing a text can make larger, so only the stop ends it.
pub(crate) fn chrf(hypothesis: &str, reference: &str, stop: &dyn Fn() -> bool) -> Option<f64> {
    let work = Work::bounded(u64::MAX, stop);
    let h: Vec<char> = hypothesis.chars().filter(|c| !c.is_whitespace()).collect();
    let r: Vec<char> = reference.chars().filter(|c| !c.is_whitespace()).collect();
    let (mut precision, mut recall, mut orders) = (0.0, 0.0, 0.0);
    for n in 1..=6 {
        let (hg, rg) = (grams(&h, n, &work)?, grams(&r, n, &work)?);
        let (ht, rt): (u64, u64) = (hg.values().sum(), rg.values().sum());
        if ht == 0 || rt == 0 {
            continue;
        }
        let matched: u64 = hg
            .iter()
            .map(|(g, c)| (*c).min(rg.get(g).copied().unwrap_or(0)))
            .sum();
        precision += matched as f64 / ht as f64;
        recall += matched as f64 / rt as f64;
        orders += 1.0;
    }
    if orders == 0.0 {
        return Some(0.0);
    }
    let (p, r) = (precision / orders, recall / orders);
    let beta2 = 4.0;
    if p + r == 0.0 {
        return Some(0.0);
    }
    Some(100.0 * (1.0 + beta2) * p * r / (beta2 * p + r))
}

/// The character n-grams of `s` with their counts; `None` when the run stopped.
fn grams<'s>(s: &'s [char], n: usize, work: &Work) -> Option<HashMap<&'s [char], u64>> {
    let mut m: HashMap<&[char], u64> = HashMap::new();
    for w in s.windows(n) {
        work.charge(1);
        if work.over() {
            return None;
        }
        *m.entry(w).or_default() += 1;
    }
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chrf(hypothesis: &str, reference: &str) -> f64 {
        super::chrf(hypothesis, reference, &|| false).unwrap_or_default()
    }

    #[test]
    fn objects_agree_by_value_not_by_spelling() {
        let fields = crate::skills::schema::fields(&serde_json::json!({
            "type": "object",
            "properties": {"seller": {"type": "string"}, "total": {"type": "number"}}
        }));
        let strong = serde_json::json!({"seller": "ACME Ltd.", "total": 1356.0});
        let cheap = serde_json::json!({"seller": "acme  ltd", "total": "1,356.00"});
        assert_eq!(
            compare_objects(Some(&cheap), &strong, &fields),
            [("seller".into(), true), ("total".into(), true)]
        );
        let dates = crate::skills::schema::fields(&serde_json::json!({
            "type": "object", "properties": {"date": {"type": "string"}}
        }));
        for spelling in [
            "2026年3月14日",
            "14 March 2026",
            "March 14, 2026",
            "2026-03-14",
        ] {
            let cheap = serde_json::json!({"date": spelling});
            let strong = serde_json::json!({"date": "2026-03-14"});
            assert_eq!(
                compare_objects(Some(&cheap), &strong, &dates),
                [("date".into(), true)]
            );
        }
        let wrong = serde_json::json!({"seller": "Initech", "total": 1200});
        assert_eq!(
            compare_objects(Some(&wrong), &strong, &fields),
            [("seller".into(), false), ("total".into(), false)]
        );
        assert!(
            compare_objects(None, &strong, &fields)
                .iter()
                .all(|(_, a)| !a)
        );
    }

    #[test]
    fn a_stop_ends_the_comparison() {
        let long = "The on-call engineer freed 20 GB at 09:40. ".repeat(50_000);
        assert_eq!(super::chrf(&long, &long, &|| true), None);
        let asked = std::cell::Cell::new(0u32);
        let late = || {
            asked.set(asked.get() + 1);
            asked.get() > 10
        };
        assert_eq!(super::chrf(&long, &long, &late), None);
        assert_eq!(asked.get(), 11, "asked between n-grams, not once per text");
    }

    #[test]
    fn chrf_is_100_for_the_same_text_and_low_for_another() {
        assert!((chrf("the cat sat", "the cat sat") - 100.0).abs() < 1e-9);
        let a = "The on-call engineer freed 20 GB at 09:40 and the service came back.";
        let b = "At 09:40 the engineer on call freed 20 GB, and the service came back.";
        assert!(chrf(a, b) > 50.0, "{}", chrf(a, b));
        assert!(chrf("completely different", "数据库磁盘满了") < 5.0);
    }

    /// The schema's coercion and the audit read a number one way: a cheap answer's quoted
    /// figure agrees with the number the schema makes of it, and with nothing else.
    #[test]
    fn the_audit_and_the_schema_read_every_spelling_of_a_number_alike() {
        let schema = crate::agent::structured::Schema::new(serde_json::json!({
            "type": "object", "properties": {"total": {"type": "number"}}
        }))
        .unwrap();
        for (written, value) in [
            ("1,50", 1.5),
            ("1.500,00", 1500.0),
            ("1,500.00", 1500.0),
            ("¥1,130.00", 1130.0),
        ] {
            let quoted = serde_json::json!({ "total": written });
            let coerced = schema.parse(&quoted.to_string()).unwrap();
            assert_eq!(coerced["total"], serde_json::json!(value), "{written}");
            assert_eq!(
                compare_objects(Some(&quoted), &coerced, &schema.fields),
                [("total".to_string(), true)],
                "{written}"
            );
            let other = serde_json::json!({ "total": value * 100.0 });
            assert_eq!(
                compare_objects(Some(&quoted), &other, &schema.fields),
                [("total".to_string(), false)],
                "{written} is not {}",
                value * 100.0
            );
        }
    }
}
