//! Accepting a ledger command (`docs/ledger.md`): the reservation and every effect in
//! one atomic commit, or a comparison with the reservation that already holds the key.
//!
//! One read covers the reservation, every effect slot the command would create plus
//! the next one, and (for a reversal) the original transactions its effects link,
//! their correction bounds and what proves each original is the row its own
//! reservation accepted (`correction::original_paths`, the rest read after). `decide`
//! then:
//!
//! ```text
//! reservation absent, no effect in its slots      -> create reservation + effects (accepted)
//!   (a reversal: and count it in each original's correction bound, or
//!    reversal_exceeds_original when it would return more than booked)
//! reservation absent, an effect in its slots      -> journal_corrupt (nothing written)
//! reservation present, malformed or incomplete    -> journal_corrupt
//! reservation present, rows contradict it         -> journal_corrupt
//!   (integrity digest, rebuilt fingerprint or fixed fields)
//! reservation present, other scope                -> scope_mismatch
//! reservation present, version without serializer -> unsupported_fingerprint_version
//! reservation present, other family               -> replay_mismatch
//! reservation present, other declared version     -> replay_mismatch
//! reservation present, other fingerprint          -> replay_mismatch
//! reservation present, same fingerprint           -> replayed, stored effects, no write
//!   (the plan's items under the rule the stored schema names, `booking`)
//! ```
//!
//! Every refusal writes nothing. The corruption rows come first: when the stored
//! rows are what changed, the caller is told `journal_corrupt`, never that its exact
//! retry is a different command.
//!
//! A uniqueness conflict at commit (another caller created the reservation or an
//! effect first) is never reported: the runner re-reads and this table decides again.
//!
//! The charge flow's accept ([`Accept::charge`]) decides the same, except that an
//! existing reservation is judged by the business tuple as a replay before pricing
//! judges it (the stored effects with the supplied tuple, under the stored version):
//! a worker that priced after another accepted the command gets the original effects.
//!
//! Decisions this module takes:
//!
//! - A new reservation is always made under
//!   [`CURRENT_FINGERPRINT_VERSION`]; a plan declaring another version is
//!   `invalid_input` on `fingerprintVersion` when no reservation exists. A retry must
//!   declare the reservation's stored version (docs/ledger.md, "Accepting a
//!   command": a version that does not match the existing reservation is a replay
//!   mismatch); the stored version
//!   still selects the serializer the plan is re-serialized with.
//! - An internal transfer must move an amount above zero (`invalid_input` on
//!   `transfer`); its two effects, a debit and a credit, are derived from it (see
//!   `stored::transfer_legs`).
//! - Every effect of a reversal must name, in `original_transaction_id`, an existing
//!   effect row (1–256 bytes of `[A-Za-z0-9_-]`); a name of another shape, or of a row
//!   that does not exist when the reversal is first accepted, is `invalid_input` on
//!   `effects`. The original row and its reservation are only read, never written.
//! - A new reversal is bounded by what it corrects (`correction`): its commit counts
//!   the magnitudes of its effects' amounts against each original's correction bound
//!   (`ledgerTransactions/{original}/corrections/current`, created or replaced in the
//!   same commit, with one new entry of the original's correction log per effect
//!   counted; a bound its log does not end at is `journal_corrupt`), and a total
//!   above what the original booked is
//!   `reversal_exceeds_original`, nothing written. The amount counted against is the
//!   one the original's command accepted: a row linked to a reservation must pass
//!   the integrity checks with it (`journal_corrupt` otherwise). An existing
//!   reservation replays before the bound is looked at.
//! - A reversal must be one its retry's authority can state exactly: every effect
//!   has the same `actor_seat_id` and the same `mechanism`, every compensating effect
//!   (compensation cents above zero) the same `compensation_subtype`, and every
//!   non-compensating effect a null subtype. Any other shape is `invalid_input` on
//!   `effects`, so every accepted reversal can be replayed.
//! - A new reservation's effects hold the fields seed 003 fixes (`booking`): the
//!   mechanism null or one of the closed canonical values, and every non-recovery
//!   effect (all but a reversal's compensating ones) zero compensation cents and null
//!   locators and subtype; otherwise `invalid_input` on `effects`. Checked when the
//!   reservation is absent only, so an exact retry of a command an earlier release
//!   accepted still replays.
//! - An exact replay also re-derives the fingerprint from the stored effects; if
//!   they no longer produce the stored fingerprint the answer is `journal_corrupt`,
//!   so a replay never returns effects that are not the accepted ones.

