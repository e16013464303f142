//! `zhi mcp --listen ADDR`: the same server over MCP's streamable HTTP transport
//! (docs/mcp.md#over-http). Plain HTTP on a loopback address only; every request must carry
//! the bearer token, compared in constant time, or it is answered 401 before the protocol sees
//! it. Browsers' requests (an `Origin` header) are refused, and so is a `Host` that is not this
//! machine (DNS rebinding). Connections are capped ([`super::connections`]) and a request's
//! head must arrive whole within [`HEAD_TIMEOUT`]: connections that never finish a request
//! cannot shut out a client with the token.

use super::Zhi;
use super::connections::{Connections, Slot};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::{Request, Response, StatusCode, header};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_service::Service as _;

/// Where to listen, and the token every request must bring.
#[derive(Clone)]
pub(crate) struct Listen {
    pub addr: SocketAddr,
    pub token: String,
}

impl std::fmt::Debug for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listen")
            .field("addr", &self.addr)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// The one path the protocol is served on.
pub(crate) const PATH: &str = "/mcp";

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// How long a request's head may take to arrive whole, and a kept-alive connection may wait
/// for its next one, before the connection is closed.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve `server` on `listen` until `stop` is cancelled; then connections are closed as their
/// requests end.
pub(super) async fn serve(
    server: Zhi,
    listen: &Listen,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let connections = Connections::new(super::connections::cap_for_file_limit());
    let listener = TcpListener::bind(listen.addr).await?;
    let local = listener.local_addr()?;
    // The one line a client (or a test) reads to know where to connect.
    let url = format!("http://{local}{PATH}");
    eprintln!("{}", msg!("zhi mcp: listening on {url}"));
    tracing::debug!(connections = connections.cap(), "the most connections held");
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    hosts.push(local.ip().to_string());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .enforce_origin_validation()
        .with_cancellation_token(stop.child_token());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let expected: Arc<[u8]> = listen.token.clone().into_bytes().into();
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of descriptors or a connection reset before it was taken: try again.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let slot = tokio::select! {
            () = stop.cancelled() => return Ok(()),
            slot = connections.take() => match slot {
                Some(s) => s,
                None => return Ok(()),
            },
        };
        let service = service.clone();
        let expected = Arc::clone(&expected);
        tokio::spawn(connection(stream, slot, service, expected, stop.clone()));
    }
}

/// One connection, to its end: closed when its slot is taken back for a newer one, when a
/// request's head does not arrive whole within [`HEAD_TIMEOUT`], or as its request ends once
/// the server stops.
async fn connection(
    stream: tokio::net::TcpStream,
    slot: Slot,
    service: StreamableHttpService<Zhi, LocalSessionManager>,
    expected: Arc<[u8]>,
    stop: CancellationToken,
) {
    let admit = slot.admit.clone();
    let handle = hyper::service::service_fn(move |req: Request<Incoming>| {
        let mut service = service.clone();
        let refused = refusal(&req, &expected);
        if refused.is_none() {
            admit.admitted();
        }
        async move {
            match refused {
                Some(r) => Ok::<_, Infallible>(r),
                None => service.call(req).await,
            }
        }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .serve_connection(TokioIo::new(stream), handle);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        () = slot.evicted.cancelled() => {}
        () = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
        }
    }
}

/// The answer to a request that is not let through: another path (404), or no token or the
/// wrong one (401).
fn refusal(req: &Request<Incoming>, expected: &[u8]) -> Option<Response<Body>> {
    if req.uri().path() != PATH {
        return Some(plain(
            StatusCode::NOT_FOUND,
            "not found: zhi serves MCP at /mcp\n",
        ));
    }
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    // `Bearer TOKEN`, the scheme in any case (RFC 7235).
    let token = given
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case(b"bearer "))
        .map(|_| &given[7..]);
    if token.is_some_and(|t| same(t, expected)) {
        return None;
    }
    let mut r = plain(
        StatusCode::UNAUTHORIZED,
        "unauthorized: send the header `Authorization: Bearer TOKEN` with the token zhi mcp was started with\n",
    );
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    Some(r)
}

/// A refusal, after which the connection is closed: one that never brings the token holds no
/// slot for long.
fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    r
}

/// Whether two byte strings are equal, in a time that depends on their lengths only.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh token: 32 random bytes from the system, in hex.
pub(crate) fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole_and_fresh_ones_differ() {
        assert!(same(b"Bearer abc", b"Bearer abc"));
        assert!(!same(b"Bearer abd", b"Bearer abc"));
        assert!(!same(b"Bearer ab", b"Bearer abc"));
        assert!(!same(b"", b"Bearer abc"));
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
