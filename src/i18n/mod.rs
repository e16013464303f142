//! The language of zhi's own messages (errors, warnings, progress, summary, report): English or
//! Chinese, chosen once per process by `ZHI_LANGUAGE` (`en`/`zh`), else `LANG`/`LC_ALL`/
//! `LC_MESSAGES`. Model output and file names are never translated.
//!
//! Every message is written once, with [`msg!`](crate::msg) or [`t!`](crate::t), and its
//! template has a line in the catalog (English, Chinese). A `msg!` message is English where it
//! arises and translated only where it leaves the process (the `error:` line, warnings, log
//! lines, notices): [`localize`] finds the catalog entry whose English template matches the
//! whole message, as gettext finds a msgid, and fills its Chinese template with the captured
//! parts. A captured part that is itself a message (the reason in `cannot read {path}:
//! {reason}`) is translated the same way; file names, paths, server and model text, and error
//! kinds (`missing_output`) are kept as they are. A message with no entry is printed in English
//! rather than guessed at. A `t!` text is shown at once, so it is looked up by its template.
//!
//! This module is a leaf: it imports nothing of zhi's but `crate::sanitize`.

#[macro_use]
mod message;
mod catalog;
mod clap_errors;
#[cfg(test)]
mod coverage;
#[cfg(test)]
mod glossary;
pub mod log;
mod template;

pub use clap_errors::clap_message;
pub(crate) use message::{MESSAGES, Registered, Use};

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;
use template::Template;

/// A language zhi speaks: the one language type of the program (settings, messages, report).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Lang {
    En,
    Zh,
}

impl Lang {
    /// The language a `ZHI_LANGUAGE` or `language:` value or a locale names: `zh…`
    /// (`zh_CN.UTF-8`, `ZH_tw`) is Chinese, `en…` English. Anything else (`de_DE`, `C`,
    /// `POSIX`, empty) names neither and is `None`: a setting that says so is refused, and a
    /// locale that says so means English (see docs/display.md#languages).
    pub fn parse(value: &str) -> Option<Lang> {
        let v = value.trim().to_ascii_lowercase();
        if v.starts_with("zh") {
            Some(Lang::Zh)
        } else if v.starts_with("en") {
            Some(Lang::En)
        } else {
            None
        }
    }

    /// `en` or `zh`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// `ZHI_LANGUAGE` first; then the first locale variable set, in POSIX order of
    /// precedence, which is Chinese when it names Chinese and English otherwise.
    pub fn from_env() -> Lang {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if let Some(lang) = var("ZHI_LANGUAGE").and_then(|v| Lang::parse(&v)) {
            return lang;
        }
        Lang::of_locale(var)
    }

    /// The language of the locale (`LC_ALL`, then `LC_MESSAGES`, then `LANG`; an empty
    /// variable is unset) as `env` reads the variables.
    pub fn of_locale(env: impl Fn(&str) -> Option<String>) -> Lang {
        ["LC_ALL", "LC_MESSAGES", "LANG"]
            .iter()
            .find_map(|name| env(name).filter(|v| !v.trim().is_empty()))
            .and_then(|v| Lang::parse(&v))
            .unwrap_or(Lang::En)
    }
}

/// The language the settings chose (`language:` in a config file counts too), once known.
static CHOSEN: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// The process's language: the settings' once they are resolved, before that the
/// environment's (read the first time it is asked for).
pub fn lang() -> Lang {
    static LANG: OnceLock<Lang> = OnceLock::new();
    match CHOSEN.load(std::sync::atomic::Ordering::Relaxed) {
        1 => Lang::En,
        2 => Lang::Zh,
        _ => *LANG.get_or_init(Lang::from_env),
    }
}

/// The resolved settings chose the language: every message from now on speaks it.
pub(crate) fn set_lang(lang: Lang) {
    let v = match lang {
        Lang::En => 1,
        Lang::Zh => 2,
    };
    CHOSEN.store(v, std::sync::atomic::Ordering::Relaxed);
}

/// The Chinese of a `t!` text: its catalog line, holes filled by name; the English, filled the
/// same way, when the catalog has no line for it (its tests refuse that).
pub(crate) fn shown_in_chinese(template: &str, args: &[(&str, &dyn std::fmt::Display)]) -> String {
    let fill = |hole: &str| {
        args.iter()
            .find(|(name, _)| *name == hole)
            .map_or_else(String::new, |(_, value)| value.to_string())
    };
    let zh = by_template().get(template).copied().unwrap_or(template);
    Template::parse(zh).map_or_else(|| zh.to_string(), |t| t.render(fill))
}

/// The catalog's Chinese by English template.
fn by_template() -> &'static HashMap<&'static str, &'static str> {
    static MAP: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    MAP.get_or_init(|| {
        catalog::ENTRIES
            .iter()
            .chain(catalog::SHOWN)
            .copied()
            .collect()
    })
}

