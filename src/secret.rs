//! Secrets never reach the disk or a terminal (docs/model-api.md#the-key-is-never-written):
//! the API key and the credentials of the base URL are removed from everything a server sends
//! before anything reads it, in the forms a hostile server can hand them back in — as they
//! are, JSON-escaped (`sk\u002d…`, decoded before the search, nested JSON included),
//! percent-encoded, in base64 (at any alignment) and in hex.
//!
//! A key too short to be a secret (under [`MIN_SECRET_CHARS`]: `ollama`, `x`, what local
//! servers are given as a placeholder) is not searched for at all: it would rewrite every
//! document that happens to hold the word. The configuration says so once, on stderr.

use base64::Engine as _;
use serde_json::Value;
use std::borrow::Cow;

/// Shorter keys (and URL credentials) are not treated as secrets.
pub(crate) const MIN_SECRET_CHARS: usize = 16;

/// What replaces a secret.
pub(crate) const REDACTED: &str = "<redacted>";

/// The secrets of one configuration, as every byte pattern they may come back as.
#[derive(Debug, Clone, Default)]
pub(crate) struct Secrets {
    needles: Vec<Vec<u8>>,
}

impl Secrets {
    /// The key, the base URL's password and the values of its query parameters that carry
    /// credentials (`api-key`, `token`, `sig`…; not `api-version`), those long enough to be
    /// secrets.
    pub(crate) fn new(key: Option<&str>, base_url: &str) -> Secrets {
        let mut values: Vec<String> = key.map(str::to_owned).into_iter().collect();
        if let Ok(url) = reqwest::Url::parse(base_url) {
            values.extend(url.password().map(percent_decode));
            values.extend(
                url.query_pairs()
                    .filter(|(name, _)| is_credential_name(name))
                    .map(|(_, v)| v.into_owned()),
            );
        }
        let mut needles: Vec<Vec<u8>> = Vec::new();
        for v in values.iter().filter(|v| is_secret(v)) {
            for n in encodings(v.as_bytes()) {
                // Searched for in a folded text: see [`Folded`].
                let n = n.to_ascii_lowercase();
                if n.len() >= MIN_SECRET_CHARS && !needles.contains(&n) {
                    needles.push(n);
                }
            }
        }
        // Longest first, so a form that contains another is replaced whole.
        needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        Secrets { needles }
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every secret replaced by `<redacted>`.
    pub(crate) fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.found_in(text.as_bytes()) {
            return Cow::Borrowed(text);
        }
        let bytes = self.replace(text.as_bytes().to_vec());
        // A needle is ASCII, so replacing it keeps the text UTF-8.
        Cow::Owned(
            String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        )
    }

    /// A body from a server: a JSON document has the decoded text of every string (and key)
    /// cleaned, strings holding JSON (tool-call arguments) recursively; then the bytes as they
    /// are. A body without secrets is returned untouched.
    pub(crate) fn redact_body(&self, body: Vec<u8>) -> Vec<u8> {
        if self.needles.is_empty() {
            return body;
        }
        // Only an escape (`\u`, `\/`) can hide a secret from the search in the bytes as they
        // are: a body without one, and without a secret, is not parsed at all (every answer
        // of a run and every line of a result file passes here).
        let escaped = |b: &[u8]| find(b, b"\\u").is_some() || find(b, b"\\/").is_some();
        if !escaped(&body) && !self.found_in(&body) {
            return body;
        }
        let body = match serde_json::from_slice::<Value>(&body) {
            Ok(mut value) => {
                if self.redact_json(&mut value) {
                    serde_json::to_vec(&value).unwrap_or(body)
                } else {
                    body
                }
            }
            // JSON lines (a batch's result file): each line on its own.
            Err(_) if body.contains(&b'\n') => return self.redact_lines(body),
            Err(_) => body,
        };
        if self.found_in(&body) {
            self.replace(body)
        } else {
            body
        }
    }

