//! `web_fetch`: one public web page as text, behind a guard against server-side request forgery.
//!
//! A document can ask the model to fetch `http://169.254.169.254/…` or an intranet page and
//! write the answer into an output file. So the guard decides on the address actually dialled:
//! the host is resolved here, every resolved address must be public, and the connection is
//! pinned to those addresses (no second lookup that could answer differently, no proxy).
//! Redirects are not followed by the HTTP client; each hop is parsed, resolved and checked
//! again, at most [`MAX_REDIRECTS`] times.
//!
//! Testing: the machine running the tests has no internet and the guard must refuse
//! `127.0.0.1`, so the decisions are unit-tested as functions ([`check_ip`], [`check_url`],
//! [`redirect_target`]), and the fetch loop is tested against a local server with a test-only
//! switch that lets loopback through (and nothing else: private, link-local and named-local
//! redirects are still refused there).
//!
//! A page is given to the model as text, read with html5ever's tokenizer (a browser's rules
//! for tags, attributes and scripts) rather than by searching for `<` and `>`.

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use reqwest::Url;
use reqwest::header::{CONTENT_TYPE, LOCATION};
use reqwest::redirect::Policy;

use super::{Args, READ_CAP_BYTES, ToolOutcome, cap_text};

/// Redirects followed per fetch.
pub(super) const MAX_REDIRECTS: usize = 5;
/// The most body bytes read from one response.
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DNS_TIMEOUT: Duration = Duration::from_secs(10);
const USER_AGENT: &str = concat!("zhi/", env!("CARGO_PKG_VERSION"), " (document pipeline)");

/// Why the guard refused an address. The text goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct WebGuardError(String);

impl WebGuardError {
    fn new(message: impl Into<String>) -> Self {
        WebGuardError(message.into())
    }
}

/// Whether an address may be dialled: only public unicast addresses may.
pub(crate) fn check_ip(ip: IpAddr) -> Result<(), WebGuardError> {
    let reason = match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(WebGuardError::new(format!(
            "{ip} is {reason}; only public internet addresses may be fetched"
        ))),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    Some(if o[0] == 0 {
        "an unspecified address"
    } else if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_private() {
        "a private network address"
    } else if o[0] == 100 && (o[1] & 0xC0) == 64 {
        "a shared (carrier-grade NAT) address"
    } else if ip.is_link_local() {
        "a link-local address (this includes cloud metadata services)"
    } else if ip.is_broadcast() {
        "the broadcast address"
    } else if ip.is_multicast() {
        "a multicast address"
    } else if o[0] >= 240 {
        "a reserved address"
    } else if ip.is_documentation() {
        "a documentation address"
    } else if o[0] == 198 && (o[1] & 0xFE) == 18 {
        "a benchmarking address"
    } else if o[0] == 192 && o[1] == 0 && o[2] == 0 {
        "an IETF protocol address"
    } else {
        return None;
    })
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_reason(v4);
    }
    let s = ip.segments();
    let embedded =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    Some(if ip.is_unspecified() {
        "an unspecified address"
    } else if ip.is_loopback() {
        "a loopback address"
    } else if s[0] & 0xFF00 == 0xFF00 {
        "a multicast address"
    } else if s[0] & 0xFFC0 == 0xFE80 {
        "a link-local address"
    } else if s[0] & 0xFFC0 == 0xFEC0 {
        "a site-local address"
    } else if s[0] & 0xFE00 == 0xFC00 {
        "a unique-local (private) address"
    } else if s[0] == 0x2001 && s[1] == 0x0DB8 {
        "a documentation address"
    } else if s[..6] == [0; 6] {
        "an IPv4-compatible address"
    } else if s[0] == 0x0064 && s[1] == 0xFF9B && s[2..6] == [0; 4] {
        // NAT64: judged by the IPv4 address it carries.
        return v4_reason(embedded(s[6], s[7]));
    } else if s[0] == 0x0064 && s[1] == 0xFF9B {
        "a local NAT64 address"
    } else if s[0] == 0x2002 {
        // 6to4: judged by the IPv4 address it carries.
        return v4_reason(embedded(s[1], s[2]));
    } else if s[0] == 0x2001 && s[1] == 0 {
        "a Teredo tunnel address"
    } else if s[0] == 0x0100 && s[1..4] == [0; 3] {
        "a discard-only address"
    } else {
        return None;
    })
}

