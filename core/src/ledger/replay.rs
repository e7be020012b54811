//! Replay before pricing: `replay_reserved_charge` and `replay_reserved_reversal`.
//!
//! A retried charge or reversal first resolves its reservation and the complete
//! ordered effect vector — before any balance, pricing, fee or protection input
//! exists — and only a missing reservation sends the caller on to pricing and
//! `accept_ledger_command`. The supplied
//! business input is compared by rebuilding the command from the **stored** effects
//! and hashing it under the **stored** version:
//!
//! - a charge supplies its family's business tuple ([`Intent`]); the rebuilt command is
//!   the stored effect vector (including each stored `compensation_subtype`, null on
//!   ordinary charges) with that tuple;
//! - a reversal supplies its [`ReversalAuthority`] and it is compared effect by
//!   effect, each value against the effects it applies to, never copied onto the
//!   others:
//!   - the actor and the mechanism apply to every effect (an accepted reversal has one
//!     actor and one mechanism), so the rebuilt command carries the supplied ones in
//!     every effect and both versions' serializers cover them;
//!   - the compensation subtype applies to the compensating effects only (those with
//!     compensation cents above zero): the rebuilt command carries the supplied
//!     subtype in those and keeps each non-compensating effect's stored subtype;
//!   - a reversal with no compensating effect has no compensation reason, so under
//!     version 5 the supplied subtype must be null;
//!   - version 4 does not cover the subtype at all: a stored version-4 reversal
//!     replays whatever subtype is supplied and returns the stored (possibly null)
//!     one, so nothing is fabricated.
//!
//! The stored effects are returned unchanged; nothing is ever written.
//!
//! ```text
//! reservation absent, slot 0 empty                -> not_reserved
//! reservation absent, an effect in slot 0         -> journal_corrupt
//! reservation present, malformed or incomplete    -> journal_corrupt
//! reservation present, rows contradict it         -> journal_corrupt
//!   (integrity digest or rebuilt fingerprint)
//! other scoped seat or actor                      -> scope_mismatch
//! version without serializer (1–3, > 5)           -> unsupported_fingerprint_version
//! other family (a charge replaying a reversal, …) -> replay_mismatch
//! v5 subtype supplied, no compensating effect     -> replay_mismatch
//! rebuilt fingerprint differs                     -> replay_mismatch
//! rebuilt fingerprint equal                       -> replayed, stored effects
//! ```

use super::fingerprint::{
    CURRENT_FINGERPRINT_VERSION, CommandFamily, EffectPlanItem, FingerprintInput, Intent,
    check_version,
};
use super::outcome::{LedgerOutcome, LedgerReplay, Outcome};
use super::reservation::{self, LedgerScope};
use super::stored::{self, Stored};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::identity::LedgerKey;
use crate::transaction::{Decision, Snapshot, Transition};

/// Effect slots read speculatively with the reservation, so replays of commands
/// with one or two effects need a single read.
const SPECULATIVE_SLOTS: usize = 2;

/// The covered authority of a reversal retry: who acts, by which mechanism, and for
/// which structured compensation reason. `None` is JSON null; each text is 1–1024
/// bytes (`invalid_input` on `reversal` otherwise).
///
/// The actor and mechanism are compared with every stored effect; the subtype only
/// with the compensating effects (compensation cents above zero), and under version 5
/// it must be null when no effect is compensating.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReversalAuthority {
    /// The acting seat (compared with every effect's `actor_seat_id`).
    pub actor_seat_id: Option<String>,
    /// The mechanism's canonical scalar value (every effect's `mechanism`).
    pub mechanism: Option<String>,
    /// The compensation subtype (each compensating effect's `compensation_subtype`;
    /// covered by version 5 only).
    pub compensation_subtype: Option<String>,
}

impl ReversalAuthority {
    /// `item` as this authority states it: the supplied actor and mechanism, and the
    /// supplied subtype only if the effect is compensating; every other field, and a
    /// non-compensating effect's subtype, as stored.
    fn apply(&self, item: &EffectPlanItem) -> EffectPlanItem {
        let compensation_subtype = if is_compensating(item) {
            self.compensation_subtype.clone()
        } else {
            item.compensation_subtype.clone()
        };
        EffectPlanItem {
            actor_seat_id: self.actor_seat_id.clone(),
            mechanism: self.mechanism.clone(),
            compensation_subtype,
            ..item.clone()
        }
    }

    /// The authority's values applied to one probe effect, for input validation.
    fn probe(&self) -> EffectPlanItem {
        EffectPlanItem {
            actor_seat_id: self.actor_seat_id.clone(),
            mechanism: self.mechanism.clone(),
            compensation_subtype: self.compensation_subtype.clone(),
            ..EffectPlanItem::default()
        }
    }

    /// True when the supplied subtype has something to be compared with: a
    /// compensating effect, or (version 4, which does not cover it) nothing at all.
    fn subtype_applies(&self, version: u32, items: &[EffectPlanItem]) -> bool {
        version != 5 || self.compensation_subtype.is_none() || items.iter().any(is_compensating)
    }
}