    /// A JSON-lines body (a batch result file): each line as [`Secrets::redact_body`].
    fn redact_lines(&self, body: Vec<u8>) -> Vec<u8> {
        if self.needles.is_empty() {
            return body;
        }
        let mut out = Vec::with_capacity(body.len());
        for line in body.split_inclusive(|b| *b == b'\n') {
            let (text, end) = match line.strip_suffix(b"\n") {
                Some(t) => (t, &b"\n"[..]),
                None => (line, &b""[..]),
            };
            out.extend_from_slice(&self.redact_body(text.to_vec()));
            out.extend_from_slice(end);
        }
        out
    }

    /// Cleans every string of `value` in place; whether anything changed.
    pub(crate) fn redact_json(&self, value: &mut Value) -> bool {
        if self.needles.is_empty() {
            return false;
        }
        match value {
            Value::String(s) => self.redact_string(s),
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, v| self.redact_json(v) | changed),
            Value::Object(map) => {
                let mut changed = false;
                let keys: Vec<String> = map.keys().cloned().collect();
                for k in keys {
                    let clean = self.redact(&k).into_owned();
                    if clean != k
                        && let Some(v) = map.remove(&k)
                    {
                        map.insert(clean.clone(), v);
                        changed = true;
                    }
                    if let Some(v) = map.get_mut(&clean) {
                        changed |= self.redact_json(v);
                    }
                }
                changed
            }
            _ => false,
        }
    }

    fn redact_string(&self, s: &mut String) -> bool {
        let mut changed = false;
        let trimmed = s.trim_start();
        if (trimmed.starts_with('{') || trimmed.starts_with('['))
            && let Ok(mut inner) = serde_json::from_str::<Value>(s)
            && self.redact_json(&mut inner)
        {
            *s = inner.to_string();
            changed = true;
        }
        if let Cow::Owned(clean) = self.redact(s) {
            *s = clean;
            changed = true;
        }
        changed
    }

    fn found_in(&self, hay: &[u8]) -> bool {
        !self.places(hay, true).is_empty()
    }

    fn replace(&self, hay: Vec<u8>) -> Vec<u8> {
        let places = self.places(&hay, false);
        if places.is_empty() {
            return hay;
        }
        let mut out = Vec::with_capacity(hay.len());
        let mut from = 0;
        for place in places {
            out.extend_from_slice(&hay[from..place.start]);
            out.extend_from_slice(REDACTED.as_bytes());
            from = place.end;
        }
        out.extend_from_slice(&hay[from..]);
        out
    }

    /// Where in `hay` a secret stands, in any spelling a text normaliser undoes: another
    /// case, format characters (zero-width spaces, joiners, direction marks, a soft hyphen)
    /// between its characters, HTML character references (`&#115;`, `&#x6B;`, `&lowbar;`) or
    /// fullwidth forms (`ｓｋ`). Sorted, not overlapping; only the first with `first`.
    fn places(&self, hay: &[u8], first: bool) -> Vec<std::ops::Range<usize>> {
        let view = Folded::of(hay);
        let mut found: Vec<std::ops::Range<usize>> = Vec::new();
        for needle in &self.needles {
            let mut at = 0;
            while let Some(i) = find(&view.bytes[at..], needle) {
                let start = at + i;
                let end = start + needle.len();
                found.push(view.from[start]..view.to[end - 1]);
                if first {
                    return found;
                }
                at = end;
            }
        }
        found.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
        let mut merged: Vec<std::ops::Range<usize>> = Vec::with_capacity(found.len());
        for r in found {
            match merged.last_mut() {
                Some(last) if r.start < last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        merged
    }
}

/// A text as the secrets are searched in: ASCII lower case, format characters dropped, HTML
/// character references and fullwidth forms decoded; each byte knows the span of the original
/// it came from.
struct Folded {
    bytes: Vec<u8>,
    from: Vec<usize>,
    to: Vec<usize>,
}

impl Folded {
    fn of(hay: &[u8]) -> Folded {
        let mut view = Folded {
            bytes: Vec::with_capacity(hay.len()),
            from: Vec::with_capacity(hay.len()),
            to: Vec::with_capacity(hay.len()),
        };
        let mut at = 0;
        for chunk in hay.utf8_chunks() {
            let text = chunk.valid();
            let mut i = 0;
            while i < text.len() {
                let c = text[i..].chars().next().unwrap_or('\0');
                let (c, len) = match c {
                    '&' => char_reference(&text[i..]).unwrap_or((c, 1)),
                    _ => (c, c.len_utf8()),
                };
                view.push(c, at + i, at + i + len);
                i += len;
            }
            at += text.len();
            for &b in chunk.invalid() {
                view.bytes.push(b);
                view.from.push(at);
                view.to.push(at + 1);
                at += 1;
            }
        }
        view
    }

    fn push(&mut self, c: char, from: usize, to: usize) {
        if is_format(c) {
            return;
        }
        // Fullwidth ASCII (`ｓ`, `－`) is the ASCII it stands for.
        let c = match c {
            '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
            _ => c,
        };
        let mut buf = [0u8; 4];
        for &b in c.to_ascii_lowercase().encode_utf8(&mut buf).as_bytes() {
            self.bytes.push(b);
            self.from.push(from);
            self.to.push(to);
        }
    }
}

/// Characters that show nothing: zero-width spaces and joiners, direction marks and
/// embeddings, the soft hyphen, the word joiner and invisible operators, the byte-order mark,
/// variation selectors and tags.
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{00ad}' | '\u{034f}' | '\u{061c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}'
        | '\u{ffa0}' | '\u{1d173}'..='\u{1d17a}' | '\u{e0000}'..='\u{e0fff}')
}

