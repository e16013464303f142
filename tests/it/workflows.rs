//! Composed skills as steps, and one acceptance pipeline for every declared file
//! (docs/skills.md#workflows, docs/skills.md#declared-outputs): a workflow's steps run in
//! order of their inputs, each one request for a direct skill; a failing step fails the job
//! naming it; junk is refused whoever wrote it.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, assert_exit, record, run_skill as run, show};
use serde_json::json;
use std::time::Duration;
use zhi::exit::Exit;

const FAST: &str = "retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n";

fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", FAST);
    env
}

const CONTRACT: &str = "Service agreement between Northwind Ltd and Brightpath GmbH. The \
    provider runs the warehouse system for a monthly fee of EUR 4,800, payable within 30 days. \
    The term is 24 months from 1 April 2026 and renews for 12 months unless notice is given 90 \
    days before. Liability is limited to the fees of the preceding 3 months.\n";

/// What a direct request of each builtin step is answered with, told by its system prompt.
fn contract_answers(r: &Recorded) -> Reply {
    let system = r.system_prompt().unwrap_or_default();
    if system.contains("You review a contract") {
        Reply::text(
            "## Summary\nNorthwind pays Brightpath EUR 4,800 a month for 24 months from 1 April \
             2026.\n\n## Risks\n- Automatic renewal for 12 months unless notice is given 90 days \
             before: put a reminder in the calendar.\n\n## Recommendation\nNegotiate the \
             liability cap of 3 months of fees.\n\nThis is an automated review, not legal advice.",
        )
    } else if r.last_user_text().unwrap_or_default().contains("v1.txt") {
        Reply::text(
            "# Comparison\n\nThe fee changed from EUR 4,200 to EUR 4,800 a month, and the \
             notice period from 60 to 90 days; the rest of the agreement is the same.",
        )
    } else {
        Reply::text(
            "# Analysis\n\nA 24-month service agreement: EUR 4,800 a month, payable within 30 \
             days, renewing for 12 months; liability capped at 3 months of fees, which is low \
             for the client.",
        )
    }
}

#[test]
fn contract_review_is_three_direct_requests_and_records_its_steps() {
    let env = env();
    env.write("docs/c.txt", CONTRACT);
    env.write(
        "docs/c.v1.txt",
        CONTRACT
            .replace("4,800", "4,200")
            .replace("90 days", "60 days"),
    );
    let api = FakeApi::start(contract_answers);
    let out = run(
        &env,
        &api,
        "contract-review",
        &["docs/c.txt", "-a", "file2=docs/c.v1.txt"],
    );
    assert_exit(&out, Exit::Success);
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 3, "{}", show(&out));
    assert!(reqs.iter().all(|r| r.tools_offered().is_empty()));
    let job = env.path("out/contract-review/docs/c.txt");
    for f in ["review.md", "analysis.md", "comparison.md"] {
        assert!(job.join(f).is_file(), "{f}: {}", show(&out));
    }
    // The review was given the contract and both steps' outputs.
    let review = reqs
        .iter()
        .find(|r| r.system_prompt().unwrap_or_default().contains("You review"))
        .unwrap();
    let msg = review.last_user_text().unwrap();
    assert!(
        msg.contains("EUR 4,800") && msg.contains("analysis.md") && msg.contains("comparison.md"),
        "{msg}"
    );
    let r = record(&env, "docs/c.txt");
    let steps: Vec<(&str, &str)> = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(steps.len(), 3, "{r}");
    assert!(steps.contains(&("analysis", "succeeded")), "{r}");
    assert!(steps.contains(&("comparison", "succeeded")), "{r}");
    assert_eq!(steps.last(), Some(&("review", "succeeded")), "{r}");
    assert_eq!(r["requests"], 3, "{r}");
    assert!(r.get("extra_files").is_none(), "{r}");
}

