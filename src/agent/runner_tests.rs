//! The agent loop on a scripted model: what it sends, what it counts, when it stops. The fake
//! API server's tests (`tests/it`) check the same loop through HTTP; these check it alone,
//! turn by turn.

use super::*;
use crate::agent::sandbox::Sandbox;
use crate::llm::{ApiError, ChatReply, ToolCall, Usage};
use std::collections::VecDeque;
use std::sync::Mutex;

/// A model that answers from a script, in order, and keeps every request it was sent.
#[derive(Default)]
struct Scripted {
    replies: Mutex<VecDeque<Result<ChatReply, ApiError>>>,
    seen: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    fn new(replies: Vec<Result<ChatReply, ApiError>>) -> Arc<Self> {
        Arc::new(Scripted {
            replies: Mutex::new(replies.into()),
            seen: Mutex::default(),
        })
    }

    fn seen(&self) -> Vec<ChatRequest> {
        self.seen.lock().unwrap().clone()
    }
}

impl Chat for Scripted {
    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ChatReply, ApiError>> {
        self.seen.lock().unwrap().push(req.clone());
        let next = self.replies.lock().unwrap().pop_front();
        Box::pin(async move { next.expect("the model was asked more often than scripted") })
    }
}

fn reply(message: Message, finish: &str) -> Result<ChatReply, ApiError> {
    Ok(ChatReply {
        message,
        finish_reason: Some(finish.to_string()),
        usage: Usage {
            prompt_tokens: 100,
            completion_tokens: 10,
            total_tokens: None,
        },
        attempts: 1,
        model: Some("scripted".into()),
    })
}

fn text(content: &str) -> Result<ChatReply, ApiError> {
    reply(Message::assistant(content), "stop")
}

fn calls(calls: &[(&str, Value)]) -> Result<ChatReply, ApiError> {
    let calls = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall::new(format!("call_{i}"), *name, args.to_string()))
        .collect();
    reply(
        Message {
            role: crate::llm::Role::Assistant,
            tool_calls: Some(calls),
            ..Message::default()
        },
        "tool_calls",
    )
}

fn skill(yaml: &str) -> Skill {
    crate::skills::load_str(
        yaml.as_bytes(),
        crate::skills::SkillSource::File("t.yaml".into()),
    )
    .expect("a valid skill")
    .skill
}

const AGENT: &str = "name: notes\ndescription: Notes on a document\nsystem_prompt: Write notes.\ntools: [file_read, file_write]\nmax_turns: 4\noutput:\n  files: [notes.md]\n";

/// An output folder, an input document and the loop's environment on `model`.
struct Fixture {
    _dir: tempfile::TempDir,
    out: std::path::PathBuf,
    env: AgentEnv,
}

fn fixture(model: Arc<Scripted>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let input = dir.path().join("report.txt");
    std::fs::write(&input, "Sales rose in the north and fell in the south.\n").unwrap();
    let sandbox = Sandbox::builder(&out)
        .input("report.txt", &input)
        .build()
        .unwrap();
    let env = AgentEnv {
        client: model,
        skills: Arc::new(SkillSet::default()),
        toolbox: super::super::tools::Toolbox::new(),
        tools: ToolEnv::plain(sandbox),
        model: "glm-4-flash".into(),
        max_tokens: Some(512),
        temperature: None,
        repeat_penalty: None,
        retry_penalty: Some(0.5),
        cancel: CancellationToken::new(),
        label: "report.txt".into(),
        transcript: Arc::new(Transcript::none()),
        batch: None,
        spent: Some(Arc::new(AtomicU64::new(0))),
    };
    Fixture {
        _dir: dir,
        out,
        env,
    }
}

fn expect(files: &[&str]) -> Expected {
    let source: Arc<str> = Arc::from("Sales rose in the north and fell in the south.\n");
    Expected {
        declared: files
            .iter()
            .map(|f| Acceptance::composed(f, Some(source.clone()), None))
            .collect(),
    }
}

