//! Whether a stored reservation's effect rows are still the ones it accepted: the
//! integrity digest a new reservation stores, and the fingerprint rebuilt from the
//! rows for the families whose fingerprint the rows alone determine.
//!
//! Pure: no I/O, no clock. `docs/ledger.md` ("Integrity of stored effects") is the
//! reference; in short:
//!
//! - **Integrity digest** (`integrityDigest`, reservation schema versions 2 and 3,
//!   written in the same commit as the reservation and its effects by every new
//!   accept, every family, and since schema 3 by every link of historical rows):
//!   [`frame_digest`] with domain [`INTEGRITY_DOMAIN`], version [`INTEGRITY_VERSION`]
//!   (schema 2) or [`INTEGRITY_VERSION_SCHEMA`] (schema 3, whose first part is the
//!   schema version), then the parts reservation id, command family, fingerprint,
//!   fingerprint version (decimal), acceptance time (decimal microseconds since the
//!   Unix epoch), scoped seat, scoped actor, (schema 3) the migration id or empty,
//!   and then, in index order, one part per effect row: the RFC 8785 canonical JSON of
//!   **every** stored field of the row (`row_canonical`; schema 3: its SHA-256, hex).
//!   Version-1 reservations (accepted before the digest, and every reservation an
//!   earlier release's migration linked) have none and are not covered by it.
//! - **Rebuilt fingerprint**: for a canonical reservation (`migrationId` null) of the
//!   `effect_plan`, `reversal` or `internal_transfer` family under a version with a
//!   serializer here (4 or 5), the command rebuilt from the stored rows (the effect
//!   vector as stored, intent null, under its schema's item rule, which excludes no
//!   amount of these families; a transfer from its credit leg) must hash to the
//!   stored fingerprint. A reversal's covered authority (actor, mechanism and, under
//!   version 5, compensation subtype) is stored in every row, so it is covered. The
//!   charge families bind a business tuple the rows do not store, so only the digest
//!   covers them; versions 1–3 (no serializer) and migration-linked reservations (whose
//!   fingerprint the migration proved and which is stored as given) are not rebuilt.
//!
//! The digest is not a secret-keyed MAC: it detects rows edited after acceptance by
//! anything that does not also recompute the digest, such as an operator's repair, a
//! bad deploy or a partial restore.

use super::effect::{LedgerEffect, TransferLeg};
use super::fingerprint::{Amount, CommandFamily, check_version};
use crate::digest::{Digest, frame_digest};
use crate::ledger::reservation::{ReservationDocument, ReservationSchema};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// The integrity digest's framing domain.
pub(crate) const INTEGRITY_DOMAIN: &str = "command-journal.ledger-integrity";
/// The integrity digest's framing version of reservation schema version 2.
pub(crate) const INTEGRITY_VERSION: u32 = 1;
/// The framing version of reservation schema version 3: the reservation schema version
/// (decimal, so that the rule it names for the fingerprint items is bound), version
/// 1's reservation parts, the migration id (empty for a canonical reservation), and
/// one part per row: the lowercase hex SHA-256 of its canonical JSON ([`row_hash`]),
/// so that a verifier that reads imported rows apart from their reservation keeps 32
/// bytes per row, not the row.
pub(crate) const INTEGRITY_VERSION_SCHEMA: u32 = 2;

/// A way the stored rows contradict their reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Contradiction {
    /// The reservation and rows do not produce the stored `integrityDigest`.
    Digest,
    /// The command rebuilt from the rows does not produce the stored fingerprint.
    Fingerprint,
    /// A row of a canonical schema-3 reservation breaks the fields the seed fixes
    /// (`booking::fixed_fields_hold`), which its acceptance enforced.
    FixedFields,
}