/// A URL's host: an address literal or a name.
enum UrlHost<'a> {
    Ip(IpAddr),
    Domain(&'a str),
}

/// The host of a parsed http(s) URL. The URL parser has already normalised every IPv4 notation
/// (`2130706433`, `0x7f.1`, `127.1`) to dotted form and IPv6 to bracketed form.
fn url_host(url: &Url) -> Option<UrlHost<'_>> {
    let host = url.host_str()?;
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6
            .parse::<Ipv6Addr>()
            .ok()
            .map(|ip| UrlHost::Ip(IpAddr::V6(ip)));
    }
    Some(match host.parse::<Ipv4Addr>() {
        Ok(ip) => UrlHost::Ip(IpAddr::V4(ip)),
        Err(_) => UrlHost::Domain(host),
    })
}

/// Parse a URL for fetching: http or https, no credentials, a host that is not a local name.
/// Address checks happen at resolution.
fn parse_url(raw: &str) -> Result<Url, WebGuardError> {
    let raw = raw.trim();
    let url = Url::parse(raw).map_err(|e| {
        WebGuardError::new(format!(
            "`{raw}` is not a valid URL ({e}); give a full address like https://example.com/page"
        ))
    })?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(WebGuardError::new(format!(
                "only http and https addresses may be fetched, not {other}:"
            )));
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(WebGuardError::new(
            "addresses with a user name or password may not be fetched",
        ));
    }
    match url_host(&url) {
        None => Err(WebGuardError::new(format!("`{raw}` has no host"))),
        Some(UrlHost::Domain(domain)) => {
            let name = domain.trim_end_matches('.').to_ascii_lowercase();
            if name.is_empty() || name == "localhost" || name.ends_with(".localhost") {
                Err(WebGuardError::new(format!(
                    "`{domain}` is this machine; only public internet addresses may be fetched"
                )))
            } else {
                Ok(url)
            }
        }
        Some(UrlHost::Ip(_)) => Ok(url),
    }
}

/// Whether a URL may be fetched, judging everything knowable without DNS (scheme, credentials,
/// local names, literal addresses in any notation the URL standard accepts): what the fetch
/// loop does before resolving, as one function for the unit tests.
#[cfg(test)]
fn check_url(raw: &str) -> Result<Url, WebGuardError> {
    let url = parse_url(raw)?;
    if let Some(UrlHost::Ip(ip)) = url_host(&url) {
        check_ip(ip)?;
    }
    Ok(url)
}

/// The next hop of a redirect from `current` to `location`, checked like the first URL (as
/// the fetch loop does before resolving it), for the unit tests.
#[cfg(test)]
fn redirect_target(current: &Url, location: &str) -> Result<Url, WebGuardError> {
    next_url(current, location).and_then(|url| check_url(url.as_str()))
}

fn next_url(current: &Url, location: &str) -> Result<Url, WebGuardError> {
    let next = current.join(location.trim()).map_err(|e| {
        WebGuardError::new(format!("the page redirected to an invalid address ({e})"))
    })?;
    parse_url(next.as_str())
}

/// A fetch that did not produce a page.
enum FetchError {
    /// The guard said no.
    Refused(String),
    /// The fetch was allowed but failed.
    Failed(String),
}

impl From<WebGuardError> for FetchError {
    fn from(e: WebGuardError) -> Self {
        FetchError::Refused(e.0)
    }
}

/// Fetches pages under the guard.
#[derive(Debug, Clone)]
pub(super) struct WebFetcher {
    max_bytes: usize,
    timeout: Duration,
    /// Test-only: let loopback addresses through so a local server can stand in for the web.
    #[cfg(test)]
    allow_loopback: bool,
}

impl Default for WebFetcher {
    fn default() -> Self {
        WebFetcher {
            max_bytes: MAX_BODY_BYTES,
            timeout: FETCH_TIMEOUT,
            #[cfg(test)]
            allow_loopback: false,
        }
    }
}