#[test]
fn a_step_whose_condition_does_not_hold_is_skipped_and_costs_nothing() {
    let env = env();
    env.write("docs/c.txt", CONTRACT);
    let api = FakeApi::start(contract_answers);
    let out = run(&env, &api, "contract-review", &["docs/c.txt"]);
    assert_exit(&out, Exit::Success);
    assert_eq!(api.chat_requests().len(), 2, "{}", show(&out));
    let r = record(&env, "docs/c.txt");
    let comparison = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "comparison")
        .unwrap()
        .clone();
    assert_eq!(comparison["status"], "skipped", "{r}");
    assert!(
        !env.path("out/contract-review/docs/c.txt/comparison.md")
            .exists()
    );
}

/// A user workflow: two independent summaries of one document, then a join.
const TWO_STEPS: &str = "name: twice\ndescription: Two views of a document\nsteps:\n  \
    - {id: first, skill: summarize}\n  \
    - {id: second, skill: meeting-notes}\n  \
    - {id: both, join: [first, second], output: both.md}\n\
    output:\n  files: [both.md]\n";

#[test]
fn steps_without_dependencies_run_at_once() {
    let env = env();
    env.project_skill("twice.yaml", TWO_STEPS);
    env.write("docs/a.txt", "The board met on 3 May and approved the budget of 2.1 million for the new plant in Suzhou.\n");
    let api = FakeApi::start(|_| {
        Reply::delay(
            Duration::from_millis(700),
            Reply::text(
                "The board approved a budget of 2.1 million for the Suzhou plant on 3 May.",
            ),
        )
    });
    let out = run(&env, &api, "twice", &["docs/a.txt", "-j", "2"]);
    assert_exit(&out, Exit::Success);
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 2, "{}", show(&out));
    // Both requests were in flight together: the second arrived before the first was answered.
    let gap = reqs[1].at.duration_since(reqs[0].at);
    assert!(gap < Duration::from_millis(500), "{gap:?}: {}", show(&out));
    let both = std::fs::read_to_string(env.path("out/twice/docs/a.txt/both.md")).unwrap();
    assert_eq!(both.matches("Suzhou").count(), 2, "{both}");
}

#[test]
fn a_failing_step_fails_the_job_naming_the_step() {
    let env = env();
    env.project_skill("twice.yaml", TWO_STEPS);
    env.write("docs/a.txt", "The board met on 3 May and approved the budget of 2.1 million for the new plant in Suzhou.\n");
    let api = FakeApi::start(|r: &Recorded| {
        if r.system_prompt().unwrap_or_default().contains("meeting") {
            Reply::text("{\"name\": \"end\"}")
        } else {
            Reply::text("The board approved 2.1 million for the Suzhou plant on 3 May.")
        }
    });
    let out = run(&env, &api, "twice", &["docs/a.txt", "-j", "1"]);
    assert_exit(&out, Exit::JobsFailed);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["error"]["kind"], "missing_output", "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("step `second`"), "{msg}");
    assert!(msg.contains("JSON or a tool call"), "{msg}");
    assert!(!env.path("out/twice/docs/a.txt").exists());
}

/// An agent skill: two declared Markdown files, so it runs the loop with file_write.
const AGENT: &str = "name: two-notes\ndescription: Notes and facts\nsystem_prompt: Write notes and facts.\n\
    tools: [file_read, file_write]\nmax_turns: 4\noutput:\n  files: [notes.md, facts.md]\n";

/// A test world with the two-file agent skill and one document.
fn agent_env() -> TestEnv {
    let env = env();
    env.project_skill("two-notes.yaml", AGENT);
    env.write(
        "docs/a.txt",
        "Revenue rose 12% in the third quarter, driven by exports to Asia.\n",
    );
    env
}

/// One turn of `file_write` calls, one per (path, content).
fn writes(files: &[(&str, &str)]) -> Reply {
    Reply::tool_calls(
        files
            .iter()
            .map(|(path, content)| ("file_write", json!({"path": path, "content": content})))
            .collect(),
    )
}