/// The canonical JSON of one effect row: an object with every stored field under its
/// stored camelCase name — `effectSchemaVersion` (1), `effectId`, `lineage`,
/// `reservationId`, `effectIndex`, `migrationId`, `transferLeg`, the thirteen effect
/// fields (`seatId` … `compensationSubtype`, texts and amounts as strings or null,
/// `compensationAmountCents` an integer) and `acceptedAt` as a string of decimal
/// microseconds since the Unix epoch. `None` only if canonicalization fails.
pub(crate) fn row_canonical(effect: &LedgerEffect) -> Option<String> {
    let item = &effect.item;
    let text = |v: &Option<String>| v.as_ref().map_or(Value::Null, |s| Value::from(s.as_str()));
    let mut map = Map::new();
    let mut put = |key: &str, value: Value| {
        map.insert(key.to_owned(), value);
    };
    put("effectSchemaVersion", Value::from(1));
    put("effectId", Value::from(effect.effect_id.as_str()));
    put("lineage", Value::from(effect.lineage.as_str()));
    put(
        "reservationId",
        effect
            .reservation_id
            .as_ref()
            .map_or(Value::Null, |r| Value::from(r.as_str())),
    );
    put(
        "effectIndex",
        effect.effect_index.map_or(Value::Null, Value::from),
    );
    put("migrationId", text(&effect.migration_id));
    put(
        "transferLeg",
        effect
            .transfer_leg
            .map_or(Value::Null, |leg| Value::from(TransferLeg::as_str(leg))),
    );
    put("seatId", text(&item.seat_id));
    put("targetSeatId", text(&item.target_seat_id));
    put("actorSeatId", text(&item.actor_seat_id));
    put("mechanism", text(&item.mechanism));
    put(
        "amount",
        item.amount
            .as_ref()
            .map_or(Value::Null, |a| Value::from(Amount::as_str(a))),
    );
    put("accountType", text(&item.account_type));
    put("type", text(&item.r#type));
    put("originalTransactionId", text(&item.original_transaction_id));
    put("policyId", text(&item.policy_id));
    put(
        "compensationOriginLocator",
        text(&item.compensation_origin_locator),
    );
    put(
        "compensationAmountCents",
        Value::from(item.compensation_amount_cents),
    );
    put(
        "correctionIntentLocator",
        text(&item.correction_intent_locator),
    );
    put("compensationSubtype", text(&item.compensation_subtype));
    put(
        "acceptedAt",
        Value::from(effect.accepted_at.micros().to_string()),
    );
    serde_json_canonicalizer::to_string(&Value::Object(map)).ok()
}

/// The lowercase hex SHA-256 of a row's canonical JSON ([`row_canonical`]): the part
/// a row contributes to a schema-3 digest. `None` only if it cannot be canonicalized.
pub(crate) fn row_hash(effect: &LedgerEffect) -> Option<String> {
    row_canonical(effect).map(|row| hex::encode(Sha256::digest(row.as_bytes())))
}

/// The integrity digest of `reservation` (its own digest field is not an input) and
/// its rows `effects`, in index order. `None` only if a row cannot be canonicalized.
pub(crate) fn integrity_digest(
    reservation: &ReservationDocument,
    effects: &[LedgerEffect],
) -> Option<Digest> {
    let rows = match reservation.schema {
        ReservationSchema::V1 | ReservationSchema::V2 => effects
            .iter()
            .map(row_canonical)
            .collect::<Option<Vec<String>>>()?,
        ReservationSchema::V3 => effects
            .iter()
            .map(row_hash)
            .collect::<Option<Vec<String>>>()?,
    };
    Some(sealed(reservation, &rows))
}

/// The integrity digest of `reservation` over its rows' parts `rows`, in index order:
/// each row's canonical JSON (schema versions 1 and 2) or its [`row_hash`] (schema
/// version 3). What `verify` computes for a reservation whose imported rows it read
/// apart from it.
pub(crate) fn sealed(reservation: &ReservationDocument, rows: &[String]) -> Digest {
    let version = reservation.fingerprint_version.to_string();
    let accepted = reservation.accepted_at.micros().to_string();
    let schema = reservation.schema.number().to_string();
    let migration = reservation.migration_id.as_deref().unwrap_or_default();
    let reservation_parts = [
        reservation.reservation_id.as_str().as_bytes(),
        reservation.family.as_str().as_bytes(),
        reservation.fingerprint.as_str().as_bytes(),
        version.as_bytes(),
        accepted.as_bytes(),
        reservation.scope.seat_id().as_bytes(),
        reservation.scope.actor_seat_id().as_bytes(),
    ];
    let mut parts: Vec<&[u8]> = Vec::new();
    let framing = match reservation.schema {
        ReservationSchema::V1 | ReservationSchema::V2 => {
            parts.extend(reservation_parts);
            INTEGRITY_VERSION
        }
        ReservationSchema::V3 => {
            parts.push(schema.as_bytes());
            parts.extend(reservation_parts);
            parts.push(migration.as_bytes());
            INTEGRITY_VERSION_SCHEMA
        }
    };
    parts.extend(rows.iter().map(String::as_bytes));
    frame_digest(INTEGRITY_DOMAIN, framing, &parts)
}

/// True when the stored rows alone determine the reservation's fingerprint and this
/// crate can rebuild it: canonical, a family without a business tuple, a version with
/// a serializer.
pub(crate) fn fingerprint_is_rebuilt(reservation: &ReservationDocument) -> bool {
    reservation.migration_id.is_none()
        && matches!(
            reservation.family,
            CommandFamily::EffectPlan | CommandFamily::Reversal | CommandFamily::InternalTransfer
        )
        && check_version(reservation.fingerprint_version).is_ok()
}

#[cfg(test)]
mod tests;
