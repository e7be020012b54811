//! One Stripe event taken as evidence, the same way whether the endpoint received it
//! signed or the recovery job read it from the Events API: classified from its object
//! (`command_journal_stripe::webhook::classify`, the table of the Stripe package's
//! `docs/events.md`), the object read by id where its meaning depends on order
//! (Stripe does not order its events: <https://docs.stripe.com/webhooks>), and the
//! answer recorded through the journal's evidence call, with no client, under the
//! journal's own lease and the one settle program.
//!
//! Never an absence: an event that proves nothing is acknowledged and counted, and no
//! answer but a success or a final one is ever recorded from it.

use command_journal::evidence::{self, EvidenceOptions, EvidenceOutcome};
use command_journal::{Journal, JournalError, ProviderAnswer};
use command_journal_stripe::Stripe;
use command_journal_stripe::intent::Expected;
use command_journal_stripe::webhook::{
    Classified, Evidence, VerifiedEvent, classify, settle_by_id,
};

/// How one event ended. Every case but [`Taken::Unavailable`] is final: Stripe need not
/// deliver it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// The evidence was recorded: the command's answer is settled from it.
    Recorded,
    /// The charge was recorded as a late charge (its command ended, or its attempt
    /// moved on, without it): listed by `pending` and `verify` for a person.
    LateCharge,
    /// The journal held this evidence already (the same event again, or another
    /// event, a lookup or the client's own call settled it first): nothing written.
    Duplicate,
    /// A key of the journal's form that names no attempt the journal holds:
    /// acknowledged and counted, nothing written.
    UnknownObject,
    /// Nothing to record; the fixed code says why (not ours, a type not read, a state
    /// on the way, an object whose current state settles nothing yet).
    Ignored(&'static str),
    /// The journal, or Stripe's read by id, did not answer: the event must come again
    /// (Stripe retries a delivery answered with a 5xx). The fixed code says which.
    Unavailable(&'static str),
    /// The journal refused the evidence as input it can never take
    /// (`invalid_input`): nothing written, answered 400 under this code, never as a
    /// corrupt journal nor as a pause to wait out.
    Refused(&'static str),
}

impl Taken {
    /// The fixed code of a log line and a metric label.
    pub fn code(self) -> &'static str {
        match self {
            Self::Recorded => "recorded",
            Self::LateCharge => "late_charge",
            Self::Duplicate => "duplicate",
            Self::UnknownObject => "unknown_object",
            Self::Ignored(code) | Self::Unavailable(code) | Self::Refused(code) => code,
        }
    }
}

/// Takes `event` for a journal whose Stripe key runs in live mode when `livemode`:
/// classifies it, reads its object by id through `stripe` where the classification
/// says so, and records a success or a final answer through `journal`.
pub async fn take(
    journal: &Journal,
    stripe: &Stripe,
    event: &VerifiedEvent,
    livemode: bool,
) -> Taken {
    let (key, evidence) = match classify(event, livemode) {
        Classified::Ignored(ignored) => return Taken::Ignored(ignored.code()),
        Classified::Ours { key, evidence, .. } => (key, evidence),
    };
    let evidence = match evidence {
        Evidence::Nothing => return Taken::Ignored("webhook_state_on_the_way"),
        Evidence::Proves(answer) => evidence::Evidence::new(key.as_str(), answer),
        // Read by id (a session, then its PaymentIntent), the key alone checked, as a
        // recovery lookup does: the endpoint holds no plan's parameters, and the
        // settle program proves the attempt from the stored plan. The journal's time
        // before the read marks it read by id just now.
        Evidence::ReadById(object, _) => {
            let Ok(at) = journal.now() else {
                return Taken::Unavailable("journal_clock");
            };
            match settle_by_id(stripe, object, &key, &Expected::key_only(), at).await {
                Some(evidence) => evidence,
                None => return Taken::Unavailable("stripe_unavailable"),
            }
        }
    };
    match evidence.answer() {
        ProviderAnswer::Succeeded(_) | ProviderAnswer::Declined | ProviderAnswer::Closed => {
            record(journal, stripe, evidence).await
        }
        ProviderAnswer::CustomerMustAct(_) => Taken::Ignored("webhook_customer_must_act"),
        // Never from an event (no absence, no send's answer); an object whose state
        // settles nothing yet: Stripe's next event, or the job's next run, reads it
        // again.
        ProviderAnswer::Unknown
        | ProviderAnswer::NotFound
        | ProviderAnswer::ReplayedUnknown
        | ProviderAnswer::Indeterminate
        | ProviderAnswer::SucceededWithReference(_) => Taken::Ignored("webhook_unsettled"),
    }
}

/// Records `evidence` through the journal's evidence call
/// (`Journal::record_evidence`), declaring the service's own Stripe account: a
/// command bound to another writes nothing. A `Closed` read by id just now ends an
/// attempt awaiting its customer (an expired Checkout Session: the command's final
/// failure, nothing charged); any other `Closed` is inconclusive.
async fn record(journal: &Journal, stripe: &Stripe, evidence: evidence::Evidence) -> Taken {
    let options = EvidenceOptions {
        account: stripe.account().ok(),
    };
    match journal.record_evidence(evidence, &options).await {
        Ok(EvidenceOutcome::Succeeded | EvidenceOutcome::Declined) => Taken::Recorded,
        Ok(EvidenceOutcome::LateCharge) => Taken::LateCharge,
        Ok(EvidenceOutcome::AlreadySettled) => Taken::Duplicate,
        Ok(EvidenceOutcome::UnknownObject) => Taken::UnknownObject,
        Ok(EvidenceOutcome::NothingOpen) => Taken::Ignored("evidence_nothing_open"),
        Ok(EvidenceOutcome::NotFound | EvidenceOutcome::Inconclusive) => {
            Taken::Ignored("evidence_inconclusive")
        }
        Ok(EvidenceOutcome::OtherAccount) => Taken::Ignored("evidence_other_account"),
        // The client's call (or a recovery) holds the command: nothing written, and
        // the same event later settles it. Stripe retries a 503.
        Ok(EvidenceOutcome::InProgress) => Taken::Unavailable("evidence_in_progress"),
        Err(error) => taken_error(&error),
    }
}

/// What a journal error recording evidence makes of the event: input it can never
/// take is refused under its own code; anything else (the journal unavailable, a
/// corrupt document) waits for Stripe's next delivery.
pub fn taken_error(error: &JournalError) -> Taken {
    match error {
        JournalError::InvalidInput { .. } => Taken::Refused("evidence_invalid_input"),
        other => Taken::Unavailable(other.code()),
    }
}
