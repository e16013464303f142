//! The chat client against the fake API, through the library: retries, classification,
//! Retry-After, cancellation, rate limits and key hygiene (docs/model-api.md).

use crate::support::{FakeApi, Recorded, Reply};
use serde_json::json;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use zhi::config::{ApiKey, RetryPolicy};
use zhi::error::ErrorKind;
use zhi::llm::{ApiError, ChatClient, ChatReply, ChatRequest, ClientSettings, Message, ToolDef};

const KEY: &str = "sk-test-0123456789abcdef";

/// Retries without real waiting: tests of the retry logic must be quick.
fn fast(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(10),
    }
}

fn settings(api: &FakeApi) -> ClientSettings {
    let mut s = ClientSettings::new(api.base_url(), Some(ApiKey::new(KEY)));
    s.retry = fast(5);
    s.timeout = Duration::from_secs(30);
    s
}

fn client(s: ClientSettings) -> ChatClient {
    ChatClient::new(s).expect("client")
}

fn request() -> ChatRequest {
    ChatRequest::new(
        "glm-4-flash",
        vec![Message::system("You summarise."), Message::user("hello")],
    )
}

async fn chat(client: &ChatClient) -> Result<ChatReply, ApiError> {
    client.chat(&request(), &CancellationToken::new()).await
}

#[tokio::test]
async fn sends_the_request_with_the_bearer_key_and_parses_the_reply() {
    let api = FakeApi::always(Reply::text("a summary").with_usage(120, 30));
    let c = client(settings(&api));
    let mut req = request();
    req.tools.push(ToolDef::function(
        "file_write",
        "Write a file",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    ));
    let reply = c.chat(&req, &CancellationToken::new()).await.unwrap();
    assert_eq!(reply.message.content.as_deref(), Some("a summary"));
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        (reply.usage.prompt_tokens, reply.usage.completion_tokens),
        (120, 30)
    );
    assert_eq!(reply.attempts, 1);

    let sent = api.chat_requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert_eq!(
        sent[0].header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(sent[0].model(), Some("glm-4-flash"));
    assert_eq!(sent[0].body["stream"], false);
    assert_eq!(sent[0].system_prompt().as_deref(), Some("You summarise."));
    assert_eq!(sent[0].tools_offered(), vec!["file_write"]);
    assert_eq!(c.requests_sent(), 1);
}

