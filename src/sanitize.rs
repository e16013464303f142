//! Untrusted text (model output, file names from documents) never reaches a terminal with its
//! control characters: an escape sequence in a document must not be able to move the cursor,
//! retitle the window or hide lines.

/// Replace control characters (except newline and tab) with the Unicode replacement
/// character, and escape sequences with nothing, so the text is safe to print.
pub(crate) fn for_terminal(s: &str) -> String {
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

/// How many terminal columns `s` takes: a Chinese character takes two.
pub(crate) fn columns(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// `s` cut to at most `max` columns, with `…` where it was cut.
pub(crate) fn fit(s: &str, max: usize) -> String {
    if columns(s) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        // One column is kept for the ellipsis.
        if used + w + 1 > max {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_characters_take_two_columns() {
        assert_eq!(columns("abc"), 3);
        assert_eq!(columns("失败的任务"), 10);
        assert_eq!(fit("失败的任务", 10), "失败的任务");
        assert_eq!(fit("失败的任务", 9), "失败的任…");
        assert_eq!(fit("失败的任务", 8), "失败的…");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert!(columns(&fit("失败的任务 and more", 7)) <= 7);
    }

    #[test]
    fn strips_escapes_and_bidi() {
        assert_eq!(for_terminal("a\x1b[2Jb\nc"), "a\u{FFFD}[2Jb\nc");
        assert_eq!(one_line("x\u{202E}y\tz"), "x\u{FFFD}y z");
    }
}
