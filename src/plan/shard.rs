//! Shards: which jobs this process does when the work is split across machines
//! (docs/shards.md#sharding).
//!
//! `hash` (default): a job belongs to shard M of N when FNV-1a-64 of its `job_id` (the 16 hex
//! characters, as UTF-8 bytes) modulo N equals M−1. The function is fixed here and pinned by
//! a test, so shards agree across versions and machines. `slice`: the sorted plan is cut into
//! N contiguous, nearly equal parts.

use super::PlanError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardMode {
    Hash,
    Slice,
}

/// Shard `index` (1-based) of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub total: u32,
    pub mode: ShardMode,
}

impl Shard {
    /// `M/N`, `hash:M/N` or `slice:M/N`.
    pub fn parse(s: &str) -> Result<Shard, PlanError> {
        let bad = || PlanError::BadShard(s.to_string());
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
        Ok(Shard { index, total, mode })
    }

    /// `M/N` as written in manifests and run ids.
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.total)
    }

    /// Whether the job at `position` (in the sorted plan of `len` jobs) with `job_id` is ours.
    pub fn owns(&self, job_id: &str, position: usize, len: usize) -> bool {
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
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The shard from the environment when `--shard` is absent: `JOB_COMPLETION_INDEX` (0-based,
/// Kubernetes Indexed Jobs) with `ZHI_SHARD_TOTAL`, or `CI_NODE_INDEX`/`CI_NODE_TOTAL`
/// (1-based, GitLab).
pub fn shard_from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Shard>, PlanError> {
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
    let make = |index: u32, total: u32, vars: &'static str| {
        if total == 0 || index == 0 || index > total {
            Err(PlanError::ShardOutOfRange { vars, index, total })
        } else {
            Ok(Some(Shard {
                index,
                total,
                mode: ShardMode::Hash,
            }))
        }
    };
    match (num("JOB_COMPLETION_INDEX")?, num("ZHI_SHARD_TOTAL")?) {
        (Some(i), Some(n)) => return make(i + 1, n, "JOB_COMPLETION_INDEX/ZHI_SHARD_TOTAL"),
        // Every pod would run the whole plan: say so instead.
        (Some(_), None) => return Err(PlanError::ShardTotalMissing),
        _ => {}
    }
    if let (Some(i), Some(n)) = (num("CI_NODE_INDEX")?, num("CI_NODE_TOTAL")?) {
        return make(i, n, "CI_NODE_INDEX/CI_NODE_TOTAL");
    }
    Ok(None)
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
        assert!(shard_from_env(&env(&[])).unwrap().is_none());
    }
}
