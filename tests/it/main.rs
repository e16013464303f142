//! zhi's integration tests: one test binary, one module per area.

mod llm_client;
mod support;