impl WebFetcher {
    pub(super) async fn fetch_tool(&self, mut args: Args) -> ToolOutcome {
        let url = match args.string(&["url", "link", "href", "address"]) {
            Ok(url) => url,
            Err(outcome) => return outcome,
        };
        match self.fetch(&url).await {
            Ok(text) => ToolOutcome::ok(cap_text(&text, 0, READ_CAP_BYTES, None)),
            Err(FetchError::Refused(message)) => ToolOutcome::refused(message),
            Err(FetchError::Failed(message)) => ToolOutcome::failed(message),
        }
    }

    fn check(&self, ip: IpAddr) -> Result<(), WebGuardError> {
        #[cfg(test)]
        if self.allow_loopback && ip.is_loopback() {
            return Ok(());
        }
        check_ip(ip)
    }

    /// The addresses to dial for `url`, every one of them checked.
    async fn resolve(&self, url: &Url) -> Result<Vec<SocketAddr>, FetchError> {
        let port = url
            .port_or_known_default()
            .ok_or_else(|| FetchError::Refused(format!("`{url}` has no port")))?;
        let ip = match url_host(url) {
            Some(UrlHost::Ip(ip)) => ip,
            Some(UrlHost::Domain(domain)) => {
                let lookup = tokio::net::lookup_host((domain, port));
                let addrs: Vec<SocketAddr> = match tokio::time::timeout(DNS_TIMEOUT, lookup).await {
                    Ok(Ok(addrs)) => addrs.collect(),
                    Ok(Err(e)) => {
                        return Err(FetchError::Failed(format!(
                            "`{domain}` could not be resolved ({e})"
                        )));
                    }
                    Err(_) => {
                        return Err(FetchError::Failed(format!(
                            "resolving `{domain}` timed out"
                        )));
                    }
                };
                if addrs.is_empty() {
                    return Err(FetchError::Failed(format!("`{domain}` has no address")));
                }
                // One private answer is enough to refuse: a name that mixes public and private
                // answers is a rebinding attempt or an internal name.
                for addr in &addrs {
                    self.check(addr.ip())
                        .map_err(|e| FetchError::Refused(format!("`{domain}` resolves to {e}")))?;
                }
                return Ok(addrs);
            }
            None => return Err(FetchError::Refused(format!("`{url}` has no host"))),
        };
        self.check(ip)?;
        Ok(vec![SocketAddr::new(ip, port)])
    }

    /// Fetch `raw` and return its readable text, following checked redirects.
    async fn fetch(&self, raw: &str) -> Result<String, FetchError> {
        let mut url = parse_url(raw)?;
        for hop in 0..=MAX_REDIRECTS {
            let addrs = self.resolve(&url).await?;
            // A client per hop: pinning the checked addresses is a client setting. No proxy,
            // so the connection goes to the checked address and nowhere else.
            let mut builder = reqwest::Client::builder()
                .redirect(Policy::none())
                .no_proxy()
                .timeout(self.timeout)
                .connect_timeout(CONNECT_TIMEOUT)
                .user_agent(USER_AGENT);
            if let Some(UrlHost::Domain(domain)) = url_host(&url) {
                builder = builder.resolve_to_addrs(domain, &addrs);
            }
            let client = builder
                .build()
                .map_err(|e| FetchError::Failed(format!("the HTTP client failed: {e}")))?;
            let response = client
                .get(url.clone())
                .header(
                    reqwest::header::ACCEPT,
                    "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
                )
                .send()
                .await
                .map_err(|e| FetchError::Failed(format!("fetching {url} failed: {e}")))?;
            let status = response.status();
            if status.is_redirection() {
                let Some(location) = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|v| v.to_str().ok())
                else {
                    return Err(FetchError::Failed(format!(
                        "{url} answered HTTP {status} without a Location"
                    )));
                };
                if hop == MAX_REDIRECTS {
                    return Err(FetchError::Failed(format!(
                        "{raw} redirected more than {MAX_REDIRECTS} times"
                    )));
                }
                url = next_url(&url, location)?;
                continue;
            }
            let content_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_ascii_lowercase();
            if !status.is_success() {
                return Err(FetchError::Failed(format!("{url} answered HTTP {status}")));
            }
            let (body, truncated) = self.read_body(response).await?;
            let text = page_text(&body, &content_type).ok_or_else(|| {
                FetchError::Failed(format!(
                    "{url} is not a text page ({}); web_fetch returns web pages and text only",
                    if content_type.is_empty() {
                        "binary content"
                    } else {
                        content_type.as_str()
                    }
                ))
            })?;
            let mut out = format!("URL: {url}\n\n{text}");
            if truncated {
                out.push_str(&format!(
                    "\n\n[the page is larger than {} KB; only its beginning was read]",
                    self.max_bytes / 1024
                ));
            }
            return Ok(out);
        }
        // The loop returns on its last hop.
        Err(FetchError::Failed(format!(
            "{raw} redirected more than {MAX_REDIRECTS} times"
        )))
    }

    async fn read_body(
        &self,
        mut response: reqwest::Response,
    ) -> Result<(Vec<u8>, bool), FetchError> {
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = self.max_bytes - body.len();
                    if chunk.len() > room {
                        body.extend_from_slice(&chunk[..room]);
                        return Ok((body, true));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok((body, false)),
                Err(e) => {
                    return Err(FetchError::Failed(format!("reading the page failed: {e}")));
                }
            }
        }
    }
}

