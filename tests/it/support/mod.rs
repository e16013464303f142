//! Helpers shared by the integration tests. Each test module uses a different subset, so
//! unused items are expected here.
#![allow(dead_code, unused_imports)]

pub mod corpus;
pub mod fake_api;
pub mod fake_batch;
pub mod progress_parse;
pub mod reading;
pub mod report_fixture;
pub mod snapshot;
pub mod testenv;

pub use fake_api::{FakeApi, Recorded, Reply, ToolResult};
pub use fake_batch::{FakeBatch, Pace};

/// A model's answer long enough to be a text, not a stub, for a document of any length
/// (docs/skills.md#declared-outputs), with no figure in it.
pub const FILLER: &str = "The part describes the plan, the people who run it and what they decided to do next, in plain words that a busy reader can follow.";
