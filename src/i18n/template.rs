//! A catalog template: the text of a message with `{name}` holes, written as `format!` writes
//! it (`{{` and `}}` are braces). An English template matches a whole formatted message; its
//! holes capture the variable parts, which the Chinese template puts back.

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece {
    Text(String),
    Hole(String),
}

/// A parsed template.
#[derive(Debug, Clone)]
pub(super) struct Template {
    pub pieces: Vec<Piece>,
}

impl Template {
    /// Parse `text`; `None` for an unclosed `{` or a stray `}`.
    pub(super) fn parse(text: &str) -> Option<Template> {
        let mut pieces = Vec::new();
        let mut lit = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    lit.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    lit.push('}');
                }
                '{' => {
                    let mut name = String::new();
                    loop {
                        match chars.next()? {
                            '}' => break,
                            c => name.push(c),
                        }
                    }
                    if !lit.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut lit)));
                    }
                    pieces.push(Piece::Hole(name));
                }
                '}' => return None,
                c => lit.push(c),
            }
        }
        if !lit.is_empty() {
            pieces.push(Piece::Text(lit));
        }
        Some(Template { pieces })
    }

    /// The names of the holes, in order.
    #[cfg(test)]
    pub(super) fn holes(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Hole(h) => Some(h.as_str()),
            Piece::Text(_) => None,
        })
    }

    /// How much fixed text the template has: of two templates matching a message, the one
    /// with more says more about it.
    pub(super) fn specificity(&self) -> usize {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.chars().count(),
                Piece::Hole(_) => 0,
            })
            .sum()
    }

    /// Whether two holes follow each other (the split between them would be a guess).
    #[cfg(test)]
    pub(super) fn has_adjacent_holes(&self) -> bool {
        self.pieces
            .windows(2)
            .any(|w| matches!(w, [Piece::Hole(_), Piece::Hole(_)]))
    }

    /// The captures of the holes when the template matches all of `text`. Each hole takes
    /// at least one character and as few as it can, leftmost first.
    pub(super) fn captures<'t>(&self, text: &'t str) -> Option<Vec<(&str, &'t str)>> {
        let mut caps = Vec::new();
        match_from(&self.pieces, text, &mut caps).then_some(caps)
    }

    /// The template with the holes filled by `fill(name)`.
    pub(super) fn render(&self, mut fill: impl FnMut(&str) -> String) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Hole(h) => out.push_str(&fill(h)),
            }
        }
        out
    }
}

fn match_from<'p, 't>(
    pieces: &'p [Piece],
    text: &'t str,
    caps: &mut Vec<(&'p str, &'t str)>,
) -> bool {
    match pieces {
        [] => text.is_empty(),
        [Piece::Text(t), rest @ ..] => {
            text.starts_with(t.as_str()) && match_from(rest, &text[t.len()..], caps)
        }
        [Piece::Hole(h)] => {
            if text.is_empty() {
                return false;
            }
            caps.push((h, text));
            true
        }
        [Piece::Hole(h), Piece::Text(next), ..] => {
            // The first character belongs to the hole: a hole is never empty.
            let Some(first) = text.chars().next() else {
                return false;
            };
            let mut from = first.len_utf8();
            while let Some(at) = text[from..].find(next.as_str()) {
                let end = from + at;
                caps.push((h, &text[..end]));
                if match_from(&pieces[1..], &text[end..], caps) {
                    return true;
                }
                caps.pop();
                from = end + text[end..].chars().next().map_or(1, char::len_utf8);
            }
            false
        }
        // Two holes side by side never match: the catalog test refuses such templates.
        [Piece::Hole(_), Piece::Hole(_), ..] => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_holes_and_braces() {
        let t = Template::parse("a {x} {{b}} {y}").unwrap();
        assert_eq!(
            t.pieces,
            vec![
                Piece::Text("a ".into()),
                Piece::Hole("x".into()),
                Piece::Text(" {b} ".into()),
                Piece::Hole("y".into()),
            ]
        );
        assert!(Template::parse("a {x").is_none());
        assert!(Template::parse("a } b").is_none());
    }

    #[test]
    fn holes_take_the_shortest_text_that_lets_the_rest_match() {
        let t = Template::parse("cannot read {path}: {reason}").unwrap();
        let caps = t.captures("cannot read a.txt: x: y").unwrap();
        assert_eq!(caps, vec![("path", "a.txt"), ("reason", "x: y")]);
        assert!(t.captures("cannot read : x").is_none());
        assert!(t.captures("cannot write a: b").is_none());
        let t = Template::parse("{n} job(s) done").unwrap();
        assert_eq!(t.captures("3 job(s) done").unwrap(), vec![("n", "3")]);
        assert!(t.captures("3 job(s) done!").is_none());
    }
}
