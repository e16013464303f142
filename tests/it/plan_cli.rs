//! `zhi plan` (and the planning half of `zhi run`) through the binary (docs/cli.md#inputs,
//! docs/documents.md, docs/shards.md): which documents a set of paths, folders and quoted globs
//! becomes, in which order, with which ids, arguments, extraction kinds and token estimates, and
//! what never becomes an input. Planning must never touch the network: these tests run it against
//! nothing, or against a fake server that counts requests.

use crate::support::testenv::{TestEnv, assert_exit, assert_exit_for, stderr, stdout};
use crate::support::{FakeApi, Reply};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::symlink;
use zhi::exit::Exit;

/// `zhi --json plan ARGS…` → one JSON object per job, asserting exit 0.
fn plan_json(env: &TestEnv, args: &[&str]) -> Vec<Value> {
    let out = env
        .zhi()
        .arg("--json")
        .arg("plan")
        .args(args)
        .output()
        .unwrap();
    assert_exit_for(&out, Exit::Success, format!("plan {args:?}"));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The primary input of each planned job, in plan order.
fn planned(env: &TestEnv, args: &[&str]) -> Vec<String> {
    plan_json(env, args)
        .iter()
        .map(|j| j["inputs"][0].as_str().unwrap().to_owned())
        .collect()
}

/// A file with a line of text (planning reads text files for the token estimate).
fn touch(env: &TestEnv, rel: &str) {
    env.write(rel, format!("This is {rel}.\n"));
}

#[test]
fn folders_are_walked_recursively_in_sorted_order() {
    let env = TestEnv::new();
    for rel in [
        "docs/b.txt",
        "docs/a.md",
        "docs/B.txt",
        "docs/a10.txt",
        "docs/a2.txt",
        "docs/sub/z.txt",
        "docs/sub/deeper/y.txt",
        "docs/sub2/x.txt",
        "docs/中文.txt",
    ] {
        touch(&env, rel);
    }
    let want = [
        "docs/B.txt",
        "docs/a.md",
        "docs/a10.txt",
        "docs/a2.txt",
        "docs/b.txt",
        "docs/sub/deeper/y.txt",
        "docs/sub/z.txt",
        "docs/sub2/x.txt",
        "docs/中文.txt",
    ];
    assert_eq!(planned(&env, &["summarize", "docs"]), want);
    // The same, whatever the spelling of the folder.
    assert_eq!(planned(&env, &["summarize", "./docs/"]), want);
    // An absolute folder outside the current one is shown as given.
    let outside = TestEnv::new();
    touch(&outside, "far/one.txt");
    let far = outside.path("far");
    let got = planned(&env, &["summarize", far.to_str().unwrap()]);
    assert_eq!(got, [format!("{}/one.txt", far.display())]);
}

#[test]
fn quoted_globs_match_below_their_folder() {
    let env = TestEnv::new();
    for rel in [
        "top.txt",
        "notes.md",
        "docs/a.md",
        "docs/a.txt",
        "docs/x/b.md",
        "docs/x/y/c.md",
        "other/d.md",
    ] {
        touch(&env, rel);
    }
    assert_eq!(
        planned(&env, &["summarize", "docs/**/*.md"]),
        ["docs/a.md", "docs/x/b.md", "docs/x/y/c.md"]
    );
    // `*` does not cross folders.
    assert_eq!(planned(&env, &["summarize", "*.txt"]), ["top.txt"]);
    assert_eq!(
        planned(&env, &["summarize", "docs/*"]),
        ["docs/a.md", "docs/a.txt"]
    );
    // Several inputs keep the order given; each is walked in sorted order.
    assert_eq!(
        planned(&env, &["summarize", "other", "*.md"]),
        ["other/d.md", "notes.md"]
    );
    // A glob that matches nothing beside one that matches is fine; all matching nothing is not.
    assert_eq!(
        planned(&env, &["summarize", "docs/*.pdf", "*.txt"]),
        ["top.txt"]
    );
    let out = env
        .zhi()
        .args(["plan", "summarize", "docs/**/*.pdf"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("no inputs"), "{}", stderr(&out));
}

#[test]
fn exclude_by_name_by_path_and_by_folder() {
    let env = TestEnv::new();
    for rel in [
        "docs/a.txt",
        "docs/a.log",
        "docs/keep/b.txt",
        "docs/keep/b.log",
        "docs/private/secret.txt",
        "docs/private/public.txt",
        "docs/drafts/c.txt",
        "docs/drafts/deep/d.txt",
    ] {
        touch(&env, rel);
    }
    let all = planned(&env, &["summarize", "docs"]);
    assert_eq!(all.len(), 8);

    // By name: at any depth.
    assert_eq!(
        planned(&env, &["summarize", "docs", "--exclude", "*.log"]),
        [
            "docs/a.txt",
            "docs/drafts/c.txt",
            "docs/drafts/deep/d.txt",
            "docs/keep/b.txt",
            "docs/private/public.txt",
            "docs/private/secret.txt",
        ]
    );
    // By path: only that file.
    let got = planned(
        &env,
        &["summarize", "docs", "--exclude", "docs/private/secret.txt"],
    );
    assert!(!got.contains(&"docs/private/secret.txt".to_string()));
    assert!(got.contains(&"docs/private/public.txt".to_string()));
    assert_eq!(got.len(), 7);
    // A folder, by name and by path: everything under it.
    for folder in ["drafts", "docs/drafts", "docs/drafts/"] {
        let got = planned(&env, &["summarize", "docs", "--exclude", folder]);
        assert!(
            got.iter().all(|p| !p.starts_with("docs/drafts/")),
            "--exclude {folder}: {got:?}"
        );
        assert_eq!(got.len(), 6, "--exclude {folder}: {got:?}");
    }
    // Repeatable, and applied to globs too.
    assert_eq!(
        planned(
            &env,
            &[
                "summarize",
                "docs/**/*.txt",
                "--exclude",
                "drafts",
                "--exclude",
                "private",
            ]
        ),
        ["docs/a.txt", "docs/keep/b.txt"]
    );
    // A bad glob is a usage error.
    let out = env
        .zhi()
        .args(["plan", "summarize", "docs", "--exclude", "a[b"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("--exclude"), "{}", stderr(&out));
}

#[test]
fn hidden_files_and_folders_only_with_hidden() {
    let env = TestEnv::new();
    for rel in [
        "docs/a.txt",
        "docs/.env",
        "docs/.cache/x.txt",
        "docs/sub/.secret.md",
        "docs/sub/b.md",
    ] {
        touch(&env, rel);
    }
    assert_eq!(
        planned(&env, &["summarize", "docs"]),
        ["docs/a.txt", "docs/sub/b.md"]
    );
    assert_eq!(
        planned(&env, &["summarize", "docs/**/*"]),
        ["docs/a.txt", "docs/sub/b.md"]
    );
    assert_eq!(
        planned(&env, &["summarize", "docs", "--hidden"]),
        [
            "docs/.cache/x.txt",
            "docs/.env",
            "docs/a.txt",
            "docs/sub/.secret.md",
            "docs/sub/b.md",
        ]
    );
    // A hidden file named on the command line is taken as asked.
    assert_eq!(planned(&env, &["summarize", "docs/.env"]), ["docs/.env"]);
    // So is a hidden folder.
    assert_eq!(
        planned(&env, &["summarize", "docs/.cache"]),
        ["docs/.cache/x.txt"]
    );
    // Only hidden files: nothing to do, and the message says how to include them.
    let only_hidden = TestEnv::new();
    touch(&only_hidden, "d/.a.txt");
    let out = only_hidden
        .zhi()
        .args(["plan", "summarize", "d"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("--hidden"), "{}", stderr(&out));
}

#[test]
fn the_output_folder_is_never_an_input() {
    let env = TestEnv::new();
    touch(&env, "a.txt");
    touch(&env, "docs/b.txt");
    // Outputs of earlier runs, in the default output folder and in one inside the inputs.
    touch(&env, "zhi-output/summarize/a.txt/summary.md");
    touch(&env, "zhi-output/.zhi/runs/r1/results.jsonl");
    touch(&env, "docs/out/summarize/docs/b.txt/summary.md");
    touch(&env, "elsewhere/summarize/x/summary.md");

    // The default output folder, under the folder walked.
    assert_eq!(
        planned(&env, &["summarize", "."]),
        [
            "a.txt",
            "docs/b.txt",
            "docs/out/summarize/docs/b.txt/summary.md",
            "elsewhere/summarize/x/summary.md",
        ]
    );
    // An output folder inside the input folder.
    assert_eq!(
        planned(&env, &["summarize", "docs", "-o", "docs/out"]),
        ["docs/b.txt"]
    );
    // Spelled another way (absolute, with `..`), and through the environment.
    let abs = env.path("docs/../docs/out");
    assert_eq!(
        planned(&env, &["summarize", "docs", "-o", abs.to_str().unwrap()]),
        ["docs/b.txt"]
    );
    let out = env
        .zhi()
        .env("ZHI_OUTPUT_DIR", "docs/out")
        .args(["--json", "plan", "summarize", "docs"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert_eq!(stdout(&out).lines().count(), 1, "{}", stdout(&out));
    // With -o elsewhere: that folder is excluded, the default one is an ordinary folder again.
    let got = planned(&env, &["summarize", ".", "-o", "elsewhere"]);
    assert!(got.iter().all(|p| !p.starts_with("elsewhere/")), "{got:?}");
    assert!(got.contains(&"zhi-output/summarize/a.txt/summary.md".to_string()));
}

#[test]
fn the_output_folder_given_as_input_is_refused_and_globs_skip_it() {
    let env = TestEnv::new();
    touch(&env, "docs/b.txt");
    touch(&env, "docs/out/summarize/docs/b.txt/summary.md");
    for input in ["docs/out", "docs/out/summarize/docs/b.txt/summary.md"] {
        let out = env
            .zhi()
            .args(["plan", "summarize", input, "-o", "docs/out"])
            .output()
            .unwrap();
        assert_exit_for(&out, Exit::Usage, input);
        assert!(
            stderr(&out).contains("inside the output folder"),
            "{}",
            stderr(&out)
        );
    }
    let out = env
        .zhi()
        .args(["plan", "summarize", "docs/**/*.md", "-o", "docs/out"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("no inputs"), "{}", stderr(&out));
}

#[test]
fn symlinked_folders_are_descended_only_with_follow_links() {
    let env = TestEnv::new();
    touch(&env, "docs/a.txt");
    touch(&env, "shared/s1.txt");
    touch(&env, "shared/deep/s2.txt");
    touch(&env, "docs/target.txt");
    symlink("../shared", env.path("docs/linked")).unwrap();
    // Without --follow-links no link is followed, a link to a file neither
    // (docs/cli.md#symbolic-links).
    symlink("../shared/s1.txt", env.path("docs/s1-link.txt")).unwrap();

    assert_eq!(
        planned(&env, &["summarize", "docs"]),
        ["docs/a.txt", "docs/target.txt"]
    );
    // With --follow-links the link is descended; the file reached both through the folder
    // link and the file link is planned once, under the path seen first.
    assert_eq!(
        planned(&env, &["summarize", "docs", "--follow-links"]),
        [
            "docs/a.txt",
            "docs/linked/deep/s2.txt",
            "docs/linked/s1.txt",
            "docs/target.txt",
        ]
    );
    assert_eq!(
        planned(&env, &["summarize", "docs", "-L"]).len(),
        4,
        "-L is --follow-links"
    );

    // A link back up the tree does not make the walk endless.
    symlink("..", env.path("shared/deep/up")).unwrap();
    let got = planned(&env, &["summarize", "shared", "-L"]);
    assert!(got.contains(&"shared/deep/s2.txt".to_string()), "{got:?}");
    assert!(
        got.iter().all(|p| !p.starts_with("shared/deep/up/")),
        "{got:?}"
    );
    assert!(got.contains(&"shared/s1.txt".to_string()), "{got:?}");
}

#[test]
fn the_same_file_reached_twice_is_planned_once() {
    let env = TestEnv::new();
    touch(&env, "docs/a.txt");
    touch(&env, "docs/b.txt");
    let jobs = plan_json(
        &env,
        &[
            "summarize",
            "docs",
            "docs/a.txt",
            "./docs/a.txt",
            "docs/*.txt",
            "docs/../docs/b.txt",
            env.path("docs/a.txt").to_str().unwrap(),
        ],
    );
    let inputs: Vec<&str> = jobs
        .iter()
        .map(|j| j["inputs"][0].as_str().unwrap())
        .collect();
    assert_eq!(inputs, ["docs/a.txt", "docs/b.txt"]);
    let ids: BTreeSet<&str> = jobs.iter().map(|j| j["job_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2);
}

#[test]
fn a_directory_skill_gets_one_job_per_folder() {
    let env = TestEnv::new();
    for rel in [
        "days/mon/a.txt",
        "days/mon/b.txt",
        "days/tue/c.txt",
        "days/tue/sub/d.txt",
        "days/.hidden/e.txt",
    ] {
        touch(&env, rel);
    }
    let jobs = plan_json(&env, &["daily-digest", "days/tue", "days/mon"]);
    let inputs: Vec<&str> = jobs
        .iter()
        .map(|j| j["inputs"][0].as_str().unwrap())
        .collect();
    assert_eq!(inputs, ["days/tue", "days/mon"]);
    for j in &jobs {
        assert_eq!(j["skill"], "daily-digest");
        assert_eq!(j["extraction"], "folder", "{j}");
        assert_eq!(j["status"], "pending", "{j}");
    }
    // A glob names folders; hidden ones only with --hidden.
    assert_eq!(
        planned(&env, &["daily-digest", "days/*"]),
        ["days/mon", "days/tue"]
    );
    assert_eq!(
        planned(&env, &["daily-digest", "days/*", "--hidden"]),
        ["days/.hidden", "days/mon", "days/tue"]
    );
    // A file is not a folder.
    let out = env
        .zhi()
        .args(["plan", "daily-digest", "days/mon/a.txt"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("takes folders"), "{}", stderr(&out));
}

/// A skill with a required input and an optional file argument.
const WITH_REFERENCE: &str = "name: with-ref\ndescription: a document and an optional reference\n\
system_prompt: Do the thing.\ntools: [file_read]\nmax_turns: 3\ninput:\n  args:\n    - name: file\n      type: file\n      required: true\n    - name: ref\n      type: file\n      required: false\n";

#[test]
fn paired_file_templates_resolve_and_a_missing_pair_fails_only_its_job() {
    let env = TestEnv::new();
    touch(&env, "v/a.txt");
    touch(&env, "v/a.old.txt");
    touch(&env, "v/b.txt");
    touch(&env, "v/sub/c.md");
    touch(&env, "v/sub/c.old.md");
    let jobs = plan_json(
        &env,
        &[
            "compare",
            "v",
            "-a",
            "file2={dir}/{stem}.old{ext}",
            "--exclude",
            "*.old.*",
        ],
    );
    let by_input: BTreeMap<&str, &Value> = jobs
        .iter()
        .map(|j| (j["inputs"][0].as_str().unwrap(), j))
        .collect();
    assert_eq!(
        by_input.keys().copied().collect::<Vec<_>>(),
        ["v/a.txt", "v/b.txt", "v/sub/c.md"]
    );
    let a = by_input["v/a.txt"];
    assert_eq!(a["inputs"], serde_json::json!(["v/a.txt", "v/a.old.txt"]));
    assert_eq!(a["args"], serde_json::json!({"file2": "v/a.old.txt"}));
    assert_eq!(a["status"], "pending");
    assert_eq!(a["error"], Value::Null);
    let c = by_input["v/sub/c.md"];
    assert_eq!(
        c["inputs"],
        serde_json::json!(["v/sub/c.md", "v/sub/c.old.md"])
    );

    let b = by_input["v/b.txt"];
    assert_eq!(b["status"], "will-fail", "{b}");
    assert_eq!(b["error"]["kind"], "input_error", "{b}");
    let message = b["error"]["message"].as_str().unwrap();
    assert!(message.contains("v/b.old.txt"), "{message}");
    assert!(message.contains("does not exist"), "{message}");

    // The table says so too.
    let out = env
        .zhi()
        .args([
            "plan",
            "compare",
            "v",
            "-a",
            "file2={dir}/{stem}.old{ext}",
            "--exclude",
            "*.old.*",
        ])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let row = stdout(&out)
        .lines()
        .find(|l| l.contains("v/b.txt"))
        .unwrap_or_default()
        .to_owned();
    assert!(row.contains("will-fail"), "{}", stdout(&out));

    // {name} and a fixed path work as well.
    touch(&env, "v/b.txt.bak");
    let jobs = plan_json(
        &env,
        &["compare", "v/b.txt", "-a", "file2={dir}/{name}.bak"],
    );
    assert_eq!(
        jobs[0]["inputs"],
        serde_json::json!(["v/b.txt", "v/b.txt.bak"])
    );
    let jobs = plan_json(&env, &["compare", "v/b.txt", "-a", "file2=v/a.txt"]);
    assert_eq!(jobs[0]["inputs"], serde_json::json!(["v/b.txt", "v/a.txt"]));

    // An optional paired file that is missing is dropped: the job runs without it.
    env.project_skill("with-ref.yaml", WITH_REFERENCE);
    let jobs = plan_json(
        &env,
        &[
            "with-ref",
            "v/a.txt",
            "v/b.txt",
            "-a",
            "ref={dir}/{stem}.old{ext}",
        ],
    );
    assert_eq!(
        jobs[0]["inputs"],
        serde_json::json!(["v/a.txt", "v/a.old.txt"])
    );
    assert_eq!(jobs[0]["args"], serde_json::json!({"ref": "v/a.old.txt"}));
    assert_eq!(jobs[1]["inputs"], serde_json::json!(["v/b.txt"]));
    assert_eq!(jobs[1]["args"], serde_json::json!({}));
    assert_eq!(jobs[1]["status"], "pending");

    // A required file argument not given at all is a usage error that shows a template.
    let out = env.zhi().args(["plan", "compare", "v"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("file2"), "{}", stderr(&out));
}

#[test]
fn a_missing_pair_is_a_failed_record_in_run_and_never_reaches_the_model() {
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        "retry: {max_attempts: 2, base_delay_ms: 10, max_delay_ms: 20}\n",
    );
    env.write("v/a.txt", "Version two of the price list: tea 12 yuan.\n");
    env.write(
        "v/a.old.txt",
        "Version one of the price list: tea 10 yuan.\n",
    );
    env.write(
        "v/b.txt",
        "A document without its old version: LONELY-MARKER.\n",
    );
    let api = FakeApi::always(Reply::text("Tea went from 10 to 12 yuan."));
    let out = env
        .zhi()
        .args([
            "--no-progress",
            "run",
            "compare",
            "v/a.txt",
            "v/b.txt",
            "-a",
            "file2={dir}/{stem}.old{ext}",
            "-o",
            "out",
            "--base-url",
            &api.base_url(),
        ])
        .output()
        .unwrap();
    assert_exit(&out, Exit::JobsFailed);
    let runs: Vec<_> = std::fs::read_dir(env.path("out/.zhi/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1);
    let text = std::fs::read_to_string(runs[0].join("results.jsonl")).unwrap();
    let records: BTreeMap<String, Value> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["input"].as_str().unwrap().to_owned(), v)
        })
        .collect();
    assert_eq!(records.len(), 2, "{text}");
    assert_eq!(records["v/a.txt"]["status"], "succeeded", "{text}");
    let b = &records["v/b.txt"];
    assert_eq!(b["status"], "failed", "{b}");
    assert_eq!(b["error"]["kind"], "input_error", "{b}");
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap()
            .contains("v/b.old.txt"),
        "{b}"
    );
    // The model saw the pair of a.txt, and nothing of b.txt.
    let chats = api.chat_requests();
    assert!(!chats.is_empty());
    assert!(chats.iter().any(|r| r.body_text.contains("Version two")));
    assert!(chats.iter().all(|r| !r.body_text.contains("LONELY-MARKER")));
    assert!(chats.iter().all(|r| !r.body_text.contains("v/b.txt")));
    // The plan ids and the record ids agree.
    let plan = plan_json(
        &env,
        &[
            "compare",
            "v/a.txt",
            "v/b.txt",
            "-a",
            "file2={dir}/{stem}.old{ext}",
            "-o",
            "out",
        ],
    );
    for job in &plan {
        let input = job["inputs"][0].as_str().unwrap();
        assert_eq!(records[input]["job_id"], job["job_id"], "{input}");
    }
    assert_eq!(plan[0]["status"], "cached", "{}", plan[0]);
    assert_eq!(plan[1]["status"], "will-fail", "{}", plan[1]);
}

#[test]
fn a_jobs_file_plans_several_skills() {
    let env = TestEnv::new();
    touch(&env, "reports/q1.txt");
    touch(&env, "reports/q2.txt");
    touch(&env, "docs/guide.md");
    touch(&env, "docs/drafts/wip.md");
    env.write(
        "jobs.yaml",
        "jobs:\n  - skill: summarize\n    inputs: [reports/]\n  - skill: translate\n    inputs: [\"docs/**/*.md\", reports/q1.txt]\n    args: {to: english}\n    exclude: [drafts]\n",
    );
    let jobs = plan_json(&env, &["--jobs", "jobs.yaml"]);
    let got: Vec<(String, String, Value)> = jobs
        .iter()
        .map(|j| {
            (
                j["skill"].as_str().unwrap().to_owned(),
                j["inputs"][0].as_str().unwrap().to_owned(),
                j["args"].clone(),
            )
        })
        .collect();
    let none = serde_json::json!({});
    let english = serde_json::json!({"to": "english"});
    assert_eq!(
        got,
        [
            ("summarize".into(), "reports/q1.txt".into(), none.clone()),
            ("summarize".into(), "reports/q2.txt".into(), none),
            ("translate".into(), "docs/guide.md".into(), english.clone()),
            ("translate".into(), "reports/q1.txt".into(), english),
        ]
    );
    // The same document under two skills is two jobs with two ids.
    let ids: BTreeSet<&str> = jobs.iter().map(|j| j["job_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 4);
    // The ids are those of planning each skill on its own.
    let alone = plan_json(&env, &["translate", "reports/q1.txt", "-a", "to=english"]);
    assert_eq!(alone[0]["job_id"], jobs[3]["job_id"]);

    // A jobs file plus inputs on the command line, and a jobs file with an unknown skill.
    let out = env
        .zhi()
        .args(["plan", "--jobs", "jobs.yaml", "docs"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    env.write("bad.yaml", "- skill: summarise\n  inputs: [docs]\n");
    let out = env
        .zhi()
        .args(["plan", "--jobs", "bad.yaml"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("summarise"), "{}", stderr(&out));
}

#[test]
fn job_ids_are_stable_across_runs_and_shards() {
    let env = TestEnv::new();
    for i in 0..12 {
        touch(&env, &format!("docs/d{i:02}.txt"));
    }
    let ids = |args: &[&str]| -> Vec<(String, String)> {
        plan_json(&env, args)
            .iter()
            .map(|j| {
                (
                    j["inputs"][0].as_str().unwrap().to_owned(),
                    j["job_id"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let full = ids(&["summarize", "docs"]);
    assert_eq!(full.len(), 12);
    // Again, and with another output folder: the same ids.
    assert_eq!(ids(&["summarize", "docs"]), full);
    assert_eq!(ids(&["summarize", "docs", "-o", "elsewhere"]), full);
    // The ids depend on the skill and the arguments.
    let translated = ids(&["translate", "docs"]);
    let english = ids(&["translate", "docs", "-a", "to=english"]);
    for ((a, b), c) in full.iter().zip(&translated).zip(&english) {
        assert_ne!(a.1, b.1);
        assert_ne!(b.1, c.1);
    }
    // Every shard keeps the ids of the whole plan; together the shards are the whole plan.
    let all: BTreeMap<String, String> = full.iter().cloned().collect();
    for n in [2, 3] {
        let mut seen = BTreeMap::new();
        for m in 1..=n {
            let shard = format!("{m}/{n}");
            for (input, id) in ids(&["summarize", "docs", "--shard", &shard]) {
                assert_eq!(all.get(&input), Some(&id), "{input} in shard {shard}");
                assert!(seen.insert(input, shard.clone()).is_none());
            }
        }
        assert_eq!(seen.len(), 12, "shards of {n}");
    }
    // Kubernetes and GitLab shard variables give the same ids.
    let out = env
        .zhi()
        .env("JOB_COMPLETION_INDEX", "0")
        .env("ZHI_SHARD_TOTAL", "2")
        .args(["--json", "plan", "summarize", "docs"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    for line in stdout(&out).lines() {
        let j: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            all.get(j["inputs"][0].as_str().unwrap())
                .map(String::as_str),
            j["job_id"].as_str()
        );
    }
}

#[test]
fn usage_errors_exit_2_with_a_clear_message_and_no_request() {
    let env = TestEnv::new();
    touch(&env, "docs/a.txt");
    let api = FakeApi::always(Reply::text("should never be asked"));
    let base = api.base_url();
    env.write("bad.json", "this is not JSON {");
    let cases: [(&[&str], &str); 8] = [
        (
            &["summarize", "docs", "-a", "style=short"],
            "has no argument `style`",
        ),
        // The preflight `run` makes before it sends anything, `plan` makes too.
        (&["extract", "docs", "-a", "schema=bad.json"], "bad.json"),
        (&["extract", "docs", "-a", "schema=nope.json"], "nope.json"),
        (&["summarize", "docs", "--audit", "1"], "--audit compares"),
        (
            &["summarise", "docs"],
            "unknown skill `summarise`; did you mean `summarize`?",
        ),
        (
            &["summarize", "docs/nope.txt"],
            "input `docs/nope.txt` does not exist",
        ),
        (&["translate", "docs", "-a", "to"], "must be KEY=VALUE"),
        (&["summarize"], "no inputs"),
    ];
    for command in ["plan", "run"] {
        for (args, needle) in &cases {
            let out = env
                .zhi()
                .arg(command)
                .args(*args)
                .args(["--base-url", &base, "-o", "out"])
                .output()
                .unwrap();
            let err = stderr(&out);
            assert_exit_for(&out, Exit::Usage, format!("{command} {args:?}"));
            assert!(err.contains(needle), "{command} {args:?}: {err}");
            assert!(stdout(&out).is_empty(), "{command} {args:?}");
        }
    }
    assert_eq!(api.count(), 0, "a usage error sent a request");
    assert!(
        !env.path("out/.zhi/runs").exists(),
        "a usage error started a run"
    );
}

#[test]
fn plan_makes_no_network_request() {
    let env = TestEnv::new();
    touch(&env, "docs/a.txt");
    env.write("docs/p.pdf", crate::support::corpus::hello_pdf());
    // A port nobody listens on, no key: planning still works.
    let out = env
        .zhi()
        .args([
            "plan",
            "summarize",
            "docs",
            "--base-url",
            "http://127.0.0.1:1/v1",
        ])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert!(stdout(&out).contains("docs/p.pdf"), "{}", stdout(&out));
    // The default remote API and no key: still no need for either.
    let out = env
        .zhi()
        .args(["plan", "summarize", "docs", "--ocr", "glm-ocr"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    // A server that counts: nothing arrives, also with a key set.
    let api = FakeApi::always(Reply::text("no"));
    let out = env
        .zhi()
        .env("ZHI_API_KEY", "sk-test")
        .args(["plan", "summarize", "docs", "--base-url", &api.base_url()])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert_eq!(api.count(), 0);
}

#[test]
fn plan_shows_the_extraction_kind_and_a_token_estimate() {
    let env = TestEnv::new();
    // Equal byte sizes: 300 ideographs (900 bytes of UTF-8) and 900 Latin characters.
    let zh = "文".repeat(300);
    let en = "abcdefghi".repeat(100);
    assert_eq!(zh.len(), en.len());
    env.write("k/zh.txt", &zh);
    env.write("k/en.txt", &en);
    env.write("k/p.pdf", crate::support::corpus::hello_pdf());
    env.write("k/photo.png", tiny_png());
    env.write("k/sheet.xlsx", tiny_xlsx());
    env.write("k/setup.exe", b"MZ");
    let jobs = plan_json(&env, &["summarize", "k"]);
    let by_input: BTreeMap<&str, &Value> = jobs
        .iter()
        .map(|j| (j["inputs"][0].as_str().unwrap(), j))
        .collect();
    let kind = |i: &str| by_input[i]["extraction"].as_str().unwrap().to_owned();
    let tokens = |i: &str| by_input[i]["document_tokens"].as_u64().unwrap();
    assert_eq!(kind("k/zh.txt"), "text");
    assert_eq!(kind("k/en.txt"), "text");
    assert_eq!(kind("k/p.pdf"), "pdf");
    assert_eq!(kind("k/photo.png"), "ocr");
    assert_eq!(kind("k/sheet.xlsx"), "office");
    // CJK: one token per character; Latin: one per four characters.
    assert_eq!(tokens("k/zh.txt"), 300);
    assert_eq!(tokens("k/en.txt"), 225);
    assert!(tokens("k/p.pdf") > 0);
    assert!(tokens("k/photo.png") > 0);

    // The table has the same columns (the skill, one for all, is named under it), its
    // figure the whole request's; with -v the method is stated.
    let out = env
        .zhi()
        .args(["-v", "plan", "summarize", "k"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let table = stdout(&out);
    let row = |name: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name} in {table}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let whole = |i: &str| {
        by_input[i]["estimated_tokens"]
            .as_u64()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        row("k/zh.txt")[2..],
        ["text", "pending", &whole("k/zh.txt")]
    );
    assert_eq!(
        row("k/en.txt")[2..],
        ["text", "pending", &whole("k/en.txt")]
    );
    assert_eq!(row("k/p.pdf")[2], "pdf");
    assert_eq!(row("k/photo.png")[2], "ocr");
    assert_eq!(row("k/sheet.xlsx")[2], "office");
    assert_eq!(row("k/setup.exe")[2..4], ["unsupported", "will-fail"]);
    let err = stderr(&out);
    assert!(
        err.contains("CJK characters 1 token each"),
        "the method is stated: {err}"
    );
}

/// A PDF is estimated from its text layer and its pages, not its size: a page of 68
/// characters in a file padded to 200 kB (as embedded fonts pad real ones) is about 17 tokens,
/// not 20,000; a page without text counts as a page to OCR; a PDF that cannot be read is
/// estimated from its size, and the table marks that figure as rough.
#[test]
fn plan_estimates_a_pdf_from_its_text_layer_not_its_size() {
    use crate::support::corpus::{BOX, HELLO, byte_flipped, one_page_pdf, stream, text_content};
    let env = TestEnv::new();
    let padded = one_page_pdf(
        BOX,
        "",
        &text_content(HELLO),
        &[stream("", &vec![b'x'; 200_000])],
    );
    assert!(padded.len() > 200_000);
    env.write("k/padded.pdf", &padded);
    env.write("k/scan.pdf", one_page_pdf(BOX, "", b"", &[]));
    env.write("k/broken.pdf", byte_flipped(&padded));
    let jobs = plan_json(&env, &["summarize", "k"]);
    let by_input: BTreeMap<&str, &Value> = jobs
        .iter()
        .map(|j| (j["inputs"][0].as_str().unwrap(), j))
        .collect();
    let estimate = |i: &str| {
        (
            by_input[i]["document_tokens"].as_u64().unwrap(),
            by_input[i]["estimated_from"].as_str().unwrap().to_owned(),
        )
    };
    let (tokens, from) = estimate("k/padded.pdf");
    assert!((15..=25).contains(&tokens), "{tokens} tokens");
    assert_eq!(from, "text");
    assert_eq!(estimate("k/scan.pdf"), (1000, "text_and_pages".into()));
    let (tokens, from) = estimate("k/broken.pdf");
    assert_eq!(from, "size");
    assert!(tokens > 1000, "{tokens}");

    let out = env.zhi().args(["plan", "summarize", "k"]).output().unwrap();
    assert_exit(&out, Exit::Success);
    let table = stdout(&out);
    let last = |name: &str| {
        table
            .lines()
            .find(|l| l.contains(name))
            .and_then(|l| l.split_whitespace().last())
            .unwrap_or_default()
            .to_owned()
    };
    assert!(last("broken.pdf").starts_with('~'), "{table}");
    assert!(!last("padded.pdf").starts_with('~'), "{table}");
    let err = stderr(&out);
    assert!(err.contains("~: estimated from the file's size"), "{err}");
}

/// A 2×2 PNG.
fn tiny_png() -> Vec<u8> {
    let img = image::GrayImage::from_pixel(2, 2, image::Luma([200u8]));
    let mut bytes = std::io::Cursor::new(Vec::new());
    img.write_to(&mut bytes, image::ImageFormat::Png).unwrap();
    bytes.into_inner()
}

fn tiny_xlsx() -> Vec<u8> {
    let mut book = rust_xlsxwriter::Workbook::new();
    book.add_worksheet().write_string(0, 0, "cell").unwrap();
    book.save_to_buffer().unwrap()
}

#[test]
fn plan_table_snapshot() {
    let env = TestEnv::new();
    env.write("reports/q3.txt", "Q3 revenue grew 12% on exports.\n");
    env.write(
        "reports/2024/年报.md",
        "# 年度报告\n\n收入增长百分之十二。\n",
    );
    env.write("reports/scan.png", tiny_png());
    env.write("reports/old/q2.pdf", crate::support::corpus::hello_pdf());
    env.write("reports/.draft.txt", "hidden\n");
    let out = env
        .zhi()
        .args(["plan", "summarize", "reports", "--exclude", "old"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    crate::zhi_snapshot!(&env, &out);
}

/// Two inputs of one name from different folders outside the working folder would share one
/// job folder (`summarize/x.md`): the plan is refused before anything runs, naming both, and
/// no message advises deleting a folder.
#[test]
fn two_inputs_that_would_share_a_job_folder_are_refused_naming_both() {
    let env = TestEnv::new();
    env.write("a/x.md", "Alpha notes.\n");
    env.write("b/x.md", "Beta notes.\n");
    std::fs::create_dir_all(env.path("w")).unwrap();
    for cmd in ["plan", "run"] {
        let out = env
            .zhi()
            .current_dir(env.path("w"))
            .args([
                cmd,
                "summarize",
                "../a/x.md",
                "../b/x.md",
                "--base-url",
                "http://127.0.0.1:9/v1",
            ])
            .output()
            .unwrap();
        assert_exit(&out, Exit::Usage);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("a/x.md and ") && err.contains("b/x.md would"),
            "{err}"
        );
        assert!(err.contains("summarize/x.md"), "{err}");
        assert!(!err.contains("delete"), "{err}");
    }
    assert!(!env.path("w/zhi-output/summarize").exists());
}

#[test]
fn a_folder_laid_out_like_its_twin_is_refused_in_a_plan_of_one_folder() {
    // One folder, walked once: zhi holds nothing to tell its jobs apart, except for names that
    // can become another's on the way to the output folder (`.zhi` is laid out as `_zhi`).
    let env = TestEnv::new();
    touch(&env, "docs/.zhi/a.txt");
    touch(&env, "docs/_zhi/a.txt");
    touch(&env, "docs/b.txt");
    let out = env
        .zhi()
        .args(["plan", "summarize", "docs", "--hidden"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    let err = stderr(&out);
    assert!(
        err.contains("docs/.zhi/a.txt and docs/_zhi/a.txt would both write to"),
        "{err}"
    );
    assert_eq!(
        planned(&env, &["summarize", "docs"]),
        ["docs/_zhi/a.txt", "docs/b.txt"]
    );
}

/// A plan past the jobs zhi keeps in memory (4,096) is kept in a temporary file: `zhi plan`
/// and `zhi run` see every job, in order, sharded as before, and the manifest names them all.
#[test]
fn a_plan_of_thousands_of_documents_is_whole_in_order_and_split_by_shards() {
    let env = TestEnv::new();
    const N: usize = 5000;
    for i in 0..N {
        env.write(
            &format!("v/{:02}/{i:05}.txt", i % 7),
            format!("Document {i}.\n"),
        );
    }
    let mut want: Vec<String> = (0..N)
        .map(|i| format!("v/{:02}/{i:05}.txt", i % 7))
        .collect();
    want.sort();
    // A paired file that is missing fails every job while planning: no request is made.
    let args = ["compare", "v", "-a", "file2={dir}/{stem}.old{ext}"];
    let plan = plan_json(&env, &args);
    let inputs: Vec<&str> = plan
        .iter()
        .map(|j| j["inputs"][0].as_str().unwrap())
        .collect();
    assert_eq!(inputs, want);
    assert!(plan.iter().all(|j| j["status"] == "will-fail"));
    let ids: Vec<&str> = plan.iter().map(|j| j["job_id"].as_str().unwrap()).collect();

    // No temporary folder to keep it in: the plan is held in memory, whole, and zhi says so.
    let out = env
        .zhi()
        .env("TMPDIR", env.path("no-such-folder"))
        .args(["--json", "plan"])
        .args(args)
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert!(
        stderr(&out).contains("cannot keep the plan in a temporary file (TMPDIR)")
            && stderr(&out).contains("it is held in memory"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out).lines().count(), N);

    let first = plan_json(&env, &[&args[..], &["--shard", "slice:1/2"]].concat());
    let second = plan_json(&env, &[&args[..], &["--shard", "slice:2/2"]].concat());
    let id_of = |j: &Value| j["job_id"].as_str().unwrap().to_owned();
    assert_eq!(
        first.iter().chain(&second).map(id_of).collect::<Vec<_>>(),
        ids
    );
    assert_eq!(first.len(), N / 2);

    let out = env
        .zhi()
        .args(["--no-progress", "run"])
        .args(args)
        .args(["-o", "out", "--base-url", "http://127.0.0.1:9/v1"])
        .args(["--shard", "hash:2/3"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::JobsFailed);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("out/manifest.json")).unwrap())
            .unwrap();
    let planned: Vec<&str> = manifest["planned_job_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(planned, ids, "the manifest names every job of the plan");
    let results =
        std::fs::read_to_string(std::path::Path::new(manifest["results"].as_str().unwrap()))
            .unwrap();
    let ours: Vec<String> = plan_json(&env, &[&args[..], &["--shard", "hash:2/3"]].concat())
        .iter()
        .map(id_of)
        .collect();
    let recorded: Vec<String> = results
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["job_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        recorded, ours,
        "a record per job of the shard, in plan order"
    );
    assert_eq!(manifest["counts"]["planned"], ours.len());
    assert_eq!(manifest["counts"]["failed"], ours.len());
}

#[test]
fn a_folder_that_holds_the_current_folder_never_lays_two_jobs_out_in_one_folder() {
    // Run from `home/proj` over `..`: `proj/u/notes.txt` is shown as `u/notes.txt`, and
    // `home/notes.txt` by its path, laid out under the input folder's name — `home/notes.txt`.
    // Named `u`, that folder would be laid out as `u/notes.txt` too.
    let env = TestEnv::new();
    touch(&env, "u/notes.txt");
    touch(&env, "u/proj/u/notes.txt");
    for (cwd, input) in [("u/proj", ".."), ("u/proj", "../**/*.txt")] {
        for cmd in ["plan", "run"] {
            let out = env
                .zhi()
                .current_dir(env.path(cwd))
                .args([
                    cmd,
                    "summarize",
                    input,
                    "--base-url",
                    "http://127.0.0.1:9/v1",
                ])
                .output()
                .unwrap();
            assert_exit(&out, Exit::Usage);
            let err = stderr(&out);
            assert!(
                err.contains("u/notes.txt would both write to")
                    && err.contains("summarize/u/notes.txt"),
                "{cmd} {input}: {err}"
            );
        }
        assert!(!env.path(&format!("{cwd}/zhi-output/summarize")).exists());
    }
}

/// An environment variable and its value.
type Var = (&'static str, &'static str);

/// Half a shard specification (issue 36): `ZHI_SHARD_TOTAL` without `JOB_COMPLETION_INDEX`,
/// `CI_NODE_INDEX` without `CI_NODE_TOTAL`, would have every process run the whole plan. Each is
/// a usage error naming both variables, before any request; Slurm's impossible count of 0 is
/// refused without advising `--array=1-0`. GitLab's `CI_NODE_TOTAL=1` alone (a job that is not
/// parallel) is no shard: the whole plan runs.
#[test]
fn half_a_shard_specification_is_a_usage_error_naming_the_variables() {
    let env = TestEnv::new();
    touch(&env, "docs/a.txt");
    touch(&env, "docs/b.txt");
    let api = FakeApi::always(Reply::text("A summary of the document, in a line."));
    let base = api.base_url();
    let slurm_empty: &[Var] = &[
        ("SLURM_ARRAY_TASK_ID", "1"),
        ("SLURM_ARRAY_TASK_MIN", "1"),
        ("SLURM_ARRAY_TASK_MAX", "1"),
        ("SLURM_ARRAY_TASK_COUNT", "0"),
    ];
    let cases: [(&[Var], &[&str]); 4] = [
        (
            &[("ZHI_SHARD_TOTAL", "3")],
            &["ZHI_SHARD_TOTAL", "JOB_COMPLETION_INDEX", "--shard M/N"],
        ),
        (
            &[("CI_NODE_INDEX", "2")],
            &["CI_NODE_INDEX", "CI_NODE_TOTAL", "--shard M/N"],
        ),
        (
            &[("CI_NODE_TOTAL", "3")],
            &["CI_NODE_TOTAL", "CI_NODE_INDEX"],
        ),
        (slurm_empty, &["SLURM_ARRAY_TASK_COUNT=0", "--shard M/N"]),
    ];
    for (vars, want) in cases {
        for command in ["run", "plan"] {
            let mut cmd = env.zhi();
            for (k, v) in vars {
                cmd.env(k, v);
            }
            let o = cmd
                .args([
                    command,
                    "summarize",
                    "docs",
                    "-o",
                    "out",
                    "--base-url",
                    &base,
                ])
                .output()
                .unwrap();
            let case = format!("{command} with {vars:?}");
            assert_exit_for(&o, Exit::Usage, &case);
            let err = stderr(&o);
            for w in want {
                assert!(err.contains(w), "{case}: {w} in {err}");
            }
            assert!(!err.contains("--array=1-0"), "{case}: {err}");
        }
    }
    assert_eq!(api.count(), 0, "nothing was sent");
    assert!(!env.path("out").exists(), "nothing was written");

    let o = env
        .zhi()
        .env("CI_NODE_TOTAL", "1")
        .args(["run", "summarize", "docs", "-o", "out", "--no-progress"])
        .args(["--base-url", &base])
        .output()
        .unwrap();
    assert_ne!(
        o.status.code(),
        Some(2),
        "{}",
        crate::support::testenv::show(&o)
    );
    assert_eq!(env.latest_records("out").len(), 2, "the whole plan ran");
}

/// A `will-fail` job says why under its row; a file zhi cannot read is one, with the
/// `--exclude` that leaves it out (docs/cli.md#zhi-plan).
#[test]
fn plan_says_why_a_job_will_fail_and_which_exclude_skips_an_unsupported_file() {
    let env = TestEnv::new();
    touch(&env, "docs/a.txt");
    env.write("docs/blob.bin", [0u8, 1, 2, 3]);
    let out = env
        .zhi()
        .env("COLUMNS", "80")
        .args([
            "plan",
            "summarize",
            "docs",
            "--base-url",
            "http://127.0.0.1:1/v1",
        ])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let table = stdout(&out);
    let row = table
        .lines()
        .position(|l| l.contains("docs/blob.bin"))
        .unwrap();
    assert!(
        table.lines().nth(row).unwrap().contains("will-fail"),
        "{table}"
    );
    let note = table.lines().nth(row + 1).unwrap();
    assert!(
        note.contains("unsupported_type") && note.contains("--exclude '*.bin'"),
        "{table}"
    );
    assert!(stderr(&out).contains("1 will fail"), "{}", stderr(&out));
    let jobs = plan_json(&env, &["summarize", "docs"]);
    let blob = jobs
        .iter()
        .find(|j| j["inputs"][0] == "docs/blob.bin")
        .unwrap();
    assert_eq!(blob["status"], "will-fail");
    assert_eq!(blob["error"]["kind"], "unsupported_type");
    assert!(
        blob["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--exclude '*.bin'")
    );
    // With the exclude the plan is clean.
    let jobs = plan_json(&env, &["summarize", "docs", "--exclude", "*.bin"]);
    assert!(jobs.iter().all(|j| j["status"] == "pending"), "{jobs:?}");
}

/// The estimate counts the whole prompt: the system prompt, the message around the document,
/// an extraction's fields, summarize's instruction; the document's own figure is given beside
/// it.
#[test]
fn plan_estimates_the_whole_request_not_only_the_document() {
    let env = TestEnv::new();
    env.write("docs/a.txt", "word ".repeat(400));
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "invoice_number": {"type": "string", "description": "The invoice number as written"},
            "total": {"type": "number", "description": "The total to pay, tax included"}
        },
        "required": ["invoice_number", "total"]
    });
    env.write("s.json", schema.to_string());
    // Summarize asks in one message: its instruction (some 150 characters) before the text.
    // An extraction's system prompt, fields and task are tens of tokens more.
    for (args, wrapping) in [
        (&["summarize", "docs"][..], 30),
        (&["extract", "docs", "-a", "schema=s.json"][..], 50),
    ] {
        let job = &plan_json(&env, args)[0];
        let (all, doc) = (
            job["estimated_tokens"].as_u64().unwrap(),
            job["document_tokens"].as_u64().unwrap(),
        );
        assert_eq!(doc, 500, "{args:?}: {job}");
        assert!(all > doc + wrapping, "{args:?}: {job}");
    }
    let summarize = plan_json(&env, &["summarize", "docs"])[0]["estimated_tokens"].clone();
    let extract =
        plan_json(&env, &["extract", "docs", "-a", "schema=s.json"])[0]["estimated_tokens"].clone();
    assert_ne!(summarize, extract, "the schema's fields count");
}

/// How the estimate is made is said with `-v` only, never under `-q`; a missing key is a
/// warning (the run would stop there), not an error: a plan sends nothing.
#[test]
fn plan_explains_its_estimate_only_when_asked_and_notes_a_missing_key() {
    let env = TestEnv::new();
    touch(&env, "docs/a.txt");
    let explained = |extra: &[&str]| {
        let out = env
            .zhi()
            .args(extra)
            .args(["plan", "summarize", "docs"])
            .output()
            .unwrap();
        assert_exit(&out, Exit::Success);
        stderr(&out)
    };
    let plain = explained(&[]);
    assert!(!plain.contains("token estimate:"), "{plain}");
    assert!(
        plain.contains("`zhi run` would stop here (exit 2)"),
        "{plain}"
    );
    assert!(explained(&["-v"]).contains("token estimate:"));
    let quiet = explained(&["-q"]);
    assert!(
        !quiet.contains("token estimate:") && !quiet.contains("would stop"),
        "{quiet}"
    );
}

/// A job folder a person changed (its `summary.md` deleted, the folder kept) is `will-fail` in
/// the plan, with the reason the run then fails it with (`output_conflict`); the run sends
/// nothing for it. Plan and run share one preflight (issue 47).
#[test]
fn a_job_folder_a_person_changed_will_fail_in_the_plan_as_in_the_run() {
    let env = TestEnv::new();
    touch(&env, "docs/a.txt");
    touch(&env, "docs/b.txt");
    let api = FakeApi::always(Reply::text("# Summary\n\nA note."));
    let base = api.base_url();
    let run = || {
        env.zhi()
            .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
            .args(["--base-url", &base])
            .output()
            .unwrap()
    };
    assert_exit(&run(), Exit::Success);
    assert_eq!(api.chat_requests().len(), 2);
    std::fs::remove_file(env.path("out/summarize/docs/a.txt/summary.md")).unwrap();
    assert!(env.path("out/summarize/docs/a.txt").is_dir());

    let jobs = plan_json(&env, &["summarize", "docs", "-o", "out"]);
    let by_input = |input: &str| {
        jobs.iter()
            .find(|j| j["inputs"][0] == input)
            .unwrap()
            .clone()
    };
    let a = by_input("docs/a.txt");
    assert_eq!(a["status"], "will-fail", "{a}");
    assert_eq!(a["error"]["kind"], "output_conflict", "{a}");
    assert_eq!(a["estimated_tokens"], 0, "{a}");
    assert_eq!(by_input("docs/b.txt")["status"], "cached");
    // The table says so, the reason under the row.
    let out = env
        .zhi()
        .args(["plan", "summarize", "docs", "-o", "out"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let table = stdout(&out);
    let row = table
        .lines()
        .position(|l| l.contains("docs/a.txt"))
        .unwrap();
    assert!(
        table.lines().nth(row).unwrap().contains("will-fail"),
        "{table}"
    );
    assert!(
        table.lines().nth(row + 1).unwrap().contains("was changed"),
        "{table}"
    );
    assert!(stderr(&out).contains("1 will fail"), "{}", stderr(&out));

    // The run fails it as the plan said, without a request.
    let out = run();
    assert_exit(&out, Exit::JobsFailed);
    assert_eq!(api.chat_requests().len(), 2, "a request was sent");
    let record = crate::support::testenv::records_by_input(&env.path("out"))
        .remove("docs/a.txt")
        .unwrap();
    assert_eq!(record["error"]["kind"], a["error"]["kind"], "{record}");
    assert_eq!(
        record["error"]["message"], a["error"]["message"],
        "{record}"
    );
}