use super::booking::fixed_fields_hold;
use super::correction;
use super::effect::TransferLeg;
use super::fingerprint::{
    CURRENT_FINGERPRINT_VERSION, CommandFamily, EffectPlanItem, FingerprintInput, Intent,
    check_version,
};
use super::outcome::{LedgerOutcome, Outcome};
use super::replay::{Replay, reversal_is_replayable};
use super::reservation::{LedgerScope, ReservationDocument, ReservationSchema};
use super::stored::{self, Stored};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::identity::LedgerKey;
use crate::time::Timestamp;
use crate::transaction::{Decision, Snapshot, Transition};

/// Longest effect id a reversal may name, in bytes.
const MAX_ORIGINAL_ID_BYTES: usize = 256;

/// A prepared accept: the validated command, its new-reservation documents'
/// contents and the captured time.
#[derive(Debug, Clone)]
pub struct Accept {
    key: LedgerKey,
    reservation_id: Digest,
    scope: LedgerScope,
    plan: FingerprintInput,
    /// The fingerprint of a new reservation: the plan's items with the family's
    /// derived amounts null, under the current version.
    fingerprint: Digest,
    /// The effects a new reservation creates, in order.
    items: Vec<(EffectPlanItem, Option<TransferLeg>)>,
    /// For a reversal: the effect ids its effects link, deduplicated, in order.
    originals: Vec<String>,
    now: Timestamp,
    /// How an existing reservation is judged: `None` by the plan's fingerprint (a bare
    /// accept, seed 003 §6.3); in the charge flow, by the business tuple, as a replay
    /// before pricing would (`Accept::charge`).
    by_tuple: Option<Replay>,
}

