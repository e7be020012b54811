//! `ledgerReservations/{reservationId}`: the immutable command reservation, parsed
//! strictly.
//!
//! Stored fields (camelCase, all always present in their schema version):
//!
//! | field | type |
//! |---|---|
//! | `reservationSchemaVersion` | integer 1 (written before the integrity digest, by accepts and links), 2 (written by `accept_ledger_command` before fingerprint items excluded derived amounts) or 3 (every reservation `accept_ledger_command` and `link_historical_effects` create) |
//! | `reservationId` | 64 lowercase hex, equal to the document id and to the digest of the three key parts |
//! | `classId`, `featCode`, `idempotencyKey` | the reservation identity (1–1024 bytes, no control characters) |
//! | `commandFamily` | a [`CommandFamily`] name |
//! | `fingerprint` | 64 lowercase hex |
//! | `fingerprintVersion` | integer 1–9999, stored as accepted (a version without a serializer here is `unsupported_fingerprint_version` when used, not corruption) |
//! | `acceptedAt` | timestamp |
//! | `effectIds` | array of 1–256 strings, exactly `{reservationId}_{i:04}` for i = 0, 1, … (two for `internal_transfer`); for a historical reservation either that or the distinct ids of the imported rows it links, in accepted creation order |
//! | `scopeSeatId`, `scopeActorSeatId` | the scoped seat and actor replay checks |
//! | `migrationId` | null for a canonical reservation; the migration id for one created by `link_historical_effects` |
//! | `integrityDigest` | versions 2 and 3: 64 lowercase hex, the [`integrity`](super::integrity) digest over the reservation's accepted command and its effect rows; a version-2 reservation is canonical (`migrationId` null), a version-3 one canonical or linked by a migration |
//!
//! Each version has its exact field set: version 1 the first thirteen fields, versions 2
//! and 3 those and `integrityDigest`. The version also says how the fingerprint was
//! made from the effect rows ([`ReservationSchema::item_rule`], the
//! [`booking`](super::booking) rules): versions 1 and 2 fingerprinted each row as
//! booked, version 3 with the family's derived amounts null; and which framing its
//! integrity digest uses. Whether the digest still matches the rows is not the codec's
//! concern (it reads one document); [`stored::load`](super::stored::load) and `verify`
//! check it.
//!
//! The document is never replaced or deleted by this crate.

use super::booking::ItemRule;
use super::effect::{self, is_migration_id};
use crate::digest::Digest;
use crate::document::fields::{self, FieldMap, Strict};
use crate::document::value::ValueType;
use crate::document::value::{ArrayValue, Value};
use crate::error::JournalError;
use crate::identity::{LedgerKey, MAX_LEDGER_PART_BYTES};
use crate::ledger::fingerprint::{CommandFamily, MAX_EFFECTS};
use crate::time::Timestamp;

/// The collection of reservations.
pub const COLLECTION: &str = "ledgerReservations";
const KIND: &str = "malformed ledger reservation";
/// The exact field set of a version-1 reservation.
pub const FIELDS_V1: [&str; 13] = [
    "reservationSchemaVersion",
    "reservationId",
    "classId",
    "featCode",
    "idempotencyKey",
    "commandFamily",
    "fingerprint",
    "fingerprintVersion",
    "acceptedAt",
    "effectIds",
    "scopeSeatId",
    "scopeActorSeatId",
    "migrationId",
];
/// Versions 2 and 3: version 1's fields and the integrity digest.
pub const FIELDS_V2: [&str; 14] = [
    "reservationSchemaVersion",
    "reservationId",
    "classId",
    "featCode",
    "idempotencyKey",
    "commandFamily",
    "fingerprint",
    "fingerprintVersion",
    "acceptedAt",
    "effectIds",
    "scopeSeatId",
    "scopeActorSeatId",
    "migrationId",
    "integrityDigest",
];
/// The schema version of a stored reservation: its exact field set, how its
/// fingerprint items derive from its effect rows, and its integrity digest's framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ReservationSchema {
    /// Thirteen fields, no integrity digest; rows fingerprinted as booked.
    V1,
    /// Version 1's fields and `integrityDigest` (framing version 1); rows fingerprinted
    /// as booked; canonical only.
    V2,
    /// Version 2's fields, the digest's framing version 2 (which binds this schema
    /// version and the migration id); rows fingerprinted with the family's derived
    /// amounts null; canonical or linked by a migration.
    V3,
}

impl ReservationSchema {
    /// The version every new canonical reservation is written under.
    pub(crate) const CURRENT: Self = Self::V3;

