//! Proven absence: when the journal accepts a provider's "not found" for an attempt,
//! decided from its own records alone (the plan and the send record), never from the
//! caller's word.
//!
//! ```text
//! permitted until   = lastSentAt + 60 s  (no lease that permitted the attempt runs later:
//!                                         leases last 60 s and are never extended)
//! provable from     = permitted until + lookupSettleSeconds
//! forgotten from    = firstSentAt + keyRetentionSeconds   (key_store lookups only)
//!
//! indeterminate (replayed_unknown, indeterminate)
//!                                      -> absence_not_provable { none }: only evidence ends it
//! lookup final_state (any attempt)     -> absence_not_provable { none }: only evidence ends it
//! now < provable from                  -> absence_not_provable { provableFrom }
//! now ≥ forgotten from (key_store)     -> absence_not_provable { none }: evidence or an operator
//! otherwise                            -> provable: the attempt may be recorded absent
//! ```
//!
//! An indeterminate attempt is one whose provider answered an error it documents as
//! indeterminate, stored for the key (Stripe's 500, fresh or replayed). Stripe's
//! "Advanced error handling" (`https://docs.stripe.com/error-low-level`, server
//! errors): "You should treat the result of a 500 request as indeterminate. [...]
//! Stripe engineers examine failed requests and try to appropriately reconcile the
//! results of any mutations that result in 500s. [...] we'll try to fire webhooks for
//! any new objects created as part of Stripe's reconciliation"; "if creating a charge
//! returns a 500 error but we detect that the information has gone out a payment
//! network, we'll try to roll it forward"; and a new key is advised against "because
//! the original key may have produced side effects". So a lookup's "not found" says
//! only that nothing exists *yet*. What ends the window is the provider's final state
//! for the key: a success (a charge found by a lookup, or later a
//! `payment_intent.succeeded` event for it) or a final refusal (a canceled intent, a
//! refused confirmation). Stripe documents no horizon after which a reconciliation can
//! no longer complete the request (the key's 24 h retention bounds the cached answer,
//! not the remediation), so there is none here: the attempt waits for that evidence,
//! or a person ([`Unblock::FinalEvidence`](crate::pending::Unblock::FinalEvidence)).
//!
//! A plan whose lookup is `final_state` (every Stripe plan) extends this to every
//! attempt: a request whose answer never arrived (a timeout, a dropped connection:
//! `sending` or `ambiguous`) may have met exactly such a 500 at Stripe, stored for the
//! key and rolled forward later, and the journal cannot tell it from a request that
//! never arrived. Stripe's advice for a request without an answer is to repeat it
//! with the same key (`https://docs.stripe.com/api/idempotent_requests`: "if a
//! connection error occurs, you can safely repeat the request without risk of creating
//! a second object"), and that re-send's answer (a result, a decline, or the stored
//! 500 replayed) is what ends the not knowing; a lookup's "not found" never does.
//!
//! A provider's success or decline is evidence at any time; only an absence needs this.

use super::attempt::{AttemptState, SendAttempt};
use super::bound_plan::BoundPlan;
use super::plan::ProviderLookup;
use super::reverted::{Rule, reverted};
use crate::document::lifecycle::LEASE_SECONDS;
use crate::error::JournalError;
use crate::time::Timestamp;

/// When an attempt was sent (its first and its latest permit), and whether its
/// provider answered it as indeterminate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sent {
    /// The first permit's time: the key store's retention runs from it.
    pub first_sent_at: Timestamp,
    /// The latest permit's time: its lease bounds when a send can still be in flight.
    pub last_sent_at: Timestamp,
    /// The attempt's state is (or, for an absence, was recorded from) one the provider
    /// may still complete ([`AttemptState::indeterminate`]).
    pub indeterminate: bool,
}

impl Sent {
    /// The attempt `attempt` as it stood in `state` (an absent attempt's state before
    /// its absence was recorded, from its event).
    pub(crate) fn in_state(attempt: &SendAttempt, state: Option<AttemptState>) -> Self {
        Self {
            first_sent_at: attempt.first_sent_at,
            last_sent_at: attempt.last_sent_at,
            indeterminate: state.is_some_and(AttemptState::indeterminate),
        }
    }
}

impl From<&SendAttempt> for Sent {
    fn from(attempt: &SendAttempt) -> Self {
        Self::in_state(attempt, Some(attempt.state))
    }
}

/// The window in which an absence of the attempt `sent` is provable: from its first
/// instant, until (exclusive) the instant the provider may forget the key (`None`:
/// never). `None` overall when the window is empty (always for an indeterminate
/// attempt) or outside Firestore's range.
pub(crate) fn window(
    plan: &BoundPlan,
    sent: impl Into<Sent>,
) -> Option<(Timestamp, Option<Timestamp>)> {
    let sent = sent.into();
    if sent.indeterminate && !reverted(Rule::IndeterminateNeverAbsent) {
        return None;
    }
    if plan.lookup == ProviderLookup::FinalState && !reverted(Rule::UnansweredNeverAbsent) {
        return None;
    }
    let settle = if reverted(Rule::SettleWindow) {
        0
    } else {
        plan.lookup_settle_seconds
    };
    let from = sent
        .last_sent_at
        .plus_seconds(LEASE_SECONDS)?
        .plus_seconds(settle)?;
    let until = match plan.lookup {
        ProviderLookup::Durable | ProviderLookup::FinalState => None,
        ProviderLookup::KeyStore => Some(
            sent.first_sent_at
                .plus_seconds(plan.key_retention_seconds)?,
        ),
    };
    match until {
        Some(until) if until <= from => None,
        _ => Some((from, until)),
    }
}

/// Whether `NotFound` for `attempt` is provable at `now`: `Ok` or the refusal, with
/// the instant from which it will be, where one exists.
pub(crate) fn check(
    plan: &BoundPlan,
    sent: impl Into<Sent>,
    now: Timestamp,
) -> Result<(), JournalError> {
    let never = JournalError::AbsenceNotProvable {
        provable_from: None,
    };
    let (from, until) = window(plan, sent).ok_or(never)?;
    if now < from && !reverted(Rule::SenderSettled) {
        return Err(JournalError::AbsenceNotProvable {
            provable_from: Some(from),
        });
    }
    match until {
        Some(until) if now >= until && !reverted(Rule::KeyRetained) => Err(never),
        _ => Ok(()),
    }
}

/// The instant from which an absence of `sent` is provable, as `status` shows it:
/// `None` once the provider may have forgotten the key (a `key_store` lookup past its
/// retention), or when the window is empty. The same window [`check`] decides by.
pub(crate) fn provable_from(
    plan: &BoundPlan,
    sent: impl Into<Sent>,
    now: Timestamp,
) -> Option<Timestamp> {
    let (from, until) = window(plan, sent)?;
    let forgotten = until.is_some_and(|until| now >= until) && !reverted(Rule::KeyRetained);
    (!forgotten).then_some(from)
}

/// Whether an absence recorded at `at` lies in its provable window: a stored
/// absence outside it was not proven, and nothing is built on it.
pub(crate) fn recorded_in_window(plan: &BoundPlan, sent: impl Into<Sent>, at: Timestamp) -> bool {
    check(plan, sent, at).is_ok()
}
