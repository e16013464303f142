//! zhi: run LLM skills over whole folders of documents.
//!
//! The pipeline, one room each: `plan` (inputs → jobs) → `extract` (document → text) →
//! `agent` (the skill's conversation with the model, confined tools) → `judge` (the verdict on
//! each answer: kept, doubted, failed) → `run` (the executor: the ladder, pool, staging,
//! commit) → `manifest` (one record per job).

#![warn(unreachable_pub)]
#![warn(clippy::too_many_lines)]

// First, so that `msg!` and `t!` are in scope in every module after it.
#[macro_use]
pub mod i18n;

pub mod agent;
pub(crate) mod batch;
pub mod chunk;
pub mod cli;
pub mod commands;
pub mod config;
pub(crate) mod confine;
pub mod error;
pub mod exit;
pub mod extract;
pub mod flags;
pub(crate) mod interrupt;
pub mod judge;
pub(crate) mod layout;
pub mod llm;
pub mod manifest;
pub(crate) mod mcp;
pub mod ocr;
pub(crate) mod plan;
pub(crate) mod providers;
pub(crate) mod report;
pub(crate) mod run;
pub mod sanitize;
pub(crate) mod scratch;
pub(crate) mod secret;
pub mod skills;
pub(crate) mod small_file;
pub(crate) mod subprocess;
pub mod suggest;
