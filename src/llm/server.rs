//! What a self-hosted model server can take: its context window and its parallel slots.
//!
//! Hosted providers' limits are known (the model budget table); a local llama.cpp, vLLM or
//! Ollama server runs whatever context size it was started with, often far below the model's
//! own. Splitting documents for the model's window would then fail every long job with
//! `context_too_long`, and `-j auto` would queue requests on a server with one slot. So, for a
//! base URL that is not a known provider, zhi asks the server once before the first job.
//!
//! The probe is best-effort: it never fails and never retries; anything it cannot learn is
//! `None`. Each request has a short time limit, and a server that does not answer at all ends
//! the probe (the run itself will report an unreachable server).

use crate::llm::client::ChatClient;
use serde_json::Value;
use std::time::Duration;

/// The limit for one probe request, connection to last body byte.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// A probe answer larger than this is not a status document; it is not read further.
const MAX_BODY: usize = 1 << 20;

/// What a model server said about itself. Every field is `None` when unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ServerInfo {
    /// `"llama.cpp"`, `"vllm"`, `"ollama"` or `"openai-compatible"`.
    pub kind: Option<String>,
    /// Tokens one request may use (prompt and answer), as the server is configured.
    pub context_window: Option<u32>,
    /// Requests the server works on at once (llama.cpp's slots).
    pub slots: Option<u32>,
    /// The model name the server reports (it may differ from the one asked for).
    pub model: Option<String>,
    /// What the server says it runs under that name, when it says more than the name: a
    /// llama.cpp server's model file (`qwen2.5-coder-0.5b-instruct.gguf` behind the alias
    /// `glm-4-flash`), a vLLM model's `root`. A local server often answers to the name zhi
    /// asks for whatever it runs; this is what it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_source: Option<String>,
}

impl ServerInfo {
    /// What the server runs, for a person: `qwen2.5-coder-0.5b-instruct.gguf`, or the model
    /// name when that is all it said.
    #[cfg(test)]
    pub(crate) fn runs(&self) -> Option<&str> {
        self.model_source.as_deref().or(self.model.as_deref())
    }
}

/// Whether `base_url` belongs to a hosted provider whose limits zhi knows (a host of the
/// providers' table, `crate::providers`, or a subdomain of one). Anything else (localhost, LAN
/// names, unknown hosts, a URL that does not parse) is probed.
pub(crate) fn is_known_provider(base_url: &str) -> bool {
    let Some(host) = reqwest::Url::parse(base_url.trim())
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
    else {
        return false;
    };
    crate::providers::is_known_host(host.trim_end_matches('.'))
}

/// Asks the server behind `client` for its context window, slots and model, in this order:
/// llama.cpp's `/props`, the OpenAI-style `/models` (vLLM's `max_model_len`), Ollama's
/// `/api/show`. Stops at the first answer that gives a context window. Never fails.
///
/// A server that names its slots gets no more requests at once than that from `client`
/// ([`ChatClient::hold_to_server_slots`]): whatever `-j` says, the rest wait in zhi, not in
/// the server's queue where their timeout would run out. And a server asked is self-hosted:
/// its chat requests' time limits are sized from its speed unless a `timeout` was set
/// ([`ChatClient::size_to_server`]).
pub(crate) async fn probe(client: &ChatClient, model: &str) -> ServerInfo {
    client.size_to_server();
    let info = probe_within(client, model, PROBE_TIMEOUT).await;
    if let Some(slots) = info.slots {
        client.hold_to_server_slots(slots);
    }
    info
}