async fn run(
    f: &Fixture,
    skill: &Skill,
    expected: &Expected,
) -> (Result<String, JobError>, AgentStats) {
    let mut stats = AgentStats::default();
    let result = run_skill(
        &f.env,
        skill,
        "Input document: report.txt".into(),
        Vec::new(),
        &mut stats,
        expected,
    )
    .await;
    (result, stats)
}

#[tokio::test]
async fn the_loop_ends_as_soon_as_the_declared_file_is_written() {
    let model = Scripted::new(vec![
        calls(&[("file_read", json!({"path": "report.txt"}))]),
        calls(&[(
            "file_write",
            json!({"path": "notes.md", "content": "# Notes\n\nNorth up, south down.\n"}),
        )]),
    ]);
    let f = fixture(model.clone());
    let (result, stats) = run(&f, &skill(AGENT), &expect(&["notes.md"])).await;
    assert_eq!(result.unwrap(), "");
    assert_eq!(
        std::fs::read_to_string(f.out.join("notes.md")).unwrap(),
        "# Notes\n\nNorth up, south down.\n"
    );
    // Two requests: no third turn to confirm what is already on disk.
    let seen = model.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!((stats.turns, stats.requests, stats.tool_calls), (2, 2, 2));
    assert_eq!(stats.refused_tool_calls, 0);
    assert_eq!(stats.tokens.prompt, 200);
    assert_eq!(stats.tokens.completion, 20);
    assert_eq!(stats.served_model.as_deref(), Some("scripted"));
    // The tokens reached the progress display as each answer came.
    let spent = f.env.spent.as_ref().unwrap().load(Ordering::Relaxed);
    assert_eq!(spent, 220);
    // The second request carries the document, answering the first call by its id.
    let answer = seen[1].messages.last().unwrap();
    assert_eq!(answer.tool_call_id.as_deref(), Some("call_0"));
    assert!(
        answer.content.as_deref().unwrap().contains("Sales rose"),
        "{answer:?}"
    );
    // Every request but the last offers the tools.
    assert!(seen.iter().all(|r| !r.tools.is_empty()));
    assert_eq!(seen[0].max_tokens, Some(512));
}

#[tokio::test]
async fn a_call_outside_the_output_folder_is_refused_and_counted() {
    let model = Scripted::new(vec![
        calls(&[
            (
                "file_write",
                json!({"path": "../../escape.md", "content": "x"}),
            ),
            ("no_such_tool", json!({})),
        ]),
        calls(&[(
            "file_write",
            json!({"path": "notes.md", "content": "# Notes\n\nNorth up, south down.\n"}),
        )]),
    ]);
    let f = fixture(model.clone());
    let (result, stats) = run(&f, &skill(AGENT), &expect(&["notes.md"])).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!((stats.tool_calls, stats.refused_tool_calls), (3, 2));
    assert!(
        !f.out
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .join("escape.md")
            .exists()
    );
    // Both refusals went back to the model, in call order, saying why.
    let back: Vec<String> = model.seen()[1]
        .messages
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .map(|m| m.content.clone().unwrap_or_default())
        .collect();
    assert_eq!(back.len(), 2);
    assert!(back[0].starts_with("refused"), "{back:?}");
    assert!(
        back[1].contains("there is no tool `no_such_tool`"),
        "{back:?}"
    );
}

#[tokio::test]
async fn an_answer_without_the_file_gets_one_corrective_turn_naming_it() {
    let model = Scripted::new(vec![text("I have written the notes."), text("Done.")]);
    let f = fixture(model.clone());
    let (result, stats) = run(&f, &skill(AGENT), &expect(&["notes.md"])).await;
    // The loop returns; the job's caller finds notes.md missing and fails the job.
    assert!(result.is_ok(), "{result:?}");
    assert!(!f.out.join("notes.md").exists());
    let seen = model.seen();
    assert_eq!(seen.len(), 2, "one corrective turn, no more");
    assert_eq!(stats.turns, 2);
    let correction = seen[1].messages.last().unwrap().content.clone().unwrap();
    assert!(correction.starts_with("Not done yet"), "{correction}");
    assert!(correction.contains("`notes.md`"), "{correction}");
}