/// An HTML character reference at the start of `text` (`&#115;`, `&#x6b;`, `&lowbar;`): the
/// character and the reference's length. Named references: those of the characters a key or
/// its encodings are made of.
fn char_reference(text: &str) -> Option<(char, usize)> {
    let end = text.bytes().take(40).position(|b| b == b';')?;
    let body = &text[1..end];
    let c = if let Some(num) = body.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        char::from_u32(code)?
    } else {
        match body {
            "amp" => '&',
            "lowbar" | "UnderBar" => '_',
            "hyphen" | "dash" | "minus" => '-',
            "period" => '.',
            "plus" => '+',
            "sol" => '/',
            "equals" => '=',
            "percnt" => '%',
            "colon" => ':',
            "tilde" => '~',
            "num" => '#',
            _ => return None,
        }
    };
    Some((c, end + 1))
}

/// A query parameter that carries a credential, by its name.
fn is_credential_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "key",
        "token",
        "secret",
        "sig",
        "pass",
        "auth",
        "credential",
    ]
    .iter()
    .any(|part| name.contains(part))
}

/// Whether a value is long enough to be treated as a secret.
pub(crate) fn is_secret(value: &str) -> bool {
    value.trim().chars().count() >= MIN_SECRET_CHARS
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    memchr::memmem::find(hay, needle)
}

