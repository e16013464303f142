//! A moment as manifests, records and transcripts write it: UTC, RFC 3339, milliseconds
//! (`2026-01-02T03:04:05.678Z`). Kept as a time, not as text, so that the earliest and the
//! latest of several runs are found by time and a duration is a subtraction.

use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A moment in UTC, to the millisecond (what its text can hold, so a timestamp written and
/// read back is the same timestamp).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(DateTime<Utc>);

impl Timestamp {
    /// Now.
    pub fn now() -> Self {
        Timestamp::from(Utc::now())
    }

    /// The time from `earlier` to this moment, in milliseconds; 0 when `earlier` is later.
    pub fn millis_since(&self, earlier: Timestamp) -> u64 {
        u64::try_from((self.0 - earlier.0).num_milliseconds()).unwrap_or(0)
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(t: DateTime<Utc>) -> Self {
        Timestamp(t.trunc_subsecs(3))
    }
}

impl FromStr for Timestamp {
    type Err = chrono::ParseError;
    /// Any RFC 3339 time (another offset, another precision); kept in UTC, to the millisecond.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DateTime::parse_from_rfc3339(s).map(|t| Timestamp::from(t.with_timezone(&Utc)))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Millis, true))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_as_rfc_3339_in_milliseconds_and_read_back_the_same() {
        let t: Timestamp = "2026-01-02T03:04:05.678Z".parse().unwrap();
        assert_eq!(t.to_string(), "2026-01-02T03:04:05.678Z");
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            "\"2026-01-02T03:04:05.678Z\""
        );
        let back: Timestamp = serde_json::from_str("\"2026-01-02T03:04:05.678Z\"").unwrap();
        assert_eq!(back, t);
        // Another offset and precision: the same moment, written zhi's way.
        let other: Timestamp = "2026-01-02T11:04:05.678912+08:00".parse().unwrap();
        assert_eq!(other, t);
        let now = Timestamp::now();
        assert_eq!(now.to_string().parse::<Timestamp>().unwrap(), now);
        assert!(now.to_string().ends_with('Z') && now.to_string().len() == 24);
        let later: Timestamp = "2026-01-02T03:04:07.000Z".parse().unwrap();
        assert_eq!(later.millis_since(t), 1_322);
        assert_eq!(t.millis_since(later), 0);
        assert!(serde_json::from_str::<Timestamp>("\"yesterday\"").is_err());
    }
}
