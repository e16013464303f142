//! The language preamble that precedes every skill's system prompt
//! (docs/skills.md#language-preamble). It lives in one place so that every skill, builtin or
//! user-written, speaks the reader's language.

use super::Skill;

/// Prepended to every system prompt.
pub(super) const LANGUAGE_PREAMBLE: &str = "\
Language rule: write in the language of the input document or, when an argument (`to`, \
`translate_to`, `target`) names a target language, in that one; headings, labels and table \
headers too. Never mix languages in one text.";

/// The system prompt sent to the model: the preamble, then the skill's own prompt.
pub(crate) fn system_prompt(skill: &Skill) -> String {
    let mut prompt = format!("{LANGUAGE_PREAMBLE}\n\n{}", skill.system_prompt.trim_end());
    // An Agent Skill's references and assets: named, so the model knows what it may read.
    if let Some(folder) = skill.folder.as_ref().filter(|f| !f.resources.is_empty()) {
        match &folder.inline {
            Some(texts) => {
                prompt.push_str("\n\nFiles that come with these instructions:\n");
                for (name, text) in texts {
                    prompt.push_str(&format!(
                        "\n--- {name} ---\n{}\n--- end of {name} ---\n",
                        text.trim_end()
                    ));
                }
            }
            None => {
                prompt.push_str(
                    "\n\nFiles that come with these instructions (read them with file_read when the instructions refer to them):\n",
                );
                for (name, _) in &folder.resources {
                    prompt.push_str(&format!("- {name}\n"));
                }
            }
        }
    }
    prompt
}

/// Whether a language named as a user would, lower case (`zh-cn`, `chinese`, `中文`,
/// `简体中文`), is Chinese: the one list the instruction's wording and the language check share.
pub(crate) fn names_chinese(lower: &str) -> bool {
    const NAMES: &[&str] = &[
        "zh",
        "zho",
        "chi",
        "cn",
        "chinese",
        "mandarin",
        "simplified",
    ];
    let base = lower.split(['-', '_', ' ']).next().unwrap_or("");
    NAMES.contains(&base)
        || ["中文", "汉语", "漢語", "简体"]
            .iter()
            .any(|n| lower.contains(n))
}

/// A language as a user names it (`chinese`, `zh`, `中文`, `zh-TW`, `ja`, `fr`) in the words a
/// model reads best in a short instruction (`Simplified Chinese`, `Traditional Chinese`,
/// `Japanese`, `French`); a name it does not know, as given.
pub(crate) fn language_name(value: &str) -> String {
    let l = value.trim().to_lowercase();
    let traditional = ["tw", "hk", "mo", "hant", "traditional"]
        .iter()
        .any(|t| l.split(['-', '_', ' ']).any(|p| p == *t))
        || l.contains('繁');
    let base = l.split(['-', '_', ' ']).next().unwrap_or("");
    const NAMES: &[(&[&str], &str)] = &[
        (&["en", "eng", "english", "英文", "英语", "英語"], "English"),
        (&["ja", "jp", "japanese", "日本語", "日语"], "Japanese"),
        (&["ko", "korean", "한국어", "韩语"], "Korean"),
        (&["fr", "french", "français", "francais", "法语"], "French"),
        (&["de", "german", "deutsch", "德语"], "German"),
        (
            &["es", "spanish", "español", "espanol", "西班牙语"],
            "Spanish",
        ),
        (&["it", "italian", "italiano"], "Italian"),
        (&["pt", "portuguese", "português"], "Portuguese"),
        (&["ru", "russian", "русский"], "Russian"),
    ];
    let chinese = names_chinese(&l);
    if chinese || (traditional && (base == "zh" || l.contains('繁') || base == "traditional")) {
        return if traditional {
            "Traditional Chinese".into()
        } else {
            "Simplified Chinese".into()
        };
    }
    NAMES
        .iter()
        .find(|(names, _)| names.contains(&base) || names.contains(&l.as_str()))
        .map_or_else(|| value.trim().to_string(), |(_, name)| (*name).to_string())
}

/// The language a text is written in, when its script says so plainly: the share of Han,
/// kana, Hangul or Cyrillic letters, and for Latin text a few English function words. A
/// small model follows "write in Chinese" far better than "write in the document's language".
pub(crate) fn language_of(text: &str) -> Option<&'static str> {
    let (mut han, mut kana, mut hangul, mut cyrillic, mut latin) = (0u32, 0u32, 0u32, 0u32, 0u32);
    for c in text.chars().take(20_000) {
        match c as u32 {
            0x3040..=0x30FF => kana += 1,
            0x4E00..=0x9FFF | 0x3400..=0x4DBF => han += 1,
            0xAC00..=0xD7AF => hangul += 1,
            0x0400..=0x04FF => cyrillic += 1,
            _ if c.is_ascii_alphabetic() => latin += 1,
            _ => {}
        }
    }
    // A Han character carries about as much as a word of three Latin letters.
    let total = han * 3 + kana * 3 + hangul * 3 + cyrillic + latin;
    if total == 0 {
        return None;
    }
    let share = |n: u32, w: u32| f64::from(n * w) / f64::from(total);
    if share(kana, 3) > 0.1 {
        return Some("Japanese");
    }
    if share(han, 3) > 0.3 {
        return Some("Chinese");
    }
    if share(hangul, 3) > 0.3 {
        return Some("Korean");
    }
    if share(cyrillic, 1) > 0.5 {
        return Some("Russian");
    }
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .take(3000)
        .map(str::to_ascii_lowercase)
        .collect();
    let english = words
        .iter()
        .filter(|w| {
            matches!(
                w.as_str(),
                "the" | "and" | "of" | "to" | "is" | "in" | "for" | "with"
            )
        })
        .count();
    (words.len() >= 5 && english * 12 >= words.len()).then_some("English")
}

#[cfg(test)]
mod tests {
    use super::language_of;

    #[test]
    fn scripts_name_their_language() {
        assert_eq!(
            language_of("第三季度营收增长百分之十二，主要来自出口。"),
            Some("Chinese")
        );
        assert_eq!(
            language_of("The board met on Monday and approved the budget for the year."),
            Some("English")
        );
        assert_eq!(language_of("今日は会議があります。"), Some("Japanese"));
        assert_eq!(language_of("12 34 56"), None);
        assert_eq!(
            language_of("Der Vorstand hat das Budget genehmigt, sagte er."),
            None
        );
    }
}
