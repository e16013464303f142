//! Text and paths made safe for the page: every string that came from a record (a file name,
//! a server's message, a model name) is spliced into the markup as [`Text`] — escaped by the
//! template engine, with control characters and bidirectional overrides replaced — and every
//! link is made by [`href`], so nothing a document or a server chose can become markup or a
//! script.

use std::fmt::Write;
use std::path::{Component, Path, PathBuf};

/// Text from a record, for the page: control characters and bidirectional overrides replaced
/// as they are for a terminal (a file name must not read differently from what it is), then
/// escaped by maud like any spliced value.
pub(super) struct Text<'a>(pub &'a str);

impl maud::Render for Text<'_> {
    fn render_to(&self, buffer: &mut String) {
        let shown = crate::sanitize::for_terminal(self.0);
        // Writing to a String cannot fail.
        let _ = maud::Escaper::new(buffer).write_str(&shown);
    }
}

/// At most `n` characters of `s`; a longer string keeps its end (a path's file name is its
/// most telling part) behind an ellipsis.
pub(super) fn tail(s: &str, n: usize) -> String {
    let count = s.chars().count();
    if count <= n {
        return s.to_string();
    }
    let tail: String = s.chars().skip(count - (n - 1)).collect();
    format!("…{tail}")
}

/// A relative path as a URL path: every byte other than unreserved characters and `/` is
/// percent-encoded, so `#`, `?`, `%`, spaces, quotes and `<` in a name stay part of the path
/// (and the result needs no further escaping in an attribute).
pub(super) fn href(rel: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in rel.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The path that leads from folder `from` to `to`; both absolute and free of `.`, `..` and
/// links (canonical), so the `..` steps mean what they say.
pub(super) fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for c in &to[common..] {
        out.push(c);
    }
    out
}

/// Whether a path from a record stays below the folder it is relative to: not absolute, no
/// `..`. A record is zhi's own, but a report must not link outside the output folder on its
/// word.
pub(super) fn is_plain_relative(rel: &Path) -> bool {
    !rel.as_os_str().is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    use maud::Render;

    fn text(s: &str) -> String {
        Text(s).render().into_string()
    }

    #[test]
    fn markup_in_names_is_text() {
        assert_eq!(
            text("<script>alert(1)</script>.txt"),
            "&lt;script&gt;alert(1)&lt;/script&gt;.txt"
        );
        // maud quotes every attribute with `"`, so a `'` needs no escape.
        assert_eq!(
            text(r#"a"b'c&d"#),
            "a&quot;b'c&amp;d",
            "safe inside quoted attributes too"
        );
        assert_eq!(text("x\u{202E}y\x1b[2J"), "x\u{FFFD}y\u{FFFD}[2J");
        assert_eq!(text("报告.pdf"), "报告.pdf");
    }

    #[test]
    fn long_names_keep_their_end() {
        assert_eq!(tail("short.txt", 20), "short.txt");
        assert_eq!(tail("a/very/long/path/q3.pdf", 10), "…th/q3.pdf");
        assert_eq!(text(&tail("<<<<<<<<<<b>", 4)), "…&lt;b&gt;");
    }

    #[test]
    fn links_are_percent_encoded() {
        assert_eq!(
            href(Path::new("../out/a b/#1?.txt")),
            "../out/a%20b/%231%3F.txt"
        );
        assert_eq!(href(Path::new("<script>\"'.txt")), "%3Cscript%3E%22%27.txt");
        assert_eq!(href(Path::new("报告.md")), "%E6%8A%A5%E5%91%8A.md");
    }

    #[test]
    fn relative_paths_climb_then_descend() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            relative(Path::new("/o/.zhi/runs/r1"), Path::new("/o")),
            p("../../..")
        );
        assert_eq!(
            relative(Path::new("/o/.zhi/runs/r1"), Path::new("/o/.zhi/runs/r1")),
            p("")
        );
        assert_eq!(
            relative(Path::new("/tmp/x"), Path::new("/o/a")),
            p("../../o/a")
        );
        assert_eq!(relative(Path::new("/"), Path::new("/o")), p("o"));
    }

    #[test]
    fn record_paths_must_stay_inside() {
        assert!(is_plain_relative(Path::new("summarize/a.txt/summary.md")));
        assert!(!is_plain_relative(Path::new("../etc/passwd")));
        assert!(!is_plain_relative(Path::new("/etc/passwd")));
        assert!(!is_plain_relative(Path::new("")));
    }
}
