//! Shards: which jobs this process does when the work is split across machines
//! (docs/shards.md#sharding).
//!
//! `hash` (default): a job belongs to shard M of N when FNV-1a-64 of its `job_id` (the 16 hex
//! characters, as UTF-8 bytes) modulo N equals M−1. The function is fixed here and pinned by
//! a test, so shards agree across versions and machines. `slice`: the sorted plan is cut into
//! N contiguous, nearly equal parts.

use super::PlanError;
use crate::flags::Refused;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShardMode {
    Hash,
    Slice,
}

/// Shard `index` (1-based) of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shard {
    pub index: u32,
    pub total: u32,
    pub mode: ShardMode,
    /// What chose it: `--shard` or the scheduler variable that gave the index
    /// (`SLURM_ARRAY_TASK_ID`, `JOB_COMPLETION_INDEX`, `CI_NODE_INDEX`); the manifest's
    /// `shard_source`.
    pub source: &'static str,
}

impl Shard {
    /// `M/N`, `hash:M/N` or `slice:M/N`.
    /// The value parser of `--shard`: a bad one is refused by the argument parser, before
    /// anything runs (`--shard `3/2` must be M/N …`).
    pub(crate) fn parse(s: &str) -> Result<Shard, Refused> {
        let bad = || {
            Refused(msg!(
                "`{value}` must be M/N with 1 <= M <= N (optionally hash:M/N or slice:M/N)",
                value = s
            ))
        };
        let (mode, rest) = match s.split_once(':') {
            Some(("hash", r)) => (ShardMode::Hash, r),
            Some(("slice", r)) => (ShardMode::Slice, r),
            Some(_) => return Err(bad()),
            None => (ShardMode::Hash, s),
        };
        let (m, n) = rest.split_once('/').ok_or_else(bad)?;
        let index: u32 = m.trim().parse().map_err(|_| bad())?;
        let total: u32 = n.trim().parse().map_err(|_| bad())?;
        if total == 0 || index == 0 || index > total {
            return Err(bad());
        }
        Ok(Shard {
            index,
            total,
            mode,
            source: "--shard",
        })
    }

    /// `M/N` as written in manifests and run ids.
    pub(crate) fn label(&self) -> String {
        format!("{}/{}", self.index, self.total)
    }

    /// Whether the job at `position` (in the sorted plan of `len` jobs) with `job_id` is ours.
    pub(crate) fn owns(&self, job_id: &str, position: usize, len: usize) -> bool {
        match self.mode {
            ShardMode::Hash => {
                fnv1a64(job_id.as_bytes()) % u64::from(self.total) == u64::from(self.index - 1)
            }
            ShardMode::Slice => {
                let n = self.total as usize;
                let m = self.index as usize - 1;
                let start = len * m / n;
                let end = len * (m + 1) / n;
                (start..end).contains(&position)
            }
        }
    }
}