    /// The stored `reservationSchemaVersion`.
    pub(crate) fn number(self) -> i64 {
        match self {
            Self::V1 => 1,
            Self::V2 => 2,
            Self::V3 => 3,
        }
    }

    fn parse(number: i64) -> Option<Self> {
        [Self::V1, Self::V2, Self::V3]
            .into_iter()
            .find(|schema| schema.number() == number)
    }

    /// Whether the version stores `integrityDigest`.
    pub(crate) fn has_digest(self) -> bool {
        self != Self::V1
    }

    /// How this version's fingerprint items derive from the booked effect rows.
    pub(crate) fn item_rule(self) -> ItemRule {
        match self {
            Self::V1 | Self::V2 => ItemRule::AsBooked,
            Self::V3 => ItemRule::DerivedAmountsNull,
        }
    }
}
/// Largest stored fingerprint version the codec accepts as well formed.
const MAX_STORED_VERSION: i64 = 9999;

/// The scoped principal of a ledger command: the seat it acts on and the acting seat.
///
/// Stored on the reservation and checked on every replay independently of the
/// reservation namespace `(class_id, feat_code, idempotency_key)` and of the
/// fingerprint: a replay from another seat or actor is `scope_mismatch`. Each part is
/// 1–1024 bytes with no control characters (`invalid_input` on `scope`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LedgerScope {
    seat_id: String,
    actor_seat_id: String,
}

fn scope_part(text: &str) -> bool {
    (1..=MAX_LEDGER_PART_BYTES).contains(&text.len()) && !text.chars().any(char::is_control)
}

impl LedgerScope {
    /// Validates the scoped seat and actor.
    pub fn new(seat_id: &str, actor_seat_id: &str) -> Result<Self, JournalError> {
        if scope_part(seat_id) && scope_part(actor_seat_id) {
            Ok(Self {
                seat_id: seat_id.to_owned(),
                actor_seat_id: actor_seat_id.to_owned(),
            })
        } else {
            Err(JournalError::invalid("scope"))
        }
    }

    /// The scoped seat.
    pub fn seat_id(&self) -> &str {
        &self.seat_id
    }

    /// The acting seat.
    pub fn actor_seat_id(&self) -> &str {
        &self.actor_seat_id
    }
}

/// The reservation's path relative to the documents root.
pub fn path(reservation_id: &Digest) -> String {
    format!("{COLLECTION}/{reservation_id}")
}

/// A parsed reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReservationDocument {
    /// The identity; its reservation id equals the document id.
    pub key: LedgerKey,
    /// The reservation id (the document id): the digest of the ledger key.
    pub reservation_id: Digest,
    /// The command family the reservation was accepted for.
    pub family: CommandFamily,
    /// The replay fingerprint of the accepted command.
    pub fingerprint: Digest,
    /// The serializer version of `fingerprint`.
    pub fingerprint_version: u32,
    /// When the reservation was accepted (its creating commit's time).
    pub accepted_at: Timestamp,
    /// Exactly `effect::effect_id(reservation_id, i)` for each index, in order.
    pub effect_ids: Vec<String>,
    /// The scope the ledger key belongs to.
    pub scope: LedgerScope,
    /// `Some` exactly for a reservation created by the historical migration.
    pub migration_id: Option<String>,
    /// The stored `reservationSchemaVersion`.
    pub schema: ReservationSchema,
    /// The stored `integrityDigest`: `Some` exactly for schema versions 2 (always
    /// canonical) and 3; `None` for version 1.
    pub integrity_digest: Option<Digest>,
}

fn corrupt() -> JournalError {
    JournalError::corrupt(KIND)
}

/// The `effectIds` array: strings only.
fn string_array(map: &FieldMap, name: &str) -> Result<Vec<String>, JournalError> {
    match map.get(name).and_then(|v| v.value_type.as_ref()) {
        Some(ValueType::ArrayValue(array)) => array
            .values
            .iter()
            .map(|v| match &v.value_type {
                Some(ValueType::StringValue(s)) => Ok(s.clone()),
                _ => Err(corrupt()),
            })
            .collect(),
        _ => Err(corrupt()),
    }
}

/// True when `ids` are exactly the derived effect ids of `reservation_id`, in order,
/// and their count suits `family`.
pub(crate) fn effect_ids_hold(
    reservation_id: &Digest,
    family: CommandFamily,
    historical: bool,
    ids: &[String],
) -> bool {
    let count_ok = if family == CommandFamily::InternalTransfer {
        ids.len() == 2
    } else {
        (1..=MAX_EFFECTS).contains(&ids.len())
    };
    let derived = ids
        .iter()
        .enumerate()
        .all(|(i, id)| *id == effect::effect_id(reservation_id, i));
    let imported = historical
        && ids.iter().all(|id| effect::is_legacy_effect_id(id))
        && ids.iter().enumerate().all(|(i, id)| !ids[..i].contains(id));
    count_ok && (derived || imported)
}