/// The readable text of a response body, or `None` when it is not text.
fn page_text(body: &[u8], content_type: &str) -> Option<String> {
    let mime = content_type.split(';').next().unwrap_or("").trim();
    let head = &body[..body.len().min(1024)];
    let html = match mime {
        "text/html" | "application/xhtml+xml" => true,
        "" => {
            if head.contains(&0) {
                return None;
            }
            let start = String::from_utf8_lossy(head)
                .trim_start()
                .to_ascii_lowercase();
            start.starts_with("<!doctype html") || start.starts_with("<html")
        }
        m if m.starts_with("text/")
            || m.contains("json")
            || m.contains("xml")
            || m.contains("javascript") =>
        {
            false
        }
        _ => return None,
    };
    let encoding = charset(content_type)
        .or_else(|| {
            if html {
                meta_charset(&body[..body.len().min(4096)])
            } else {
                None
            }
        })
        .unwrap_or(encoding_rs::UTF_8);
    let (decoded, _, _) = encoding.decode(body);
    Some(if html {
        html_to_text(&decoded)
    } else {
        decoded.into_owned()
    })
}

fn charset(content_type: &str) -> Option<&'static encoding_rs::Encoding> {
    let (_, label) = content_type.split_once("charset=")?;
    let label = label.split(';').next()?.trim().trim_matches('"');
    encoding_rs::Encoding::for_label(label.as_bytes())
}

/// `<meta charset="gbk">` or `<meta http-equiv=... content="text/html; charset=gbk">`.
fn meta_charset(head: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let at = text.find("charset=")?;
    let label: String = text[at + "charset=".len()..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    encoding_rs::Encoding::for_label(label.as_bytes())
}

/// Elements whose content is never text for a reader.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "iframe", "head",
];
/// Elements that start a new line.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "aside",
    "main",
    "blockquote",
    "pre",
    "hr",
    "dt",
    "dd",
    "dl",
    "figure",
    "figcaption",
    "form",
    "title",
];

/// HTML reduced to readable text: tags, scripts, styles and comments dropped, block elements
/// on their own lines, entities decoded, whitespace collapsed. The `<title>` is kept.
///
/// The markup is read by html5ever's tokenizer (the WHATWG rules a browser follows: quoted
/// attributes, comments, character references, raw text in scripts), never by searching for
/// `<` and `>`; only what becomes text is decided here.
pub(super) fn html_to_text(html: &str) -> String {
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    let tokenizer = Tokenizer::new(TextSink::default(), TokenizerOpts::default());
    // The sink never asks the tokenizer to pause for a script, so one feed reads it all.
    let _ = tokenizer.feed(&input);
    tokenizer.end();
    let reading = tokenizer.sink.reading.into_inner();
    let body = collapse_whitespace(&reading.out);
    match reading.title.map(|t| collapse_whitespace(&t)) {
        Some(title) if !title.is_empty() => format!("Title: {title}\n\n{body}"),
        _ => body,
    }
}

