//! What an extraction job's record says of its answer (docs/extract.md#grounding): whether it
//! was valid, and where each value was found in the document's text. The record's data only;
//! finding the values is `agent::grounding`'s work.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a value was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Match {
    Exact,
    Normalized,
    Fuzzy,
    None,
}

/// Where a value is in the document's text: character offsets `[start, end)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Located {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<usize>,
    #[serde(rename = "match")]
    pub how: Match,
}

/// An extraction job's account of its answer, in its record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    /// The answer is a JSON object valid against the schema.
    pub valid: bool,
    /// Per value's path (`seller.name`, `items[0].amount`): where it is in the text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, Located>,
    /// The paths of values found nowhere in the text, in the object's order.
    #[serde(default)]
    pub ungrounded: Vec<String>,
    /// The paths of values not looked for, in the object's order: grounding's bound for one
    /// document was reached, or the run was stopped (docs/extract.md#grounding).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchecked: Vec<String>,
    /// Why the answer was not valid (failed jobs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}
