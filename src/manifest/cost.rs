//! The bill (docs/escalation.md#cost): what a job's tokens cost at the run's prices, and what a
//! run's (or a merge's) records add up to.
//!
//! A model without a price has an unknown cost, never a cost of zero: what is priced is
//! counted, and the models that are not are named beside it. Amounts in different currencies
//! are never added together.

use super::{DoubtCount, JobRecord, Status, Tokens};
use crate::config::Price;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// An amount of money, in the currency of the prices it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub amount: f64,
    pub currency: String,
}

impl Cost {
    /// `¥0.0123`, `$1.50`, `0.20 EUR`.
    pub fn show(&self) -> String {
        match self.currency.as_str() {
            "CNY" => format!("¥{}", short_amount(self.amount)),
            "USD" => format!("${}", short_amount(self.amount)),
            other => format!("{} {other}", short_amount(self.amount)),
        }
    }
}

/// Four significant digits at most, never in exponent form.
fn short_amount(a: f64) -> String {
    if a == 0.0 {
        return "0".into();
    }
    let digits = (4 - a.abs().log10().ceil() as i32).clamp(2, 8) as usize;
    let s = format!("{a:.digits$}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Tokens per model at the run's prices: the priced models' costs, and the models that have
/// no price.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Priced {
    /// Each priced model's cost (zero tokens cost zero).
    pub by_model: BTreeMap<String, Cost>,
    /// The models that spent tokens and have no price: their cost is unknown.
    pub unpriced: Vec<String>,
}

impl Priced {
    pub(crate) fn of(
        by_model: &BTreeMap<String, Tokens>,
        prices: &BTreeMap<String, Price>,
    ) -> Priced {
        let mut priced = Priced::default();
        for (model, tokens) in by_model {
            match prices.get(model) {
                Some(p) => {
                    let cost = Cost {
                        amount: p.of(tokens.prompt, tokens.completion),
                        currency: p.currency.clone(),
                    };
                    priced.by_model.insert(model.clone(), cost);
                }
                None if tokens.total() > 0 => priced.unpriced.push(model.clone()),
                None => {}
            }
        }
        priced
    }

    /// The priced part added up, when it is in one currency (amounts in two are never added).
    pub(crate) fn total(&self) -> Option<Cost> {
        let mut costs = self.by_model.values();
        let mut total = costs.next()?.clone();
        for c in costs {
            if c.currency != total.currency {
                return None;
            }
            total.amount += c.amount;
        }
        Some(total)
    }

    /// Into a record: its `cost` (the priced part), `cost_by_model` when it asked more than
    /// one model, and `unpriced`.
    pub(crate) fn into_record(self, record: &mut JobRecord) {
        record.cost = self.total();
        if !record.tokens_by_model.is_empty() {
            record.cost_by_model = self.by_model;
        }
        record.unpriced = self.unpriced;
    }
}

impl JobRecord {
    /// What each priced model of the job cost: `cost_by_model`, else its `cost` on its
    /// `model` (a record written before `cost_by_model` existed puts it all there).
    pub fn costs_per_model(&self) -> BTreeMap<String, Cost> {
        if !self.cost_by_model.is_empty() {
            return self.cost_by_model.clone();
        }
        self.cost
            .iter()
            .map(|c| (self.model.clone(), c.clone()))
            .collect()
    }
}

/// A run's escalations, costs and tokens per model, added up one record at a time (cached
/// records cost nothing now). A merge adds up every merged run's records the same way.
#[derive(Debug, Default)]
pub(crate) struct Accounts {
    /// Jobs escalated, by skill and answering model.
    pub escalations: BTreeMap<String, BTreeMap<String, u64>>,
    /// What the priced models cost. A model priced in two currencies (runs merged across a
    /// change of price) has its second under `MODEL (CURRENCY)`.
    pub costs: BTreeMap<String, Cost>,
    /// Models that spent tokens and have no price.
    pub unpriced: BTreeSet<String>,
    /// Tokens per model.
    pub tokens_by_model: BTreeMap<String, Tokens>,
    /// Jobs doubted, by skill (cached ones too: their outputs stand doubted).
    pub doubts: BTreeMap<String, DoubtCount>,
}

impl Accounts {
    pub(crate) fn add(&mut self, r: &JobRecord) {
        // A cached job's outputs stand doubted as they were: counted with this run's.
        if r.shown() == super::ShownStatus::Doubted {
            let d = self.doubts.entry(r.skill.clone()).or_default();
            d.jobs += 1;
            let mut seen = BTreeSet::new();
            for doubt in &r.doubts {
                let at = doubt.field.clone().unwrap_or_else(|| doubt.check.clone());
                if seen.insert(at.clone()) {
                    *d.at.entry(at).or_default() += 1;
                }
            }
        }
        // Cached jobs spent nothing now.
        if r.status == Status::Cached {
            return;
        }
        if r.escalated {
            *self
                .escalations
                .entry(r.skill.clone())
                .or_default()
                .entry(r.model.clone())
                .or_default() += 1;
        }
        for (model, tokens) in r.tokens_per_model() {
            if tokens.total() > 0 {
                self.tokens_by_model.entry(model).or_default().add(tokens);
            }
        }
        for (model, cost) in r.costs_per_model() {
            self.add_cost(model, cost);
        }
        self.unpriced.extend(r.unpriced.iter().cloned());
    }

    fn add_cost(&mut self, model: String, cost: Cost) {
        let key = match self.costs.get(&model) {
            Some(c) if c.currency != cost.currency => format!("{model} ({})", cost.currency),
            _ => model,
        };
        match self.costs.get_mut(&key) {
            Some(c) => c.amount += cost.amount,
            None => {
                self.costs.insert(key, cost);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(input: f64, currency: &str) -> Price {
        Price {
            input,
            output: input,
            currency: currency.into(),
        }
    }

    fn tokens(n: u64) -> Tokens {
        Tokens {
            prompt: n,
            completion: 0,
        }
    }

    #[test]
    fn the_priced_part_is_counted_and_the_rest_named() {
        let prices: BTreeMap<String, Price> = [
            ("strong".to_string(), price(10_000.0, "CNY")),
            ("usd".to_string(), price(1_000.0, "USD")),
        ]
        .into();
        let asked: BTreeMap<String, Tokens> = [
            ("cheap".to_string(), tokens(500)),
            ("strong".to_string(), tokens(100)),
            ("idle".to_string(), tokens(0)),
        ]
        .into();
        let p = Priced::of(&asked, &prices);
        assert_eq!(
            p.unpriced,
            ["cheap"],
            "a model that spent nothing costs nothing"
        );
        assert_eq!(
            p.total(),
            Some(Cost {
                amount: 1.0,
                currency: "CNY".into()
            })
        );
        let two: BTreeMap<String, Tokens> = [
            ("strong".to_string(), tokens(100)),
            ("usd".to_string(), tokens(100)),
        ]
        .into();
        let p = Priced::of(&two, &prices);
        assert_eq!(p.total(), None, "yuan and dollars are never added");
        assert_eq!(p.by_model.len(), 2);
    }

    #[test]
    fn accounts_add_what_records_say_each_model_cost() {
        let mut r = JobRecord::new("a", "s", "a.txt", Status::Succeeded);
        r.model = "strong".into();
        r.escalated = true;
        r.tokens_by_model = [
            ("cheap".to_string(), tokens(10)),
            ("strong".to_string(), tokens(20)),
        ]
        .into();
        r.cost_by_model = [(
            "strong".to_string(),
            Cost {
                amount: 0.01,
                currency: "CNY".into(),
            },
        )]
        .into();
        r.unpriced = vec!["cheap".into()];
        let mut a = Accounts::default();
        a.add(&r);
        a.add(&r);
        assert_eq!(a.escalations["s"]["strong"], 2);
        assert!((a.costs["strong"].amount - 0.02).abs() < 1e-12);
        assert_eq!(a.tokens_by_model["cheap"].prompt, 20);
        assert_eq!(a.unpriced.iter().collect::<Vec<_>>(), ["cheap"]);
        // The same model in another currency (a price changed between merged runs).
        r.cost_by_model.get_mut("strong").unwrap().currency = "USD".into();
        a.add(&r);
        assert!((a.costs["strong"].amount - 0.02).abs() < 1e-12);
        assert!((a.costs["strong (USD)"].amount - 0.01).abs() < 1e-12);
    }
}
