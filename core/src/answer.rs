//! What a provider answered about one attempt's idempotency key: the one type from
//! the adapter's `send` and `lookup` to the event the journal stores.
//!
//! | answer | from a send | from a lookup | recorded by `record_send_outcome` | recorded by `reconcile_send` |
//! |---|---|---|---|---|
//! | `Succeeded(envelope)` | the charge, with the result to replay | a charge for the key | success, envelope stored | success, envelope stored |
//! | `SucceededWithReference(reference)` | (step-by-step callers) | (step-by-step callers) | success with a bare reference | success with a bare reference |
//! | `Declined` | a final refusal | a final refusal for the key | final failure | final failure |
//! | `NotFound` | — (`invalid_input`) | nothing for the key | — (`invalid_input`) | the attempt's absence, where provable |
//! | `Unknown` | timeout, 5xx, lost connection | failed or inconclusive | the attempt kept open (`ambiguous`) | — (`invalid_input`) |

use crate::digest::Digest;
use crate::envelope::ResultEnvelope;
use crate::identity::{CommandIdentity, TerminalReferenceFingerprint};

/// What a provider answered about one attempt's key (the table in the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderAnswer {
    /// The provider did it: this envelope is the result the caller gets now and on
    /// every retry (stored with the success, byte for byte).
    Succeeded(ResultEnvelope),
    /// The provider did it, recorded with an already-redacted terminal reference and
    /// no stored result (`complete_command`'s success).
    SucceededWithReference(TerminalReferenceFingerprint),
    /// A final refusal (a decline): the command fails for good.
    Declined,
    /// The provider holds nothing for the key (a lookup's answer). Only a proven
    /// absence of the attempt lets a new attempt, with a new key, be sent.
    NotFound,
    /// Nothing final is known: a timeout, a 5xx, a connection lost after the request
    /// may have left, a pending object, a failed lookup. Nothing is recorded but an
    /// open attempt; a later call re-sends the same key before the cutoff, or looks
    /// it up after it.
    Unknown,
}

/// What recording an answer closes the attempt with: the answer bound to the command
/// (a success by its terminal commitment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Closing {
    /// Success, with the command-bound commitment of the terminal reference.
    Succeeded(Digest),
    /// A final provider refusal.
    Declined,
    /// Still unknown (`record_send_outcome` only).
    Ambiguous,
    /// The provider has no object for the key (`reconcile_send` only).
    Absent,
}

impl ProviderAnswer {
    /// The answer as evidence a holder may record whenever it arrives (a success or a
    /// decline); `None` for what proves nothing by itself.
    pub fn evidence(&self) -> Option<Self> {
        match self {
            Self::Succeeded(_) | Self::SucceededWithReference(_) | Self::Declined => {
                Some(self.clone())
            }
            Self::NotFound | Self::Unknown => None,
        }
    }

    /// The stored result a success carries.
    pub fn envelope(&self) -> Option<&ResultEnvelope> {
        match self {
            Self::Succeeded(envelope) => Some(envelope),
            _ => None,
        }
    }

    /// What recording this answer for the command of `identity` closes the attempt
    /// with, and the envelope a success stores.
    pub fn closing(&self, identity: &CommandIdentity) -> (Closing, Option<&ResultEnvelope>) {
        let closing = match self {
            Self::Succeeded(envelope) => {
                Closing::Succeeded(identity.terminal_commitment(&envelope.reference()))
            }
            Self::SucceededWithReference(reference) => {
                Closing::Succeeded(identity.terminal_commitment(reference))
            }
            Self::Declined => Closing::Declined,
            Self::NotFound => Closing::Absent,
            Self::Unknown => Closing::Ambiguous,
        };
        (closing, self.envelope())
    }
}
