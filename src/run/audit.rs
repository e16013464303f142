//! Audit by sample (docs/escalation.md#audit): before a folder goes through a cheap model, the
//! user learns on their own documents which fields (or skills) it gets right. A seeded random
//! sample of the run's jobs is answered twice — by the job's own model alone, then by the top
//! rung of its ladder — and the answers compared; the audited job keeps the strong answer.
//! Agreement is given per skill and field with a 95% Wilson interval; with `--target`, a skill
//! whose field falls below it is sent to the top rung for the rest of the run.
//!
//! The sample is drawn in plan order by selection sampling (Knuth's algorithm S): each job is
//! taken with probability (wanted − taken) / (jobs − seen), so exactly the wanted number are
//! taken from a plan of known length, in one pass, whatever the seed. With `--target` the
//! sample is drawn from the plan's first jobs (twice the sample) and the scheduler waits for it
//! before going further, so routing applies to the rest.

use crate::manifest::{AuditReport, Cost, FieldAgreement, Tokens};

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

pub(crate) use crate::flags::SampleSize;

/// What the audit asks of one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Run as usual.
    Plain,
    /// In the sample: answered by its own model alone, then by the top rung.
    Sampled,
    /// Its skill fell below the target: answered by the top rung only.
    Routed,
}

/// Agreement counts of one field.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    agree: u64,
    n: u64,
}

/// The run's audit.
pub(crate) struct Audit {
    want: u64,
    /// The plan's jobs the sample is drawn from (its first ones with `--target`).
    window: u64,
    seed: u64,
    target: Option<f64>,
    state: Mutex<State>,
    settled: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    seen: u64,
    taken: u64,
    sampled: HashSet<String>,
    ended: u64,
    rng: Option<fastrand::Rng>,
    /// skill → field (or `*` for a prose skill's files) → tally.
    tallies: BTreeMap<String, BTreeMap<String, Tally>>,
    /// skill → the fields below the target.
    routed: BTreeMap<String, Vec<String>>,
    /// The audit's own tokens: the strong model's answers to sampled jobs.
    tokens: BTreeMap<String, Tokens>,
    /// Jobs routed to the top rung, and their tokens per model.
    routed_jobs: u64,
    routed_tokens: BTreeMap<String, Tokens>,
}

/// `--audit` without a ladder: nothing to audit against (a usage error).
pub(crate) fn no_ladder_error() -> super::RunError {
    super::RunError::Client(msg!(
        "--audit compares the run's model with the top rung of its ladder: give one with --escalate MODEL[@BASE_URL] (or `escalate:` in zhi.yaml)"
    ))
}

impl Audit {
    /// The run's audit, when `--audit` asks one; a run without a ladder has nothing to audit
    /// against (a usage error).
    pub(super) fn of(
        opts: &super::RunOptions,
        no_ladder: bool,
    ) -> Result<Option<Audit>, super::RunError> {
        let Some(a) = opts.flags.audit else {
            return Ok(None);
        };
        if no_ladder {
            return Err(no_ladder_error());
        }
        let planned = opts.plan.len() as u64;
        Ok(Some(Audit::new(a.size, a.seed, a.target, planned)))
    }