#[tokio::test]
async fn a_plain_answer_that_is_content_becomes_the_missing_file() {
    let model = Scripted::new(vec![text(
        "# Notes\n\nSales went up in the north; the south saw a decline.\n",
    )]);
    let f = fixture(model.clone());
    let (result, _) = run(&f, &skill(AGENT), &expect(&["notes.md"])).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(model.seen().len(), 1);
    let notes = std::fs::read_to_string(f.out.join("notes.md")).unwrap();
    assert!(notes.contains("south saw a decline"), "{notes}");
}

#[tokio::test]
async fn the_last_turn_offers_no_tools_and_a_model_that_still_calls_them_hits_max_turns() {
    let read = || calls(&[("file_read", json!({"path": "report.txt"}))]);
    let model = Scripted::new(vec![read(), read(), read(), read()]);
    let f = fixture(model.clone());
    let (result, stats) = run(&f, &skill(AGENT), &expect(&["notes.md"])).await;
    let err = result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::MaxTurns, "{err:?}");
    let seen = model.seen();
    assert_eq!(seen.len(), 4, "max_turns 4");
    assert!(seen[..3].iter().all(|r| !r.tools.is_empty()));
    assert!(seen[3].tools.is_empty(), "the last turn offers no tools");
    assert_eq!(
        seen[3].messages.last().unwrap().content.as_deref(),
        Some(FINAL_TURN_NOTE)
    );
    // The calls of the last turn are not run.
    assert_eq!(stats.tool_calls, 3);
}

#[tokio::test]
async fn an_api_error_ends_the_loop_with_its_kind_and_its_attempts_counted() {
    let mut quota = ApiError::new(ErrorKind::Quota, false, "insufficient balance (1113)");
    quota.attempts = 1;
    let model = Scripted::new(vec![Err(quota)]);
    let f = fixture(model);
    let (result, stats) = run(&f, &skill(AGENT), &expect(&["notes.md"])).await;
    let err = result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Quota);
    assert!(err.message.contains("1113"), "{err:?}");
    assert_eq!((stats.requests, stats.turns), (1, 0));
}

#[tokio::test]
async fn a_cancelled_job_sends_nothing() {
    let model = Scripted::new(vec![]);
    let f = fixture(model.clone());
    f.env.cancel.cancel();
    let (result, _) = run(&f, &skill(AGENT), &expect(&["notes.md"])).await;
    assert_eq!(result.unwrap_err().kind, ErrorKind::Cancelled);
    assert!(model.seen().is_empty());
}

const DIRECT: &str = "name: gist\ndescription: The gist of a document\nsystem_prompt: Give the gist.\ntools: [file_read, file_write]\nmax_turns: 2\noutput:\n  description: gist.md, the gist\n  files: [gist.md]\nchunking: map-reduce\n";

async fn direct(f: &Fixture) -> (Result<std::path::PathBuf, JobError>, AgentStats) {
    let source = "Sales rose in the north and fell in the south.\n";
    let user = format!("Input document: report.txt\n\n{source}");
    ask_direct(f, source, user, false).await
}

/// The gist skill's direct request of `user` over `source`: asked in one message (a skill's
/// instruction, no system prompt) when `one_message`, else with the skill's system prompt.
async fn ask_direct(
    f: &Fixture,
    source: &str,
    user: String,
    one_message: bool,
) -> (Result<std::path::PathBuf, JobError>, AgentStats) {
    let mut stats = AgentStats::default();
    let skill = skill(DIRECT);
    let accept = Acceptance::new(
        &skill,
        &Default::default(),
        "gist.md",
        Some(Arc::from(source)),
    );
    let ask = if one_message {
        DirectAsk {
            name: "gist".into(),
            system: String::new(),
            user,
        }
    } else {
        DirectAsk::of(&skill, "gist.md", user)
    };
    let result = run_direct(&f.env, ask, &accept, &mut stats).await;
    (result, stats)
}

