//! Aligned columns that fit a width: the terminal's (`COLUMNS` first), else 100. When the
//! natural widths do not fit, the widest columns give way first, each as its [`Fit`] allows:
//! text wraps at spaces and after commas, a path loses its middle to `…`, a one-line
//! description is cut at a word with `…`; a name, an id or a path is never split mid-word
//! (docs/display.md#tables).

/// No width at all: a table printed neither to a terminal nor for a `COLUMNS` (a pipe, a
/// file) is not fitted, so that nothing of it is cut, elided, wrapped or left out.
const UNFITTED: usize = usize::MAX / 4;

/// The width tables are fitted to: `COLUMNS` when set, else the terminal's width when stdout
/// is one, never under 40; else none ([`UNFITTED`]).
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
    columns.or_else(terminal).map_or(UNFITTED, |w| w.max(40))
}

/// How a column gives way when the table is too wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fit {
    /// Never narrower than its widest cell (names, ids, statuses, numbers).
    Keep,
    /// Wraps onto more lines at spaces and after commas, never narrower than its longest word.
    Wrap,
    /// One line; a path too long loses its middle to `…`, its file name kept.
    Elide,
    /// One line; a text too long is cut after a word, with `…`.
    Cut,
    /// Wraps as [`Fit::Wrap`]; left out, last first, when the other columns cannot fit.
    Optional,
}

/// The narrowest an [`Fit::Elide`] or [`Fit::Cut`] column becomes.
const MIN_SHORTENED: usize = 16;

/// The columns a cut text should have: optional columns give way to it.
const READABLE: usize = 40;

/// `headers` and `rows` as lines of aligned columns, two spaces apart, at most `max` wide
/// (unless the columns' narrowest widths do not fit), trailing spaces trimmed; every column
/// wraps.
#[cfg(test)]
fn render(headers: &[&str], rows: &[Vec<String>], max: usize) -> Vec<String> {
    let fits = vec![Fit::Wrap; headers.len()];
    render_fitted(headers, &fits, rows, &[], max)
}

/// [`render`] with each column's [`Fit`], and a note under a row (`notes[i]` for row `i`),
/// indented and wrapped at words.
pub(super) fn render_fitted(
    headers: &[&str],
    fits: &[Fit],
    rows: &[Vec<String>],
    notes: &[Option<String>],
    max: usize,
) -> Vec<String> {
    let n = headers.len();
    let cells = |r: &Vec<String>| -> Vec<String> {
        (0..n)
            .map(|i| r.get(i).cloned().unwrap_or_default())
            .collect()
    };
    let mut rows: Vec<Vec<String>> =
        std::iter::once(headers.iter().map(|h| h.to_string()).collect())
            .chain(rows.iter().map(cells))
            .collect();
    let mut fits: Vec<Fit> = (0..n)
        .map(|i| fits.get(i).copied().unwrap_or(Fit::Wrap))
        .collect();
    // Optional columns go, last first, while the others cannot fit even at their narrowest,
    // or leave a cut text fewer than READABLE columns.
    while let Some(drop) = fits.iter().rposition(|f| *f == Fit::Optional) {
        let (natural, floor) = natural_and_floor(&rows, &|i| fits[i]);
        let gaps = 2 * fits.len().saturating_sub(1);
        let widths = fit(&rows, fits.len(), max, &|i| fits[i]);
        let cramped =
            (0..fits.len()).any(|i| fits[i] == Fit::Cut && widths[i] < natural[i].min(READABLE));
        if floor.iter().sum::<usize>() + gaps <= max && !cramped {
            break;
        }
        fits.remove(drop);
        for row in &mut rows {
            row.remove(drop);
        }
    }
    let n = fits.len();
    let fit_of = |i: usize| fits[i];
    let widths = fit(&rows, n, max, &fit_of);
    let mut out = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        let wrapped: Vec<Vec<String>> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| match fit_of(i) {
                _ if r == 0 => wrap(cell, *w),
                Fit::Elide => vec![elide(cell, *w)],
                Fit::Cut => vec![cut(cell, *w)],
                Fit::Keep | Fit::Wrap | Fit::Optional => wrap(cell, *w),
            })
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        for line in 0..height {
            let mut text = String::new();
            for (i, lines) in wrapped.iter().enumerate() {
                let part = lines.get(line).map(String::as_str).unwrap_or("");
                text.push_str(part);
                if i + 1 < n {
                    let pad = widths[i].saturating_sub(display_width(part)) + 2;
                    text.push_str(&" ".repeat(pad));
                }
            }
            out.push(text.trim_end().to_string());
        }
        if let Some(Some(note)) = r.checked_sub(1).and_then(|i| notes.get(i)) {
            for (k, line) in wrap(note, max.saturating_sub(4).max(20)).iter().enumerate() {
                out.push(format!("{}{line}", if k == 0 { "  ↳ " } else { "    " }));
            }
        }
    }
    out
}

