//! [`RunFlags`]: the switches of one `zhi run` that are not settings (no file or variable can
//! give them), as one value from the command line to where each is used.
//!
//! `run_cmd` builds it once from the arguments and the executor keeps it in the run's context;
//! a consumer below the executor gets the one switch it reads (a tool gets `allow_web`), never
//! the whole. A new switch is a field here, a flag in `cli.rs`, a line where this is built, and
//! its consumer. It is a leaf: it imports nothing of
//! zhi, so every layer may read it.

/// What one `zhi run` was asked to do beyond its settings.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunFlags {
    /// `--force`: redo jobs even if cached.
    pub force: bool,
    /// `--max-failures N`, or 1 with `--fail-fast`: stop scheduling after that many failures.
    pub max_failures: Option<u64>,
    /// `--budget-tokens N`: stop scheduling when the tokens spent reach it.
    pub budget_tokens: Option<u64>,
    /// `--budget-cost AMOUNT`: stop scheduling when the records' costs reach it.
    pub budget_cost: Option<f64>,
    /// `--strict`: a job whose output is doubted after the ladder fails (`doubtful`).
    pub strict: bool,
    /// `--audit N|N%`, `--audit-seed`, `--target` (docs/escalation.md#audit).
    pub audit: Option<AuditOptions>,
    /// `--allow-web`: skills that list `web_fetch` get it.
    pub allow_web: bool,
    /// `--submit batch`: direct requests go to the provider's Batch API
    /// (docs/model-api.md#batch-mode).
    pub submit_batch: Option<BatchOptions>,
    /// `--rows PATH`: the extraction tables get a row per item of this array field.
    pub table_rows: Option<String>,
    /// `--records all`: a cached job whose record would restate its earlier one is written
    /// too (docs/outputs.md#what-a-rerun-writes).
    pub every_record: bool,
    /// Show progress (bar or lines): neither `--no-progress` nor `-q`.
    pub progress: bool,
}

/// What `--audit` asks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AuditOptions {
    pub size: SampleSize,
    pub seed: u64,
    pub target: Option<f64>,
    /// `--confidence`: 1 − δ of the intervals and of `--target`'s guarantee.
    pub confidence: f64,
}

/// How many jobs `--audit` samples: a count, or a share of the plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum SampleSize {
    Jobs(u64),
    Percent(f64),
}

/// `--audit`: `N` (at least 1) or `N%` (more than 0, at most 100).
pub(crate) fn audit(s: &str) -> Parsed<SampleSize> {
    let t = s.trim();
    if let Some(p) = t.strip_suffix('%') {
        let p: f64 = p.trim().parse()?;
        if !(p > 0.0 && p <= 100.0) {
            return Err(Box::new(Refused(msg!(
                "must be a share above 0% and at most 100%"
            ))));
        }
        return Ok(SampleSize::Percent(p));
    }
    at_least_one(t, || msg!("must be at least 1 (leave it out for no audit)")).map(SampleSize::Jobs)
}

/// `--target`: a share between 0 and 1.
pub(crate) fn target(s: &str) -> Parsed<f64> {
    let v: f64 = s.trim().parse()?;
    if !(v > 0.0 && v <= 1.0) {
        return Err(Box::new(Refused(msg!(
            "must be a share above 0 and at most 1 (0.95 for 95%)"
        ))));
    }
    Ok(v)
}

/// `--confidence`: a share strictly between 0 and 1.
pub(crate) fn confidence(s: &str) -> Parsed<f64> {
    let v: f64 = s.trim().parse()?;
    if !(v > 0.0 && v < 1.0) {
        return Err(Box::new(Refused(msg!(
            "must be a share above 0 and below 1 (0.95 for 95%)"
        ))));
    }
    Ok(v)
}

/// Batch mode's choices.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BatchOptions {
    /// `--agent-jobs run`: jobs that run the agent loop (which a batch cannot carry) run now,
    /// directly; otherwise they fail with `not_batchable`.
    pub run_agent_jobs: bool,
}