/// The byte patterns a secret may come back as: itself, percent-encoded, hex (both cases) and
/// the part of its base64 (standard and URL-safe) that does not depend on the bytes before it.
fn encodings(secret: &[u8]) -> Vec<Vec<u8>> {
    let mut out = vec![secret.to_vec()];
    // Encoders differ on `-._~`: both spellings, in both cases of the hex digits.
    for keep in [&b"-._~"[..], &b""[..]] {
        let percent: String = secret
            .iter()
            .map(|&b| {
                if b.is_ascii_alphanumeric() || keep.contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let lower = percent_lower_hex(&percent);
        out.push(percent.into_bytes());
        out.push(lower.into_bytes());
    }
    out.push(hex::encode(secret).into_bytes());
    out.push(hex::encode_upper(secret).into_bytes());
    for engine in [
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ] {
        for lead in 0..3usize {
            let mut bytes = vec![0u8; lead];
            bytes.extend_from_slice(secret);
            let text = engine.encode(&bytes);
            // Characters whose six bits all come from the secret.
            let first = (lead * 8).div_ceil(6);
            let last = (lead + secret.len()) * 8 / 6;
            if last > first {
                out.push(text.as_bytes()[first..last].to_vec());
            }
        }
    }
    out
}

/// `%2D` → `%2d`, the rest unchanged.
fn percent_lower_hex(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut hex_left = 0;
    for c in s.chars() {
        if hex_left > 0 {
            out.push(c.to_ascii_lowercase());
            hex_left -= 1;
        } else {
            out.push(c);
            if c == '%' {
                hex_left = 2;
            }
        }
    }
    out
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A URL as zhi shows and records it: no user, password or query (where keys travel), no
/// trailing `/`. Text that is not a URL loses everything from its first `?` and before an `@`.
pub(crate) fn url_for_display(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if u.has_host() => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string().trim_end_matches('/').to_string()
        }
        _ => {
            let no_query = url.split('?').next().unwrap_or("");
            match no_query.split_once("://") {
                Some((scheme, rest)) => match rest.rsplit_once('@') {
                    Some((_, host)) => format!("{scheme}://{host}"),
                    None => no_query.to_string(),
                },
                None => no_query.to_string(),
            }
        }
    }
}

/// The command line as a manifest records it: arguments with spaces quoted, and every URL
/// (`--base-url URL`, `--base-url=URL`) without its credentials.
pub(crate) fn command_for_display(args: impl IntoIterator<Item = String>) -> String {
    args.into_iter()
        .map(|a| {
            let a = match a.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") && value.contains("://") => {
                    format!("{flag}={}", url_for_display(value))
                }
                _ if a.contains("://") => url_for_display(&a),
                _ => a,
            };
            if a.contains(' ') { format!("'{a}'") } else { a }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-0123456789abcdefXYZ";

    #[test]
    fn a_json_escaped_key_is_found_in_the_decoded_text() {
        let s = Secrets::new(Some(KEY), "http://h/v1");
        let body = br#"{"choices":[{"message":{"content":"key sk\u002d0123456789abcdefXYZ here"}}],"model":"sk-0123456789abcdefXYZ"}"#;
        let out = String::from_utf8(s.redact_body(body.to_vec())).unwrap();
        assert!(!out.contains("0123456789abcdef"), "{out}");
        assert!(out.contains("key <redacted> here"), "{out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"], "<redacted>");
    }

    #[test]
    fn a_key_inside_tool_arguments_is_found_two_levels_down() {
        let s = Secrets::new(Some(KEY), "http://h/v1");
        let args = json_string(r#"{"path":"f\u002d\u0073k-0123456789abcdefXYZ.md"}"#);
        let body = format!(r#"{{"arguments":{args}}}"#);
        let out = String::from_utf8(s.redact_body(body.into_bytes())).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        let inner: Value = serde_json::from_str(v["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(inner["path"], "f-<redacted>.md");
    }

    fn json_string(s: &str) -> String {
        Value::String(s.to_string()).to_string()
    }

    #[test]
    fn encoded_forms_are_found() {
        let s = Secrets::new(Some(KEY), "http://h/v1");
        let b64 = base64::engine::general_purpose::STANDARD.encode(format!("x:{KEY}"));
        for text in [
            format!("a {KEY} b"),
            "sk-0123456789abcdefXYZ".replace('-', "%2D"),
            hex::encode(KEY),
            b64,
        ] {
            let out = s.redact(&text);
            assert!(out.contains(REDACTED), "{text} → {out}");
        }
    }

    #[test]
    fn spellings_a_normaliser_undoes_are_found() {
        let s = Secrets::new(Some(KEY), "http://h/v1");
        let mixed_hex: String = hex::encode(KEY)
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if i % 2 == 0 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect();
        let between = |sep: &str| KEY.chars().map(String::from).collect::<Vec<_>>().join(sep);
        let zero_width = between("\u{200b}");
        let joined = between("\u{2060}\u{00ad}");
        let decimal: String = KEY.chars().map(|c| format!("&#{};", c as u32)).collect();
        let hexref: String = KEY.chars().map(|c| format!("&#x{:X};", c as u32)).collect();
        let named = KEY.replace('-', "&hyphen;");
        let fullwidth: String = KEY
            .chars()
            .map(|c| char::from_u32(c as u32 + 0xfee0).unwrap())
            .collect();
        for text in [
            mixed_hex,
            KEY.to_uppercase(),
            zero_width,
            joined,
            decimal,
            hexref,
            named,
            fullwidth,
        ] {
            let out = s.redact(&format!("before {text} after")).into_owned();
            assert_eq!(out, "before <redacted> after", "{text:?}");
        }
    }

    #[test]
    fn text_around_a_folded_key_is_kept_as_it_was() {
        let s = Secrets::new(Some(KEY), "http://h/v1");
        let text = format!(
            "Ünïcode\u{200b} &amp; &#x4e2d; {} 中文 &#bogus; &",
            KEY.to_uppercase()
        );
        assert_eq!(
            s.redact(&text),
            "Ünïcode\u{200b} &amp; &#x4e2d; <redacted> 中文 &#bogus; &"
        );
        assert_eq!(s.redact("nothing here &#115;"), "nothing here &#115;");
    }

    #[test]
    fn a_body_with_the_key_between_zero_width_escapes_is_cleaned() {
        let s = Secrets::new(Some(KEY), "http://h/v1");
        let spaced: String = KEY.chars().map(|c| format!("{c}\\u200b")).collect();
        let body = format!(r#"{{"choices":[{{"message":{{"content":"k {spaced} k"}}}}]}}"#);
        let out = String::from_utf8(s.redact_body(body.into_bytes())).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        let content = v["choices"][0]["message"]["content"].as_str().unwrap();
        assert!(content.starts_with("k <redacted>"), "{content:?}");
    }

    #[test]
    fn a_query_that_is_no_credential_is_no_secret() {
        let s = Secrets::new(None, "https://h/v1?api-version=2024-06-01-preview");
        assert!(s.is_empty());
        assert_eq!(
            s.redact("released as 2024-06-01-preview"),
            "released as 2024-06-01-preview"
        );
    }

    #[test]
    fn a_short_key_changes_nothing() {
        let s = Secrets::new(Some("ollama"), "http://h/v1");
        assert!(s.is_empty());
        assert_eq!(s.redact("summary of ollama"), "summary of ollama");
        let s = Secrets::new(Some("x"), "http://h/v1");
        assert_eq!(s.redact("text"), "text");
    }

    #[test]
    fn url_credentials_are_secrets_and_never_shown() {
        let url = "http://user:p%40ssw0rd-long-enough-1@host:8/v1?api-key=QUERYKEY-0123456789";
        let s = Secrets::new(None, url);
        assert_eq!(s.redact("x QUERYKEY-0123456789 y"), "x <redacted> y");
        assert_eq!(s.redact("p@ssw0rd-long-enough-1"), "<redacted>");
        assert_eq!(url_for_display(url), "http://host:8/v1");
        assert_eq!(
            command_for_display(
                [
                    "zhi",
                    "run",
                    "--base-url",
                    url,
                    &format!("--base-url={url}"),
                    "a b"
                ]
                .map(String::from)
            ),
            "zhi run --base-url http://host:8/v1 --base-url=http://host:8/v1 'a b'"
        );
    }
}