/// Column widths: each column's widest cell, then, while the table is wider than `max`, the
/// widest column that may give way one narrower, down to its floor: a kept column's widest
/// cell, a wrapped column's longest word, a shortened one's [`MIN_SHORTENED`] or, for a path,
/// its file name after `…/` (and never under its header's longest word).
fn fit(rows: &[Vec<String>], n: usize, max: usize, fit_of: &dyn Fn(usize) -> Fit) -> Vec<usize> {
    let (mut widths, floor) = natural_and_floor(rows, fit_of);
    let gaps = 2 * n.saturating_sub(1);
    while widths.iter().sum::<usize>() + gaps > max {
        let Some((i, _)) = widths
            .iter()
            .enumerate()
            .filter(|(i, w)| **w > floor[*i])
            .max_by_key(|(i, w)| (**w, std::cmp::Reverse(*i)))
        else {
            break;
        };
        widths[i] -= 1;
    }
    widths
}

/// Each column's natural width (its widest cell) and the narrowest it may become.
fn natural_and_floor(
    rows: &[Vec<String>],
    fit_of: &dyn Fn(usize) -> Fit,
) -> (Vec<usize>, Vec<usize>) {
    let n = rows[0].len();
    let mut widths = vec![0; n];
    let mut words = vec![0; n];
    // An elided path keeps its file name whole: `…/name`.
    let mut names = vec![0; n];
    for row in rows.iter().skip(1) {
        for (i, cell) in row.iter().enumerate() {
            let name = cell.rsplit('/').next().unwrap_or(cell);
            let shortest = if name.len() < cell.len() { 2 } else { 0 } + display_width(name);
            names[i] = names[i].max(shortest.min(display_width(cell)));
        }
    }
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(display_width(cell));
            let longest = cell.split([' ', ',']).map(display_width).max().unwrap_or(0)
                + usize::from(cell.contains(','));
            words[i] = words[i].max(longest);
        }
    }
    let header_word = |i: usize| rows[0][i].split(' ').map(display_width).max().unwrap_or(0);
    let floor: Vec<usize> = (0..n)
        .map(|i| {
            let f = match fit_of(i) {
                Fit::Keep => widths[i],
                Fit::Wrap | Fit::Optional => words[i].min(widths[i]),
                Fit::Elide => MIN_SHORTENED.min(widths[i]).max(names[i]),
                Fit::Cut => MIN_SHORTENED.min(widths[i]),
            };
            f.max(header_word(i)).max(1)
        })
        .collect();
    (widths, floor)
}

