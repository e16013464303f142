//! clap's value parsers of the flags that are also settings (`--rpm`, `--tpm`, `--timeout`,
//! `-j`): each hands the flag's text to its setting's one check in [`super::setting`], the
//! check a settings file's value goes through, so `--rpm 0` and `rpm: 0` are refused by one
//! function in the same words, and by the argument parser, before anything runs.

use super::setting;
use super::value::Concurrency;
use crate::flags::{Parsed, Refused};
use serde_norway::Value;
use std::num::NonZeroU32;
use std::time::Duration;

/// A number as a number, as a file would give it; text that is none is clap's to refuse.
fn number(s: &str) -> Parsed<Value> {
    Ok(Value::from(s.trim().parse::<u64>()?))
}

fn checked<T>(raw: Value, check: fn(&Value) -> Result<T, String>) -> Parsed<T> {
    check(&raw).map_err(|problem| Refused(problem).into())
}

/// `--rpm`, `--tpm`.
pub(crate) fn per_minute(s: &str) -> Parsed<NonZeroU32> {
    checked(number(s)?, setting::per_minute)
}

/// `--timeout`, in seconds.
pub(crate) fn timeout(s: &str) -> Parsed<Duration> {
    checked(number(s)?, setting::timeout)
}

/// `-j`, `--concurrency`: a number or `auto`.
pub(crate) fn concurrency(s: &str) -> Parsed<Concurrency> {
    checked(Value::String(s.to_string()), setting::concurrency)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_is_refused_in_its_settings_words() {
        let flag = per_minute("0").unwrap_err();
        let file = setting::per_minute(&Value::from(0u64)).unwrap_err();
        assert!(flag.is::<Refused>());
        assert_eq!(flag.to_string(), file);
        assert!(file.contains("at least 1"));
        assert!(
            per_minute("abc")
                .unwrap_err()
                .downcast_ref::<Refused>()
                .is_none()
        );
        assert_eq!(timeout("7").unwrap(), Duration::from_secs(7));
        assert!(timeout("0").unwrap_err().is::<Refused>());
        assert!(concurrency("0").unwrap_err().is::<Refused>());
        assert!(matches!(concurrency("auto"), Ok(Concurrency::Auto)));
    }
}
