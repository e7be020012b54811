//! The provider boundary: what the journal asks a payment provider ([`SendRequest`],
//! [`LookupRequest`], through a [`Provider`] adapter) and what the provider answered
//! ([`ProviderAnswer`]), the one type from the adapter's call to the event the journal
//! stores. Every answer, whatever call or source it comes from, enters the journal
//! through the one settle program (`crate::settle`).
//!
//! | answer | from a send | from a lookup | recorded by `record_send_outcome` | recorded by `reconcile_send` |
//! |---|---|---|---|---|
//! | `Succeeded(envelope)` | the charge, with the result to replay | a charge for the key | success, envelope stored | success, envelope stored |
//! | `SucceededWithReference(reference)` | (step-by-step callers) | (step-by-step callers) | success with a bare reference | success with a bare reference |
//! | `Declined` | a final refusal | a final refusal for the key | final failure | final failure |
//! | `NotFound` | — (`invalid_input`) | nothing for the key | — (`invalid_input`) | the attempt's absence, where provable |
//! | `Unknown` | timeout, 5xx, lost connection | failed or inconclusive | the attempt kept open (`ambiguous`) | — (`invalid_input`) |
//! | `ReplayedUnknown` | the key's stored unknown answer, replayed (Stripe's stored 5xx, `Idempotent-Replayed: true`) | — (as `Unknown`) | the attempt kept open, never re-sent (`replayed_unknown`): looked up at once; indeterminate | — (`invalid_input`) |
//! | `Indeterminate` | an answer the provider documents as indeterminate (Stripe's 500) | — (as `Unknown`) | the attempt kept open, never re-sent (`indeterminate`): looked up at once; indeterminate | — (`invalid_input`) |
//! | `CustomerMustAct(action)` | the customer must act (3-D Secure, a hosted page) | — (as `Unknown`) | the attempt kept open, never re-sent (`awaiting_customer`); the action goes to the caller, never stored | — (`invalid_input`) |
//! | `Closed` | — (as `Unknown`) | — (as `Unknown`; a retrieve by id: its object closed with nothing charged) | as `Unknown` | of an attempt awaiting the customer only: final failure, nothing charged (else `absence_not_provable`) |
//!
//! An attempt whose provider answered `ReplayedUnknown` or `Indeterminate` is
//! *indeterminate*: the provider may still complete it later, so no "not found"
//! proves its absence and no new key is issued for its command
//! (`crate::sends::absence`); only its final state settles it.

use super::attempt_number::AttemptNumber;
use super::customer::CustomerAction;
use crate::digest::Digest;
use crate::envelope::ResultEnvelope;
use crate::identity::{CommandIdentity, TerminalReferenceFingerprint};
use crate::time::Timestamp;
use serde_json::Value;
use std::future::Future;
use std::time::Duration;

/// A payment provider as the journal drives it: the send and the lookup by key, each
/// answering a [`ProviderAnswer`] (the table in this module's doc says what each
/// answer means from each call).
///
/// Implement it with `async fn`s. Neither call may retry on its own with another key;
/// the journal never calls `send` for an attempt past its stored cutoff. A send that
/// answers `NotFound` is taken as `Unknown`.
///
/// ```
/// use command_journal_core::ResultEnvelope;
/// use command_journal_core::sends::LookupRequest;
/// use command_journal_core::{Provider, ProviderAnswer, SendRequest};
///
/// struct AlwaysCharges;
///
/// impl Provider for AlwaysCharges {
///     async fn send(&self, request: SendRequest) -> ProviderAnswer {
///         let charge = serde_json::json!({"id": "ch_1", "status": "succeeded"});
///         match ResultEnvelope::new(&charge) {
///             Ok(envelope) => ProviderAnswer::Succeeded(envelope),
///             Err(_) => ProviderAnswer::Unknown,
///         }
///     }
///     async fn lookup(&self, _request: LookupRequest) -> ProviderAnswer {
///         ProviderAnswer::Unknown
///     }
/// }
/// ```
pub trait Provider: Send + Sync {
    /// Sends `request.parameters` with `request.key`, answering within
    /// `request.deadline`.
    fn send(&self, request: SendRequest) -> impl Future<Output = ProviderAnswer> + Send;

    /// Asks the provider what it holds for `request.key`, answering within
    /// `request.deadline`.
    fn lookup(&self, request: LookupRequest) -> impl Future<Output = ProviderAnswer> + Send;