#[tokio::test]
async fn direct_mode_is_one_request_without_tools() {
    let model = Scripted::new(vec![text("North up, south down.")]);
    let f = fixture(model.clone());
    let (result, stats) = direct(&f).await;
    assert_eq!(result.unwrap(), std::path::Path::new("gist.md"));
    assert_eq!(
        std::fs::read_to_string(f.out.join("gist.md")).unwrap(),
        "North up, south down.\n"
    );
    let seen = model.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].tools.is_empty());
    assert_eq!(stats.requests, 1);
}

#[tokio::test]
async fn a_copy_of_the_input_is_asked_afresh_with_a_penalty_then_fails_the_job() {
    let copy = || text("Sales rose in the north and fell in the south.");
    let model = Scripted::new(vec![copy(), copy()]);
    let f = fixture(model.clone());
    let (result, stats) = direct(&f).await;
    let err = result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::MissingOutput, "{err:?}");
    assert!(err.message.contains("copy"), "{err:?}");
    assert!(!f.out.join("gist.md").exists(), "no junk left behind");
    let seen = model.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(stats.requests, 2);
    // The second request starts afresh (no copy shown back), says what was wrong, and
    // carries the frequency penalty.
    assert_eq!(seen[0].frequency_penalty, None);
    assert_eq!(seen[1].frequency_penalty, Some(0.5));
    assert_eq!(seen[1].messages.len(), 2);
    let asked = seen[1].messages[1].content.as_deref().unwrap();
    assert!(asked.contains("Do not copy the document out"), "{asked}");
}

#[tokio::test]
async fn an_answer_cut_at_the_length_limit_is_never_saved() {
    let cut = || reply(Message::assistant("North up, south"), "length");
    let model = Scripted::new(vec![cut(), cut(), cut()]);
    let f = fixture(model.clone());
    let (result, _) = direct(&f).await;
    assert_eq!(result.unwrap_err().kind, ErrorKind::Truncated);
    assert!(!f.out.join("gist.md").exists());
    assert_eq!(model.seen().len(), DIRECT_ROUNDS as usize);
}

/// A five-line report for the condensing tests: its three short lines are most of its
/// sentences (a near copy) but not most of its text (a copy).
const REPORT: &str = "Sales rose in the north.\n\
The south fell behind.\n\
Prices stayed flat.\n\
The board expects the south to recover once a new regional team has been hired and trained, \
which it plans to do before the autumn, and it will review the whole plan again at that point.\n\
Costs of transport grew faster than sales in every region this year, mostly because of fuel \
and of the longer routes that the closing of the old depot in the east made necessary.\n";

/// The direct request of the gist skill over [`REPORT`], in one message when `one_message`.
async fn condensing(
    f: &Fixture,
    one_message: bool,
) -> (Result<std::path::PathBuf, JobError>, AgentStats) {
    let user = format!("Give the gist of this report:\n\n{REPORT}");
    ask_direct(f, REPORT, user, one_message).await
}

#[tokio::test]
async fn a_near_copy_is_asked_once_more_in_own_words_and_the_own_words_kept() {
    let lines: Vec<&str> = REPORT.lines().collect();
    let reordered = [lines[2], lines[0], lines[1]].join("\n");
    let own = "The north grew and the south shrank, while costs of transport rose everywhere.";
    let model = Scripted::new(vec![text(&reordered), text(own)]);
    let f = fixture(model.clone());
    let (result, stats) = condensing(&f, false).await;
    assert_eq!(result.unwrap(), std::path::Path::new("gist.md"));
    assert_eq!(
        std::fs::read_to_string(f.out.join("gist.md"))
            .unwrap()
            .trim(),
        own
    );
    let seen = model.seen();
    assert_eq!((seen.len(), stats.requests), (2, 2));
    // Asked afresh (the copy is not shown back), naming what was wrong, with the penalty.
    assert_eq!(seen[1].messages.len(), 2);
    let asked = seen[1].messages[1].content.as_deref().unwrap();
    assert!(
        asked.contains("Do not copy sentences out of the text"),
        "{asked}"
    );
    assert_eq!(seen[1].frequency_penalty, Some(0.5));
}