/// [`probe`] with the per-request limit as a parameter, so tests need not wait 5 s.
async fn probe_within(client: &ChatClient, model: &str, limit: Duration) -> ServerInfo {
    // A query on the base (`?api-version=…`, `?api-key=…`) goes on every request, the probe's
    // included; the roots are worked out from the rest.
    let (base, query) = match client.base_url().split_once('?') {
        Some((b, q)) => (b.trim_end_matches('/'), format!("?{q}")),
        None => (client.base_url().trim_end_matches('/'), String::new()),
    };
    let roots = roots(base);
    let mut found = ServerInfo::default();

    for root in &roots {
        let answer = fetch(
            client,
            client.http().get(format!("{root}/props{query}")),
            limit,
        )
        .await;
        let Some(answer) = answer else {
            return found;
        };
        let info = answer.and_then(|v| from_llama_props(&v));
        log("llama.cpp /props", &info);
        if absorb(&mut found, info) {
            return found;
        }
    }

    let answer = fetch(
        client,
        client.http().get(format!("{base}/models{query}")),
        limit,
    )
    .await;
    let Some(answer) = answer else {
        return found;
    };
    let info = answer.and_then(|v| from_models(&v, model));
    log("/models", &info);
    if absorb(&mut found, info) {
        return found;
    }

    // `name` too: older Ollama versions read only that field.
    let show = serde_json::json!({ "model": model, "name": model });
    for root in &roots {
        let request = client
            .http()
            .post(format!("{root}/api/show{query}"))
            .json(&show);
        let Some(answer) = fetch(client, request, limit).await else {
            return found;
        };
        let info = answer.and_then(|v| from_ollama_show(&v));
        log("ollama /api/show", &info);
        if absorb(&mut found, info) {
            return found;
        }
    }
    found
}

/// Where the server's own (non-OpenAI) endpoints live. A base ending in `/v1` is the usual
/// layout (`http://host:8080/v1`), so its parent is the root; for any other base, both the
/// base itself (a proxy prefix) and the scheme-and-host root are tried.
fn roots(base: &str) -> Vec<String> {
    let base = base.trim_end_matches('/');
    if let Some(root) = base.strip_suffix("/v1") {
        return vec![root.to_owned()];
    }
    let mut roots = vec![base.to_owned()];
    if let Some(host_root) = reqwest::Url::parse(base)
        .ok()
        .and_then(|u| u.join("/").ok())
    {
        let host_root = host_root.as_str().trim_end_matches('/').to_owned();
        if host_root != base {
            roots.push(host_root);
        }
    }
    roots
}

/// One probe request. `None`: no answer at all (connection failed, or nothing within
/// `limit`), so the probe stops. `Some(None)`: an answer that is not a 2xx JSON document.
async fn fetch(
    client: &ChatClient,
    mut request: reqwest::RequestBuilder,
    limit: Duration,
) -> Option<Option<Value>> {
    if let Some(key) = client.api_key() {
        request = client.dialect().authorize(request, key);
    }
    let exchange = async {
        let mut response = request.send().await?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_BODY {
                return Ok((status, None));
            }
        }
        Ok::<_, reqwest::Error>((status, Some(body)))
    };
    match tokio::time::timeout(limit, exchange).await {
        Err(_) => {
            let limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
            tracing::debug!(limit_ms, "server probe: no answer in time");
            None
        }
        Ok(Err(e)) => {
            tracing::debug!(error = %e.without_url(), "server probe: no answer");
            None
        }
        Ok(Ok((status, body))) if status.is_success() => {
            // A server that echoes the request (the `Authorization` header) must not put the
            // key into the manifest's `server`.
            let mut value: Option<Value> = body.and_then(|b| serde_json::from_slice(&b).ok());
            if let Some(v) = value.as_mut() {
                client.secrets().redact_json(v);
            }
            Some(value)
        }
        Ok(Ok(_)) => Some(None),
    }
}

/// Merges one probe's findings into `found`. A probe that gives a context window decides
/// (its fields win, earlier findings fill its gaps) and ends the probe: returns `true`.
/// Otherwise what it learned only fills what is still unknown.
fn absorb(found: &mut ServerInfo, info: Option<ServerInfo>) -> bool {
    let Some(info) = info else {
        return false;
    };
    let earlier = std::mem::take(found);
    let (first, second) = if info.context_window.is_some() {
        (info, earlier)
    } else {
        (earlier, info)
    };
    *found = ServerInfo {
        kind: first.kind.or(second.kind),
        context_window: first.context_window.or(second.context_window),
        slots: first.slots.or(second.slots),
        model: first.model.or(second.model),
        model_source: first.model_source.or(second.model_source),
    };
    found.context_window.is_some()
}

fn log(probe: &str, info: &Option<ServerInfo>) {
    match info {
        Some(i) => tracing::debug!(
            probe,
            kind = i.kind.as_deref(),
            context_window = i.context_window,
            slots = i.slots,
            model = i.model.as_deref(),
            "server probe"
        ),
        None => tracing::debug!(probe, "server probe: nothing learned"),
    }
}