#[tokio::test]
async fn no_key_means_no_authorization_header() {
    let api = FakeApi::always(Reply::text("ok"));
    let mut s = settings(&api);
    s.api_key = None;
    chat(&client(s)).await.unwrap();
    assert_eq!(api.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn zhipu_style_base_and_tool_calls() {
    let api = FakeApi::always(Reply::tool_calls(vec![(
        "file_write",
        json!({"path": "summary.md", "content": "# Hi"}),
    )]));
    let mut s = settings(&api);
    s.base_url = format!("{}/", api.zhipu_base_url());
    let reply = chat(&client(s)).await.unwrap();
    assert_eq!(api.requests()[0].path, "/api/paas/v4/chat/completions");
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    let call = &reply.message.calls()[0];
    assert_eq!(call.function.name, "file_write");
    assert!(!call.id.is_empty());
    let args: serde_json::Value = serde_json::from_str(&call.function.arguments).unwrap();
    assert_eq!(args["path"], "summary.md");
}

#[tokio::test]
async fn retry_comes_no_sooner_than_retry_after() {
    let api = FakeApi::sequence(vec![
        Reply::zhipu_error(429, "1302", "rate limited").with_header("Retry-After", "2"),
        Reply::text("ok"),
    ]);
    let reply = chat(&client(settings(&api))).await.unwrap();
    assert_eq!(reply.attempts, 2);
    let reqs = api.requests();
    let gap = reqs[1].at - reqs[0].at;
    assert!(gap >= Duration::from_secs(2), "retried after only {gap:?}");
}

#[tokio::test]
async fn a_rate_limit_storm_is_ridden_out_and_signalled() {
    const N: usize = 3;
    let api = FakeApi::start(|req: &Recorded| {
        if req.seq < N {
            Reply::zhipu_error(429, "1302", "您的账户已达到速率限制")
        } else {
            Reply::text("finally")
        }
    });
    let c = client(settings(&api));
    let mut events = c.rate_limit_events();
    let reply = chat(&c).await.unwrap();
    assert_eq!(reply.attempts, N as u32 + 1);
    assert_eq!(reply.message.content.as_deref(), Some("finally"));
    assert_eq!(api.count(), N + 1);
    assert!(events.has_changed().unwrap());
    assert_eq!(*events.borrow_and_update(), N as u64);
    assert_eq!(c.requests_sent(), N as u64 + 1);
}

#[tokio::test]
async fn auth_and_quota_fail_after_exactly_one_request() {
    for (status, code, kind) in [
        (401, "1001", ErrorKind::Auth),
        (429, "1113", ErrorKind::Quota),
        (429, "1304", ErrorKind::Quota),
        (400, "1301", ErrorKind::ContentFilter),
        (400, "1261", ErrorKind::ContextTooLong),
        (400, "1214", ErrorKind::ApiError),
    ] {
        let api = FakeApi::always(Reply::zhipu_error(status, code, "no"));
        let c = client(settings(&api));
        let events = c.rate_limit_events();
        let err = chat(&c).await.unwrap_err();
        assert_eq!(err.kind, kind, "code {code}");
        assert!(!err.retryable, "code {code}");
        assert_eq!(err.code.as_deref(), Some(code));
        assert_eq!(err.status, Some(status));
        assert_eq!(err.attempts, 1);
        assert_eq!(api.count(), 1, "code {code} must not be retried");
        // Quota arrives as 429 but is not a rate-limit signal.
        assert!(!events.has_changed().unwrap(), "code {code}");
        assert_eq!(
            err.aborts_run(),
            matches!(kind, ErrorKind::Auth | ErrorKind::Quota)
        );
    }
}

#[tokio::test]
async fn a_sensitive_finish_is_a_content_filter_failure_without_retry() {
    let api = FakeApi::always(Reply::finish("sensitive"));
    let err = chat(&client(settings(&api))).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::ContentFilter);
    assert_eq!(api.count(), 1);
}

#[tokio::test]
async fn transient_failures_are_retried_until_success() {
    for (name, first) in [
        (
            "500",
            Reply::status(500, json!({"error": {"message": "oops"}})),
        ),
        ("502 html", Reply::raw(502, "<html>bad gateway</html>")),
        ("invalid json", Reply::raw(200, "{\"choices\": [")),
        ("not a completion", Reply::status(200, json!({"ok": true}))),
        ("network_error", Reply::finish("network_error")),
        ("cut off", Reply::cut_off("{\"choices\":[{\"message\"")),
        ("plain 429", Reply::raw(429, "slow down")),
    ] {
        let api = FakeApi::sequence(vec![first, Reply::text("ok")]);
        let reply = chat(&client(settings(&api))).await;
        let reply = reply.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(reply.attempts, 2, "{name}");
        assert_eq!(api.count(), 2, "{name}");
    }
}

#[tokio::test]
async fn exhausted_attempts_end_as_rate_limited() {
    let api = FakeApi::always(Reply::zhipu_error(429, "1302", "busy"));
    let err = chat(&client(settings(&api))).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::RateLimited);
    assert_eq!(err.attempts, 5);
    assert_eq!(api.count(), 5);
    assert!(err.to_string().contains("after 5 attempts"), "{err}");
    assert_eq!(err.to_job_error().kind, ErrorKind::RateLimited);
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_after_retries() {
    let api = FakeApi::always(Reply::hang());
    let mut s = settings(&api);
    s.timeout = Duration::from_secs(1);
    s.retry = fast(2);
    let err = chat(&client(s)).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert_eq!(err.attempts, 2);
    assert_eq!(api.count(), 2);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    // Bind and drop to find a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut s = ClientSettings::new(
        format!("http://127.0.0.1:{port}/v1"),
        Some(ApiKey::new(KEY)),
    );
    s.retry = fast(3);
    let err = chat(&client(s)).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::ApiError);
    assert!(err.retryable);
    assert_eq!(err.attempts, 3);
    assert!(
        err.message.starts_with("connection failed"),
        "{}",
        err.message
    );
    assert!(!format!("{err} {err:?}").contains(KEY));
}

