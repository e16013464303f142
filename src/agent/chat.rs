//! What the agent loop needs of a model: one request in, one answer (or an API error) out.
//! The run's [`ChatClient`] is the one implementation in the product — with its retries, rate
//! limits and budget; the loop's unit tests give it a scripted model instead.

use crate::llm::{ApiError, ChatClient, ChatReply, ChatRequest};
use std::future::Future;
use std::pin::Pin;
use tokio_util::sync::CancellationToken;

/// A boxed future that may move between threads.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A model the agent loop can talk to.
pub(crate) trait Chat: Send + Sync {
    /// Send `req` and wait for the answer; `cancel` ends the wait with a cancellation error.
    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ChatReply, ApiError>>;
}

impl Chat for ChatClient {
    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ChatReply, ApiError>> {
        Box::pin(ChatClient::chat(self, req, cancel))
    }
}