/// `message` in the process's language.
pub fn localize(message: &str) -> Cow<'_, str> {
    match lang() {
        Lang::En => Cow::Borrowed(message),
        Lang::Zh => chinese(message).map_or(Cow::Borrowed(message), Cow::Owned),
    }
}

/// The `error:` line of `message`, translated and safe for a terminal.
pub(crate) fn error_line(message: &str) -> String {
    let message = crate::sanitize::for_terminal(&localize(message));
    t!("error: {reason}", reason = message)
}

/// Print an error line on stderr.
pub fn error(message: &str) {
    eprintln!("{}", error_line(message));
}

/// Print a one-line warning on stderr.
pub(crate) fn warning(message: &str) {
    let message = crate::sanitize::one_line(&localize(message));
    eprintln!("{}", t!("warning: {reason}", reason = message));
}

/// Print a notice (a line that is neither an error nor a warning: what `plan` estimated, how
/// batches stand) on stderr.
pub(crate) fn notice(message: &str) {
    eprintln!("{}", crate::sanitize::for_terminal(&localize(message)));
}

/// The name of a log line's field (`job=…`) in the process's language.
pub fn field_name(name: &str) -> &str {
    match lang() {
        Lang::En => name,
        Lang::Zh => catalog::FIELDS
            .iter()
            .find(|(en, _)| *en == name)
            .map_or(name, |(_, zh)| zh),
    }
}

/// A compiled catalog entry.
struct Entry {
    en: Template,
    zh: Template,
    specificity: usize,
}

fn entries() -> &'static [Entry] {
    static ENTRIES: OnceLock<Vec<Entry>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        catalog::ENTRIES
            .iter()
            // A malformed entry is refused by the catalog's tests; here it is only skipped.
            .filter_map(|(en, zh)| {
                let en = Template::parse(en)?;
                let zh = Template::parse(zh)?;
                let specificity = en.specificity();
                Some(Entry {
                    en,
                    zh,
                    specificity,
                })
            })
            .collect()
    })
}

/// Nested messages deeper than this are left as they are.
const MAX_DEPTH: usize = 12;

/// `message` in Chinese, or `None` when nothing in it is known.
fn chinese(message: &str) -> Option<String> {
    translate(message, 0, &mut HashMap::new())
}

/// Parts already tried, so that a message of many `: ` is not split the same way twice.
type Memo = HashMap<String, Option<String>>;

fn translate(message: &str, depth: usize, memo: &mut Memo) -> Option<String> {
    if depth > MAX_DEPTH || message.is_empty() {
        return None;
    }
    if let Some(done) = memo.get(message) {
        return done.clone();
    }
    let result = translate_new(message, depth, memo);
    memo.insert(message.to_string(), result.clone());
    result
}