fn is_original_id(text: &str) -> bool {
    (1..=MAX_ORIGINAL_ID_BYTES).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Accept {
    /// Validates the command and derives its effects.
    pub fn new(
        key: &LedgerKey,
        plan: &FingerprintInput,
        scope: &LedgerScope,
        now: Timestamp,
    ) -> Result<Self, JournalError> {
        let items: Vec<(EffectPlanItem, Option<TransferLeg>)> = match plan.transfer() {
            Some(transfer) => {
                let [debit, credit] =
                    stored::transfer_legs(transfer).ok_or(JournalError::invalid("transfer"))?;
                vec![
                    (debit, Some(TransferLeg::Debit)),
                    (credit, Some(TransferLeg::Credit)),
                ]
            }
            None => plan.effects().iter().map(|e| (e.clone(), None)).collect(),
        };
        let mut originals: Vec<String> = Vec::new();
        if plan.family() == CommandFamily::Reversal {
            if !reversal_is_replayable(plan.effects()) {
                return Err(JournalError::invalid("effects"));
            }
            for (item, _) in &items {
                match item.original_transaction_id.as_deref() {
                    Some(id) if is_original_id(id) => {
                        if !originals.iter().any(|o| o == id) {
                            originals.push(id.to_owned());
                        }
                    }
                    _ => return Err(JournalError::invalid("effects")),
                }
            }
        }
        let fingerprint = plan
            .excluding_derived_amounts()
            .fingerprint(CURRENT_FINGERPRINT_VERSION)?
            .digest;
        Ok(Self {
            key: key.clone(),
            reservation_id: key.reservation_id(),
            scope: scope.clone(),
            plan: plan.clone(),
            fingerprint,
            items,
            originals,
            now,
            by_tuple: None,
        })
    }

    /// The accept of the charge flow (docs/flows/ledger-charge.md): `plan`, priced
    /// after a replay by `intent` found no reservation, is created as [`Accept::new`]
    /// would; a reservation found instead (another worker accepted the command between
    /// that replay and this commit, or wins the commit) is judged by the business tuple
    /// under its stored version, as `replay_reserved_charge` judges it: the original
    /// effects whatever this plan's pricing, `replay_mismatch` for another tuple or
    /// family, `scope_mismatch` for another scope. `plan` must be of `intent`'s family
    /// and carry exactly `intent` (`invalid_input` on `intent` otherwise).
    pub fn charge(
        key: &LedgerKey,
        plan: &FingerprintInput,
        scope: &LedgerScope,
        intent: &Intent,
        now: Timestamp,
    ) -> Result<Self, JournalError> {
        if plan.family() != intent.family() || plan.intent() != Some(intent) {
            return Err(JournalError::invalid("intent"));
        }
        let by_tuple = Replay::charge(key, scope, intent)?;
        Ok(Self {
            by_tuple: Some(by_tuple),
            ..Self::new(key, plan, scope, now)?
        })
    }

    fn slots(&self) -> Vec<String> {
        stored::effect_slots(&self.reservation_id, self.items.len())
    }

    /// The reservation exists: compare, never write.
    fn replay(&self, stored: &Stored) -> Decision<LedgerOutcome> {
        let reservation = &stored.reservation;
        if reservation.scope != self.scope {
            return Decision::Reject(JournalError::ScopeMismatch);
        }
        if let Err(error) = check_version(reservation.fingerprint_version) {
            return Decision::Reject(error);
        }
        if reservation.family != self.plan.family()
            || reservation.fingerprint_version != self.plan.version()
        {
            return Decision::Reject(JournalError::ReplayMismatch);
        }
        // The plan's effects are booked ones: the stored schema names the rule that
        // made the stored fingerprint's items from them.
        let items = self.plan.items_under(reservation.schema.item_rule());
        match stored.fingerprint_matches(&items) {
            Ok(true) => {}
            Ok(false) => return Decision::Reject(JournalError::ReplayMismatch),
            Err(error) => return Decision::Reject(error),
        }
        let established = stored
            .command(self.plan.intent().cloned(), Clone::clone)
            .and_then(|command| stored.fingerprint_matches(&command));
        match established {
            Ok(true) => Decision::Observe(stored.outcome(Outcome::Replayed)),
            Ok(false) => Decision::Reject(JournalError::corrupt(
                "ledger effects disagree with their reservation's fingerprint",
            )),
            Err(error) => Decision::Reject(error),
        }
    }

    /// No reservation and no effect in its slots: create everything.
    fn create(&self, snapshot: &Snapshot) -> Decision<LedgerOutcome> {
        if self.plan.version() != CURRENT_FINGERPRINT_VERSION {
            return Decision::Reject(JournalError::invalid("fingerprintVersion"));
        }
        let family = self.plan.family();
        if !self
            .items
            .iter()
            .all(|(item, _)| fixed_fields_hold(family, item))
        {
            return Decision::Reject(JournalError::invalid("effects"));
        }
        let items: Vec<EffectPlanItem> = self.items.iter().map(|(i, _)| i.clone()).collect();
        let bounds = match correction::count_reversal(
            snapshot,
            &self.reservation_id,
            &self.originals,
            &items,
        ) {
            Ok(writes) => writes,
            Err(step) => return step.decision(),
        };
        let reservation = ReservationDocument {
            key: self.key.clone(),
            reservation_id: self.reservation_id.clone(),
            family: self.plan.family(),
            fingerprint: self.fingerprint.clone(),
            fingerprint_version: CURRENT_FINGERPRINT_VERSION,
            accepted_at: self.now,
            effect_ids: Vec::new(),
            scope: self.scope.clone(),
            migration_id: None,
            schema: ReservationSchema::CURRENT,
            integrity_digest: None,
        };
        match stored::build(reservation, self.items.clone()) {
            Ok(built) => {
                let mut writes = built.creates();
                writes.extend(bounds);
                Decision::Mutate(writes, built.outcome(Outcome::Accepted))
            }
            Err(error) => Decision::Reject(error),
        }
    }
}

impl Transition for Accept {
    type Output = LedgerOutcome;

    fn name(&self) -> crate::transaction::OperationName {
        crate::transaction::OperationName::LedgerAccept
    }

    /// A new reservation without originals to link depends on nothing but the
    /// absence of the reservation, its effect slots and the slot after them. A
    /// reversal's all-absent decision is a refusal (its originals must exist), so it
    /// never makes a blind plan and always reads (`docs/ledger.md`).
    fn blind_create(&self) -> bool {
        self.originals.is_empty()
    }

    /// Read after a refused blind creation, such a reservation's accept observes its
    /// replay; a reversal reads its originals, mutable rows, in a transaction.
    fn first_read_unlocked(&self) -> bool {
        self.originals.is_empty()
    }

    fn paths(&self) -> Vec<String> {
        let mut paths = vec![super::reservation::path(&self.reservation_id)];
        paths.extend(self.slots());
        for id in &self.originals {
            for path in correction::original_paths(id, self.plan.effects()) {
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
        }
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<LedgerOutcome> {
        match stored::load(snapshot, &self.reservation_id, &self.slots()) {
            Err(step) => step.decision(),
            Ok(Some(stored)) => match &self.by_tuple {
                None => self.replay(&stored),
                Some(replay) => match replay.compare(&stored) {
                    Ok(outcome) => Decision::Observe(outcome),
                    Err(error) => Decision::Reject(error),
                },
            },
            Ok(None) => self.create(snapshot),
        }
    }
}

#[cfg(test)]
mod tests;
