//! Long documents (docs/documents.md#long-documents): a token budget per model, and a splitter that
//! cuts text on natural boundaries — pages, headings, paragraphs, then sentences — into pieces that
//! fit. Nothing is ever dropped: the pieces, joined, are the document.
//!
//! Token estimate: CJK characters (and other wide scripts) count one token each; other text
//! counts one token per four characters (see `llm::text_tokens`). It errs on the high side for
//! English and is close for Chinese, which is what a budget needs.

use crate::config::ModelBudget;
use crate::llm::text_tokens;
use crate::skills::Chunking;

/// Tokens reserved for the system prompt, the tool definitions and the message framing.
pub(crate) const PROMPT_OVERHEAD: u32 = 1_500;

/// Tokens reserved for the system prompt and the message framing of a direct request (no tool
/// definitions, no conversation).
pub const DIRECT_PROMPT_OVERHEAD: u32 = 600;

/// The least document text worth a request of its own, in estimated tokens.
pub(crate) const MIN_DOCUMENT_TOKENS: u32 = 128;

/// The fewest tokens one request of a skill on a model is charged against a per-minute token
/// budget: its whole answer (`max_output`, sent as `max_tokens`, which the estimate counts in
/// full), its prompt, and [`MIN_DOCUMENT_TOKENS`] of document. A `--tpm` below this fits no
/// request at all.
pub(crate) fn request_floor(budget: ModelBudget, direct: bool) -> u32 {
    let overhead = if direct {
        DIRECT_PROMPT_OVERHEAD
    } else {
        PROMPT_OVERHEAD
    };
    budget
        .max_output
        .saturating_add(overhead)
        .saturating_add(MIN_DOCUMENT_TOKENS)
}

/// How large one piece may be for a skill on a model, in estimated tokens.
///
/// Agent loop: half of what the context leaves after the answer and the prompt goes to the
/// document; the other half is for the conversation (tool calls, tool results). Direct mode
/// (one request, no tools): all of it goes to the document. In `map` mode each piece's output
/// is about as long as the piece (a translation), so a piece is also capped by the model's
/// maximum output.
pub fn piece_budget(budget: ModelBudget, mode: Chunking, direct: bool) -> u32 {
    let overhead = if direct {
        DIRECT_PROMPT_OVERHEAD
    } else {
        PROMPT_OVERHEAD
    };
    let room = budget
        .context_window
        .saturating_sub(budget.max_output)
        .saturating_sub(overhead);
    let mut b = if direct { room } else { room / 2 };
    if mode == Chunking::Map {
        b = b.min(budget.max_output * 4 / 5);
    }
    b.max(128)
}

/// The estimated tokens of a text.
pub fn tokens(text: &str) -> u32 {
    text_tokens(text).min(u64::from(u32::MAX)) as u32
}

/// One piece of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    /// 0-based position in the document.
    pub index: usize,
    pub text: String,
    /// Text repeated from the end of the previous piece (map-reduce only), shown to the model
    /// as context, not part of `text`.
    pub overlap: String,
}

/// Split `text` into pieces of at most `budget` estimated tokens. `overlap` adds the last
/// paragraph (up to a tenth of the budget) of the previous piece as context.
pub(crate) fn split(text: &str, budget: u32, overlap: bool) -> Vec<Piece> {
    let budget = budget.max(16);
    let mut units: Vec<String> = Vec::new();
    for block in blocks(text) {
        if tokens(&block) <= budget {
            units.push(block);
        } else if is_fenced(&block) {
            // Code is cut at its lines, never inside one (a piece may then hold a part of it).
            units.extend(block.split_inclusive('\n').map(str::to_string));
        } else {
            for s in sentences(&block) {
                if tokens(&s) <= budget {
                    units.push(s);
                } else {
                    units.extend(hard_split(&s, budget));
                }
            }
        }
    }
    // Pack units greedily in order.
    let mut pieces: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut cur_tokens = 0u32;
    for u in units {
        let t = tokens(&u);
        if !cur.is_empty() && cur_tokens + t > budget {
            pieces.push(std::mem::take(&mut cur));
            cur_tokens = 0;
        }
        cur.push_str(&u);
        cur_tokens += t;
    }
    if !cur.is_empty() || pieces.is_empty() {
        pieces.push(cur);
    }
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for (i, p) in pieces.iter().enumerate() {
        let ov = if overlap && i > 0 {
            last_paragraph(&pieces[i - 1], budget / 10)
        } else {
            String::new()
        };
        out.push(Piece {
            index: i,
            text: p.clone(),
            overlap: ov,
        });
    }
    out
}

