//! Provider sends: the layer above the lease that decides, under the lease and fence,
//! whether the caller may send to its payment provider, and records what happened.
//! `docs/providers.md` gives the states, the transitions table and every field.
//!
//! The library still never calls a provider. A command binds one [`ProviderPlan`]
//! (stored only as its fingerprint) on its first send; each attempt is opened as
//! `sending` before the POST with a stored cutoff; an unknown outcome may be re-sent
//! with the same key only before that cutoff; only recorded provider absence lets a
//! new attempt, with a new key, open. Every decision is pure, reads the lease's
//! documents and the send layer's (`load`), and composes B2B's terminal transition
//! rather than restating it; the lease module never learns about sends.

pub mod absence;
pub mod attempt;
pub mod begin;
pub mod bound_plan;
pub mod close;
pub mod event;
pub mod guard;
pub mod load;
pub mod mutation;
pub mod outcome;
pub mod output;
pub mod plan;
pub mod reconcile;
pub mod reverted;
pub mod status;

pub use attempt::AttemptState;
pub use output::{BeginSendOutput, SendOutcomeOutput, SendPermit};
pub use plan::{ProviderLookup, ProviderMode, ProviderPlan, ProviderPlanRequest};
pub use status::{CommandStatus, SendStatus};

use crate::envelope::ResultEnvelope;
use crate::identity::TerminalReferenceFingerprint;

/// What the provider answered the send (`record_send_outcome`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendOutcome {
    /// Success, with the already-redacted terminal reference: ends the command as
    /// `complete_command` would, in the same commit that closes the attempt.
    Succeeded(TerminalReferenceFingerprint),
    /// Success with a result envelope: ends the command as `complete_with_result`
    /// would (the envelope's reference is the terminal reference, and the envelope is
    /// stored in the same commit that closes the attempt).
    SucceededWith(ResultEnvelope),
    /// A final provider refusal: ends the command as `fail_command` would.
    Declined,
    /// Timeout, 5xx, connection lost after the request may have left: kept open.
    Ambiguous,
}

/// Verified provider evidence about an attempt whose outcome is unknown
/// (`reconcile_send`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendEvidence {
    /// The provider holds a successful object for the attempt's key.
    Succeeded(TerminalReferenceFingerprint),
    /// The provider holds a successful object for the attempt's key, described by
    /// this envelope: stored with the success as `SucceededWith` of [`SendOutcome`].
    SucceededWith(ResultEnvelope),
    /// The provider refused the attempt finally.
    Declined,
    /// The provider confirms no object exists for the attempt's key.
    NotFound,
}

#[cfg(test)]
pub mod tests;
