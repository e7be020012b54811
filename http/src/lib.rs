//! The HTTP edge of command-journal: a tower layer and an axum extractor for the
//! `Idempotency-Key` request header (draft-ietf-httpapi-idempotency-key-header), which
//! run each request at most once in effect through the journal and answer the draft's
//! statuses, with RFC 9457 problem details and `Idempotent-Replayed: true` on a replay.
//!
//! - [`IdempotencyLayer`] (a `tower::Layer`, [`Idempotency`] its service): reads the
//!   [`VerifiedCaller`] the service's authentication set, the key ([`key`]), the body
//!   (strict JSON within a limit), and makes the command whose payload is the method,
//!   the target and the canonical body ([`request`](mod@request)'s rules). Then, by
//!   [`Handlers`]: a handler that only computes its response runs under the command's
//!   lease, its response stored and replayed ([`stored`]); a handler that sends to a
//!   provider gets the [`IdempotentCommand`] to run through `Journal::execute_marked`,
//!   and [`execution_response`] maps the answer.
//! - [`problem`]: one table of codes, statuses and `type` URIs, every
//!   `JournalError::code()` included.
//! - [`replay`]: the marker and the replay counter.
//!
//! README.md says which guarantee each kind of handler gets, and every answer.

#![deny(missing_docs)]

mod caller;
mod command;
mod execution;
pub mod key;
mod layer;
pub mod problem;
pub mod replay;
pub mod request;
mod run;
mod settings;
pub mod stored;

pub use caller::VerifiedCaller;
pub use command::IdempotentCommand;
pub use execution::{PENDING_RETRY_AFTER, execution_response};
pub use key::{IDEMPOTENCY_KEY, IdempotencyKey};
pub use layer::{
    DEFAULT_BODY_LIMIT, Idempotency, IdempotencyLayer, MAX_BODY_LIMIT, ResponseFuture,
};
pub use problem::Problem;
pub use replay::IDEMPOTENT_REPLAYED;
pub use run::HANDLER_MARGIN;
pub use settings::{BoxError, Handlers};

#[cfg(test)]
mod readme_tests;
