//! The agent: a skill's conversation with the model, and the confined tools it may call.
//!
//! The sandbox is the only way a tool reaches the file system; nothing here may read or write a
//! path that did not pass its checks. Whether an answer is kept is the judge's to say
//! ([`crate::judge`]): the conversation asks, and on a failed verdict tells the model why.

pub(crate) mod chat;
pub(crate) mod runner;
pub(crate) mod sandbox;
pub(crate) mod structured;
pub(crate) mod tools;
pub(crate) mod transcript;