/// A positive count that fits a `u32`.
fn count(v: &Value) -> Option<u32> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 0)
}

fn text(v: &Value) -> Option<String> {
    v.as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// llama.cpp's `/props`. `default_generation_settings.n_ctx` is a slot's context (the server's
/// `--ctx-size` divided among `--parallel` slots), which is what one request gets.
fn from_llama_props(v: &Value) -> Option<ServerInfo> {
    let settings = v.get("default_generation_settings");
    if settings.is_none() && v.get("total_slots").is_none() {
        return None;
    }
    let file = v.get("model_path").and_then(text).and_then(|path| {
        let name = path.rsplit(['/', '\\']).next()?;
        Some(name.to_owned()).filter(|n| !n.is_empty())
    });
    let model = v.get("model_alias").and_then(text).or_else(|| file.clone());
    Some(ServerInfo {
        kind: Some("llama.cpp".to_owned()),
        context_window: settings.and_then(|s| s.get("n_ctx")).and_then(count),
        slots: v.get("total_slots").and_then(count),
        model_source: file.filter(|f| Some(f) != model.as_ref()),
        model,
    })
}

/// An OpenAI-style model list. vLLM gives `max_model_len` per model; llama.cpp builds that
/// report the running context give `meta.n_ctx` (`meta.n_ctx_train` is the model's training
/// length, not what the server runs, so it is not used).
fn from_models(v: &Value, model: &str) -> Option<ServerInfo> {
    let data = v.get("data")?.as_array()?;
    let entry = data
        .iter()
        .find(|e| e.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| data.first())?;
    let owned_by = entry.get("owned_by").and_then(Value::as_str).unwrap_or("");
    let max_model_len = entry.get("max_model_len").and_then(count);
    let meta = entry.get("meta");
    let kind = if owned_by == "vllm" || max_model_len.is_some() {
        "vllm"
    } else if owned_by == "llamacpp" || meta.is_some() {
        "llama.cpp"
    } else {
        "openai-compatible"
    };
    let model = entry.get("id").and_then(text);
    // vLLM: `root` is the model a `--served-model-name` stands for.
    let root = entry.get("root").and_then(text);
    Some(ServerInfo {
        kind: Some(kind.to_owned()),
        context_window: max_model_len.or_else(|| meta?.get("n_ctx").and_then(count)),
        slots: None,
        model_source: root.filter(|r| Some(r) != model.as_ref()),
        model,
    })
}

/// Ollama's `/api/show`. The context Ollama runs a model with is `num_ctx` from the model's
/// parameters; `<arch>.context_length` is only what the model was trained for.
fn from_ollama_show(v: &Value) -> Option<ServerInfo> {
    let info = v.get("model_info").and_then(Value::as_object);
    let parameters = v.get("parameters").and_then(Value::as_str);
    if info.is_none() && parameters.is_none() {
        return None;
    }
    let num_ctx = parameters.and_then(|p| {
        p.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            match (words.next(), words.next()) {
                (Some("num_ctx"), Some(n)) => n.parse::<u32>().ok().filter(|n| *n > 0),
                _ => None,
            }
        })
    });
    let trained = info.and_then(|info| {
        let arch = info.get("general.architecture").and_then(Value::as_str);
        arch.and_then(|a| info.get(&format!("{a}.context_length")))
            .and_then(count)
            .or_else(|| {
                info.iter()
                    .find(|(k, _)| k.ends_with(".context_length"))
                    .and_then(|(_, v)| count(v))
            })
    });
    // Without `num_ctx`, Ollama runs the model with its server default (2048 in older
    // versions, 4096 in newer; `OLLAMA_CONTEXT_LENGTH` may change it, and the API does not
    // say) and silently cuts a longer prompt instead of failing. Assuming more would lose
    // text without an error, so assume at most 4096.
    let context_window = num_ctx.or(trained.map(|t| t.min(4096)));
    Some(ServerInfo {
        kind: Some("ollama".to_owned()),
        context_window,
        slots: None,
        model: None,
        model_source: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApiKey;
    use crate::llm::ClientSettings;
    use serde_json::json;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// One request the test server saw: method, path, `Authorization` header, body.
    #[derive(Debug, Clone)]
    struct Seen {
        method: String,
        path: String,
        auth: Option<String>,
        body: String,
    }

    type Route = dyn Fn(&str, &str) -> Option<(u16, Value)> + Send + Sync;

    /// A server on 127.0.0.1 answering `route(method, path)` as JSON, 404 when it gives
    /// `None`, or never answering at all when `silent`. Returns its address and what it saw.
    async fn serve(route: Arc<Route>, silent: bool) -> (String, Arc<Mutex<Vec<Seen>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let route = Arc::clone(&route);
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    if silent {
                        // Hold the connection open without a word.
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        drop(stream);
                        return;
                    }
                    let mut request = Vec::new();
                    let mut buf = [0u8; 4096];
                    let head_end = loop {
                        if let Some(i) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&request[..head_end]).into_owned();
                    let header = |name: &str| {
                        head.lines().find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.trim()
                                .eq_ignore_ascii_case(name)
                                .then(|| v.trim().to_owned())
                        })
                    };
                    let length: usize = header("content-length")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    while request.len() < head_end + length {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let mut words = head.split_whitespace();
                    let method = words.next().unwrap_or("").to_owned();
                    let path = words.next().unwrap_or("").to_owned();
                    let body = String::from_utf8_lossy(&request[head_end..]).into_owned();
                    log.lock().unwrap().push(Seen {
                        method: method.clone(),
                        path: path.clone(),
                        auth: header("authorization"),
                        body,
                    });
                    let (status, body) =
                        route(&method, &path).unwrap_or((404, json!({"error": "not found"})));
                    let body = body.to_string();
                    let response = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n\
                         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        (addr, seen)
    }

    fn client(base: &str, key: Option<&str>) -> ChatClient {
        ChatClient::new(ClientSettings::new(base, key.map(ApiKey::new))).unwrap()
    }

    async fn probe_fast(client: &ChatClient, model: &str) -> ServerInfo {
        probe_within(client, model, Duration::from_millis(200)).await
    }

    fn paths(seen: &Mutex<Vec<Seen>>) -> Vec<String> {
        seen.lock()
            .unwrap()
            .iter()
            .map(|s| s.path.clone())
            .collect()
    }

    fn info(kind: &str, ctx: Option<u32>, slots: Option<u32>, model: Option<&str>) -> ServerInfo {
        ServerInfo {
            kind: Some(kind.to_owned()),
            context_window: ctx,
            slots,
            model: model.map(str::to_owned),
            model_source: None,
        }
    }

    #[test]
    fn known_providers_are_not_probed() {
        for known in [
            "https://open.bigmodel.cn/api/paas/v4",
            "https://api.openai.com/v1",
            "https://API.OpenAI.com/v1/",
            "https://api.deepseek.com",
            "https://api.moonshot.cn/v1",
            "https://api.moonshot.ai/v1",
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "https://api.anthropic.com/v1",
            "https://api.z.ai/api/paas/v4",
        ] {
            assert!(is_known_provider(known), "{known}");
        }
        for local in [
            "http://127.0.0.1:8085/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8000/v1",
            "http://gpu-box.lan:8000/v1",
            "http://192.168.1.20/v1",
            "https://llm.example.com/v1",
            // Look-alikes are not the provider.
            "https://notopenai.com/v1",
            "https://openai.com.example.net/v1",
            "https://dashscope-intl.aliyuncs.com.evil/v1",
            "not a url",
            "",
        ] {
            assert!(!is_known_provider(local), "{local}");
        }
    }

    #[test]
    fn roots_of_a_base() {
        assert_eq!(roots("http://127.0.0.1:8085/v1"), ["http://127.0.0.1:8085"]);
        assert_eq!(roots("http://h/ollama/v1/"), ["http://h/ollama"]);
        assert_eq!(roots("http://h:8080"), ["http://h:8080"]);
        assert_eq!(
            roots("http://h:8080/llm"),
            ["http://h:8080/llm", "http://h:8080"]
        );
    }

    #[test]
    fn llama_props_shapes() {
        let props = json!({
            "default_generation_settings": {"n_ctx": 4096, "params": {}},
            "total_slots": 2,
            "model_path": "/models/qwen2.5-7b-q4.gguf",
            "build_info": "b5000",
        });
        assert_eq!(
            from_llama_props(&props),
            Some(info(
                "llama.cpp",
                Some(4096),
                Some(2),
                Some("qwen2.5-7b-q4.gguf")
            ))
        );
        assert_eq!(from_llama_props(&json!({"status": "ok"})), None);
        let models = json!({"object": "list", "data": [{
            "id": "glm-4-flash", "owned_by": "llamacpp",
            "meta": {"n_ctx": 8192, "n_ctx_train": 131072},
        }]});
        assert_eq!(
            from_models(&models, "anything"),
            Some(info("llama.cpp", Some(8192), None, Some("glm-4-flash")))
        );
        // Upstream llama.cpp's meta only has the training length: no window from it.
        let upstream = json!({"data": [{"id": "m", "owned_by": "llamacpp",
            "meta": {"n_ctx_train": 131072}}]});
        assert_eq!(
            from_models(&upstream, "m"),
            Some(info("llama.cpp", None, None, Some("m")))
        );
    }

    #[test]
    fn ollama_show_shapes() {
        let show = |parameters: Option<&str>, trained: u64| {
            let mut v = json!({"model_info": {
                "general.architecture": "qwen2",
                "qwen2.context_length": trained,
                "qwen2.embedding_length": 3584,
            }});
            if let Some(p) = parameters {
                v["parameters"] = json!(p);
            }
            from_ollama_show(&v).and_then(|i| i.context_window)
        };
        let params =
            "num_ctx                        8192\nstop                           \"<|im_end|>\"";
        assert_eq!(show(Some(params), 32768), Some(8192));
        assert_eq!(show(Some("stop \"x\""), 32768), Some(4096));
        assert_eq!(show(None, 32768), Some(4096));
        assert_eq!(show(None, 2048), Some(2048));
        let other_arch = json!({"model_info": {"llama.context_length": 8192}});
        assert_eq!(
            from_ollama_show(&other_arch).and_then(|i| i.context_window),
            Some(4096)
        );
        assert_eq!(from_ollama_show(&json!({"error": "model not found"})), None);
    }

    #[tokio::test]
    async fn probes_llama_cpp() {
        let route: Arc<Route> = Arc::new(|method, path| match (method, path) {
            ("GET", "/props") => Some((
                200,
                json!({
                    "default_generation_settings": {"n_ctx": 4096, "n_predict": -1},
                    "total_slots": 1,
                    "model_alias": "glm-4-flash",
                    "model_path": "/x/qwen.gguf",
                    "build_info": "b6000-abc",
                }),
            )),
            _ => None,
        });
        let (addr, seen) = serve(route, false).await;
        let found = probe_fast(&client(&format!("http://{addr}/v1"), Some("sk-1")), "m").await;
        // The alias zhi asked for, and the file the server runs under it.
        assert_eq!(
            found,
            ServerInfo {
                model_source: Some("qwen.gguf".into()),
                ..info("llama.cpp", Some(4096), Some(1), Some("glm-4-flash"))
            }
        );
        assert_eq!(found.runs(), Some("qwen.gguf"));
        // The first answer with a window ends the probe; the key goes along.
        assert_eq!(paths(&seen), ["/props"]);
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].auth.as_deref(), Some("Bearer sk-1"));
    }

    #[tokio::test]
    async fn probes_llama_cpp_models_when_props_is_missing() {
        let route: Arc<Route> = Arc::new(|_, path| {
            (path == "/v1/models").then(|| {
                (
                    200,
                    json!({"object": "list", "data": [{"id": "q", "owned_by": "llamacpp",
                        "meta": {"n_ctx": 2048, "n_ctx_train": 32768}}]}),
                )
            })
        });
        let (addr, seen) = serve(route, false).await;
        let found = probe_fast(&client(&format!("http://{addr}/v1"), None), "q").await;
        assert_eq!(found, info("llama.cpp", Some(2048), None, Some("q")));
        assert_eq!(paths(&seen), ["/props", "/v1/models"]);
        assert!(seen.lock().unwrap().iter().all(|s| s.auth.is_none()));
    }

    #[tokio::test]
    async fn probes_vllm() {
        let route: Arc<Route> = Arc::new(|method, path| match (method, path) {
            ("GET", "/v1/models") => Some((
                200,
                json!({"object": "list", "data": [
                    {"id": "Qwen/Qwen2.5-7B", "object": "model", "owned_by": "vllm",
                     "max_model_len": 32768},
                    {"id": "my-lora", "object": "model", "owned_by": "vllm",
                     "max_model_len": 16384},
                ]}),
            )),
            _ => None,
        });
        let (addr, seen) = serve(route, false).await;
        let c = client(&format!("http://{addr}/v1"), None);
        assert_eq!(
            probe_fast(&c, "my-lora").await,
            info("vllm", Some(16384), None, Some("my-lora"))
        );
        // A model the server does not list: its first model, whose name tells the mismatch.
        assert_eq!(
            probe_fast(&c, "glm-4-flash").await,
            info("vllm", Some(32768), None, Some("Qwen/Qwen2.5-7B"))
        );
        assert_eq!(
            paths(&seen),
            ["/props", "/v1/models", "/props", "/v1/models"]
        );
    }

    #[tokio::test]
    async fn probes_ollama() {
        let route: Arc<Route> = Arc::new(|method, path| match (method, path) {
            ("GET", "/v1/models") => Some((
                200,
                json!({"object": "list", "data": [
                    {"id": "qwen2.5:7b", "object": "model", "owned_by": "library"},
                ]}),
            )),
            ("POST", "/api/show") => Some((
                200,
                json!({
                    "modelfile": "FROM x",
                    "parameters": "num_ctx                        8192\nstop                           \"<|im_end|>\"",
                    "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
                }),
            )),
            _ => None,
        });
        let (addr, seen) = serve(route, false).await;
        let found = probe_fast(&client(&format!("http://{addr}/v1"), None), "qwen2.5:7b").await;
        assert_eq!(found, info("ollama", Some(8192), None, Some("qwen2.5:7b")));
        assert_eq!(paths(&seen), ["/props", "/v1/models", "/api/show"]);
        let seen = seen.lock().unwrap();
        let asked: Value = serde_json::from_str(&seen[2].body).unwrap();
        assert_eq!(asked["model"], "qwen2.5:7b");
        assert_eq!(seen[2].method, "POST");
    }

    #[tokio::test]
    async fn a_base_without_v1_tries_the_prefix_and_the_host_root() {
        let route: Arc<Route> = Arc::new(|_, path| {
            (path == "/props").then(|| {
                (
                    200,
                    json!({"default_generation_settings": {"n_ctx": 1024}, "total_slots": 4}),
                )
            })
        });
        let (addr, seen) = serve(route, false).await;
        let found = probe_fast(&client(&format!("http://{addr}/llm"), None), "m").await;
        assert_eq!(found, info("llama.cpp", Some(1024), Some(4), None));
        assert_eq!(paths(&seen), ["/llm/props", "/props"]);
    }

    #[tokio::test]
    async fn nothing_to_learn() {
        let route: Arc<Route> = Arc::new(|_, _| None);
        let (addr, seen) = serve(route, false).await;
        let found = probe_fast(&client(&format!("http://{addr}/v1"), None), "m").await;
        assert_eq!(found, ServerInfo::default());
        assert_eq!(paths(&seen), ["/props", "/v1/models", "/api/show"]);
        // A model list without limits still names the server's model.
        let route: Arc<Route> = Arc::new(|_, path| {
            (path == "/v1/models").then(|| (200, json!({"data": [{"id": "gpt-x"}]})))
        });
        let (addr, _) = serve(route, false).await;
        let found = probe_fast(&client(&format!("http://{addr}/v1"), None), "m").await;
        assert_eq!(found, info("openai-compatible", None, None, Some("gpt-x")));
    }

    #[tokio::test]
    async fn a_silent_server_is_given_up_on() {
        let route: Arc<Route> = Arc::new(|_, _| None);
        let (addr, _) = serve(route, true).await;
        let started = Instant::now();
        let found = probe_fast(&client(&format!("http://{addr}/v1"), None), "m").await;
        assert_eq!(found, ServerInfo::default());
        // One request's limit, not one per endpoint.
        assert!(
            started.elapsed() < Duration::from_millis(600),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn an_unreachable_server_is_unknown() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let found = probe_fast(&client(&format!("http://{addr}/v1"), None), "m").await;
        assert_eq!(found, ServerInfo::default());
    }
}
