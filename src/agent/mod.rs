//! The agent: a skill's loop on the model, and the confined tools it may call.
//!
//! The sandbox is the only way a tool reaches the file system; nothing here may read or write a
//! path that did not pass its checks.

pub mod accept;
pub mod chat;
pub mod figures;
pub mod grounding;
pub mod outputs;
pub mod runner;
pub mod sandbox;
pub mod structured;
pub mod tools;
pub mod transcript;
