//! The whole send protocol behind one call: `Journal::execute` over a
//! [`Provider`](crate::Provider) adapter.
//!
//! A caller writes the two provider calls (the send and the lookup by idempotency key)
//! and gets, from the journal, everything around them: the fenced lease, a send
//! deadline below the lease's remaining time, the permit recorded before the send, the
//! outcome recorded under the fence, the stored cutoff after which nothing re-sends,
//! the lookup and reconciliation past it, a new attempt (a new key) only once the
//! provider has confirmed the old one absent, and the stored result on every replay.
//!
//! The decisions are pure: the call's own states ([`program`]) and, for whatever the
//! provider answers, the settle program (`crate::settle`); `Journal::execute` only
//! performs the step each one names. `docs/flows/checkout.md` gives the table.

pub(crate) mod opening;
pub(crate) mod program;

use crate::envelope::ResultEnvelope;
use crate::sends::customer::CustomerAction;
use std::time::Duration;

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
        /// How long until a retry can take the lease over: whole seconds, rounded
        /// up, at least one (what a `Retry-After` header carries as it is).
        after: Duration,
    },
    /// The cutoff has passed with the outcome unknown and the provider lookup was
    /// unavailable: nothing was written; retry later, and the lookup is asked again.
    PendingReconciliation,
    /// The customer must act (3-D Secure, a hosted page): hand the action to the
    /// customer's browser; the same command's next call (the return page's) settles it.
    CustomerMustAct(CustomerAction),
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
