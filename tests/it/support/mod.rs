//! Helpers shared by the integration tests. Each test module uses a different subset, so
//! unused items are expected here.
#![allow(dead_code, unused_imports)]

pub mod fake_api;
pub mod fake_batch;

pub use fake_api::{FakeApi, Recorded, Reply, ToolResult};
pub use fake_batch::{FakeBatch, Pace};
