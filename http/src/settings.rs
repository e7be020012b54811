//! What every request under one layer shares: the journal, the command's type and
//! version, the body limit, and what its handlers do.

use command_journal::Journal;
use command_journal::identity::{CommandType, Environment};
use http::HeaderValue;

/// What the handlers under a layer do, and so what the layer guarantees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handlers {
    /// The handler only computes its response: the layer registers and leases the
    /// command, runs the handler, stores its response with the command's success and
    /// replays it on every retry.
    StoredResponse,
    /// The handler sends to a provider through `Journal::execute_marked`, with the
    /// [`IdempotentCommand`](crate::IdempotentCommand) the layer puts in the request's
    /// extensions; the journal's protocol (keys, fences, recorded ambiguity) is the
    /// guarantee, and the layer stores nothing of its own.
    Provider,
}

/// What every request under a layer shares.
#[derive(Clone)]
pub(crate) struct Settings {
    pub journal: Journal,
    pub environment: Environment,
    pub command_type: CommandType,
    /// Validated by `EndpointSchemaVersion` when set; 1 by default.
    pub schema_version: i64,
    pub body_limit: usize,
    pub handlers: Handlers,
    /// `<uri>; rel="describedby"`: the `Link` of the layer's own problems, if set.
    pub documentation: Option<HeaderValue>,
}

/// Boxed errors of a handler's response body.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
