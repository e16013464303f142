//! The agent: a skill's loop on the model, and the confined tools it may call.
//!
//! The sandbox is the only way a tool reaches the file system; nothing here may read or write a
//! path that did not pass its checks.

pub(crate) mod accept;
pub(crate) mod chat;
pub(crate) mod doubts;
pub(crate) mod figures;
pub mod grounding;
pub mod outputs;
pub(crate) mod runner;
pub(crate) mod sandbox;
pub(crate) mod structured;
pub(crate) mod tools;
pub(crate) mod transcript;
