//! Untrusted text (model output, file names from documents) never reaches a terminal with its
//! control characters: an escape sequence in a document must not be able to move the cursor,
//! retitle the window or hide lines.

/// Replace control characters (except newline and tab) with the Unicode replacement
/// character, and escape sequences with nothing, so the text is safe to print.
pub fn for_terminal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c if c.is_control() => out.push('\u{FFFD}'),
            // Bidirectional overrides can make a file name read differently from what it is.
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Like [`for_terminal`] but for one-line fields (paths, names): newlines become spaces too.
pub fn one_line(s: &str) -> String {
    for_terminal(s).replace(['\n', '\t'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escapes_and_bidi() {
        assert_eq!(for_terminal("a\x1b[2Jb\nc"), "a\u{FFFD}[2Jb\nc");
        assert_eq!(one_line("x\u{202E}y\tz"), "x\u{FFFD}y z");
    }
}