    /// The audit of a run of `planned` jobs.
    pub(crate) fn new(size: SampleSize, seed: u64, target: Option<f64>, planned: u64) -> Audit {
        let want = match size {
            SampleSize::Jobs(n) => n.min(planned),
            SampleSize::Percent(p) => ((planned as f64) * p / 100.0).ceil() as u64,
        }
        .min(planned);
        let window = match target {
            Some(_) => (want * 2).min(planned),
            None => planned,
        };
        let (settled, _) = tokio::sync::watch::channel(want == 0);
        Audit {
            want,
            window,
            seed,
            target,
            state: Mutex::new(State {
                rng: Some(fastrand::Rng::with_seed(seed)),
                ..State::default()
            }),
            settled,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Called by the scheduler for every planned job in plan order: whether it is in the
    /// sample. A job that will not run (cached, failed at planning) is seen but never taken.
    pub(crate) fn choose(&self, job_id: &str, runs: bool) -> bool {
        let mut s = self.state();
        if s.seen >= self.window {
            return false;
        }
        let left = self.window - s.seen;
        s.seen += 1;
        let need = self.want.saturating_sub(s.taken);
        let draw = s.rng.as_mut().map_or(0.0, fastrand::Rng::f64);
        let take = runs && need > 0 && draw * (left as f64) < need as f64;
        if take {
            s.taken += 1;
            s.sampled.insert(job_id.to_string());
        }
        let settle = s.seen >= self.window && s.ended >= s.taken;
        drop(s);
        if settle {
            self.settle();
        }
        take
    }

    /// Whether jobs past the sample's window must wait for it (with `--target`).
    pub(crate) fn gates(&self, index: u64) -> bool {
        self.target.is_some() && index >= self.window && !*self.settled.borrow()
    }

    /// Resolves once every sampled job has ended and the routes are decided.
    pub(crate) async fn settled(&self) {
        let mut rx = self.settled.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// What the audit asks of `job_id` of `skill`.
    pub(crate) fn role(&self, job_id: &str, skill: &str) -> Role {
        let s = self.state();
        if s.sampled.contains(job_id) {
            Role::Sampled
        } else if s.routed.contains_key(skill) {
            Role::Routed
        } else {
            Role::Plain
        }
    }

    /// A sampled job's comparison, once both answers are in (`None` for an answer that
    /// failed: it agrees with nothing); `tokens` are the strong model's.
    pub(crate) fn compared(
        &self,
        skill: &str,
        agreement: Vec<(String, bool)>,
        model: &str,
        tokens: Tokens,
    ) {
        let mut s = self.state();
        let per_skill = s.tallies.entry(skill.to_string()).or_default();
        for (field, agrees) in agreement {
            let t = per_skill.entry(field).or_default();
            t.n += 1;
            t.agree += u64::from(agrees);
        }
        s.tokens.entry(model.to_string()).or_default().add(tokens);
    }

    /// A routed job's tokens per model, once it ended.
    pub(crate) fn routed_spent(&self, by_model: &BTreeMap<String, Tokens>) {
        let mut s = self.state();
        s.routed_jobs += 1;
        for (m, t) in by_model {
            s.routed_tokens.entry(m.clone()).or_default().add(*t);
        }
    }

    /// A sampled job ended (whatever became of it).
    pub(crate) fn ended(&self) {
        let mut s = self.state();
        s.ended += 1;
        let settle = s.seen >= self.window && s.ended >= s.taken;
        drop(s);
        if settle {
            self.settle();
        }
    }

    /// The sample is in: the fields below the target route their skill to the top rung.
    fn settle(&self) {
        if *self.settled.borrow() {
            return;
        }
        if let Some(target) = self.target {
            let mut s = self.state();
            let mut routed = BTreeMap::new();
            for (skill, fields) in &s.tallies {
                let below: Vec<String> = fields
                    .iter()
                    .filter(|(_, t)| t.n > 0 && wilson(t.agree, t.n).1 < target)
                    .map(|(f, _)| f.clone())
                    .collect();
                if !below.is_empty() {
                    routed.insert(skill.clone(), below);
                }
            }
            s.routed = routed;
        }
        self.settled.send_replace(true);
    }

    /// The audit as the manifest holds it.
    pub(crate) fn report(
        &self,
        model: &str,
        cost_of: impl Fn(&BTreeMap<String, Tokens>) -> Option<Cost>,
    ) -> AuditReport {
        let s = self.state();
        let skills = s
            .tallies
            .iter()
            .map(|(skill, fields)| {
                let fields = fields
                    .iter()
                    .map(|(f, t)| {
                        let (low, high) = wilson(t.agree, t.n);
                        let a = FieldAgreement {
                            agree: t.agree,
                            n: t.n,
                            rate: if t.n == 0 {
                                0.0
                            } else {
                                t.agree as f64 / t.n as f64
                            },
                            low,
                            high,
                        };
                        (f.clone(), a)
                    })
                    .collect();
                (skill.clone(), fields)
            })
            .collect();
        let cost = cost_of(&s.tokens);
        let routed_cost = cost_of(&s.routed_tokens);
        AuditReport {
            model: model.to_string(),
            seed: self.seed,
            sampled: s.taken,
            skills,
            target: self.target,
            routed: s.routed.clone(),
            routed_jobs: s.routed_jobs,
            routed_cost,
            tokens: s.tokens.values().fold(Tokens::default(), |mut a, t| {
                a.add(*t);
                a
            }),
            cost,
        }
    }
}

/// The 95% Wilson score interval of `agree` out of `n` (0–1 each).
pub(crate) fn wilson(agree: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let (n, p) = (n as f64, agree as f64 / n as f64);
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n) + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_intervals_are_the_textbook_ones() {
        let (lo, hi) = wilson(2, 8);
        assert!(
            (lo - 0.0715).abs() < 0.001 && (hi - 0.5907).abs() < 0.001,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(8, 8);
        assert!((lo - 0.6756).abs() < 0.001 && hi == 1.0, "{lo} {hi}");
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }

    #[test]
    fn selection_sampling_takes_exactly_the_wanted_jobs_and_the_seed_decides_which() {
        let picks = |seed| {
            let a = Audit::new(SampleSize::Jobs(3), seed, None, 10);
            (0..10)
                .filter(|i| a.choose(&format!("j{i}"), true))
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(1).len(), 3);
        assert_eq!(picks(1), picks(1));
        assert_ne!(picks(1), picks(2));
        let all = Audit::new(SampleSize::Percent(100.0), 7, None, 4);
        assert!((0..4).all(|i| all.choose(&format!("j{i}"), true)));
    }

    #[test]
    fn a_field_below_the_target_routes_its_skill_once_the_sample_is_in() {
        let a = Audit::new(SampleSize::Jobs(2), 1, Some(0.95), 8);
        assert_eq!(a.window, 4);
        let taken: Vec<String> = (0..4)
            .map(|i| format!("j{i}"))
            .filter(|j| a.choose(j, true))
            .collect();
        assert_eq!(taken.len(), 2);
        assert!(a.gates(4));
        for _ in &taken {
            a.compared(
                "extract",
                vec![("seller".into(), false), ("date".into(), true)],
                "big",
                Tokens {
                    prompt: 100,
                    completion: 10,
                },
            );
            a.ended();
        }
        assert!(!a.gates(4));
        assert_eq!(a.role("j7", "extract"), Role::Routed);
        assert_eq!(a.role(&taken[0], "extract"), Role::Sampled);
        assert_eq!(a.role("j7", "summarize"), Role::Plain);
        let prices = [(
            "big".to_string(),
            crate::config::Price {
                input: 5.0,
                output: 5.0,
                currency: "CNY".into(),
            },
        )]
        .into();
        let r = a.report("big", |t| crate::manifest::Priced::of(t, &prices).total());
        assert_eq!(r.routed["extract"], ["seller"]);
        assert_eq!(r.skills["extract"]["date"].agree, 2);
        assert!((r.cost.unwrap().amount - 0.0011).abs() < 1e-9);
    }
}
