//! zhi's tests that need something from outside the repository: a program (pdftotext,
//! tesseract, pango-view…), a document fetched by `scripts/fetch-test-docs.sh` or
//! `scripts/fetch-pdf-corpus.sh`, a private mount namespace, the local model named by
//! `ZHI_TEST_LLM_URL`, or a Slurm cluster. The pure tests (fake API server, temporary folders) are in `tests/it`.
//!
//! libtest decides that a test is ignored when it is compiled; these tests are ignored or not
//! by what this machine has, so this binary has its own harness (libtest-mimic, the same
//! command line and output as libtest). Each test declares its needs; they are checked before
//! any test runs, and a test with a need unmet is counted as ignored with the reason on its
//! line (`ignored (needs tesseract (not on PATH))`). With `ZHI_TEST_REQUIRE_ALL=1` (set by
//! `.ci/run`) such a test fails instead. Nothing here installs, downloads or starts anything.

/// What a test measured, shown with `--nocapture`.
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::need::print_note(format_args!($($arg)*))
    };
}

mod browser;
mod escalation_local;
mod extraction;
mod full_disk;
mod ladder;
mod local_model;
mod mcp_client;
mod need;
mod skill_folders;
mod slurm;
mod stat_cache;
#[path = "../it/support/mod.rs"]
mod support;
mod terminal;

use libtest_mimic::{Arguments, Completion, Trial};
use need::{Checker, Need};
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

/// One test: its name (`module::test`, as libtest names them), what it needs, and its body,
/// which panics on failure like a `#[test]` function.
pub struct Test {
    name: &'static str,
    needs: Vec<Need>,
    run: fn(),
}

impl Test {
    pub fn new(name: &'static str, needs: &[Need], run: fn()) -> Self {
        Test {
            name,
            needs: needs.to_vec(),
            run,
        }
    }
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    need::set_verbose(args.nocapture);
    let require_all = std::env::var("ZHI_TEST_REQUIRE_ALL").is_ok_and(|v| v == "1");
    let tests = [
        browser::tests(),
        escalation_local::tests(),
        extraction::tests(),
        full_disk::tests(),
        ladder::tests(),
        local_model::tests(),
        mcp_client::tests(),
        skill_folders::tests(),
        slurm::tests(),
        stat_cache::tests(),
        terminal::tests(),
    ]
    .into_iter()
    .flatten();
    let mut checker = Checker::default();
    // Unmet needs by how to meet them: what they are, and how many tests wait for them.
    let mut hints: BTreeMap<(String, String), (BTreeSet<String>, usize)> = BTreeMap::new();
    let trials: Vec<Trial> = tests
        .into_iter()
        .map(|test| {
            let missing: Vec<need::Missing> = test
                .needs
                .iter()
                .filter_map(|n| checker.missing(*n))
                .collect();
            if missing.is_empty() {
                let run = test.run;
                return Trial::test(test.name, move || {
                    run();
                    Ok(())
                });
            }
            let mut counted = BTreeSet::new();
            for m in &missing {
                let key = (m.how.clone(), m.why.clone());
                let (whats, tests) = hints.entry(key.clone()).or_default();
                whats.insert(m.what.clone());
                if counted.insert(key) {
                    *tests += 1;
                }
            }
            let reason = need::Missing::reason(&missing);
            if require_all {
                Trial::test(test.name, move || {
                    Err(format!("{reason} (ZHI_TEST_REQUIRE_ALL=1: every test must run)").into())
                })
            } else {
                Trial::ignorable_test(test.name, move || Ok(Completion::ignored_with(reason)))
            }
        })
        .collect();
    if !hints.is_empty() && !args.list {
        eprintln!(
            "tests/ext: what this machine lacks (tests that need it: what, why; how to get it)"
        );
        for ((how, why), (whats, tests)) in &hints {
            let mut named: Vec<&str> = whats.iter().map(String::as_str).take(3).collect();
            let more = format!("and {} more", whats.len().saturating_sub(3));
            if whats.len() > 3 {
                named.push(&more);
            }
            eprintln!("  {tests:>2}: {} ({why}); {how}", named.join(", "));
        }
    }
    libtest_mimic::run(&args, trials).exit_code()
}