fn translate_new(message: &str, depth: usize, memo: &mut Memo) -> Option<String> {
    // The whole message, by the most specific template that matches it.
    let mut best: Option<(&Entry, Vec<(&str, &str)>)> = None;
    for entry in entries() {
        if best
            .as_ref()
            .is_some_and(|(b, _)| b.specificity >= entry.specificity)
        {
            continue;
        }
        if let Some(caps) = entry.en.captures(message) {
            best = Some((entry, caps));
        }
    }
    if let Some((entry, caps)) = best {
        return Some(entry.zh.render(|hole| {
            let text = caps
                .iter()
                .find(|(name, _)| *name == hole)
                .map_or("", |(_, text)| *text);
            if catalog::RECURSIVE.contains(&hole) {
                translate(text, depth + 1, memo).unwrap_or_else(|| text.to_string())
            } else {
                text.to_string()
            }
        }));
    }
    // A list of messages (`a; b`), each on its own.
    if message.contains("; ") {
        let parts: Vec<(&str, Option<String>)> = message
            .split("; ")
            .map(|p| (p, translate(p, depth + 1, memo)))
            .collect();
        if parts.iter().any(|(_, t)| t.is_some()) {
            let parts: Vec<String> = parts
                .into_iter()
                .map(|(p, t)| t.unwrap_or_else(|| p.to_string()))
                .collect();
            return Some(parts.join("；"));
        }
    }
    // A label and a message (`a.pdf: cannot read the file`): the label is kept unless it is
    // a message too (`cannot commit out/a: …`); what follows a known message is kept when it
    // is someone else's text. Only the text after the last `: ` before a split is taken for a
    // label, so that a long text of many `: ` is split a linear number of ways.
    let splits: Vec<usize> = message
        .match_indices(": ")
        .map(|(at, _)| at)
        .filter(|&at| at > 0)
        .collect();
    let label = |at: usize, memo: &mut Memo| {
        let text = &message[..at];
        let own = text.rfind(": ").map_or(0, |p| p + 2);
        translate(&text[own..], depth + 1, memo).map(|t| format!("{}{t}", &text[..own]))
    };
    for &at in &splits {
        if let Some(rest) = translate(&message[at + 2..], depth + 1, memo) {
            let head = label(at, memo).unwrap_or_else(|| message[..at].to_string());
            return Some(format!("{head}：{rest}"));
        }
    }
    for &at in &splits {
        if let Some(head) = label(at, memo) {
            return Some(format!("{head}：{}", &message[at + 2..]));
        }
    }
    // A setting or flag, then what is wrong with its value (`--rpm must be …`, `timeout must
    // be …`): the name is kept, the rest translated.
    if let Some((name, rest)) = message.split_once(' ')
        && !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && let Some(rest) = translate(rest, depth + 1, memo)
    {
        // A flag reads as one; a setting's name is code.
        return Some(if name.starts_with('-') {
            format!("{name} {rest}")
        } else {
            format!("`{name}` {rest}")
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locales_and_names_choose_the_language() {
        assert_eq!(Lang::parse("zh"), Some(Lang::Zh));
        assert_eq!(Lang::parse("zh_CN.UTF-8"), Some(Lang::Zh));
        assert_eq!(Lang::parse("ZH_tw"), Some(Lang::Zh));
        assert_eq!(Lang::parse("en_US.UTF-8"), Some(Lang::En));
        assert_eq!(Lang::parse("de_DE"), None);
        assert_eq!(Lang::parse("C"), None);
        assert_eq!(Lang::parse(""), None);
        let locale = |pairs: &'static [(&str, &str)]| {
            Lang::of_locale(|k| {
                pairs
                    .iter()
                    .find(|(name, _)| *name == k)
                    .map(|(_, v)| v.to_string())
            })
        };
        assert_eq!(locale(&[("LANG", "de_DE.UTF-8")]), Lang::En);
        assert_eq!(locale(&[("LC_ALL", ""), ("LANG", "zh_TW.UTF-8")]), Lang::Zh);
        assert_eq!(
            locale(&[("LC_ALL", "C"), ("LANG", "zh_CN.UTF-8")]),
            Lang::En
        );
    }
}

#[cfg(test)]
mod localize_tests {
    use super::chinese;

    #[test]
    fn a_setting_then_what_is_wrong_with_it() {
        assert_eq!(
            chinese("--concurrency `lots` must be a number from 1 to 1024, or auto").as_deref(),
            Some("--concurrency `lots` 必须是 1 到 1024 之间的数，或 `auto`")
        );
        assert_eq!(
            chinese("config file z.yaml: timeout must be a whole number, found `soon`").as_deref(),
            Some("配置文件 z.yaml：`timeout` 必须是整数，实际为 `soon`")
        );
    }

    #[test]
    fn a_whole_message_and_its_nested_reason() {
        assert_eq!(
            chinese("cannot read notes/a.txt: No such file or directory (os error 2)").as_deref(),
            Some("无法读取 notes/a.txt：没有那个文件或目录（系统错误 2）")
        );
    }

    #[test]
    fn labels_and_lists_around_known_messages() {
        assert_eq!(
            chinese("scan.pdf: unsupported_type: empty file (0 bytes)").as_deref(),
            Some("scan.pdf：unsupported_type：空文件（0 字节）")
        );
        assert_eq!(
            chinese("empty file (0 bytes); something zhi never says").as_deref(),
            Some("空文件（0 字节）；something zhi never says")
        );
    }

    #[test]
    fn a_message_before_a_colon_is_translated_too() {
        assert_eq!(
            chinese("cannot commit out/a: Permission denied (os error 13)").as_deref(),
            Some("无法提交 out/a：权限不足（系统错误 13）")
        );
        assert_eq!(
            chinese("cannot commit out/a: the disk said no").as_deref(),
            Some("无法提交 out/a：the disk said no")
        );
    }

    #[test]
    fn a_long_text_of_many_colons_is_quick() {
        let text = (0..200)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(": ");
        let start = std::time::Instant::now();
        assert_eq!(chinese(&text), None);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn the_unknown_provider_message_names_every_provider_in_chinese_too() {
        assert_eq!(
            chinese("ZHI_PROVIDER: `claude` is not zhipu or openai").as_deref(),
            Some("ZHI_PROVIDER：`claude` 不是 `zhipu` 或 `openai`")
        );
        assert_eq!(
            chinese("zhi.yaml: provider `claude` is not zhipu or openai").as_deref(),
            Some("zhi.yaml：`provider` 的值 `claude` 不是 `zhipu` 或 `openai`")
        );
        // However many providers the table has, as the setting's check words it.
        let (names, last) = crate::providers::names_but_last();
        let zh = chinese(&format!("`claude` is not {names} or {last}")).unwrap_or_default();
        for p in crate::providers::PROVIDERS {
            assert!(zh.contains(p.name), "{zh}");
        }
        assert!(zh.starts_with("`claude` 不是 `"), "{zh}");
    }

    #[test]
    fn unknown_text_is_left_alone() {
        assert_eq!(chinese("the model said hello"), None);
        assert_eq!(chinese(""), None);
    }
}
