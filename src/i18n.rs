//! The language of zhi's own messages (errors, warnings, progress, summary, report): English or
//! Chinese, chosen once per process by `ZHI_LANGUAGE` (`en`/`zh`), else `LANG`/`LC_ALL`/
//! `LC_MESSAGES`. Model output and file names are never translated.

use std::sync::OnceLock;

/// A language zhi speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    En,
    Zh,
}

impl Lang {
    /// The language named by a `ZHI_LANGUAGE` value or a locale (`zh_CN.UTF-8`, `zh`, `en_US`).
    pub fn parse(value: &str) -> Option<Lang> {
        let v = value.trim().to_ascii_lowercase();
        if v.is_empty() || v == "c" || v == "posix" {
            return None;
        }
        if v.starts_with("zh") {
            Some(Lang::Zh)
        } else {
            Some(Lang::En)
        }
    }

    /// `ZHI_LANGUAGE` first; then the locale variables in POSIX order of precedence.
    pub fn from_env() -> Lang {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if let Some(lang) = var("ZHI_LANGUAGE").and_then(|v| Lang::parse(&v)) {
            return lang;
        }
        ["LC_ALL", "LC_MESSAGES", "LANG"]
            .iter()
            .find_map(|name| var(name))
            .and_then(|v| Lang::parse(&v))
            .unwrap_or(Lang::En)
    }
}

/// The process's language, read from the environment the first time it is asked for.
pub fn lang() -> Lang {
    static LANG: OnceLock<Lang> = OnceLock::new();
    *LANG.get_or_init(Lang::from_env)
}

/// The text for the process's language: `tr("done", "完成")`.
pub fn tr(en: &'static str, zh: &'static str) -> &'static str {
    match lang() {
        Lang::En => en,
        Lang::Zh => zh,
    }
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
        assert_eq!(Lang::parse("de_DE"), Some(Lang::En));
        assert_eq!(Lang::parse("C"), None);
        assert_eq!(Lang::parse(""), None);
    }
}