/// A flag's value refused by its check, as the phrase that follows the flag's name
/// (`must be at least 1 …`). clap's value parsers return it; `main` prints it after the flag,
/// as a refused setting is named after its source (`--rpm must be …`), and exits 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// What a value parser returns: a value, [`Refused`], or clap's own words for text that is no
/// number at all (`invalid digit found in string`).
pub(crate) type Parsed<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// A whole number of at least 1, else `problem`.
fn at_least_one(s: &str, problem: fn() -> String) -> Parsed<u64> {
    match s.trim().parse::<u64>()? {
        0 => Err(Box::new(Refused(problem()))),
        n => Ok(n),
    }
}

/// `--budget-tokens`: a limit of zero would stop the run before its first job; a user who
/// wants no limit leaves the flag out.
pub(crate) fn budget_tokens(s: &str) -> Parsed<u64> {
    at_least_one(s, || {
        msg!("must be at least 1 (leave it out for no budget)")
    })
}

/// `--limit`.
pub(crate) fn limit(s: &str) -> Parsed<usize> {
    let n = at_least_one(s, || {
        msg!("must be at least 1 (a run of no jobs does nothing; `zhi plan` shows the plan)")
    })?;
    Ok(usize::try_from(n)?)
}

/// `--max-failures`.
pub(crate) fn max_failures(s: &str) -> Parsed<u64> {
    at_least_one(s, || {
        msg!(
            "must be at least 1 (--fail-fast stops at the first failure; leave it out for no limit)"
        )
    })
}

/// `--budget-cost`: a number above 0.
pub(crate) fn budget_cost(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(n) if n > 0.0 && n.is_finite() => Ok(n),
        _ => Err(msg!(
            "must be a number above 0 (leave it out for no budget)"
        )),
    }
}

/// `zhi prune --older-than`: a whole number and a unit, `d`, `h`, `m` or `s` (`30d`, `12h`).
/// A number too large to count in seconds is read as the longest duration: older than the
/// calendar, which no run is (docs/outputs.md#pruning).
pub(crate) fn duration_ago(s: &str) -> Parsed<std::time::Duration> {
    let t = s.trim();
    let refused = || -> Parsed<std::time::Duration> {
        Err(Box::new(Refused(msg!(
            "must be a whole number and a unit: 30d, 12h, 90m or 45s"
        ))))
    };
    let Some(unit) = t.chars().last() else {
        return refused();
    };
    let seconds = match unit {
        'd' => 86_400,
        'h' => 3_600,
        'm' => 60,
        's' => 1,
        _ => return refused(),
    };
    match t[..t.len() - 1].trim().parse::<u64>() {
        Ok(n) => Ok(std::time::Duration::from_secs(n.saturating_mul(seconds))),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => {
            Ok(std::time::Duration::from_secs(u64::MAX))
        }
        Err(_) => refused(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_refused_and_text_left_to_clap() {
        let refused = budget_tokens("0").unwrap_err();
        assert!(refused.downcast_ref::<Refused>().is_some(), "{refused}");
        assert_eq!(
            refused.to_string(),
            "must be at least 1 (leave it out for no budget)"
        );
        assert!(limit("0").unwrap_err().downcast_ref::<Refused>().is_some());
        assert!(max_failures("0").unwrap_err().is::<Refused>());
        let text = budget_tokens("abc").unwrap_err();
        assert!(!text.is::<Refused>());
        assert_eq!(budget_tokens("25").unwrap(), 25);
        assert!(budget_cost("0").is_err() && budget_cost("inf").is_err());
    }

    #[test]
    fn a_duration_past_counting_is_the_longest_and_text_is_refused() {
        let longest = std::time::Duration::from_secs(u64::MAX);
        assert_eq!(duration_ago("99999999999999999999999d").unwrap(), longest);
        assert_eq!(duration_ago("999999999999999999d").unwrap(), longest);
        assert_eq!(duration_ago("30d").unwrap().as_secs(), 30 * 86_400);
        for bad in ["", "d", "-1d", "1.5d", "1w", "abcd"] {
            assert!(duration_ago(bad).is_err(), "{bad}");
        }
    }
}