/// A path in at most `width` columns, its middle replaced by `…`: whole folder names where
/// they fit (`examples/…/acme.txt`, `…/invoices/acme.txt`, the folders nearest the file
/// first), else its head and its file name, else the file name's tail.
pub(crate) fn elide(text: &str, width: usize) -> String {
    if display_width(text) <= width {
        return text.to_string();
    }
    let parts: Vec<&str> = text.split('/').collect();
    for k in 1..parts.len() {
        let tail = parts[k..].join("/");
        let shapes = [
            (k >= 2).then(|| format!("{}/…/{tail}", parts[0])),
            Some(format!("…/{tail}")),
        ];
        if let Some(fits) = shapes
            .into_iter()
            .flatten()
            .find(|s| display_width(s) <= width)
        {
            return fits;
        }
    }
    let chars: Vec<char> = text.chars().collect();
    let room = width.saturating_sub(1);
    let mut tail: Vec<char> = Vec::new();
    for c in chars.iter().rev() {
        if tail.iter().map(|c| char_width(*c)).sum::<usize>() + char_width(*c) > room {
            break;
        }
        tail.push(*c);
    }
    format!("…{}", tail.iter().rev().collect::<String>())
}

/// A text in one line of at most `width` columns: cut after the last word that fits, with
/// `…` (mid-word only when the first word does not fit).
pub(crate) fn cut(text: &str, width: usize) -> String {
    if display_width(text) <= width {
        return text.to_string();
    }
    let room = width.saturating_sub(1);
    let mut out = String::new();
    for word in text.split(' ') {
        let sep = usize::from(!out.is_empty());
        if display_width(&out) + sep + display_width(word) > room {
            break;
        }
        if sep == 1 {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        for c in text.chars() {
            if display_width(&out) + char_width(c) > room {
                break;
            }
            out.push(c);
        }
    }
    let out = out.trim_end_matches([',', ';', ':', ' ']);
    format!("{out}…")
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

#[cfg(test)]
mod fit_tests {
    use super::*;

    #[test]
    fn paths_lose_their_middle_and_keep_the_file_name() {
        assert_eq!(
            elide("examples/invoices/acme-2041.txt", 24),
            "…/invoices/acme-2041.txt"
        );
        assert_eq!(
            elide("data/2024/examples/invoices/acme-2041.txt", 30),
            "data/…/invoices/acme-2041.txt"
        );
        assert_eq!(
            elide("examples/invoices/acme-2041.txt", 20),
            "…/acme-2041.txt"
        );
        let e = elide("examples/invoices/发票-0315.txt", 20);
        assert_eq!(e, "…/发票-0315.txt");
        assert_eq!(elide("a/b.txt", 24), "a/b.txt");
        assert_eq!(elide("a-very-long-file-name.txt", 10), "…-name.txt");
    }

    #[test]
    fn descriptions_are_cut_after_a_word() {
        assert_eq!(
            cut("Summarize a document into summary.md", 20),
            "Summarize a…"
        );
        assert_eq!(cut("short", 20), "short");
    }

    #[test]
    fn at_80_columns_no_name_or_path_is_split() {
        let rows = vec![vec![
            "3f2a9c0e".to_string(),
            "invoice-to-excel".to_string(),
            "examples/invoices/initech-0093.txt".to_string(),
            "text".to_string(),
            "will-fail".to_string(),
            "1234".to_string(),
        ]];
        let fits = [
            Fit::Keep,
            Fit::Keep,
            Fit::Elide,
            Fit::Keep,
            Fit::Keep,
            Fit::Keep,
        ];
        let out = render_fitted(
            &["JOB", "SKILL", "INPUT", "EXTRACT", "STATUS", "TOKENS"],
            &fits,
            &rows,
            &[Some("zhi cannot read this type of file".into())],
            74,
        );
        assert!(out.iter().all(|l| display_width(l) <= 74), "{out:#?}");
        assert!(out[1].contains("…/initech-0093.txt"), "{out:#?}");
        assert!(out[1].contains("invoice-to-excel") && out[1].contains("initech-0093.txt"));
        assert_eq!(out[2], "  ↳ zhi cannot read this type of file");
    }
}
