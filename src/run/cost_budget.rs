//! Whether `--budget-cost` can be kept (docs/escalation.md#cost), decided before anything is
//! sent: every model the run may ask — each skill's model, the rungs of its ladder (the audit
//! asks the top one) — must have a price, all in one currency. A model without a price spends
//! what no ledger can count, and yuan and dollars cannot be added into one amount: such a
//! budget would be overrun in silence, so it is refused instead (exit 2).

use super::error::RunError;
use crate::config::{Config, EscalateTo, Origin};
use crate::plan::Job;
use crate::skills::SkillSet;
use std::collections::{BTreeMap, BTreeSet};

/// Refuses a cost budget that could not be kept; without one, anything goes.
pub(super) fn check(
    budget: Option<f64>,
    config: &Config,
    jobs: &[Job],
    skills: &SkillSet,
) -> Result<(), RunError> {
    if budget.is_none() {
        return Ok(());
    }
    let prices = &config.models.prices;
    let models = models_in_use(config, jobs, skills);
    let unpriced: Vec<String> = models
        .iter()
        .filter(|m| !prices.contains_key(*m))
        .cloned()
        .collect();
    if !unpriced.is_empty() {
        return Err(RunError::CostBudgetUnpriced { models: unpriced });
    }
    let mut currencies: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in &models {
        if let Some(p) = prices.get(m) {
            currencies
                .entry(p.currency.clone())
                .or_default()
                .push(m.clone());
        }
    }
    if currencies.len() > 1 {
        return Err(RunError::CostBudgetCurrencies { currencies });
    }
    Ok(())
}

/// The models the jobs (one of each kind) may ask: their skills' models and ladders. A skill's
/// own ladder replaces the settings' unless `--escalate` was given, as the run decides it.
fn models_in_use(config: &Config, jobs: &[Job], skills: &SkillSet) -> BTreeSet<String> {
    let from_flag = matches!(config.origins.get("escalate"), Some(Origin::Flag(_)));
    let mut models = BTreeSet::new();
    for job in jobs {
        let skill = skills.get(&job.skill);
        models.insert(
            config
                .models
                .model_for(skill.and_then(|s| s.model.as_deref())),
        );
        let own = skill
            .filter(|s| !from_flag && !s.escalate.is_empty())
            .map(|s| {
                s.escalate
                    .iter()
                    .filter_map(|e| EscalateTo::parse(e).ok())
                    .map(|e| e.model)
                    .collect::<Vec<_>>()
            });
        match own {
            Some(ladder) => models.extend(ladder),
            None => models.extend(config.models.escalate.iter().map(|e| e.model.clone())),
        }
    }
    models
}
