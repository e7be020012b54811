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
//! now < provable from                  -> absence_not_provable { provableFrom }
//! now ≥ forgotten from (key_store)     -> absence_not_provable { none }: evidence or an operator
//! otherwise                            -> provable: the attempt may be recorded absent
//! ```
//!
//! A provider's success or decline is evidence at any time; only an absence needs this.

use super::attempt::SendAttempt;
use super::bound_plan::BoundPlan;
use super::plan::ProviderLookup;
use super::reverted::{Rule, reverted};
use crate::document::lifecycle::LEASE_SECONDS;
use crate::error::JournalError;
use crate::time::Timestamp;

/// When an attempt was sent: its first and its latest permit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sent {
    /// The first permit's time: the key store's retention runs from it.
    pub first_sent_at: Timestamp,
    /// The latest permit's time: its lease bounds when a send can still be in flight.
    pub last_sent_at: Timestamp,
}

impl From<&SendAttempt> for Sent {
    fn from(attempt: &SendAttempt) -> Self {
        Self {
            first_sent_at: attempt.first_sent_at,
            last_sent_at: attempt.last_sent_at,
        }
    }
}

/// The window in which an absence of the attempt `sent` is provable: from its first
/// instant, until (exclusive) the instant the provider may forget the key (`None`:
/// never). `None` overall when the window is empty or outside Firestore's range.
pub(crate) fn window(
    plan: &BoundPlan,
    sent: impl Into<Sent>,
) -> Option<(Timestamp, Option<Timestamp>)> {
    let sent = sent.into();
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
        ProviderLookup::Durable => None,
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