#[test]
fn an_agent_that_writes_json_or_a_tool_call_as_text_fails_missing_output() {
    let env = agent_env();
    let api = FakeApi::start(|r: &Recorded| {
        if !r.has_tool_result() {
            writes(&[
                ("notes.md", "{\"name\": \"end\"}"),
                ("facts.md", "Revenue rose 12% in the third quarter."),
            ])
        } else {
            Reply::text("{\"name\": \"skill_analyze\", \"arguments\": {\"file\": \"docs/a.txt\"}}")
        }
    });
    let out = run(&env, &api, "two-notes", &["docs/a.txt"]);
    assert_exit(&out, Exit::JobsFailed);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["error"]["kind"], "missing_output", "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("notes.md"),
        "{r}"
    );
    // The write of JSON into notes.md was refused, saying why.
    let refused = api.chat_requests()[1].tool_results();
    assert!(refused[0].content.contains("not written"), "{refused:?}");
    assert!(!env.path("out/two-notes/docs/a.txt").exists());
}

#[test]
fn files_the_skill_does_not_declare_are_listed_and_empty_ones_dropped() {
    let env = agent_env();
    let api = FakeApi::start(|r: &Recorded| {
        if !r.has_tool_result() {
            writes(&[
                (
                    "notes.md",
                    "Revenue rose in the third quarter because exports to Asia grew.",
                ),
                ("facts.md", "- Revenue: up 12% in the third quarter."),
                ("scratch.md", "draft of the notes before editing them"),
                ("empty.md", ""),
            ])
        } else {
            Reply::text("done")
        }
    });
    let out = run(&env, &api, "two-notes", &["docs/a.txt"]);
    assert_exit(&out, Exit::Success);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["extra_files"], json!(["scratch.md"]), "{r}");
    assert!(!env.path("out/two-notes/docs/a.txt/empty.md").exists());
}

#[test]
fn a_direct_skill_called_as_a_tool_is_one_direct_request() {
    let env = env();
    env.project_skill(
        "brief-agent.yaml",
        "name: brief-agent\ndescription: A brief\nsystem_prompt: Use skill_summarize, then write brief.md and data.md.\n\
         tools: [file_write, summarize]\nmax_turns: 4\noutput:\n  files: [brief.md, data.md]\n",
    );
    env.write(
        "docs/a.txt",
        "Revenue rose 12% in the third quarter, driven by exports to Asia.\n",
    );
    let api = FakeApi::start(|r: &Recorded| {
        let offered = r.tools_offered();
        if offered.is_empty() {
            // The nested summarize: one direct request holding the document.
            assert!(r.last_user_text().unwrap().contains("exports to Asia"));
            Reply::text("Revenue grew 12% in the third quarter on Asian exports.")
        } else if !r.has_tool_result() {
            Reply::tool_calls(vec![(
                "skill_summarize",
                json!({"file": "docs/a.txt", "input": "summarize"}),
            )])
        } else if r.tool_results().len() == 1 {
            writes(&[
                (
                    "brief.md",
                    "Revenue grew in the third quarter thanks to exports.",
                ),
                ("data.md", "- growth: 12% in the third quarter"),
            ])
        } else {
            Reply::text("done")
        }
    });
    let out = run(&env, &api, "brief-agent", &["docs/a.txt"]);
    assert_exit(&out, Exit::Success);
    let direct = api
        .chat_requests()
        .into_iter()
        .filter(|r| r.tools_offered().is_empty())
        .count();
    assert_eq!(direct, 1, "{}", show(&out));
    assert!(env.path("out/brief-agent/docs/a.txt/summary.md").is_file());
}

#[test]
fn figures_the_document_does_not_hold_are_asked_once_then_reported() {
    let env = env();
    env.write(
        "docs/a.txt",
        "The release moved from 20 October to 3 November; 37 tickets came in this month.\n",
    );
    let api = FakeApi::always(Reply::text(
        "The release moved to 3 November after 37 tickets; it ships in Q3 2027.",
    ));
    let out = run(&env, &api, "summarize", &["docs/a.txt"]);
    assert_exit(&out, Exit::Success);
    assert_eq!(api.chat_requests().len(), 2, "{}", show(&out));
    let second = api.chat_requests()[1].last_user_text().unwrap();
    assert!(second.contains("Q3") && second.contains("2027"), "{second}");
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["ungrounded_figures"], json!(["Q3", "2027"]), "{r}");
    assert!(
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("2027")),
        "{r}"
    );
}