/// What the tokens of a page have given so far.
#[derive(Debug, Default)]
struct Reading {
    out: String,
    /// The text of the first `<title>`.
    title: Option<String>,
    in_title: bool,
    /// The skipped element being read (its content is dropped up to its end tag).
    skipping: Option<String>,
}

/// Turns the tokenizer's tokens into text.
#[derive(Debug, Default)]
struct TextSink {
    reading: RefCell<Reading>,
}

impl TokenSink for TextSink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut r = self.reading.borrow_mut();
        match token {
            Token::TagToken(tag) => {
                let name: &str = &tag.name;
                let start = tag.kind == TagKind::StartTag;
                if name == "title" {
                    r.in_title = start && !tag.self_closing && r.title.is_none();
                    if r.in_title {
                        r.title = Some(String::new());
                    }
                }
                match &r.skipping {
                    Some(skipped) if !start && skipped == name => r.skipping = None,
                    Some(_) => {}
                    None if start && !tag.self_closing && SKIPPED.contains(&name) => {
                        r.skipping = Some(name.to_string());
                    }
                    None if start && name == "li" => r.out.push_str("\n- "),
                    None if start && (name == "td" || name == "th") => r.out.push_str(" | "),
                    None if BLOCKS.contains(&name) => r.out.push('\n'),
                    None => {}
                }
                match raw_kind(name) {
                    Some(kind) if start && !tag.self_closing => TokenSinkResult::RawData(kind),
                    _ => TokenSinkResult::Continue,
                }
            }
            Token::CharacterTokens(text) => {
                if r.in_title
                    && let Some(title) = r.title.as_mut()
                {
                    title.push_str(&text);
                }
                if r.skipping.is_none() {
                    r.out.push_str(&text);
                }
                TokenSinkResult::Continue
            }
            _ => TokenSinkResult::Continue,
        }
    }
}

/// Elements whose content a browser's parser reads as raw text (a `<` in a script is not a
/// tag); the tree builder would tell the tokenizer, so the sink does.
fn raw_kind(name: &str) -> Option<RawKind> {
    match name {
        "script" => Some(RawKind::ScriptData),
        "style" | "iframe" | "xmp" | "noembed" | "noframes" => Some(RawKind::Rawtext),
        "title" | "textarea" => Some(RawKind::Rcdata),
        _ => None,
    }
}

