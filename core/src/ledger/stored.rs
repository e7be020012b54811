//! Resolving a reservation and its complete ordered effect vector from a snapshot,
//! the structural checks every ledger operation shares, and the reconstruction of the
//! fingerprinted command from stored effects.
//!
//! Pure: no I/O, no clock.

use super::booking::fixed_fields_hold;
use super::effect::{self, LedgerEffect, Lineage, TransferLeg};
use super::fingerprint::{
    Amount, CommandFamily, EffectPlanItem, FingerprintInput, Intent, TransferPlan,
};
use super::integrity::{self, Contradiction};
use super::outcome::{LedgerOutcome, Outcome};
use super::reservation::{self, ReservationDocument, ReservationSchema};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::transaction::Snapshot;

/// A reservation with every one of its effects, cross-checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    /// The reservation document.
    pub reservation: ReservationDocument,
    /// Its effect rows, in `effect_ids` order.
    pub effects: Vec<LedgerEffect>,
}

pub(crate) use crate::transaction::Halt;

/// The paths of effects `0..=count` of `reservation_id`: the slots a command of
/// `count` effects creates, plus the first slot past them.
pub(crate) fn effect_slots(reservation_id: &Digest, count: usize) -> Vec<String> {
    (0..=count)
        .map(|i| effect::path(&effect::effect_id(reservation_id, i)))
        .collect()
}

