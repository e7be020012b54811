//! What a provider handler extracts: the journal's command for this request, which it
//! runs through `Journal::execute_marked` (keys, fences, recorded ambiguity).

use crate::problem::Problem;
use command_journal::CommandInput;
use http::request::Parts;
use serde_json::Value;

/// The request's command, as the layer for provider handlers validated it, and the
/// request's body as it parsed it (strictly: no duplicate key; `null` when empty).
/// `Debug` prints neither.
///
/// Extracting it where the layer does not run for provider handlers is a 500 problem
/// `command_missing`: a handler that sends to a provider must run under the layer's
/// provider mode, never under the stored-response mode (whose lease would keep its own
/// `execute` busy).
#[derive(Clone)]
pub struct IdempotentCommand {
    input: CommandInput,
    body: Value,
}

impl std::fmt::Debug for IdempotentCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IdempotentCommand(<redacted>)")
    }
}

impl IdempotentCommand {
    pub(crate) fn new(input: CommandInput, body: Value) -> Self {
        Self { input, body }
    }

    /// The validated command: the verified caller, the key's command id, the layer's
    /// command type and schema version, the request's payload.
    pub fn input(&self) -> &CommandInput {
        &self.input
    }

    /// The request's body as one JSON value (`null` when empty).
    pub fn body(&self) -> &Value {
        &self.body
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for IdempotentCommand {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Self>()
            .cloned()
            .ok_or_else(|| Problem::new("command_missing"))
    }
}