#[tokio::test]
async fn a_near_copy_asked_again_that_copies_again_is_kept_once_for_the_judge() {
    let lines: Vec<&str> = REPORT.lines().collect();
    let first = [lines[2], lines[0], lines[1]].join("\n");
    let second = [lines[1], lines[2], lines[0]].join("\n");
    let model = Scripted::new(vec![text(&first), text(&second)]);
    let f = fixture(model.clone());
    let (result, _) = condensing(&f, false).await;
    // Both copy: the first stands (no third request), and the judge's doubt will say so.
    assert!(result.is_ok());
    assert_eq!(model.seen().len(), 2);
    assert_eq!(
        std::fs::read_to_string(f.out.join("gist.md"))
            .unwrap()
            .trim(),
        first
    );
}

#[tokio::test]
async fn a_condensing_cut_at_the_length_limit_is_asked_not_to_copy() {
    let cut = reply(Message::assistant(REPORT), "length");
    let model = Scripted::new(vec![cut, text("The north grew; the south shrank.")]);
    let f = fixture(model.clone());
    let (result, _) = condensing(&f, false).await;
    assert!(result.is_ok());
    let seen = model.seen();
    let asked = seen[1].messages.last().unwrap().content.as_deref().unwrap();
    assert!(asked.contains("Do not copy the document out"), "{asked}");
}

#[tokio::test]
async fn one_message_is_sent_as_a_plain_request_and_its_fresh_try_with_the_penalties() {
    let lines: Vec<&str> = REPORT.lines().collect();
    let copy = [lines[2], lines[0], lines[1]].join("\n");
    let model = Scripted::new(vec![text(&copy), text("The north grew; the south shrank.")]);
    let mut f = fixture(model.clone());
    f.env.repeat_penalty = Some(1.15);
    let (result, _) = condensing(&f, true).await;
    assert!(result.is_ok());
    let seen = model.seen();
    assert_eq!(
        seen[0].messages.len(),
        1,
        "one user message, no system prompt"
    );
    assert_eq!(
        (seen[0].repeat_penalty, seen[0].frequency_penalty),
        (None, None)
    );
    assert_eq!(
        (seen[1].repeat_penalty, seen[1].frequency_penalty),
        (Some(1.15), Some(0.5))
    );
}

#[tokio::test]
async fn a_framed_request_keeps_the_repetition_penalty() {
    let model = Scripted::new(vec![text("The north grew; the south shrank.")]);
    let mut f = fixture(model.clone());
    f.env.repeat_penalty = Some(1.15);
    let (result, _) = condensing(&f, false).await;
    assert!(result.is_ok());
    assert_eq!(model.seen()[0].repeat_penalty, Some(1.15));
}

#[tokio::test]
async fn a_refused_one_message_answer_is_asked_again_as_it_was_with_the_penalties() {
    // A heading alone: far less than the report, refused; asked again with nothing added
    // after the text (a line there made the 0.5B stop at the heading).
    let model = Scripted::new(vec![
        text("Sales"),
        text("The north grew; the south shrank; transport cost more."),
    ]);
    let mut f = fixture(model.clone());
    f.env.repeat_penalty = Some(1.15);
    let (result, _) = condensing(&f, true).await;
    assert!(result.is_ok(), "{result:?}");
    let seen = model.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].messages, seen[0].messages, "the same one message");
    assert_eq!(
        (seen[1].repeat_penalty, seen[1].frequency_penalty),
        (Some(1.15), Some(0.5))
    );
}