/// FNV-1a, 64-bit: the shard hash. Never change it: shards of different versions must agree.
pub(super) fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The shard from the environment when `--shard` is absent (docs/shards.md), the first of:
///
/// 1. `SLURM_ARRAY_TASK_ID` (a Slurm job array): shard `ID − SLURM_ARRAY_TASK_MIN + 1` of
///    `SLURM_ARRAY_TASK_COUNT`. An array with a step or gaps (`--array=0-30:10`, `1,3,7`:
///    `SLURM_ARRAY_TASK_STEP` ≠ 1, or `MAX − MIN + 1` ≠ `COUNT`) is refused, not guessed.
/// 2. `JOB_COMPLETION_INDEX` (0-based, Kubernetes Indexed Jobs) with `ZHI_SHARD_TOTAL`.
/// 3. `CI_NODE_INDEX`/`CI_NODE_TOTAL` (1-based, GitLab).
///
/// Half of a pair (`ZHI_SHARD_TOTAL` alone, `CI_NODE_INDEX` without `CI_NODE_TOTAL`) is refused:
/// every process would run the whole plan. `CI_NODE_TOTAL=1` alone is GitLab's job that is not
/// parallel, and no shard.
///
/// Slurm comes first because a batch job inherits the environment of whoever submitted it
/// (`sbatch --export=ALL`, the default): a GitLab job or a pod that submits an array passes
/// its own variables on, and the array, which started this process, is what splits the work.
pub(crate) fn shard_from_env(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Shard>, PlanError> {
    let num = |var: &'static str| -> Result<Option<u32>, PlanError> {
        match env(var).filter(|v| !v.trim().is_empty()) {
            None => Ok(None),
            Some(value) => value
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| PlanError::ShardVariable { var, value }),
        }
    };
    let make = |index: u32, total: u32, vars: &'static str, source: &'static str| {
        if total == 0 || index == 0 || index > total {
            Err(PlanError::ShardOutOfRange { vars, index, total })
        } else {
            Ok(Some(Shard {
                index,
                total,
                mode: ShardMode::Hash,
                source,
            }))
        }
    };
    if let Some(id) = num("SLURM_ARRAY_TASK_ID")? {
        let need = |var: &'static str| num(var)?.ok_or(PlanError::SlurmArrayIncomplete { var });
        let min = need("SLURM_ARRAY_TASK_MIN")?;
        let max = need("SLURM_ARRAY_TASK_MAX")?;
        let count = need("SLURM_ARRAY_TASK_COUNT")?;
        let step = num("SLURM_ARRAY_TASK_STEP")?;
        // Slurm never sets a count of 0: such an array names no shard, and `--array=1-0`
        // would be no advice.
        if count == 0 {
            return Err(PlanError::SlurmArrayEmpty);
        }
        let span = max.checked_sub(min).map(|d| u64::from(d) + 1);
        if step.is_some_and(|s| s != 1) || span != Some(u64::from(count)) {
            let mut values = format!(
                "SLURM_ARRAY_TASK_MIN={min}, SLURM_ARRAY_TASK_MAX={max}, SLURM_ARRAY_TASK_COUNT={count}"
            );
            if let Some(s) = step {
                values.push_str(&format!(", SLURM_ARRAY_TASK_STEP={s}"));
            }
            return Err(PlanError::SlurmArrayNotContiguous { values, count });
        }
        // An ID below MIN names no shard: 0 is out of range.
        let index = id.checked_sub(min).map_or(0, |d| d.saturating_add(1));
        return make(
            index,
            count,
            "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_MIN/SLURM_ARRAY_TASK_COUNT",
            "SLURM_ARRAY_TASK_ID",
        );
    }
    match (num("JOB_COMPLETION_INDEX")?, num("ZHI_SHARD_TOTAL")?) {
        (Some(i), Some(n)) => {
            return make(
                i.saturating_add(1),
                n,
                "JOB_COMPLETION_INDEX/ZHI_SHARD_TOTAL",
                "JOB_COMPLETION_INDEX",
            );
        }
        // Every pod would run the whole plan: say so instead.
        (Some(_), None) => return Err(PlanError::ShardTotalMissing),
        // Half a shard specification is a mistake, never the whole plan.
        (None, Some(_)) => {
            return Err(PlanError::ShardHalf {
                set: "ZHI_SHARD_TOTAL",
                unset: "JOB_COMPLETION_INDEX",
            });
        }
        (None, None) => {}
    }
    match (num("CI_NODE_INDEX")?, num("CI_NODE_TOTAL")?) {
        (Some(i), Some(n)) => make(i, n, "CI_NODE_INDEX/CI_NODE_TOTAL", "CI_NODE_INDEX"),
        (Some(_), None) => Err(PlanError::ShardHalf {
            set: "CI_NODE_INDEX",
            unset: "CI_NODE_TOTAL",
        }),
        // GitLab sets CI_NODE_TOTAL=1 in every job that is not parallel, without an index:
        // one shard of one is the whole plan. Any other total wants its index.
        (None, Some(n)) if n != 1 => Err(PlanError::ShardHalf {
            set: "CI_NODE_TOTAL",
            unset: "CI_NODE_INDEX",
        }),
        (None, _) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_pinned() {
        // These values are part of the contract: changing them splits shards differently.
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"0123456789abcdef"), 0x2e373913e5ad677d);
    }

    #[test]
    fn parse_and_own() {
        let s = Shard::parse("2/3").unwrap();
        assert_eq!((s.index, s.total, s.mode), (2, 3, ShardMode::Hash));
        assert!(Shard::parse("0/3").is_err());
        assert!(Shard::parse("4/3").is_err());
        assert!(Shard::parse("x:1/2").is_err());
        let ids: Vec<String> = (0..300).map(|i| format!("{i:016x}")).collect();
        for mode in ["hash", "slice"] {
            let mut owners = vec![0; ids.len()];
            for m in 1..=3 {
                let s = Shard::parse(&format!("{mode}:{m}/3")).unwrap();
                for (i, id) in ids.iter().enumerate() {
                    if s.owns(id, i, ids.len()) {
                        owners[i] += 1;
                    }
                }
            }
            assert!(
                owners.iter().all(|&o| o == 1),
                "{mode}: every job in exactly one shard"
            );
        }
    }

    #[test]
    fn env_detection() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_string())
        };
        let s = shard_from_env(&env(&[
            ("JOB_COMPLETION_INDEX", "0"),
            ("ZHI_SHARD_TOTAL", "4"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((s.index, s.total), (1, 4));
        let s = shard_from_env(&env(&[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "2")]))
            .unwrap()
            .unwrap();
        assert_eq!((s.index, s.total), (2, 2));
        assert_eq!(s.source, "CI_NODE_INDEX");
        assert!(shard_from_env(&env(&[])).unwrap().is_none());
        // GitLab's jobs that are not parallel: CI_NODE_TOTAL=1 and no index, the whole plan.
        assert!(
            shard_from_env(&env(&[("CI_NODE_TOTAL", "1")]))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn half_a_shard_specification_is_refused() {
        for pairs in [
            &[("ZHI_SHARD_TOTAL", "3")][..],
            &[("CI_NODE_INDEX", "2")][..],
            &[("CI_NODE_TOTAL", "3")][..],
        ] {
            let e = from(pairs).unwrap_err();
            assert!(matches!(e, PlanError::ShardHalf { .. }), "{pairs:?}: {e}");
            let text = e.to_string();
            assert!(text.contains(pairs[0].0), "{text}");
        }
        let v = slurm("1", "1", "1", "0", "1");
        let e = from(&pairs(&v)).unwrap_err();
        assert!(matches!(e, PlanError::SlurmArrayEmpty), "{e}");
        assert!(!e.to_string().contains("--array=1-0"), "{e}");
    }

    fn from(pairs: &[(&str, &str)]) -> Result<Option<Shard>, PlanError> {
        shard_from_env(&|k: &str| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_string()))
    }

    /// The variables Slurm sets in task `id` of an array from `min` to `max` of `count` tasks.
    fn slurm(
        id: &str,
        min: &str,
        max: &str,
        count: &str,
        step: &str,
    ) -> Vec<(&'static str, String)> {
        vec![
            ("SLURM_ARRAY_TASK_ID", id.to_string()),
            ("SLURM_ARRAY_TASK_MIN", min.to_string()),
            ("SLURM_ARRAY_TASK_MAX", max.to_string()),
            ("SLURM_ARRAY_TASK_COUNT", count.to_string()),
            ("SLURM_ARRAY_TASK_STEP", step.to_string()),
            ("SLURM_ARRAY_JOB_ID", "41".to_string()),
        ]
    }

    fn pairs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
        v.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }

    #[test]
    fn a_contiguous_slurm_array_is_shards_one_to_n() {
        // `--array=1-4`: task 1 is shard 1/4 … task 4 is shard 4/4.
        for id in 1..=4u32 {
            let vars = slurm(&id.to_string(), "1", "4", "4", "1");
            let s = from(&pairs(&vars)).unwrap().unwrap();
            assert_eq!((s.index, s.total, s.mode), (id, 4, ShardMode::Hash));
            assert_eq!(s.source, "SLURM_ARRAY_TASK_ID");
        }
        // `--array=0-3`: task 0 is shard 1/4; `--array=5-7`: task 7 is shard 3/3.
        let s = from(&pairs(&slurm("0", "0", "3", "4", "1")))
            .unwrap()
            .unwrap();
        assert_eq!((s.index, s.total), (1, 4));
        let s = from(&pairs(&slurm("3", "0", "3", "4", "1")))
            .unwrap()
            .unwrap();
        assert_eq!((s.index, s.total), (4, 4));
        let s = from(&pairs(&slurm("7", "5", "7", "3", "1")))
            .unwrap()
            .unwrap();
        assert_eq!((s.index, s.total), (3, 3));
        // Without SLURM_ARRAY_TASK_STEP (older Slurm): the same.
        let mut vars = slurm("2", "1", "4", "4", "1");
        vars.retain(|(k, _)| *k != "SLURM_ARRAY_TASK_STEP");
        let s = from(&pairs(&vars)).unwrap().unwrap();
        assert_eq!((s.index, s.total), (2, 4));
        // An array of one task is one shard: the whole plan.
        let s = from(&pairs(&slurm("9", "9", "9", "1", "1")))
            .unwrap()
            .unwrap();
        assert_eq!((s.index, s.total), (1, 1));
    }

    #[test]
    fn a_slurm_array_with_a_step_or_gaps_is_refused() {
        // `--array=0-30:10`, as Slurm describes it to task 10.
        let e = from(&pairs(&slurm("10", "0", "30", "4", "10"))).unwrap_err();
        assert!(
            matches!(e, PlanError::SlurmArrayNotContiguous { count: 4, .. }),
            "{e:?}"
        );
        let text = e.to_string();
        for want in [
            "SLURM_ARRAY_TASK_MIN=0",
            "SLURM_ARRAY_TASK_MAX=30",
            "SLURM_ARRAY_TASK_COUNT=4",
            "SLURM_ARRAY_TASK_STEP=10",
            "--array=1-4",
            "--shard",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
        // `--array=1,3,7`: Slurm says step 1, but 7 − 1 + 1 ≠ 3 tasks.
        let e = from(&pairs(&slurm("3", "1", "7", "3", "1"))).unwrap_err();
        assert!(
            matches!(e, PlanError::SlurmArrayNotContiguous { count: 3, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("SLURM_ARRAY_TASK_MAX=7"), "{e}");
        // The same gap without a step variable, and a step that still spans COUNT ids.
        let mut vars = slurm("3", "1", "7", "3", "1");
        vars.retain(|(k, _)| *k != "SLURM_ARRAY_TASK_STEP");
        assert!(matches!(
            from(&pairs(&vars)),
            Err(PlanError::SlurmArrayNotContiguous { .. })
        ));
        assert!(matches!(
            from(&pairs(&slurm("1", "1", "4", "4", "2"))),
            Err(PlanError::SlurmArrayNotContiguous { .. })
        ));
        // MAX below MIN is no array at all.
        assert!(matches!(
            from(&pairs(&slurm("1", "4", "1", "4", "1"))),
            Err(PlanError::SlurmArrayNotContiguous { .. })
        ));
    }

    #[test]
    fn a_slurm_array_task_without_its_sizes_is_refused() {
        for missing in [
            "SLURM_ARRAY_TASK_COUNT",
            "SLURM_ARRAY_TASK_MIN",
            "SLURM_ARRAY_TASK_MAX",
        ] {
            let mut vars = slurm("2", "1", "4", "4", "1");
            vars.retain(|(k, _)| *k != missing);
            let e = from(&pairs(&vars)).unwrap_err();
            assert!(
                matches!(e, PlanError::SlurmArrayIncomplete { var } if var == missing),
                "{missing}: {e:?}"
            );
            assert!(e.to_string().contains("--shard M/N"), "{e}");
        }
        // Not numbers, or an id outside the array: refused too.
        assert!(matches!(
            from(&pairs(&slurm("two", "1", "4", "4", "1"))),
            Err(PlanError::ShardVariable {
                var: "SLURM_ARRAY_TASK_ID",
                ..
            })
        ));
        assert!(matches!(
            from(&pairs(&slurm("0", "1", "4", "4", "1"))),
            Err(PlanError::ShardOutOfRange {
                index: 0,
                total: 4,
                ..
            })
        ));
        assert!(matches!(
            from(&pairs(&slurm("5", "1", "4", "4", "1"))),
            Err(PlanError::ShardOutOfRange {
                index: 5,
                total: 4,
                ..
            })
        ));
        // A Slurm job that is not an array has no task id: unsharded.
        assert!(
            from(&[("SLURM_JOB_ID", "12"), ("SLURM_NTASKS", "1")])
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn slurm_comes_before_kubernetes_and_gitlab() {
        // A GitLab job (or a pod) that submits an array passes its variables to every task.
        let mut vars = slurm("3", "1", "4", "4", "1");
        vars.extend([
            ("JOB_COMPLETION_INDEX", "0".to_string()),
            ("ZHI_SHARD_TOTAL", "2".to_string()),
            ("CI_NODE_INDEX", "1".to_string()),
            ("CI_NODE_TOTAL", "2".to_string()),
        ]);
        let s = from(&pairs(&vars)).unwrap().unwrap();
        assert_eq!((s.index, s.total, s.source), (3, 4, "SLURM_ARRAY_TASK_ID"));
        // Then Kubernetes, then GitLab.
        let k8s_and_gitlab = &vars[6..];
        let s = from(&pairs(k8s_and_gitlab)).unwrap().unwrap();
        assert_eq!((s.index, s.total, s.source), (1, 2, "JOB_COMPLETION_INDEX"));
        let s = from(&pairs(&vars[8..])).unwrap().unwrap();
        assert_eq!((s.index, s.total, s.source), (1, 2, "CI_NODE_INDEX"));
        // `--shard` names its own source (the caller does not read the variables then).
        assert_eq!(Shard::parse("1/2").unwrap().source, "--shard");
    }
}