    /// Reads the provider's object for `request.key` by its id, for its CURRENT state
    /// (a replay of the send is the first answer's state), and cancels it first when
    /// `request.cancel`. Answers Succeeded, Declined, CustomerMustAct, Closed or Unknown.
    ///
    /// The default answers `Unknown`: a provider that never answers `CustomerMustAct`
    /// need not write it.
    fn retrieve(&self, request: RetrieveRequest) -> impl Future<Output = ProviderAnswer> + Send {
        let _ = request;
        async { ProviderAnswer::Unknown }
    }
}

/// A provider by reference is the same provider.
impl<P: Provider + ?Sized> Provider for &P {
    fn send(&self, request: SendRequest) -> impl Future<Output = ProviderAnswer> + Send {
        (**self).send(request)
    }

    fn lookup(&self, request: LookupRequest) -> impl Future<Output = ProviderAnswer> + Send {
        (**self).lookup(request)
    }

    fn retrieve(&self, request: RetrieveRequest) -> impl Future<Output = ProviderAnswer> + Send {
        (**self).retrieve(request)
    }
}

/// One send the journal permits, with everything the provider's request needs: the
/// attempt's key and the plan's parameters. `Debug` shows the attempt, the resend flag
/// and the deadline only: never the key or a parameter value.
#[derive(Clone, PartialEq, Eq)]
pub struct SendRequest {
    /// The attempt's provider idempotency key (`cj1-…` for attempt 1): send it in the
    /// provider's idempotency header, so that a re-send is deduplicated.
    pub key: String,
    /// The plan's parameters, in canonical key order.
    pub parameters: Value,
    /// Answer within this time: it ends at least 10 s before the lease expires. The
    /// journal stops waiting after it and records the outcome as ambiguous.
    pub deadline: Duration,
    /// The attempt number.
    pub attempt: AttemptNumber,
    /// Whether an earlier holder already sent this attempt with this key.
    pub resend: bool,
    /// The instant the customer must have acted by, identical on every re-send of the
    /// key (a hosted page's `expires_at`); never after the attempt's stored cutoff.
    pub act_by: Timestamp,
}

impl std::fmt::Debug for SendRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendRequest")
            .field("attempt", &self.attempt.get())
            .field("resend", &self.resend)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// One retrieve of an attempt's object. `Debug` shows attempt, replayable, cancel and
/// deadline only.
#[derive(Clone, PartialEq, Eq)]
pub struct RetrieveRequest {
    /// The attempt's provider idempotency key.
    pub key: String,
    /// The plan's parameters (what a re-send of the key must repeat byte for byte).
    pub parameters: Value,
    /// The attempt number.
    pub attempt: AttemptNumber,
    /// Whether the key may still be re-sent to learn the object's id (before the
    /// attempt's stored cutoff, decided by the journal, never the adapter's clock);
    /// otherwise the adapter finds the object through its durable lookup.
    pub replayable: bool,
    /// Cancel the object if it is still open (the customer's window has passed, decided
    /// by the journal from its records), then answer its final state.
    pub cancel: bool,
    /// Whether the read is made under a lease the journal holds (a caller's return, a
    /// job past the window): an object the customer's last try left refused (a failed
    /// 3-D Secure challenge, which the customer could retry with another card) may then
    /// be ended, canceled so that its refusal is final. A job's read without a lease
    /// never ends it: the customer stays free to retry.
    pub end_refusal: bool,
    /// The instant the customer must have acted by (also on [`SendRequest`], identical
    /// on every re-send of the key): a hosted page's `expires_at`.
    pub act_by: Timestamp,
    /// Answer within this time.
    pub deadline: Duration,
}

impl std::fmt::Debug for RetrieveRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetrieveRequest")
            .field("attempt", &self.attempt.get())
            .field("replayable", &self.replayable)
            .field("cancel", &self.cancel)
            .field("end_refusal", &self.end_refusal)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// One lookup of an attempt's key, derived from the stored plan once the plan is
/// checked. `Debug` shows the deadline only, never the key.
#[derive(Clone, PartialEq, Eq)]
pub struct LookupRequest {
    /// The attempt's provider idempotency key.
    pub key: String,
    /// Answer within this time; a lookup not answered by then is `Unknown`.
    pub deadline: Duration,
}