#[tokio::test]
async fn cancellation_during_a_backoff_returns_promptly() {
    let api =
        FakeApi::always(Reply::zhipu_error(429, "1302", "busy").with_header("Retry-After", "60"));
    let c = client(settings(&api));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    // Without cancellation this would wait a minute; the guard only catches a hang.
    let result = tokio::time::timeout(Duration::from_secs(20), c.chat(&request(), &cancel))
        .await
        .expect("cancellation must end the backoff");
    let err = result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Cancelled);
    assert_eq!(err.attempts, 1);
    assert_eq!(api.count(), 1);
}

#[tokio::test]
async fn cancellation_aborts_an_in_flight_request() {
    let api = FakeApi::always(Reply::hang());
    let c = client(settings(&api));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let result = tokio::time::timeout(Duration::from_secs(20), c.chat(&request(), &cancel))
        .await
        .expect("cancellation must abort the request");
    assert_eq!(result.unwrap_err().kind, ErrorKind::Cancelled);
    // An already-cancelled token sends nothing at all.
    let before = api.count();
    let err = c.chat(&request(), &cancel).await.unwrap_err();
    assert_eq!((err.kind, err.attempts), (ErrorKind::Cancelled, 0));
    assert_eq!(api.count(), before);
}

#[tokio::test]
async fn rpm_spaces_requests_across_all_clones() {
    let api = FakeApi::always(Reply::text("ok"));
    let mut s = settings(&api);
    s.rpm = NonZeroU32::new(600);
    let c = client(s);
    let start = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..30 {
        let c = c.clone();
        workers.spawn(async move { chat(&c).await.map(|r| r.attempts) });
    }
    while let Some(done) = workers.join_next().await {
        assert_eq!(done.unwrap().unwrap(), 1);
    }
    // 600/min is one request per 100 ms: 30 requests span at least 29 intervals.
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_millis(2850),
        "30 requests took only {elapsed:?}"
    );
    assert_eq!(api.count(), 30);
}

#[tokio::test]
async fn the_key_never_appears_in_error_messages() {
    let api = FakeApi::sequence(vec![Reply::zhipu_error(
        401,
        "1002",
        &format!("Authorization Token非法: {KEY}"),
    )]);
    let err = chat(&client(settings(&api))).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth);
    assert_eq!(api.requests()[0].bearer(), Some(KEY));
    for text in [
        err.to_string(),
        format!("{err:?}"),
        err.to_job_error().message,
        format!("{:?}", client(settings(&api))),
    ] {
        assert!(!text.contains(KEY), "key leaked: {text}");
    }
    assert!(err.message.contains("<redacted>"), "{}", err.message);

    let api = FakeApi::always(Reply::raw(500, format!("upstream echoed {KEY}")));
    let mut s = settings(&api);
    s.retry = fast(1);
    let err = chat(&client(s)).await.unwrap_err();
    assert!(!format!("{err} {err:?}").contains(KEY));
}

#[tokio::test]
async fn send_gives_other_endpoints_the_same_retries() {
    let api = FakeApi::sequence(vec![
        Reply::raw(503, "busy"),
        Reply::status(200, json!({"md_results": "# Page 1"})),
    ]);
    let c = client(settings(&api));
    let url = format!("{}/layout_parsing", c.base_url());
    let response = c
        .send(
            |http| {
                http.post(&url)
                    .json(&json!({"model": "glm-ocr", "file": "data:..."}))
            },
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!((response.status, response.attempts), (200, 2));
    let value: serde_json::Value = response.json().unwrap();
    assert_eq!(value["md_results"], "# Page 1");
    let reqs = api.requests();
    assert!(reqs.iter().all(|r| r.path == "/v1/layout_parsing"));
    assert!(reqs.iter().all(|r| r.bearer() == Some(KEY)));
    assert_eq!(reqs[1].body["model"], "glm-ocr");

    // An empty 2xx (a DELETE) is fine; a quota error is final there too.
    let api = FakeApi::sequence(vec![
        Reply::raw(200, ""),
        Reply::zhipu_error(429, "1308", "quota"),
    ]);
    let c = client(settings(&api));
    let url = format!("{}/files/file-1", c.base_url());
    let cancel = CancellationToken::new();
    let deleted = c.send(|http| http.delete(&url), &cancel).await.unwrap();
    assert!(deleted.body.is_empty());
    let err = c.send(|http| http.delete(&url), &cancel).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Quota);
    assert_eq!(api.count(), 2);
}

