//! Aligned columns that fit a width: the terminal's (`COLUMNS` first), else 100. When the
//! natural widths do not fit, the widest columns give way first and their cells wrap onto
//! more lines (at spaces, after commas, mid-word only for a word wider than its column).

/// The width tables are fitted to: `COLUMNS` when set, else the terminal's width when stdout
/// is one, else 100; never under 40.
pub(super) fn width() -> usize {
    use std::io::IsTerminal;
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok());
    let terminal = || {
        std::io::stdout()
            .is_terminal()
            .then(|| terminal_size::terminal_size().map(|(w, _)| usize::from(w.0)))
            .flatten()
    };
    columns.or_else(terminal).unwrap_or(100).max(40)
}

/// `headers` and `rows` as lines of aligned columns, two spaces apart, at most `max` wide
/// (unless even one character a column cannot fit), trailing spaces trimmed.
pub(super) fn render(headers: &[&str], rows: &[Vec<String>], max: usize) -> Vec<String> {
    let n = headers.len();
    let cells = |r: &Vec<String>| -> Vec<String> {
        (0..n)
            .map(|i| r.get(i).cloned().unwrap_or_default())
            .collect()
    };
    let rows: Vec<Vec<String>> = std::iter::once(headers.iter().map(|h| h.to_string()).collect())
        .chain(rows.iter().map(cells))
        .collect();
    let widths = fit(&rows, n, max);
    let mut out = Vec::new();
    for row in &rows {
        let wrapped: Vec<Vec<String>> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| wrap(cell, *w))
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        for line in 0..height {
            let mut text = String::new();
            for (i, lines) in wrapped.iter().enumerate() {
                let part = lines.get(line).map(String::as_str).unwrap_or("");
                text.push_str(part);
                if i + 1 < n {
                    text.push_str(&" ".repeat(widths[i] - display_width(part) + 2));
                }
            }
            out.push(text.trim_end().to_string());
        }
    }
    out
}

/// Column widths: each column's widest cell, then, while the table is wider than `max`, the
/// widest column one narrower (never under its header's width or 6, whichever is less).
fn fit(rows: &[Vec<String>], n: usize, max: usize) -> Vec<usize> {
    let mut widths = vec![0; n];
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(display_width(cell));
        }
    }
    let floor: Vec<usize> = rows[0].iter().map(|h| display_width(h).min(6)).collect();
    let gaps = 2 * n.saturating_sub(1);
    while widths.iter().sum::<usize>() + gaps > max {
        let Some((i, _)) = widths
            .iter()
            .enumerate()
            .filter(|(i, w)| **w > floor[*i].max(1))
            .max_by_key(|(i, w)| (**w, std::cmp::Reverse(*i)))
        else {
            break;
        };
        widths[i] -= 1;
    }
    widths
}

/// `text` in lines of at most `width` display columns.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    if display_width(text) <= width {
        return vec![text.to_string()];
    }
    // Pieces that may start a new line, each with whether a space comes before it: words,
    // and the parts of a comma-separated list (`file_read,ocr`), which join without one.
    let mut pieces: Vec<(bool, &str)> = Vec::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut rest = word;
        let mut spaced = true;
        while let Some(at) = rest.find(',').filter(|at| at + 1 < rest.len()) {
            pieces.push((spaced, &rest[..=at]));
            rest = &rest[at + 1..];
            spaced = false;
        }
        pieces.push((spaced, rest));
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for (spaced, piece) in pieces {
        for (k, chunk) in split_wide(piece, width).into_iter().enumerate() {
            let sep = if line.is_empty() || !spaced || k > 0 {
                ""
            } else {
                " "
            };
            if display_width(&line) + sep.len() + display_width(&chunk) <= width {
                line.push_str(sep);
                line.push_str(&chunk);
            } else {
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                line = chunk;
            }
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A word cut into pieces of at most `width` display columns.
fn split_wide(word: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut piece = String::new();
    for c in word.chars() {
        if display_width(&piece) + char_width(c) > width && !piece.is_empty() {
            out.push(std::mem::take(&mut piece));
        }
        piece.push(c);
    }
    out.push(piece);
    out
}

/// Display columns of `s`: CJK and other wide characters count two.
pub(super) fn display_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

fn char_width(c: char) -> usize {
    if matches!(c as u32, 0x1100..=0x115F | 0x2E80..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF | 0xFE30..=0xFE4F | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6)
    {
        2
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&[&str]]) -> Vec<Vec<String>> {
        r.iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn a_table_that_fits_is_left_alone() {
        let out = render(
            &["NAME", "SIZE"],
            &rows(&[&["a", "1"], &["年报", "22"]]),
            100,
        );
        assert_eq!(out, ["NAME  SIZE", "a     1", "年报  22"]);
    }

    #[test]
    fn the_widest_column_wraps_at_spaces() {
        let long = "Summarize a document into summary.md (gist, key points, facts and figures)";
        let out = render(&["NAME", "DESCRIPTION"], &rows(&[&["summarize", long]]), 40);
        assert!(out.iter().all(|l| display_width(l) <= 40), "{out:#?}");
        assert_eq!(out[1], "summarize  Summarize a document into");
        assert_eq!(out[2], "           summary.md (gist, key points,");
        let text: Vec<&str> = out[1..].iter().map(|l| l[11..].trim()).collect();
        assert_eq!(text.join(" "), long);
    }

    #[test]
    fn lists_wrap_after_commas_and_long_words_are_cut() {
        assert_eq!(
            wrap("file_read,ocr,file_write,file_list", 14),
            ["file_read,ocr,", "file_write,", "file_list"]
        );
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("(gist, key points)", 12), ["(gist, key", "points)"]);
        assert_eq!(wrap("年报年报年报", 4), ["年报", "年报", "年报"]);
    }
}