/// One line per block, spaces collapsed, empty lines and empty cells dropped.
fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        let line = line.trim_matches(|c: char| c == '|' || c.is_whitespace());
        if line.is_empty() || line == "-" {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    #[test]
    fn ip_classification() {
        for bad in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "::",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:a9fe:a9fe::1",
            "2001:db8::1",
            "::127.0.0.1",
        ] {
            let ip: IpAddr = bad.parse().unwrap();
            assert!(check_ip(ip).is_err(), "{bad} allowed");
        }
        for good in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            let ip: IpAddr = good.parse().unwrap();
            assert!(check_ip(ip).is_ok(), "{good} refused");
        }
        let message = check_ip("169.254.169.254".parse().unwrap()).unwrap_err();
        assert!(message.to_string().contains("metadata"));
    }

    #[test]
    fn url_checks() {
        for bad in [
            "http://localhost/",
            "http://LOCALHOST./x",
            "http://api.localhost:8080/",
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://127.1/",
            "http://[::1]:80/",
            "http://[::ffff:10.0.0.1]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://0.0.0.0:8080/",
            "file:///etc/passwd",
            "ftp://example.com/x",
            "gopher://example.com/",
            "http://user:pw@example.com/",
            "not a url",
            "//example.com/x",
        ] {
            assert!(check_url(bad).is_err(), "{bad} allowed");
        }
        let ok = check_url(" https://example.com/a?b=1 ").unwrap();
        assert_eq!(ok.as_str(), "https://example.com/a?b=1");
        assert!(check_url("http://8.8.8.8/").is_ok());
    }

    #[test]
    fn redirects_are_checked_again() {
        let from = Url::parse("https://example.com/a/b").unwrap();
        assert_eq!(
            redirect_target(&from, "/next").unwrap().as_str(),
            "https://example.com/next"
        );
        assert_eq!(
            redirect_target(&from, "c").unwrap().as_str(),
            "https://example.com/a/c"
        );
        for bad in [
            "http://169.254.169.254/latest/meta-data/",
            "//10.0.0.1/x",
            "http://localhost:9000/",
            "http://[fd00::1]/",
            "file:///etc/passwd",
        ] {
            assert!(redirect_target(&from, bad).is_err(), "{bad} allowed");
        }
    }

    #[test]
    fn html_becomes_readable_text() {
        let html = "<!DOCTYPE html><html><head><title>Q3 &amp; more</title>\
                    <style>body{color:red}</style><script>alert('x<y')</script></head>\
                    <body><!-- hidden --><h1>Report</h1><p>Revenue&nbsp;grew&#33; \
                    &#x4e2d;文</p><ul><li>one</li><li>two</li></ul>\
                    <table><tr><td>a</td><td>b</td></tr></table><p>a &lt; b &unknown; c</p></body></html>";
        let text = html_to_text(html);
        assert_eq!(
            text,
            "Title: Q3 & more\n\nReport\nRevenue grew! 中文\n- one\n- two\na | b\na < b &unknown; c"
        );
    }

    #[test]
    fn a_gt_inside_an_attribute_is_not_the_end_of_the_tag() {
        let html = concat!(
            r#"<p>Go <a title="a > b" href="https://example.com/?q=1>2">there</a> now</p>"#,
            r#"<img alt='x > y' src=x.png><script>if (a < b && c > d) {}</script>"#,
            r#"<p data-x="<script>">kept</p>"#,
        );
        assert_eq!(html_to_text(html), "Go there now\nkept");
    }

    #[test]
    fn page_text_by_content_type() {
        assert_eq!(page_text(b"plain", "text/plain").unwrap(), "plain");
        assert_eq!(
            page_text(b"{\"a\":1}", "application/json").unwrap(),
            "{\"a\":1}"
        );
        assert!(page_text(b"%PDF-1.7", "application/pdf").is_none());
        assert!(page_text(&[0x89, b'P', 0, 0], "").is_none());
        let (gbk, _, _) = encoding_rs::GBK.encode("<html><meta charset=\"gbk\"><p>中文</p></html>");
        assert_eq!(page_text(&gbk, "text/html").unwrap(), "中文");
        let (gbk, _, _) = encoding_rs::GBK.encode("中文");
        assert_eq!(page_text(&gbk, "text/plain; charset=GBK").unwrap(), "中文");
    }

    /// A local HTTP server: `route(path, port)` gives the raw response. Counts connections.
    async fn serve(
        route: impl Fn(&str, u16) -> String + Send + Sync + 'static,
    ) -> (u16, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&hits);
        let route = Arc::new(route);
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                counter.fetch_add(1, Ordering::SeqCst);
                let route = Arc::clone(&route);
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&request);
                    let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let _ = stream.write_all(route(&path, port).as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        (port, hits)
    }

    fn response(status: &str, headers: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    }

    fn redirect(to: &str) -> String {
        response("302 Found", &format!("Location: {to}\r\n"), "")
    }

    fn test_fetcher() -> WebFetcher {
        WebFetcher {
            allow_loopback: true,
            max_bytes: 64 * 1024,
            ..WebFetcher::default()
        }
    }

    fn site(path: &str, port: u16) -> String {
        match path {
            "/page" => response(
                "200 OK",
                "Content-Type: text/html; charset=utf-8\r\n",
                "<html><body><h1>Hello</h1><script>evil()</script><p>World</p></body></html>",
            ),
            "/r1" => redirect("/r2"),
            "/r2" => redirect(&format!("http://127.0.0.1:{port}/page")),
            "/to-private" => redirect("http://10.0.0.1/admin"),
            "/to-metadata" => redirect("http://169.254.169.254/latest/meta-data/"),
            "/to-localhost" => redirect(&format!("http://localhost:{port}/page")),
            "/loop" => redirect("/loop"),
            "/big" => response(
                "200 OK",
                "Content-Type: text/plain\r\n",
                &"x".repeat(200_000),
            ),
            "/pdf" => response("200 OK", "Content-Type: application/pdf\r\n", "%PDF-1.7"),
            _ => response("404 Not Found", "", "nope"),
        }
    }

    #[tokio::test]
    async fn the_real_guard_refuses_loopback_without_connecting() {
        let (port, hits) = serve(site).await;
        let fetcher = WebFetcher::default();
        for url in [
            format!("http://127.0.0.1:{port}/page"),
            format!("http://localhost:{port}/page"),
            format!("http://[::ffff:127.0.0.1]:{port}/page"),
        ] {
            assert!(
                matches!(fetcher.fetch(&url).await, Err(FetchError::Refused(_))),
                "{url}"
            );
        }
        assert_eq!(hits.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn fetches_and_follows_checked_redirects() {
        let (port, _) = serve(site).await;
        let fetcher = test_fetcher();
        let text = fetcher
            .fetch(&format!("http://127.0.0.1:{port}/r1"))
            .await
            .ok()
            .unwrap();
        assert_eq!(
            text,
            format!("URL: http://127.0.0.1:{port}/page\n\nHello\nWorld")
        );

        for path in ["/to-private", "/to-metadata", "/to-localhost"] {
            let result = fetcher
                .fetch(&format!("http://127.0.0.1:{port}{path}"))
                .await;
            match result {
                Err(FetchError::Refused(message)) => {
                    assert!(message.contains("public"), "{path}: {message}")
                }
                _ => panic!("{path} was not refused"),
            }
        }
        match fetcher
            .fetch(&format!("http://127.0.0.1:{port}/loop"))
            .await
        {
            Err(FetchError::Failed(message)) => assert!(message.contains("more than 5")),
            _ => panic!("redirect loop not stopped"),
        }
        match fetcher.fetch(&format!("http://127.0.0.1:{port}/pdf")).await {
            Err(FetchError::Failed(message)) => assert!(message.contains("not a text page")),
            _ => panic!("pdf accepted"),
        }
        match fetcher
            .fetch(&format!("http://127.0.0.1:{port}/missing"))
            .await
        {
            Err(FetchError::Failed(message)) => assert!(message.contains("404")),
            _ => panic!("404 accepted"),
        }
    }

    #[tokio::test]
    async fn body_and_output_are_capped() {
        let (port, _) = serve(site).await;
        let text = test_fetcher()
            .fetch(&format!("http://127.0.0.1:{port}/big"))
            .await
            .ok()
            .unwrap();
        assert!(text.ends_with("only its beginning was read]"));
        assert_eq!(text.matches('x').count(), 64 * 1024);
        let outcome = test_fetcher()
            .fetch_tool(
                Args::parse(
                    super::super::ToolKind::WebFetch,
                    &format!(r#"{{"url": "http://127.0.0.1:{port}/big"}}"#),
                )
                .ok()
                .unwrap(),
            )
            .await;
        assert!(!outcome.refused);
        assert!(outcome.content.len() < READ_CAP_BYTES + 200);
        assert!(outcome.content.contains("more bytes were left out"));
    }

    #[tokio::test]
    async fn web_fetch_needs_allow_web() {
        use super::super::{ToolEnv, ToolKind, Toolbox};
        use crate::agent::sandbox::Sandbox;
        let dir = tempfile::TempDir::new().unwrap();
        let env = ToolEnv::plain(Sandbox::builder(dir.path()).build().unwrap());
        let out = Toolbox::new()
            .execute(
                ToolKind::WebFetch,
                r#"{"url": "https://example.com/"}"#,
                &env,
            )
            .await;
        assert!(out.refused);
        assert!(out.content.contains("web access is off"));
        let env = ToolEnv {
            allow_web: true,
            ..env
        };
        let out = Toolbox::new()
            .execute(
                ToolKind::WebFetch,
                r#"{"url": "http://169.254.169.254/"}"#,
                &env,
            )
            .await;
        assert!(
            out.refused && out.content.contains("metadata"),
            "{}",
            out.content
        );
    }
}
