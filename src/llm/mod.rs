//! The chat API: wire types, error classification, retries, rate limits, and what a server takes.
//!
//! One shared [`ChatClient`] per process carries every model API request (chat, and OCR or file
//! calls through [`ChatClient::send`]), so there is one connection pool, one retry policy, one
//! classification of failures (docs/model-api.md#error-classification) and one per-process budget
//! (`--rpm`, `--tpm`). This module knows nothing of skills, jobs or files: it speaks HTTP and the
//! OpenAI-shaped wire format, and never lets the API key out of the `Authorization` header.

pub mod batch;
mod client;
mod error;
pub(crate) mod limit;
pub mod provider;
mod retry;
mod server;
mod wire;

pub use client::{ApiResponse, BuildError, ChatClient, ChatReply, ClientSettings, chat_body};
pub use error::{ApiError, Body, Observed, ProviderError, Verdict, classify, provider_error};
pub use limit::text_tokens;
pub use provider::{Dialect, Endpoint};
pub use retry::backoff;
pub use server::{ServerInfo, is_known_provider, probe};
pub use wire::{
    ChatRequest, ChatResponse, Choice, ContentPart, FunctionCall, FunctionDef, ImageUrl, Message,
    Role, ToolCall, ToolDef, Usage,
};
