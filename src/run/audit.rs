//! Audit by sample (docs/escalation.md#audit): before a folder goes through a cheap model, the
//! user learns on their own documents which fields (or skills) it gets right. A seeded random
//! sample of the run's jobs is answered twice — by the job's own model alone, then by the top
//! rung of its ladder — and the answers compared; the audited job keeps the strong answer.
//! Agreement is given per skill and field with an exact (Clopper–Pearson) interval at the
//! run's confidence. With `--target`, a field is kept from the cheap model only where the
//! sample shows, at that confidence and for all the fields tested together (Bonferroni), that
//! the cheap model's answers agree with the strong model's at least at the target; a skill with
//! a field not shown so is sent to the top rung for the rest of the run.
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
    /// `--confidence`: 1 − δ, for the intervals and the guarantee.
    confidence: f64,
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
        Ok(Some(
            Audit::new(a.size, a.seed, a.target, planned).with_confidence(a.confidence),
        ))
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
            confidence: DEFAULT_CONFIDENCE,
            state: Mutex::new(State {
                rng: Some(fastrand::Rng::with_seed(seed)),
                ..State::default()
            }),
            settled,
        }
    }

    /// The audit at confidence `c` (0–1, exclusive) rather than the default 0.95.
    pub(crate) fn with_confidence(mut self, c: f64) -> Audit {
        self.confidence = c;
        self
    }

    /// The error rate each field is held to: δ shared by the `tested` fields (Bonferroni).
    fn per_field(&self, tested: usize) -> f64 {
        (1.0 - self.confidence) / tested.max(1) as f64
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

    /// The fields of `skill` the sample did not show at the target (empty when not routed).
    pub(crate) fn routed_fields(&self, skill: &str) -> Vec<String> {
        self.state().routed.get(skill).cloned().unwrap_or_default()
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

    /// The sample is in: a skill with a field not shown to reach the target is routed to the
    /// top rung. A field is shown when the one-sided Clopper–Pearson lower bound of its
    /// agreement, at δ shared by every field tested, is at least the target.
    fn settle(&self) {
        if *self.settled.borrow() {
            return;
        }
        if let Some(target) = self.target {
            let mut s = self.state();
            let alpha = self.per_field(tested(&s.tallies));
            let mut routed = BTreeMap::new();
            for (skill, fields) in &s.tallies {
                let below: Vec<String> = fields
                    .iter()
                    .filter(|(_, t)| t.n > 0 && !shown(t.agree, t.n, alpha, target))
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
        let two_sided = (1.0 - self.confidence) / 2.0;
        let alpha = self.per_field(tested(&s.tallies));
        let skills = s
            .tallies
            .iter()
            .map(|(skill, fields)| {
                let fields = fields
                    .iter()
                    .map(|(f, t)| {
                        let (low, high) = interval(t.agree, t.n, two_sided);
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
                            bound: self.target.map(|_| lower_bound(t.agree, t.n, alpha)),
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
            confidence: self.confidence,
            needed: self.target.map(|t| needed(t, alpha)),
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

/// The confidence of the audit's intervals and guarantee when `--confidence` is not given.
pub(crate) const DEFAULT_CONFIDENCE: f64 = 0.95;

/// How many fields the sample compared, over all skills: the guarantee's δ is shared by them.
fn tested(tallies: &BTreeMap<String, BTreeMap<String, Tally>>) -> usize {
    tallies
        .values()
        .map(|f| f.values().filter(|t| t.n > 0).count())
        .sum()
}

/// The exact (Clopper–Pearson) interval of `agree` out of `n`, each end at error `alpha`:
/// `alpha` = 0.025 gives the two-sided 95% interval.
pub(crate) fn interval(agree: u64, n: u64, alpha: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    (lower_bound(agree, n, alpha), upper_bound(agree, n, alpha))
}

/// The one-sided Clopper–Pearson lower bound: the least rate p for which seeing `agree` or
/// more of `n` has probability at least `alpha`. The true rate lies above it with
/// probability at least 1 − `alpha`, whatever the rate, for any `n`.
pub(crate) fn lower_bound(agree: u64, n: u64, alpha: f64) -> f64 {
    if n == 0 || agree == 0 {
        return 0.0;
    }
    // P(X ≥ agree) grows with p: the bound is where it reaches alpha.
    solve(|p| tail(agree, n, p, true) - alpha)
}

/// Whether `agree` of `n` shows the rate at `target` or above with error `alpha`: the
/// one-sided lower bound is at least the target, that is, a rate of just `target` would see
/// so many agree with probability at most `alpha` (one tail, not a search).
pub(crate) fn shown(agree: u64, n: u64, alpha: f64, target: f64) -> bool {
    n > 0 && agree > 0 && tail(agree, n, target, true) <= alpha
}

/// The one-sided Clopper–Pearson upper bound.
pub(crate) fn upper_bound(agree: u64, n: u64, alpha: f64) -> f64 {
    if n == 0 || agree >= n {
        return 1.0;
    }
    // P(X ≤ agree) falls as p grows: the bound is where it falls to alpha.
    solve(|p| alpha - tail(agree, n, p, false))
}

/// The least sample, all agreeing, that shows a field at `target` with error `alpha`:
/// `alpha`^(1/n) ≥ target.
pub(crate) fn needed(target: f64, alpha: f64) -> u64 {
    if target >= 1.0 {
        return u64::MAX;
    }
    (alpha.ln() / target.ln()).ceil().max(1.0) as u64
}

/// P(X ≥ k) (`upper`) or P(X ≤ k) for X ~ Binomial(n, p), summed in logs: exact for any n
/// a sample has, in O(n).
fn tail(k: u64, n: u64, p: f64, upper: bool) -> f64 {
    if p <= 0.0 {
        return if upper {
            f64::from(u8::from(k == 0))
        } else {
            1.0
        };
    }
    if p >= 1.0 {
        return if upper {
            1.0
        } else {
            f64::from(u8::from(k >= n))
        };
    }
    let (lp, lq) = (p.ln(), (-p).ln_1p());
    let mut ln_choose = 0.0_f64;
    let mut terms = Vec::new();
    for j in 0..=n {
        if j > 0 {
            ln_choose += ((n - j + 1) as f64).ln() - (j as f64).ln();
        }
        if (upper && j >= k) || (!upper && j <= k) {
            terms.push(ln_choose + j as f64 * lp + (n - j) as f64 * lq);
        }
    }
    let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (top + terms.iter().map(|t| (t - top).exp()).sum::<f64>().ln())
        .exp()
        .min(1.0)
}

/// The root in [0, 1] of `f`, which rises from below 0 to above it, by bisection.
fn solve(f: impl Fn(f64) -> f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clopper_pearson_intervals_are_the_textbook_ones() {
        let close = |a: f64, b: f64| (a - b).abs() < 0.0005;
        let (lo, hi) = interval(2, 8, 0.025);
        assert!(close(lo, 0.0319) && close(hi, 0.6509), "{lo} {hi}");
        let (lo, hi) = interval(8, 8, 0.025);
        assert!(close(lo, 0.6306) && hi == 1.0, "{lo} {hi}");
        let (lo, hi) = interval(0, 2, 0.025);
        assert!(lo == 0.0 && close(hi, 0.8419), "{lo} {hi}");
        assert_eq!(interval(0, 0, 0.025), (0.0, 1.0));
        // All n agreeing: the lower bound is alpha^(1/n).
        assert!(close(lower_bound(50, 50, 0.05), 0.05_f64.powf(1.0 / 50.0)));
        assert_eq!(needed(0.95, 0.05), 59);
        assert!(lower_bound(59, 59, 0.05) >= 0.95 && lower_bound(58, 58, 0.05) < 0.95);
        assert!(shown(59, 59, 0.05, 0.95) && !shown(58, 58, 0.05, 0.95));
        assert!(!shown(0, 10, 0.05, 0.01));
    }

    /// Draws `samples` seeded audits of `n` jobs on `fields` fields whose true agreement is
    /// `rate`, and counts those where some field is kept at `target` (shown to reach it).
    fn kept_in(samples: u64, n: u64, fields: usize, rate: f64, target: f64) -> u64 {
        let mut rng = fastrand::Rng::with_seed(7);
        (0..samples)
            .filter(|_| {
                let a = Audit::new(SampleSize::Jobs(n), 1, Some(target), n);
                for _ in 0..n {
                    let agreement = (0..fields)
                        .map(|f| (format!("f{f}"), rng.f64() < rate))
                        .collect();
                    a.compared("extract", agreement, "big", Tokens::default());
                }
                a.settle();
                a.state().routed.get("extract").map_or(0, Vec::len) < fields
            })
            .count() as u64
    }

    #[test]
    fn the_guarantee_holds_on_a_thousand_seeded_samples() {
        // Fields that truly agree less than the target: keeping any of them breaks the
        // promise, which may happen in at most δ = 5% of audits.
        let broken = kept_in(1000, 200, 1, 0.93, 0.95);
        assert!(
            broken <= 50,
            "kept a 93% field at 0.95 in {broken} of 1000 audits"
        );
        // Just under the target: the hardest case, still within δ.
        let broken = kept_in(1000, 400, 1, 0.949, 0.95);
        assert!(broken <= 50, "{broken} of 1000");
        // Four fields tested together share δ: some field is kept wrongly in at most δ.
        let broken = kept_in(1000, 200, 4, 0.94, 0.95);
        assert!(broken <= 50, "{broken} of 1000");
        // And it is not empty: a field that truly agrees 99.5% of the time on 400 jobs is
        // kept in most audits.
        let kept = kept_in(1000, 400, 1, 0.995, 0.95);
        assert!(kept >= 900, "kept a 99.5% field in only {kept} of 1000");
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
        // 2 of 2 agreeing shows no field at 0.95: both are routed.
        assert_eq!(r.routed["extract"], ["date", "seller"]);
        assert_eq!(r.needed, Some(72));
        assert_eq!(r.skills["extract"]["date"].agree, 2);
        assert!((r.cost.unwrap().amount - 0.0011).abs() < 1e-9);
    }
}
