//! zhi's integration tests, one module per area. Each drives the real `zhi` binary or the
//! library through the product's contract (docs/README.md). Nothing here needs a program, a
//! document or a server from outside the repository: tests that do are in `tests/ext`, which
//! reports the ones this machine cannot run as ignored.

mod agent_skills;
mod archive;
mod batch;
mod batch_api;
mod batch_hostile;
mod bills;
mod chunking;
mod config_cli;
mod console_snapshots;
mod conventions;
mod docs_links;
mod doubts;
mod escalation;
mod example_scripts;
mod extract_docs;
mod extract_hostile;
mod extraction;
mod help;
mod hostile_provider;
mod hostile_run;
mod i18n;
mod layers;
mod llm_client;
mod mcp;
mod mcp_http;
mod mcp_tools;
mod narrow;
mod ocr_api;
mod outputs;
mod plan_cli;
mod progress;
mod readme;
mod records_snapshot;
mod refused_settings;
mod reliability;
mod report;
mod run_context;
mod run_fake;
mod skills_cli;
mod skills_hostile;
mod stat_cache;
mod support;
mod token_budget;
mod workflows;