#[test]
fn a_summary_of_headings_only_is_refused() {
    let env = env();
    env.write(
        "docs/a.txt",
        "The quarterly report covers revenue, costs and hiring in detail. ".repeat(20),
    );
    let api = FakeApi::always(Reply::text(
        "## Part 1 of 4\n# Long Document\n## Part 2 of 4\n# Long Document\n",
    ));
    let out = run(&env, &api, "summarize", &["docs/a.txt"]);
    assert_exit(&out, Exit::JobsFailed);
    let r = record(&env, "docs/a.txt");
    assert_eq!(r["error"]["kind"], "missing_output", "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("stub"),
        "{r}"
    );
    assert_eq!(api.chat_requests().len(), 2);
    // The rejected answer is kept with the failed job, for the person reading why.
    let failed = env.path("out/.zhi/failed");
    let kept = crate::support::testenv::files_under(&failed);
    assert!(
        kept.iter()
            .any(|p| p.to_string_lossy().ends_with("summary.md.rejected")),
        "{kept:?}"
    );
}

#[test]
fn skills_validate_names_a_workflow_that_writes_no_declared_file() {
    let env = env();
    env.project_skill(
        "bad.yaml",
        "name: bad\ndescription: d\nsteps:\n  - {id: a, skill: summarize}\noutput:\n  files: [report.md]\n",
    );
    let out = env.zhi().args(["skills", "validate"]).output().unwrap();
    assert_exit(&out, Exit::Usage);
    let err = crate::support::testenv::stderr(&out);
    assert!(
        err.contains("report.md") && err.contains("no step writes it"),
        "{err}"
    );
}

/// The summary the fake gives of each note, told by its text (a summarize request does not
/// name its document).
fn note_summary(r: &Recorded) -> String {
    let doc = r.document_text();
    let what = if doc.starts_with("Sales:") {
        "Two customers signed contracts and the pipeline for the fourth quarter grew."
    } else if doc.starts_with("Incident:") {
        "The nightly backup failed because the disk was full; old snapshots were deleted."
    } else {
        "The payment gateway bug is fixed and a load test went well on Friday."
    };
    what.to_string()
}

fn notes_env() -> TestEnv {
    let env = env();
    env.write("notes/sales.txt", "Sales: Harbor Foods and Keller Bau signed; the pipeline for the fourth quarter grew again this week.\n");
    env.write("notes/incident.txt", "Incident: the nightly backup failed because the backup disk was full; snapshots older than a month were deleted.\n");
    env.write("notes/standup.txt", "Standup: the payment gateway timeout bug is fixed and deployed; the load test on Friday went well.\n");
    env
}