/// The reversal shapes a [`ReversalAuthority`] can state exactly, which are the only
/// ones accepted: every effect has the same actor and the same mechanism, every
/// compensating effect has the same subtype, and no non-compensating effect carries a
/// subtype (version 5 encodes it as null there).
pub(crate) fn reversal_is_replayable(items: &[EffectPlanItem]) -> bool {
    let Some(first) = items.first() else {
        return false;
    };
    let mut compensating = items.iter().filter(|item| is_compensating(item));
    let subtype = compensating.next().map(|item| &item.compensation_subtype);
    items.iter().all(|item| {
        item.actor_seat_id == first.actor_seat_id
            && item.mechanism == first.mechanism
            && if is_compensating(item) {
                Some(&item.compensation_subtype) == subtype
            } else {
                item.compensation_subtype.is_none()
            }
    })
}

/// An effect is compensating when it carries compensation cents above zero.
pub(crate) fn is_compensating(item: &EffectPlanItem) -> bool {
    item.compensation_amount_cents > 0
}

#[derive(Debug, Clone)]
enum Business {
    Charge(Intent),
    Reversal(ReversalAuthority),
}

/// A prepared replay: the key, the scope and the supplied business input.
#[derive(Debug, Clone)]
pub struct Replay {
    reservation_id: Digest,
    scope: LedgerScope,
    business: Business,
}

impl Replay {
    /// A charge replay; the tuple is validated as the fingerprint input would be.
    pub fn charge(
        key: &LedgerKey,
        scope: &LedgerScope,
        intent: &Intent,
    ) -> Result<Self, JournalError> {
        let probe = EffectPlanItem::default();
        FingerprintInput::effect_plan(
            intent.family(),
            CURRENT_FINGERPRINT_VERSION,
            vec![probe],
            Some(intent.clone()),
        )?;
        Ok(Self {
            reservation_id: key.reservation_id(),
            scope: scope.clone(),
            business: Business::Charge(intent.clone()),
        })
    }

    /// A reversal replay; the authority's texts are validated as effect fields are.
    pub fn reversal(
        key: &LedgerKey,
        scope: &LedgerScope,
        authority: &ReversalAuthority,
    ) -> Result<Self, JournalError> {
        let probe = authority.probe();
        FingerprintInput::effect_plan(
            CommandFamily::Reversal,
            CURRENT_FINGERPRINT_VERSION,
            vec![probe],
            None,
        )
        .map_err(|_| JournalError::invalid("reversal"))?;
        Ok(Self {
            reservation_id: key.reservation_id(),
            scope: scope.clone(),
            business: Business::Reversal(authority.clone()),
        })
    }

    fn slots(&self) -> Vec<String> {
        stored::effect_slots(&self.reservation_id, SPECULATIVE_SLOTS)
    }

    /// The stored effects of the existing reservation `stored` (outcome `replayed`),
    /// when the supplied business input rebuilds its fingerprint under the stored
    /// version and scope; otherwise why not.
    pub(crate) fn compare(&self, stored: &Stored) -> Result<LedgerOutcome, JournalError> {
        let reservation = &stored.reservation;
        if reservation.scope != self.scope {
            return Err(JournalError::ScopeMismatch);
        }
        check_version(reservation.fingerprint_version)?;
        let family = match &self.business {
            Business::Charge(intent) => intent.family(),
            Business::Reversal(_) => CommandFamily::Reversal,
        };
        if reservation.family != family {
            return Err(JournalError::ReplayMismatch);
        }
        let command = match &self.business {
            Business::Charge(intent) => stored.command(Some(intent.clone()), Clone::clone),
            Business::Reversal(authority) => {
                let items: Vec<EffectPlanItem> =
                    stored.effects.iter().map(|e| e.item.clone()).collect();
                if !authority.subtype_applies(reservation.fingerprint_version, &items) {
                    return Err(JournalError::ReplayMismatch);
                }
                stored.command(None, |item| authority.apply(item))
            }
        };
        if stored.fingerprint_matches(&command?)? {
            Ok(stored.outcome(Outcome::Replayed))
        } else {
            Err(JournalError::ReplayMismatch)
        }
    }
}

impl Transition for Replay {
    type Output = LedgerReplay;

    fn name(&self) -> crate::transaction::OperationName {
        crate::transaction::OperationName::LedgerReplay
    }

    fn paths(&self) -> Vec<String> {
        let mut paths = vec![reservation::path(&self.reservation_id)];
        paths.extend(self.slots());
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<LedgerReplay> {
        // Only slot 0 proves anything when the reservation is absent: every command
        // has an effect there.
        let first_slot = stored::effect_slots(&self.reservation_id, 0);
        match stored::load(snapshot, &self.reservation_id, &first_slot) {
            Err(step) => step.decision(),
            Ok(None) => Decision::Observe(LedgerReplay::NotReserved {
                reservation_id: self.reservation_id.clone(),
            }),
            Ok(Some(stored)) => match self.compare(&stored) {
                Ok(outcome) => Decision::Observe(LedgerReplay::Replayed(outcome)),
                Err(error) => Decision::Reject(error),
            },
        }
    }
}

#[cfg(test)]
mod tests;
