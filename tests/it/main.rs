//! zhi's integration tests: one test binary, one module per area. Each drives the real `zhi`
//! binary or the library through the product's contract (SPEC.md).

mod agent_skills;
mod batch;
mod batch_api;
mod chunking;
mod config_cli;
mod corpus;
mod extract_docs;
mod help;
mod hostile_run;
mod i18n;
mod llm_client;
mod local_llm;
mod ocr_api;
mod outputs;
mod plan_cli;
mod progress;
mod refused_settings;
mod reliability;
mod report;
mod run_context;
mod run_fake;
mod skills_cli;
mod skills_hostile;
mod support;
mod testenv;
mod token_budget;