impl std::fmt::Debug for LookupRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LookupRequest")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

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
    /// The provider replayed an unknown answer it stored for this key (Stripe saves a
    /// 500 once the endpoint began executing and replays it, marked
    /// `Idempotent-Replayed: true`, for the key's lifetime): this key can no longer
    /// tell. The attempt is kept open but never re-sent; `execute` looks the key up at
    /// once. It is indeterminate (a stored 5xx is one the provider may still
    /// complete): no absence of it is ever proven, so no next attempt opens; only a
    /// success or a decline found for the key settles it. Only a send answers it;
    /// from a lookup it is read as [`ProviderAnswer::Unknown`].
    ReplayedUnknown,
    /// The provider answered the send with an error it documents as indeterminate:
    /// the request may have had effects it can still complete later (Stripe's 500:
    /// "You should treat the result of a 500 request as indeterminate", and it may
    /// roll the payment forward during an incident's remediation). Kept open as
    /// `indeterminate`, never re-sent (the provider stores the answer: a re-send hears
    /// it again) and looked up at once, like [`ProviderAnswer::ReplayedUnknown`]; no
    /// absence of it is ever proven. Only a send answers it; from a lookup it is read
    /// as [`ProviderAnswer::Unknown`].
    Indeterminate,
    /// The provider waits for the customer (3-D Secure, a hosted page): nothing is
    /// charged yet and the customer may still pay. The action goes to the caller only.
    CustomerMustAct(CustomerAction),
    /// The provider's object for the key reached a final state with nothing charged and
    /// nothing chargeable any more under the key (a canceled PaymentIntent, an expired
    /// Checkout Session), read by id. The only evidence that proves an attempt that
    /// waited for the customer absent.
    Closed,
}

/// What recording an answer closes the attempt with: the answer bound to the command
/// (a success by its terminal commitment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Closing {
    /// Success, with the command-bound commitment of the terminal reference.
    Succeeded(Digest),
    /// A final provider refusal.
    Declined,
    /// Still unknown (`record_send_outcome` only).
    Ambiguous,
    /// Still unknown, and the key can no longer tell: a re-send only replays the
    /// stored answer (`record_send_outcome` only).
    ReplayedUnknown,
    /// Still unknown, answered as indeterminate by the provider
    /// (`record_send_outcome` only).
    Indeterminate,
    /// Still unknown: the provider waits for the customer (`record_send_outcome`
    /// only).
    AwaitingCustomer,
    /// The provider has no object for the key (`reconcile_send` only).
    Absent,
    /// The provider's object for the key, read by id, reached a final state with
    /// nothing charged (`reconcile_send` only, of an attempt awaiting the customer):
    /// the command fails for good with nothing charged, as after a decline.
    Closed,
}

impl ProviderAnswer {
    /// The answer as evidence a holder may record whenever it arrives (a success or a
    /// decline); `None` for what proves nothing by itself.
    pub(crate) fn evidence(&self) -> Option<Self> {
        match self {
            Self::Succeeded(_) | Self::SucceededWithReference(_) | Self::Declined => {
                Some(self.clone())
            }
            Self::NotFound
            | Self::Unknown
            | Self::ReplayedUnknown
            | Self::Indeterminate
            | Self::CustomerMustAct(_)
            | Self::Closed => None,
        }
    }

    /// The stored result a success carries.
    pub fn envelope(&self) -> Option<&ResultEnvelope> {
        match self {
            Self::Succeeded(envelope) => Some(envelope),
            _ => None,
        }
    }

    /// Whether the answer is indeterminate: the provider may still complete the
    /// request (`ReplayedUnknown`, `Indeterminate`), so its key is looked up at once and
    /// never re-sent.
    pub fn indeterminate(&self) -> bool {
        matches!(self, Self::ReplayedUnknown | Self::Indeterminate)
    }

    /// Whether the answer is a charge made: a success (recorded late when its command
    /// can no longer take it).
    pub(crate) fn charged(&self) -> bool {
        matches!(self, Self::Succeeded(_) | Self::SucceededWithReference(_))
    }

    /// What recording this answer for the command of `identity` closes the attempt
    /// with, and the envelope a success stores.
    pub(crate) fn closing(&self, identity: &CommandIdentity) -> (Closing, Option<&ResultEnvelope>) {
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
            Self::Closed => Closing::Closed,
            Self::CustomerMustAct(_) => Closing::AwaitingCustomer,
            Self::ReplayedUnknown => Closing::ReplayedUnknown,
            Self::Indeterminate => Closing::Indeterminate,
        };
        (closing, self.envelope())
    }
}