/// How a test scripts a whole agent conversation: state lives in the closure.
#[tokio::test]
async fn a_stateful_script_drives_a_tool_loop() {
    let turns = Arc::new(AtomicUsize::new(0));
    let seen_results = Arc::new(Mutex::new(Vec::new()));
    let api = {
        let turns = Arc::clone(&turns);
        let seen_results = Arc::clone(&seen_results);
        FakeApi::start(move |req: &Recorded| {
            turns.fetch_add(1, Ordering::SeqCst);
            if req.has_tool_result() {
                seen_results.lock().unwrap().extend(req.tool_results());
                Reply::text("wrote summary.md")
            } else {
                Reply::tool_calls(vec![(
                    "file_write",
                    json!({"path": "summary.md", "content": "x"}),
                )])
            }
        })
    };
    let c = client(settings(&api));
    let cancel = CancellationToken::new();
    let mut req = request();
    let first = c.chat(&req, &cancel).await.unwrap();
    let call = first.message.calls()[0].clone();
    req.messages.push(first.message);
    req.messages.push(Message::tool_result(&call.id, "written"));
    let second = c.chat(&req, &cancel).await.unwrap();
    assert_eq!(second.message.content.as_deref(), Some("wrote summary.md"));
    assert_eq!(turns.load(Ordering::SeqCst), 2);
    let seen = seen_results.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].tool_call_id, call.id);
    assert_eq!(seen[0].content, "written");
    // The assistant turn went back exactly as received, tool call and all.
    let second_request = &api.requests()[1];
    let echoed = &second_request.messages()[2];
    assert_eq!(echoed["role"], "assistant");
    assert_eq!(echoed["tool_calls"][0]["function"]["name"], "file_write");
}

/// A rate limit slows the whole pool: after one request is told to wait, another worker's
/// request (on the same client) does not start before that wait is over either.
#[tokio::test]
async fn a_rate_limit_pauses_every_worker() {
    let api = FakeApi::sequence(vec![
        Reply::zhipu_error(429, "1302", "too many requests").with_header("Retry-After", "1"),
        Reply::text("ok"),
    ]);
    let c = client(settings(&api));
    let first = {
        let c = c.clone();
        tokio::spawn(async move { chat(&c).await })
    };
    // The second worker starts after the 429 has been answered.
    while api.count() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = chat(&c).await.unwrap();
    assert_eq!(second.attempts, 1);
    first.await.unwrap().unwrap();
    let reqs = api.requests();
    let limited_at = reqs[0].at;
    for r in &reqs[1..] {
        assert!(
            r.at.duration_since(limited_at) >= Duration::from_millis(990),
            "a request went out {:?} after the 429",
            r.at.duration_since(limited_at)
        );
    }
}

/// Against a self-hosted server with no `timeout` set, a request that ran out of time is tried
/// again with twice the limit, and later requests get their answer budget at the speed the
/// server showed (docs/model-api.md#request-time-limits); a limit that was set stays, and its
/// failure says where to give it longer.
#[tokio::test]
async fn a_slow_self_hosted_server_gets_limits_sized_from_its_speed() {
    let api = FakeApi::always(Reply::delay(
        Duration::from_millis(2500),
        Reply::text("a slow answer").with_usage(50, 100),
    ));
    let mut s = settings(&api);
    s.timeout = Duration::from_secs(1);
    s.size_timeout = true;
    let c = client(s);
    c.size_to_server();
    // 1 s, then 2 s, then 4 s: the third attempt is answered.
    let reply = chat(&c).await.unwrap();
    assert_eq!(reply.attempts, 3);
    // 100 tokens in about 2.5 s: a budget of 400 gets about 15 s, answered at once.
    let mut req = request();
    req.max_tokens = Some(400);
    let reply = c.chat(&req, &CancellationToken::new()).await.unwrap();
    assert_eq!(reply.attempts, 1);
    // A set limit stays: every attempt runs out of it.
    let mut s = settings(&api);
    s.timeout = Duration::from_secs(1);
    s.retry = fast(2);
    let c = client(s);
    c.size_to_server();
    let e = chat(&c).await.unwrap_err();
    assert_eq!((e.kind, e.attempts), (ErrorKind::Timeout, 2));
    let said = e.to_string();
    assert!(said.contains("no answer within 1 s"), "{said}");
    assert!(
        said.ends_with("; raise --timeout or `timeout:` in zhi.yaml"),
        "{said}"
    );
}