/// True when the reservation links imported rows by their own ids rather than owning
/// effects at derived ids.
pub(crate) fn links_imported_rows(reservation_id: &Digest, ids: &[String]) -> bool {
    ids.first()
        .is_some_and(|id| *id != effect::effect_id(reservation_id, 0))
}

impl ReservationDocument {
    /// Parses strictly; `document_id` is the id the document was read under.
    pub(crate) fn parse(document_id: &str, map: &FieldMap) -> Result<Self, JournalError> {
        let schema = match map
            .get("reservationSchemaVersion")
            .and_then(|v| v.value_type.as_ref())
        {
            Some(ValueType::IntegerValue(number)) => ReservationSchema::parse(*number),
            _ => None,
        }
        .ok_or_else(|| JournalError::corrupt_at(KIND, "reservationSchemaVersion"))?;
        let f = if schema.has_digest() {
            Strict::new(map, &FIELDS_V2, KIND)?
        } else {
            Strict::new(map, &FIELDS_V1, KIND)?
        };
        let key = LedgerKey::new(
            f.string("classId")?,
            f.string("featCode")?,
            f.string("idempotencyKey")?,
        )
        .map_err(|_| f.corrupt("ledger key"))?;
        let reservation_id = f.digest("reservationId")?;
        if reservation_id.as_str() != document_id || reservation_id != key.reservation_id() {
            return Err(f.corrupt("reservationId"));
        }
        let family = f.parsed("commandFamily", CommandFamily::parse)?;
        let version = f.int_in("fingerprintVersion", 1..=MAX_STORED_VERSION)?;
        let migration_id = f.nullable("migrationId", |s| {
            if is_migration_id(s) {
                Ok(s.to_owned())
            } else {
                Err(())
            }
        })?;
        let effect_ids = string_array(map, "effectIds")?;
        if !effect_ids_hold(&reservation_id, family, migration_id.is_some(), &effect_ids) {
            return Err(f.corrupt("effectIds"));
        }
        let scope = LedgerScope::new(f.string("scopeSeatId")?, f.string("scopeActorSeatId")?)
            .map_err(|_| f.corrupt("scope"))?;
        let integrity_digest = if schema.has_digest() {
            // Version 2 was written by accepts only; version 3 by accepts and links.
            if schema == ReservationSchema::V2 && migration_id.is_some() {
                return Err(f.corrupt("integrityDigest"));
            }
            Some(f.digest("integrityDigest")?)
        } else {
            None
        };
        Ok(Self {
            key,
            reservation_id,
            family,
            fingerprint: f.digest("fingerprint")?,
            fingerprint_version: u32::try_from(version).map_err(|_| corrupt())?,
            accepted_at: f.timestamp("acceptedAt")?,
            effect_ids,
            scope,
            migration_id,
            schema,
            integrity_digest,
        })
    }

    /// The exact stored field map of its schema version (`integrityDigest` stored
    /// when the reservation carries one, as its schema version requires).
    pub(crate) fn encode(&self) -> FieldMap {
        let ids = self
            .effect_ids
            .iter()
            .map(|id| fields::string(id.as_str()))
            .collect();
        let mut map = fields::map([
            (
                "reservationSchemaVersion",
                fields::int(self.schema.number()),
            ),
            (
                "reservationId",
                fields::string(self.reservation_id.as_str()),
            ),
            ("classId", fields::string(self.key.class_id())),
            ("featCode", fields::string(self.key.feat_code())),
            ("idempotencyKey", fields::string(self.key.idempotency_key())),
            ("commandFamily", fields::string(self.family.as_str())),
            ("fingerprint", fields::string(self.fingerprint.as_str())),
            (
                "fingerprintVersion",
                fields::int(i64::from(self.fingerprint_version)),
            ),
            ("acceptedAt", fields::timestamp(self.accepted_at)),
            (
                "effectIds",
                Value {
                    value_type: Some(ValueType::ArrayValue(ArrayValue { values: ids })),
                },
            ),
            ("scopeSeatId", fields::string(self.scope.seat_id())),
            (
                "scopeActorSeatId",
                fields::string(self.scope.actor_seat_id()),
            ),
            (
                "migrationId",
                fields::nullable_string(self.migration_id.as_deref()),
            ),
        ]);
        if let Some(digest) = &self.integrity_digest {
            map.insert(
                "integrityDigest".to_owned(),
                fields::string(digest.as_str()),
            );
        }
        map
    }
}

#[cfg(test)]
mod tests;
