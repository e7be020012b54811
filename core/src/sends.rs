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
pub mod account;
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

pub use account::ProviderAccount;
pub use attempt::AttemptState;
pub use output::{BeginSendOutput, SendOutcomeOutput, SendPermit};
pub use plan::{ProviderLookup, ProviderMode, ProviderPlan, ProviderPlanRequest};
pub use status::{CommandStatus, SendStatus};

use crate::envelope::ResultEnvelope;
use crate::execute::SendResult;
use crate::identity::{CommandIdentity, TerminalReferenceFingerprint};
use close::Closing;

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

impl SendOutcome {
    /// The same answer as evidence for `reconcile_send`: a success or a decline is
    /// evidence whenever it arrives; `Ambiguous` proves nothing.
    pub fn evidence(&self) -> Option<SendEvidence> {
        match self {
            Self::Succeeded(reference) => Some(SendEvidence::Succeeded(reference.clone())),
            Self::SucceededWith(envelope) => Some(SendEvidence::SucceededWith(envelope.clone())),
            Self::Declined => Some(SendEvidence::Declined),
            Self::Ambiguous => None,
        }
    }

    /// What closing the attempt records for this answer, for the command of
    /// `identity`, and the envelope stored with a success.
    pub fn closing(&self, identity: &CommandIdentity) -> (Closing, Option<&ResultEnvelope>) {
        match self {
            Self::Succeeded(reference) => (success(identity, reference), None),
            Self::SucceededWith(envelope) => {
                (success(identity, &envelope.reference()), Some(envelope))
            }
            Self::Declined => (Closing::Declined, None),
            Self::Ambiguous => (Closing::Ambiguous, None),
        }
    }
}

impl From<SendResult> for SendOutcome {
    /// The provider's answer to a send, as `record_send_outcome` records it.
    fn from(result: SendResult) -> Self {
        match result {
            SendResult::Succeeded(envelope) => Self::SucceededWith(envelope),
            SendResult::Declined => Self::Declined,
            SendResult::Ambiguous => Self::Ambiguous,
        }
    }
}

impl SendEvidence {
    /// What closing the attempt records for this evidence, for the command of
    /// `identity`, and the envelope stored with a success.
    pub fn closing(&self, identity: &CommandIdentity) -> (Closing, Option<&ResultEnvelope>) {
        match self {
            Self::Succeeded(reference) => (success(identity, reference), None),
            Self::SucceededWith(envelope) => {
                (success(identity, &envelope.reference()), Some(envelope))
            }
            Self::Declined => (Closing::Declined, None),
            Self::NotFound => (Closing::Absent, None),
        }
    }
}

/// A success, bound to the command by its terminal commitment.
fn success(identity: &CommandIdentity, reference: &TerminalReferenceFingerprint) -> Closing {
    Closing::Succeeded(identity.terminal_commitment(reference))
}

#[cfg(test)]
pub mod tests;