/// Resolves the reservation `reservation_id` and its effects.
///
/// - reservation absent: `Ok(None)`, unless any of `probes` (effect slots of this
///   reservation) exists — an effect in a reservation's slot without the reservation
///   is `journal_corrupt`, never evidence of a reservation (a `historical_unlinked`
///   row cannot even have such an id);
/// - reservation present: parsed strictly; every effect it lists (at derived ids, or
///   the imported rows a migration linked by their own ids) must be present, parse
///   strictly and link back (id, reservation, index, lineage, migration, acceptance
///   time for derived ids, transfer legs), and the derived slot after the last (the
///   first, for imported rows) must be empty; asks for a follow-up read of whatever of
///   that was not read yet;
/// - the rows must not contradict what the reservation recorded (its integrity
///   digest, and the fingerprint rebuilt from the rows where they determine it, see
///   `integrity`): otherwise `journal_corrupt`, so no operation compares a caller's
///   command with rows that changed after acceptance.
pub(crate) fn load(
    snapshot: &Snapshot,
    reservation_id: &Digest,
    probes: &[String],
) -> Result<Option<Stored>, Halt> {
    let Some(fields) = snapshot.get(&reservation::path(reservation_id)) else {
        if probes.iter().any(|p| snapshot.get(p).is_some()) {
            return Err(Halt::Reject(JournalError::corrupt(
                "ledger effect without its reservation",
            )));
        }
        return Ok(None);
    };
    let reservation = ReservationDocument::parse(reservation_id.as_str(), fields)?;
    let count = reservation.effect_ids.len();
    let imported = reservation::links_imported_rows(reservation_id, &reservation.effect_ids);
    // The derived slot that must stay empty: the one after the last effect, or, for a
    // reservation linking imported rows by their own ids, its first derived slot.
    let probe = effect::path(&effect::effect_id(
        reservation_id,
        if imported { 0 } else { count },
    ));
    let mut paths: Vec<String> = reservation
        .effect_ids
        .iter()
        .map(|id| effect::path(id))
        .collect();
    paths.push(probe.clone());
    let missing: Vec<String> = paths
        .iter()
        .filter(|p| !snapshot.was_read(p))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(Halt::Read(missing));
    }
    if snapshot.get(&probe).is_some() {
        return Err(Halt::Reject(JournalError::corrupt(
            "ledger effect beyond its reservation's effects",
        )));
    }
    let effects = reservation
        .effect_ids
        .iter()
        .zip(&paths)
        .map(|(id, path)| match snapshot.get(path) {
            Some(fields) => LedgerEffect::parse(id, fields),
            None => Err(JournalError::corrupt(
                "ledger reservation without all its effects",
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    verify(&reservation, &effects)?;
    let stored = Stored {
        reservation,
        effects,
    };
    match contradictions(&stored).first() {
        None => Ok(Some(stored)),
        Some(Contradiction::Digest) => Err(Halt::Reject(JournalError::corrupt(
            "ledger effects disagree with their reservation's integrity digest",
        ))),
        Some(Contradiction::Fingerprint) => Err(Halt::Reject(JournalError::corrupt(
            "ledger effects disagree with their reservation's fingerprint",
        ))),
        Some(Contradiction::FixedFields) => Err(Halt::Reject(JournalError::corrupt(
            "ledger effects break the fields the ledger fixes",
        ))),
    }
}

/// Every way `stored` (already structurally linked by
/// [`verify`]) contradicts what its reservation
/// recorded, in the order digest, fingerprint, fixed fields (a canonical reservation
/// of schema version 3, accepted under that rule: `booking::fixed_fields_hold`);
/// empty when it is intact or not covered.
pub(crate) fn contradictions(stored: &Stored) -> Vec<Contradiction> {
    let reservation = &stored.reservation;
    let mut found = Vec::new();
    if let Some(digest) = &reservation.integrity_digest
        && integrity::integrity_digest(reservation, &stored.effects).as_ref() != Some(digest)
    {
        found.push(Contradiction::Digest);
    }
    if integrity::fingerprint_is_rebuilt(reservation) {
        let rebuilt = stored
            .command(None, Clone::clone)
            .and_then(|command| stored.fingerprint_matches(&command));
        if !matches!(rebuilt, Ok(true)) {
            found.push(Contradiction::Fingerprint);
        }
    }
    let fixed_rule =
        reservation.schema == ReservationSchema::V3 && reservation.migration_id.is_none();
    if fixed_rule
        && !stored
            .effects
            .iter()
            .all(|e| fixed_fields_hold(reservation.family, &e.item))
    {
        found.push(Contradiction::FixedFields);
    }
    found
}

/// The structural link between a reservation and its effects.
pub(crate) fn verify(
    reservation: &ReservationDocument,
    effects: &[LedgerEffect],
) -> Result<(), JournalError> {
    let fail = || JournalError::corrupt("ledger effects do not link to their reservation");
    let rid = &reservation.reservation_id;
    let transfer = reservation.family == CommandFamily::InternalTransfer;
    let lineage = if reservation.migration_id.is_some() {
        Lineage::HistoricalLinked
    } else {
        Lineage::CanonicalLinked
    };
    let historical = reservation.migration_id.is_some();
    if !reservation::effect_ids_hold(rid, reservation.family, historical, &reservation.effect_ids)
        || effects.len() != reservation.effect_ids.len()
    {
        return Err(fail());
    }
    // An imported row keeps its own recorded time; an effect created with its
    // reservation carries the reservation's.
    let imported = reservation::links_imported_rows(rid, &reservation.effect_ids);
    for (i, (e, id)) in effects.iter().zip(&reservation.effect_ids).enumerate() {
        let leg = match (transfer, i) {
            (false, _) => None,
            (true, 0) => Some(TransferLeg::Debit),
            (true, _) => Some(TransferLeg::Credit),
        };
        let linked = e.effect_id == *id
            && e.reservation_id.as_ref() == Some(rid)
            && e.effect_index == Some(i)
            && e.lineage == lineage
            && e.migration_id == reservation.migration_id
            && (imported || e.accepted_at == reservation.accepted_at)
            && e.transfer_leg == leg
            && e.relations_hold();
        if !linked {
            return Err(fail());
        }
    }
    if transfer {
        let legs_agree = match effects {
            [debit, credit] => transfer_legs_agree(&debit.item, &credit.item),
            _ => false,
        };
        if !legs_agree {
            return Err(JournalError::corrupt(
                "internal transfer legs disagree with each other",
            ));
        }
    }
    Ok(())
}

/// The two effects an internal transfer creates: the debit (index 0, negative amount)
/// and the credit (index 1, positive amount), both posted to the target seat, with
/// the transfer's account direction in `account_type`, its actor, type, original
/// transaction and policy, no mechanism and no compensation. `None` unless the amount
/// is above zero.
pub(crate) fn transfer_legs(plan: &TransferPlan) -> Option<[EffectPlanItem; 2]> {
    let credit_amount = plan
        .amount
        .clone()
        .filter(|a| effect::is_positive(Some(a)))?;
    let debit_amount = Amount::parse(&format!("-{}", credit_amount.as_str()))?;
    let leg = |amount: Amount| EffectPlanItem {
        seat_id: plan.target_seat_id.clone(),
        target_seat_id: plan.target_seat_id.clone(),
        actor_seat_id: plan.actor_seat_id.clone(),
        amount: Some(amount),
        account_type: plan.account_direction.clone(),
        r#type: plan.r#type.clone(),
        original_transaction_id: plan.original_transaction_id.clone(),
        policy_id: plan.policy_id.clone(),
        ..EffectPlanItem::default()
    };
    Some([leg(debit_amount), leg(credit_amount)])
}

/// True when `debit` and `credit` are exactly the two legs one transfer derives.
pub(crate) fn transfer_legs_agree(debit: &EffectPlanItem, credit: &EffectPlanItem) -> bool {
    transfer_plan(credit)
        .as_ref()
        .and_then(transfer_legs)
        .is_some_and(|[d, c]| d == *debit && c == *credit)
}

/// The transfer a credit leg was derived from (the inverse of [`transfer_legs`], whose
/// debit leg [`verify`] checks separately).
fn transfer_plan(credit: &EffectPlanItem) -> Option<TransferPlan> {
    Some(TransferPlan {
        account_direction: credit.account_type.clone(),
        target_seat_id: credit.target_seat_id.clone(),
        actor_seat_id: credit.actor_seat_id.clone(),
        amount: Some(credit.amount.clone()?),
        r#type: credit.r#type.clone(),
        original_transaction_id: credit.original_transaction_id.clone(),
        policy_id: credit.policy_id.clone(),
    })
}

impl Stored {
    /// The command the stored effects establish, under the stored version, with the
    /// given business tuple (effect-plan families) and the effects' items passed
    /// through `adjust` (a reversal's supplied authority; identity otherwise), each
    /// taken to its fingerprint item by the rule the reservation's schema names
    /// (`booking`).
    ///
    /// `unsupported_fingerprint_version` for a version with no serializer here;
    /// `journal_corrupt` if the stored effects cannot form a valid command.
    pub(crate) fn command(
        &self,
        intent: Option<Intent>,
        adjust: impl Fn(&EffectPlanItem) -> EffectPlanItem,
    ) -> Result<FingerprintInput, JournalError> {
        let version = self.reservation.fingerprint_version;
        let items: Vec<EffectPlanItem> = self.effects.iter().map(|e| adjust(&e.item)).collect();
        let built = match self.reservation.family {
            CommandFamily::InternalTransfer => match items.as_slice() {
                [_debit, credit] => transfer_plan(credit)
                    .ok_or(JournalError::invalid("transfer"))
                    .and_then(|plan| FingerprintInput::internal_transfer(version, plan)),
                _ => Err(JournalError::invalid("transfer")),
            },
            family => FingerprintInput::effect_plan(family, version, items, intent)
                .map(|command| command.items_under(self.reservation.schema.item_rule())),
        };
        built.map_err(|error| match error {
            JournalError::InvalidInput { .. } => {
                JournalError::corrupt("stored ledger effects do not form a valid command")
            }
            other => other,
        })
    }

    /// True when `command`'s fingerprint under the stored version is the stored one.
    pub(crate) fn fingerprint_matches(
        &self,
        command: &FingerprintInput,
    ) -> Result<bool, JournalError> {
        let fingerprint = command.fingerprint(self.reservation.fingerprint_version)?;
        Ok(fingerprint.digest == self.reservation.fingerprint)
    }

    /// The outcome reporting this reservation and its effects.
    pub(crate) fn outcome(&self, outcome: Outcome) -> LedgerOutcome {
        let r = &self.reservation;
        LedgerOutcome {
            outcome,
            reservation_id: r.reservation_id.clone(),
            command_family: r.family,
            fingerprint: r.fingerprint.clone(),
            fingerprint_version: r.fingerprint_version,
            accepted_at: r.accepted_at,
            migration_id: r.migration_id.clone(),
            effects: self.effects.clone(),
        }
    }

    /// The writes that create the reservation and every effect.
    pub(crate) fn creates(&self) -> Vec<crate::transaction::Write> {
        let reservation = crate::transaction::Write::Create {
            path: reservation::path(&self.reservation.reservation_id),
            fields: self.reservation.encode(),
        };
        std::iter::once(reservation)
            .chain(
                self.effects
                    .iter()
                    .map(|e| crate::transaction::Write::Create {
                        path: effect::path(&e.effect_id),
                        fields: e.encode(),
                    }),
            )
            .collect()
    }
}

/// Builds the documents of a new reservation (its `effect_ids` are derived here) and
/// its effects, checks them with the same [`verify`] a later read applies, and
/// [`seal`]s them.
pub(crate) fn build(
    mut reservation: ReservationDocument,
    items: Vec<(EffectPlanItem, Option<TransferLeg>)>,
) -> Result<Stored, JournalError> {
    let rid = reservation.reservation_id.clone();
    reservation.effect_ids = (0..items.len())
        .map(|i| effect::effect_id(&rid, i))
        .collect();
    let lineage = if reservation.migration_id.is_some() {
        Lineage::HistoricalLinked
    } else {
        Lineage::CanonicalLinked
    };
    let effects: Vec<LedgerEffect> = items
        .into_iter()
        .enumerate()
        .map(|(i, (item, transfer_leg))| LedgerEffect {
            effect_id: effect::effect_id(&rid, i),
            lineage,
            reservation_id: Some(rid.clone()),
            effect_index: Some(i),
            migration_id: reservation.migration_id.clone(),
            transfer_leg,
            item,
            accepted_at: reservation.accepted_at,
        })
        .collect();
    verify(&reservation, &effects)?;
    seal(Stored {
        reservation,
        effects,
    })
}

/// `stored` written under the current schema version (3), with its integrity digest
/// over exactly its rows: what every new reservation, canonical or linked by a
/// migration, is created as.
pub(crate) fn seal(mut stored: Stored) -> Result<Stored, JournalError> {
    stored.reservation.schema = ReservationSchema::CURRENT;
    stored.reservation.integrity_digest = Some(
        integrity::integrity_digest(&stored.reservation, &stored.effects)
            .ok_or(JournalError::invalid("effects"))?,
    );
    Ok(stored)
}