#[test]
fn daily_digest_is_a_request_per_document_and_one_overview() {
    let env = notes_env();
    let api = FakeApi::start(|r: &Recorded| {
        if r.system_prompt()
            .unwrap_or_default()
            .contains("short summaries")
        {
            Reply::text(
                "# Digest\n\nTwo customers signed, the backup failed on a full disk and the payment bug is fixed.",
            )
        } else {
            Reply::text(note_summary(r))
        }
    });
    let out = run(&env, &api, "daily-digest", &["notes"]);
    assert_exit(&out, Exit::Success);
    let reqs = api.chat_requests();
    assert_eq!(reqs.len(), 4, "{}", show(&out));
    // A note's summary is summarize's one message, each note's text sent once.
    let mut sent: Vec<String> = reqs
        .iter()
        .filter(|r| r.is_one_message())
        .map(|r| {
            r.document_text()
                .split(':')
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    sent.sort();
    assert_eq!(sent, ["Incident", "Sales", "Standup"]);
    let digest = std::fs::read_to_string(env.path("out/daily-digest/notes/digest.md")).unwrap();
    assert!(digest.starts_with("# Digest"), "{digest}");
    for part in [
        "customers signed contracts",
        "disk was full",
        "load test went well",
    ] {
        assert!(digest.contains(part), "{part}: {digest}");
    }
}

#[test]
fn an_overview_that_is_one_documents_summary_is_a_copy() {
    let env = notes_env();
    let api = FakeApi::start(|r: &Recorded| {
        if r.system_prompt()
            .unwrap_or_default()
            .contains("short summaries")
        {
            Reply::text(
                "The nightly backup failed because the disk was full; old snapshots were deleted.",
            )
        } else {
            Reply::text(note_summary(r))
        }
    });
    let out = run(&env, &api, "daily-digest", &["notes"]);
    // The overview is optional: refused as a copy, it is left out, and the digest is the
    // summaries.
    assert_exit(&out, Exit::Success);
    let r = record(&env, "notes");
    let overview = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "overview")
        .unwrap()
        .clone();
    assert_eq!(overview["status"], "failed", "{r}");
    assert!(overview["reason"].as_str().unwrap().contains("copy"), "{r}");
    let digest = std::fs::read_to_string(env.path("out/daily-digest/notes/digest.md")).unwrap();
    assert!(digest.starts_with("## notes/"), "{digest}");
    assert_eq!(digest.matches("disk was full").count(), 1, "{digest}");
}

const REPORT: &str = "Quarterly report\n\nSales rose 12 percent to 4.8 million euros in the \
    third quarter. The new plant in Pune opened on 3 September and employs 140 people. Costs \
    of the move were 0.6 million euros, paid from the reserve.\n";

/// What report-polish's steps are answered with: the proofread text with its table of changes,
/// then `polished` — the same sentences under headings, as a polishing of a clean report is.
fn polish_answers(polished: &'static str) -> impl Fn(&Recorded) -> Reply + Send + 'static {
    move |r: &Recorded| {
        if r.system_prompt()
            .unwrap_or_default()
            .contains("Rewrite the report")
        {
            Reply::text(polished)
        } else {
            Reply::text(format!(
                "# Quarterly report\n\n{}\n| # | original | correction | reason |\n|---|---|---|---|\n| 1 | employs 140 people | employs 140 people | check |\n",
                REPORT.trim_start_matches("Quarterly report\n\n")
            ))
        }
    }
}

/// A polished report is judged as what it is, the report rendered whole: a text that keeps
/// the proofread sentences is not "a copy of the input"; one that leaves a figure out is kept,
/// doubted for it.
#[test]
fn a_polished_report_is_judged_as_the_report_rewritten() {
    const POLISHED: &str = "# Quarterly report\n\n## Sales\n\nSales rose 12 percent to 4.8 million euros in the third quarter.\n\n## The new plant\n\nThe new plant in Pune opened on 3 September and employs 140 people. Costs of the move were 0.6 million euros, paid from the reserve.\n";
    let env = env();
    env.write("docs/q3.txt", REPORT);
    let api = FakeApi::start(polish_answers(POLISHED));
    let out = run(&env, &api, "report-polish", &["docs/q3.txt"]);
    assert_exit(&out, Exit::Success);
    let r = record(&env, "docs/q3.txt");
    assert_eq!(r["status"], "succeeded", "{r}");
    assert!(r.get("doubts").is_none(), "{r}");
    let polished =
        std::fs::read_to_string(env.path("out/report-polish/docs/q3.txt/polished.md")).unwrap();
    assert_eq!(polished.trim(), POLISHED.trim());
    // The plant's staff left out: kept, and doubted for the figure it lost.
    let env = self::env();
    env.write("docs/q3.txt", REPORT);
    let api = FakeApi::start(polish_answers(
        "# Quarterly report\n\n## Sales\n\nSales rose 12 percent to 4.8 million euros in the third quarter.\n\n## The new plant\n\nThe new plant in Pune opened on 3 September. Costs of the move were 0.6 million euros, paid from the reserve.\n",
    ));
    let out = run(&env, &api, "report-polish", &["docs/q3.txt"]);
    assert_exit(&out, Exit::Success);
    let r = record(&env, "docs/q3.txt");
    let doubts = r["doubts"].as_array().cloned().unwrap_or_default();
    assert!(
        doubts.iter().any(|d| d["check"] == "figures"
            && d["file"] == "polished.md"
            && d["detail"].as_str().unwrap().contains("140")),
        "{r}"
    );
}
