//! The chat API: wire types, error classification, retries, rate limits, and what a server takes.
//!
//! One shared [`ChatClient`] per process carries every model API request (chat, and OCR or file
//! calls through [`ChatClient::send`]), so there is one connection pool, one retry policy, one
//! classification of failures (docs/model-api.md#error-classification) and one per-process budget
//! (`--rpm`, `--tpm`). This module knows nothing of skills, jobs or files: it speaks HTTP and the
//! OpenAI-shaped wire format, and never lets the API key out of the `Authorization` header.

pub(crate) mod batch;
mod client;
pub(crate) mod delays;
mod error;
pub(crate) mod limit;
mod pace;
pub(crate) mod provider;
mod retry;
mod server;
mod wire;

pub(crate) use client::chat_body;
pub use client::{ApiResponse, BuildError, ChatClient, ChatReply, ClientSettings};
pub use delays::Delays;
pub use error::ApiError;
pub(crate) use limit::text_tokens;
pub(crate) use provider::Endpoint;
pub(crate) use retry::backoff;
pub(crate) use server::{ServerInfo, is_known_provider, probe};
pub(crate) use wire::ContentPart;
#[cfg(test)]
pub(crate) use wire::Role;
pub use wire::{ChatRequest, FunctionCall, Message, ToolCall, ToolDef, Usage};