/// A block that is a fenced code block (opened by ``` or ~~~).
fn is_fenced(block: &str) -> bool {
    let t = block.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// Natural blocks, each keeping its trailing separator so that joining them restores the
/// text: pages (form feed), then Markdown headings and blank-line paragraphs.
fn blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_blank = false;
    // Inside a fenced code block: its blank lines and `#` lines (a shell comment) end nothing.
    let mut fence: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        let marker = ["```", "~~~"]
            .into_iter()
            .find(|m| trimmed.trim_start().starts_with(m));
        let is_heading = trimmed.starts_with('#') && fence.is_none();
        let starts_page = line.starts_with('\u{c}');
        let opens = fence.is_none() && marker.is_some();
        if (is_heading || starts_page || (prev_blank && fence.is_none()) || opens)
            && !cur.trim().is_empty()
        {
            out.push(std::mem::take(&mut cur));
        }
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(f), Some(m)) if f == m => fence = None,
            _ => {}
        }
        // A form feed inside a line ends a page there.
        if let Some(pos) = line.find('\u{c}').filter(|p| *p > 0) {
            cur.push_str(&line[..pos]);
            out.push(std::mem::take(&mut cur));
            cur.push_str(&line[pos..]);
        } else {
            cur.push_str(line);
        }
        prev_blank = trimmed.trim().is_empty();
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Sentences, ending after `.`, `!`, `?` (followed by white space) or `。！？；`.
fn sentences(block: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = block.chars().peekable();
    while let Some(c) = chars.next() {
        cur.push(c);
        let end = match c {
            '。' | '！' | '？' | '；' => true,
            '.' | '!' | '?' => chars.peek().is_none_or(|n| n.is_whitespace()),
            '\n' => true,
            _ => false,
        };
        if end {
            // Keep following white space with the sentence it ends.
            while let Some(n) = chars.peek() {
                if n.is_whitespace() {
                    cur.push(*n);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A sentence larger than the budget is cut by characters, at white space where it can. The
/// estimate is kept as a running count, so this is linear in the sentence's length.
fn hard_split(s: &str, budget: u32) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    // Running estimate: CJK characters one token each, other characters a quarter.
    let (mut wide, mut narrow) = (0u64, 0u64);
    let cost = |c: char| if is_wide(c) { (1, 0) } else { (0, 1) };
    let over = |wide: u64, narrow: u64| wide + narrow.div_ceil(4) >= u64::from(budget);
    for c in s.chars() {
        cur.push(c);
        let (w, n) = cost(c);
        wide += w;
        narrow += n;
        if over(wide, narrow) {
            // Cut after the last white space in the second half, else right here.
            let cut = cur
                .char_indices()
                .filter(|(_, ch)| ch.is_whitespace())
                .map(|(p, ch)| p + ch.len_utf8())
                .next_back()
                .filter(|p| *p > cur.len() / 2 && *p < cur.len());
            let rest = match cut {
                Some(p) => cur.split_off(p),
                None => String::new(),
            };
            out.push(std::mem::replace(&mut cur, rest));
            wide = 0;
            narrow = 0;
            for ch in cur.chars() {
                let (w, n) = cost(ch);
                wide += w;
                narrow += n;
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Characters the estimate counts as one token each (CJK and other wide scripts).
fn is_wide(c: char) -> bool {
    !c.is_ascii() && text_tokens(&format!("{c}{c}")) == 2
}

fn last_paragraph(text: &str, max_tokens: u32) -> String {
    let trimmed = text.trim_end();
    let start = trimmed.rfind("\n\n").map(|p| p + 2).unwrap_or(0);
    let para = &trimmed[start..];
    if tokens(para) <= max_tokens {
        para.to_string()
    } else {
        // The tail of the paragraph, within the limit.
        let chars: Vec<char> = para.chars().collect();
        let mut n = 0;
        let mut tail = String::new();
        for c in chars.iter().rev() {
            n += 1;
            if tokens(&tail) >= max_tokens || n > 4 * max_tokens as usize {
                break;
            }
            tail.insert(0, *c);
        }
        tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(p: &[Piece]) -> String {
        p.iter().map(|p| p.text.as_str()).collect()
    }

    #[test]
    fn a_fenced_block_is_never_cut_at_its_blank_or_comment_lines() {
        let code = "```sh\n# list the packages\ndpkg -l\n\n# and their files\ndpkg -L bash\n```\n";
        let para = |i: usize| {
            format!("Paragraph {i} says what the commands below do, at some length.\n\n")
        };
        let doc = format!("{}{}{code}\n{}", para(1), para(2), para(3));
        for budget in [20, 30, 40, 200] {
            let pieces = split(&doc, budget, false);
            assert_eq!(joined(&pieces), doc);
            let holding: Vec<&Piece> = pieces.iter().filter(|p| p.text.contains("dpkg")).collect();
            assert_eq!(holding.len(), 1, "budget {budget}: {pieces:?}");
            assert!(
                holding[0].text.contains(code),
                "budget {budget}: {pieces:?}"
            );
        }
    }

    #[test]
    fn nothing_is_lost_and_pieces_fit() {
        let mut doc = String::new();
        for i in 0..300 {
            doc.push_str(&format!("\u{c}# Page {i}\n\nParagraph one of page {i}. It has two sentences.\n\n第{i}页的中文段落。这里有更多的文字！\n"));
        }
        let pieces = split(&doc, 200, false);
        assert!(pieces.len() > 10);
        assert_eq!(joined(&pieces), doc);
        for p in &pieces {
            assert!(tokens(&p.text) <= 200, "{}", tokens(&p.text));
        }
        // Pages are not cut: every piece but the first starts at a page or heading boundary.
        for p in &pieces[1..] {
            assert!(
                p.text.starts_with('\u{c}')
                    || p.text.starts_with('#')
                    || p.text.starts_with("第")
                    || p.text.starts_with("Paragraph"),
                "{:?}",
                &p.text[..20]
            );
        }
    }

    #[test]
    fn under_budget_is_one_piece() {
        let doc = "word ".repeat(100);
        let pieces = split(&doc, tokens(&doc), false);
        assert_eq!(pieces.len(), 1);
        assert_eq!(pieces[0].text, doc);
    }

    #[test]
    fn long_sentences_are_cut_without_loss() {
        let doc = "x".repeat(10_000) + " end.";
        let pieces = split(&doc, 100, false);
        assert_eq!(joined(&pieces), doc);
        assert!(pieces.iter().all(|p| tokens(&p.text) <= 100));
    }

    #[test]
    fn multibyte_white_space_is_cut_cleanly() {
        let doc = "中文\u{3000}内容\u{a0}".repeat(400);
        let pieces = split(&doc, 50, false);
        assert_eq!(joined(&pieces), doc);
        assert!(pieces.iter().all(|p| tokens(&p.text) <= 50));
        let long = "a".repeat(200_000);
        let pieces = split(&long, 1_000, false);
        assert_eq!(joined(&pieces), long);
    }

    #[test]
    fn overlap_only_when_asked() {
        let doc = "Alpha paragraph.\n\nBeta paragraph.\n\nGamma paragraph.\n\n".repeat(50);
        assert!(split(&doc, 50, false).iter().all(|p| p.overlap.is_empty()));
        let with = split(&doc, 50, true);
        assert!(with[1..].iter().all(|p| !p.overlap.is_empty()));
    }

    #[test]
    fn map_budget_respects_max_output() {
        let b = ModelBudget {
            context_window: 128_000,
            max_output: 4_096,
        };
        assert_eq!(piece_budget(b, Chunking::Map, false), 3_276);
        assert!(piece_budget(b, Chunking::MapReduce, false) > 50_000);
    }

    #[test]
    fn direct_pieces_take_the_whole_room() {
        // A llama.cpp server with a 4,096-token window: answers up to 1,024 tokens.
        let b = ModelBudget {
            context_window: 4_096,
            max_output: 1_024,
        };
        assert_eq!(
            piece_budget(b, Chunking::MapReduce, true),
            4_096 - 1_024 - 600
        );
        assert_eq!(
            piece_budget(b, Chunking::MapReduce, false),
            (4_096 - 1_024 - 1_500) / 2
        );
        assert_eq!(piece_budget(b, Chunking::Map, true), 819);
    }
}
