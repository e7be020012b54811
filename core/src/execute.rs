//! The whole send protocol behind one call: a [`Provider`] adapter and
//! `Journal::execute`.
//!
//! A caller writes the two provider calls (the send and the lookup by idempotency key)
//! and gets, from the journal, everything around them: the fenced lease, a send
//! deadline below the lease's remaining time, the permit recorded before the send, the
//! outcome recorded under the fence, the stored cutoff after which nothing re-sends,
//! the lookup and reconciliation past it, a new attempt (a new key) only once the
//! provider has confirmed the old one absent, and the stored result on every replay.
//!
//! The decisions are pure ([`protocol`]); `Journal::execute` only performs the step
//! each one names. `docs/providers.md` ("One call") gives the table.

pub(crate) mod opening;
pub(crate) mod program;
pub(crate) mod protocol;
#[cfg(test)]
mod tests;

use crate::answer::ProviderAnswer;
use crate::envelope::ResultEnvelope;
use crate::sends::AttemptNumber;
use serde_json::Value;
use std::future::Future;
use std::time::Duration;

/// One send the journal permits: the attempt's key and the plan's parameters.
/// `Debug` shows the attempt, the resend flag and the deadline only: never the key or
/// a parameter value.
#[derive(Clone, Copy)]
pub struct SendRequest<'a> {
    /// The attempt's provider idempotency key (`cj1-…` for attempt 1): send it in the
    /// provider's idempotency header, so that a re-send is deduplicated.
    pub key: &'a str,
    /// The plan's parameters, in canonical key order.
    pub parameters: &'a Value,
    /// Answer within this time: it ends at least 10 s before the lease expires. The
    /// journal stops waiting after it and records the outcome as ambiguous.
    pub deadline: Duration,
    /// The attempt number.
    pub attempt: AttemptNumber,
    /// Whether an earlier holder already sent this attempt with this key.
    pub resend: bool,
}

impl std::fmt::Debug for SendRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendRequest")
            .field("attempt", &self.attempt.get())
            .field("resend", &self.resend)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// A payment provider as the journal drives it: the send and the lookup by key, each
/// answering a [`ProviderAnswer`] (the table in `crate::answer` says what each answer
/// means from each call).
///
/// Implement it with `async fn`s. Neither call may retry on its own with another key;
/// the journal never calls `send` for an attempt past its stored cutoff. A send that
/// answers `NotFound` is taken as `Unknown`.
///
/// ```
/// use command_journal_core::ProviderAnswer;
/// use command_journal_core::ResultEnvelope;
/// use command_journal_core::{Provider, SendRequest};
///
/// struct AlwaysCharges;
///
/// impl Provider for AlwaysCharges {
///     async fn send(&self, request: SendRequest<'_>) -> ProviderAnswer {
///         let charge = serde_json::json!({"id": "ch_1", "status": "succeeded"});
///         match ResultEnvelope::new(&charge) {
///             Ok(envelope) => ProviderAnswer::Succeeded(envelope),
///             Err(_) => ProviderAnswer::Unknown,
///         }
///     }
///     async fn lookup(&self, _key: &str) -> ProviderAnswer {
///         ProviderAnswer::Unknown
///     }
/// }
/// ```
pub trait Provider: Send + Sync {
    /// Sends `request.parameters` with `request.key`, answering within
    /// `request.deadline`.
    fn send(&self, request: SendRequest<'_>) -> impl Future<Output = ProviderAnswer> + Send;

    /// Asks the provider what it holds for `key`.
    fn lookup(&self, key: &str) -> impl Future<Output = ProviderAnswer> + Send;
}

/// The answer of `Journal::execute`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Execution {
    /// The command succeeded: the stored result, byte-identical on the first answer
    /// and on every replay.
    Succeeded(ResultEnvelope),
    /// The command succeeded earlier through
    /// `complete_command` with a bare reference:
    /// no result is stored.
    SucceededWithoutResult,
    /// The provider declined: the command failed for good.
    Declined,
    /// Another worker holds the lease (or took it over while this call sent): retry
    /// the same request later.
    InProgress,
    /// Nothing final is known yet (an ambiguous send, or too little lease left to
    /// send): retry the same request after `after`, when this call's lease has expired
    /// and the next call may re-send with the same key.
    RetryLater {
        /// How long until a retry can take the lease over.
        after: Duration,
    },
    /// The cutoff has passed with the outcome unknown and the provider lookup was
    /// unavailable: nothing was written; retry later, and the lookup is asked again.
    PendingReconciliation,
}

/// The answer of `Journal::execute_marked`: the [`Execution`] `Journal::execute`
/// answers, and whether it is a replay.
///
/// `replayed` is true exactly when the answer is the command's terminal outcome
/// ([`Succeeded`](Execution::Succeeded), [`SucceededWithoutResult`](Execution::SucceededWithoutResult)
/// or [`Declined`](Execution::Declined)) and this call did not record it: the journal
/// answered what an earlier call, another worker or a recovery job had stored. An
/// outcome this call recorded (its send's answer, or evidence its lookup found) is a
/// first answer, and an answer that is not terminal is never a replay. The execution
/// is the same either way, a stored result byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executed {
    /// What `Journal::execute` answers.
    pub execution: Execution,
    /// Whether the execution is a terminal outcome stored before this call.
    pub replayed: bool,
}
