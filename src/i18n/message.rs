//! The one way to write a message a person reads: [`msg!`](crate::msg) for a message that
//! travels (an error's text, a warning) and is translated where it is printed, and
//! [`t!`](crate::t) for text shown at once (a table header, a summary line) in the process's
//! language. Both put their template into [`MESSAGES`] at compile time, so the catalog's
//! tests know every template without reading the sources.
//!
//! Adding a message is one macro call and one line in `catalog.rs`.

/// How a template is used, which decides how the catalog is searched for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// `msg!`: English until a sink, where [`super::localize`] matches it against the
    /// catalog's English templates; a hole may be positional (`{}`).
    Said,
    /// `t!`: looked up by its exact English template; every hole is named and given.
    Shown,
}

/// A template as the sources write it, and where.
// Read by the tests that hold the catalog to the sources.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct Registered {
    pub template: &'static str,
    /// The names given as `name = value` (`t!` fills the Chinese by them).
    pub args: &'static [&'static str],
    pub used: Use,
    pub file: &'static str,
    pub line: u32,
}

/// Every template of every `msg!` and `t!` in the binary.
#[linkme::distributed_slice]
pub static MESSAGES: [Registered];

/// A message that travels in English and is translated at its sink (`error:`, a warning, a
/// log line): `msg!("cannot read {path}: {e}")`, written as `format!` is. Yields the English
/// `String`.
#[macro_export]
macro_rules! msg {
    ($template:literal $(, $($args:tt)*)?) => {{
        #[::linkme::distributed_slice($crate::i18n::MESSAGES)]
        static REGISTERED: $crate::i18n::Registered = $crate::i18n::Registered {
            template: $template,
            args: &[],
            used: $crate::i18n::Use::Said,
            file: ::std::file!(),
            line: ::std::line!(),
        };
        ::std::format!($template $(, $($args)*)?)
    }};
}

/// Text shown at once, in the process's language: `t!("{n} jobs failed", n = count)`, or in a
/// language given first: `t!(in lang; "…")` (a report rendered for its reader). The English
/// is the key of its catalog line; every hole is named and given as `name = value` (the
/// Chinese puts them back by name, in its own order).
#[macro_export]
macro_rules! t {
    (in $lang:expr; $template:literal $(, $name:ident = $value:expr)* $(,)?) => {{
        #[::linkme::distributed_slice($crate::i18n::MESSAGES)]
        static REGISTERED: $crate::i18n::Registered = $crate::i18n::Registered {
            template: $template,
            args: &[$(::std::stringify!($name)),*],
            used: $crate::i18n::Use::Shown,
            file: ::std::file!(),
            line: ::std::line!(),
        };
        match $lang {
            $crate::i18n::Lang::En => ::std::format!($template $(, $name = $value)*),
            $crate::i18n::Lang::Zh => $crate::i18n::shown_in_chinese(
                $template,
                &[$((::std::stringify!($name), &$value as &dyn ::std::fmt::Display)),*],
            ),
        }
    }};
    ($template:literal $(, $name:ident = $value:expr)* $(,)?) => {
        $crate::t!(in $crate::i18n::lang(); $template $(, $name = $value)*)
    };
}
