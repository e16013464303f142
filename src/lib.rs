//! zhi: run LLM skills over whole folders of documents.
//!
//! The pipeline, one room each: `plan` (inputs → jobs) → `extract` (document → text) →
//! `agent` (the skill's loop on the model, confined tools) → `run` (the executor: pool,
//! staging, commit) → `manifest` (one record per job).

pub mod config;
pub mod error;
pub mod exit;
pub mod extract;
pub mod ocr;
pub mod sanitize;
