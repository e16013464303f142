//! The glossary: each English term of zhi's messages and the one Chinese word the catalog
//! uses for it, so that a reader meets one word for one thing (a transcript is 对话记录 in the
//! summary, `manifest show` and the report alike). The catalog's tests hold every entry to it.

/// English term (a whole word, any case) → its Chinese word.
#[rustfmt::skip]
pub(super) const TERMS: &[(&str, &str)] = &[
    ("transcript", "对话记录"),
    ("tokens", "令牌"),
];
