//! `ledgerTransactions/{effectId}`: one ledger effect row, parsed strictly.
//!
//! Stored fields (camelCase, all always present):
//!
//! | field | type |
//! |---|---|
//! | `effectSchemaVersion` | integer 1 |
//! | `effectId` | string, equal to the document id |
//! | `lineage` | `canonical_linked` \| `historical_linked` \| `historical_unlinked` |
//! | `reservationId` | 64 lowercase hex; null only for `historical_unlinked` |
//! | `effectIndex` | integer 0–255; null only for `historical_unlinked` |
//! | `migrationId` | migration id string for `historical_linked`, else null |
//! | `transferLeg` | `debit` \| `credit` for internal-transfer legs, else null |
//! | `seatId` … `compensationSubtype` | the thirteen fields of [`EffectPlanItem`], camelCase |
//! | `acceptedAt` | timestamp (for unlinked rows: the recorded time of the legacy row) |
//!
//! Relations the codec enforces: a canonical effect's id is exactly
//! `{reservationId}_{effectIndex:04}` (so creation order is recoverable from the id);
//! an unlinked effect's id never has that shape, so it can never occupy a slot of a
//! reservation; a historical linked effect has either shape — the derived one, or the
//! imported row's own id, kept when a migration links a row that already existed (its
//! order is then the reservation's `effectIds` order); a debit leg's amount is negative and a credit leg's positive; text
//! fields follow the fingerprint rules (non-empty, at most
//! [`MAX_TEXT_BYTES`] bytes, or null),
//! amounts are canonical two-decimal strings and compensation cents are 0 to 2^53-1.

use crate::digest::{Digest, is_lower_hex_64};
use crate::document::fields::{self, FieldMap, Strict};
use crate::document::value::ValueType;
use crate::error::JournalError;
use crate::identity::MAX_SAFE_INTEGER;
use crate::ledger::fingerprint::{Amount, EffectPlanItem, MAX_EFFECTS, MAX_TEXT_BYTES};
use crate::time::Timestamp;
use serde::ser::{Serialize, SerializeStruct, Serializer};

/// The collection of effect rows.
pub const COLLECTION: &str = "ledgerTransactions";
const KIND: &str = "malformed ledger effect";
/// The exact field set of an effect row.
pub const FIELDS: [&str; 21] = [
    "effectSchemaVersion",
    "effectId",
    "lineage",
    "reservationId",
    "effectIndex",
    "migrationId",
    "transferLeg",
    "seatId",
    "targetSeatId",
    "actorSeatId",
    "mechanism",
    "amount",
    "accountType",
    "type",
    "originalTransactionId",
    "policyId",
    "compensationOriginLocator",
    "compensationAmountCents",
    "correctionIntentLocator",
    "compensationSubtype",
    "acceptedAt",
];
/// Longest imported (legacy) effect id, in bytes.
const MAX_LEGACY_ID_BYTES: usize = 256;
/// Longest migration id, in bytes.
const MAX_MIGRATION_ID_BYTES: usize = 128;

/// How an effect row relates to a command reservation (`docs/ledger.md`, lineage).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lineage {
    /// A new canonical effect; its reservation is required.
    CanonicalLinked,
    /// A pre-reservation effect whose command identity and fingerprint an explicit
    /// migration proved and linked to a reservation.
    HistoricalLinked,
    /// A historical effect whose command identity cannot be proven: no reservation,
    /// and never evidence that one existed.
    HistoricalUnlinked,
}

impl Lineage {
    /// The exact stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CanonicalLinked => "canonical_linked",
            Self::HistoricalLinked => "historical_linked",
            Self::HistoricalUnlinked => "historical_unlinked",
        }
    }

    fn parse(text: &str) -> Result<Self, ()> {
        [
            Self::CanonicalLinked,
            Self::HistoricalLinked,
            Self::HistoricalUnlinked,
        ]
        .into_iter()
        .find(|lineage| lineage.as_str() == text)
        .ok_or(())
    }
}

/// Which side of an internal transfer a leg is. A transfer is exactly two effects:
/// the debit at index 0 (negative amount) and the credit at index 1 (positive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransferLeg {
    /// Index 0: the amount leaves the source account (negative amount).
    Debit,
    /// Index 1: the amount reaches the destination account (positive amount).
    Credit,
}

impl TransferLeg {
    /// The exact stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debit => "debit",
            Self::Credit => "credit",
        }
    }

    fn parse(text: &str) -> Result<Self, ()> {
        match text {
            "debit" => Ok(Self::Debit),
            "credit" => Ok(Self::Credit),
            _ => Err(()),
        }
    }
}

/// One stored ledger effect, as read from (or written to) `ledgerTransactions`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LedgerEffect {
    /// The document id.
    pub effect_id: String,
    /// How the row relates to a reservation.
    pub lineage: Lineage,
    /// The owning reservation; `None` exactly for `historical_unlinked`.
    pub reservation_id: Option<Digest>,
    /// Position in the reservation's accepted creation order; `None` exactly for
    /// `historical_unlinked`.
    pub effect_index: Option<usize>,
    /// The migration that linked the row; `Some` exactly for `historical_linked`.
    pub migration_id: Option<String>,
    /// The leg, for the two effects of an internal transfer.
    pub transfer_leg: Option<TransferLeg>,
    /// The effect's business fields.
    pub item: EffectPlanItem,
    /// When the owning command was accepted.
    pub accepted_at: Timestamp,
}

/// The id of effect `index` of reservation `reservation_id`: `{reservationId}_{index:04}`.
pub(crate) fn effect_id(reservation_id: &Digest, index: usize) -> String {
    format!("{reservation_id}_{index:04}")
}

/// The effect's path relative to the documents root.
pub fn path(effect_id: &str) -> String {
    format!("{COLLECTION}/{effect_id}")
}

/// True when `id` has the shape of a reservation-derived effect id.
pub(crate) fn is_linked_effect_id(id: &str) -> bool {
    match id.split_once('_') {
        Some((rid, index)) => {
            is_lower_hex_64(rid) && index.len() == 4 && index.bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

/// The id of a row imported before reservations existed: 1–256 bytes of
/// `[A-Za-z0-9_-]` that never has the shape of a reservation-derived id, so it can
/// never occupy a reservation's slot.
pub(crate) fn is_legacy_effect_id(id: &str) -> bool {
    (1..=MAX_LEGACY_ID_BYTES).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && !is_linked_effect_id(id)
}

/// A migration id: 1–128 bytes of `[A-Za-z0-9_-]`.
pub(crate) fn is_migration_id(text: &str) -> bool {
    (1..=MAX_MIGRATION_ID_BYTES).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A text scalar of an effect: non-empty, at most [`MAX_TEXT_BYTES`] bytes.
pub(crate) fn is_effect_text(text: &str) -> bool {
    !text.is_empty() && text.len() <= MAX_TEXT_BYTES
}

/// Every text field valid and the compensation cents at most 2^53-1 (amounts are
/// canonical by construction of [`Amount`]).
pub(crate) fn item_is_valid(item: &EffectPlanItem) -> bool {
    [
        &item.seat_id,
        &item.target_seat_id,
        &item.actor_seat_id,
        &item.mechanism,
        &item.account_type,
        &item.r#type,
        &item.original_transaction_id,
        &item.policy_id,
        &item.compensation_origin_locator,
        &item.correction_intent_locator,
        &item.compensation_subtype,
    ]
    .into_iter()
    .all(|text| text.as_deref().is_none_or(is_effect_text))
        && item.compensation_amount_cents <= MAX_SAFE_INTEGER
}

/// True when `amount` is present and strictly above zero.
pub(crate) fn is_positive(amount: Option<&Amount>) -> bool {
    amount.is_some_and(|a| !a.is_negative() && a.as_str() != "0.00")
}

fn corrupt() -> JournalError {
    JournalError::corrupt(KIND)
}

fn text(f: &Strict<'_>, name: &'static str) -> Result<Option<String>, JournalError> {
    f.nullable(name, |s| {
        if is_effect_text(s) {
            Ok(s.to_owned())
        } else {
            Err(())
        }
    })
}

/// A null or an integer in `0..MAX_EFFECTS`.
fn nullable_index(map: &FieldMap, name: &'static str) -> Result<Option<usize>, JournalError> {
    match map.get(name).and_then(|v| v.value_type.as_ref()) {
        Some(ValueType::NullValue(_)) => Ok(None),
        Some(ValueType::IntegerValue(v)) => usize::try_from(*v)
            .ok()
            .filter(|i| *i < MAX_EFFECTS)
            .map(Some)
            .ok_or_else(corrupt),
        _ => Err(corrupt()),
    }
}

impl LedgerEffect {
    /// Parses strictly; `document_id` is the id the document was read under.
    pub(crate) fn parse(document_id: &str, map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        f.int_in("effectSchemaVersion", 1..=1)?;
        f.string_eq("effectId", document_id)?;
        let lineage = f.parsed("lineage", Lineage::parse)?;
        let reservation_id = f.nullable("reservationId", |s| Digest::parse(s).ok_or(()))?;
        let effect_index = nullable_index(map, "effectIndex")?;
        let migration_id = f.nullable("migrationId", |s| {
            if is_migration_id(s) {
                Ok(s.to_owned())
            } else {
                Err(())
            }
        })?;
        let transfer_leg = f.nullable("transferLeg", TransferLeg::parse)?;
        let cents = f.int_in(
            "compensationAmountCents",
            0..=i64::try_from(MAX_SAFE_INTEGER).unwrap_or(i64::MAX),
        )?;
        let item = EffectPlanItem {
            seat_id: text(&f, "seatId")?,
            target_seat_id: text(&f, "targetSeatId")?,
            actor_seat_id: text(&f, "actorSeatId")?,
            mechanism: text(&f, "mechanism")?,
            amount: f.nullable("amount", |s| {
                Amount::parse(s).filter(|a| a.as_str() == s).ok_or(())
            })?,
            account_type: text(&f, "accountType")?,
            r#type: text(&f, "type")?,
            original_transaction_id: text(&f, "originalTransactionId")?,
            policy_id: text(&f, "policyId")?,
            compensation_origin_locator: text(&f, "compensationOriginLocator")?,
            compensation_amount_cents: u64::try_from(cents).map_err(|_| corrupt())?,
            correction_intent_locator: text(&f, "correctionIntentLocator")?,
            compensation_subtype: text(&f, "compensationSubtype")?,
        };
        let effect = Self {
            effect_id: document_id.to_owned(),
            lineage,
            reservation_id,
            effect_index,
            migration_id,
            transfer_leg,
            item,
            accepted_at: f.timestamp("acceptedAt")?,
        };
        if effect.relations_hold() {
            Ok(effect)
        } else {
            Err(JournalError::corrupt_at(KIND, "field relations"))
        }
    }

    /// The relations between lineage, link, id and leg that every stored row obeys.
    pub(crate) fn relations_hold(&self) -> bool {
        let link_ok = match (self.lineage, &self.reservation_id, self.effect_index) {
            (Lineage::HistoricalUnlinked, None, None) => {
                self.migration_id.is_none()
                    && self.transfer_leg.is_none()
                    && !is_linked_effect_id(&self.effect_id)
            }
            (Lineage::CanonicalLinked, Some(rid), Some(index)) => {
                self.migration_id.is_none() && self.effect_id == effect_id(rid, index)
            }
            (Lineage::HistoricalLinked, Some(rid), Some(index)) => {
                self.migration_id.is_some()
                    && (self.effect_id == effect_id(rid, index)
                        || is_legacy_effect_id(&self.effect_id))
            }
            _ => false,
        };
        let amount = self.item.amount.as_ref();
        let leg_ok = match self.transfer_leg {
            None => true,
            Some(TransferLeg::Debit) => amount.is_some_and(Amount::is_negative),
            Some(TransferLeg::Credit) => is_positive(amount),
        };
        link_ok && leg_ok && item_is_valid(&self.item)
    }

    /// The exact stored field map.
    pub(crate) fn encode(&self) -> FieldMap {
        let item = &self.item;
        let text = |v: &Option<String>| fields::nullable_string(v.as_deref());
        let index = self
            .effect_index
            .and_then(|i| i64::try_from(i).ok())
            .map_or_else(fields::null, fields::int);
        fields::map([
            ("effectSchemaVersion", fields::int(1)),
            ("effectId", fields::string(self.effect_id.as_str())),
            ("lineage", fields::string(self.lineage.as_str())),
            (
                "reservationId",
                fields::nullable_string(self.reservation_id.as_ref().map(Digest::as_str)),
            ),
            ("effectIndex", index),
            ("migrationId", text(&self.migration_id)),
            (
                "transferLeg",
                fields::nullable_string(self.transfer_leg.map(TransferLeg::as_str)),
            ),
            ("seatId", text(&item.seat_id)),
            ("targetSeatId", text(&item.target_seat_id)),
            ("actorSeatId", text(&item.actor_seat_id)),
            ("mechanism", text(&item.mechanism)),
            (
                "amount",
                fields::nullable_string(item.amount.as_ref().map(Amount::as_str)),
            ),
            ("accountType", text(&item.account_type)),
            ("type", text(&item.r#type)),
            ("originalTransactionId", text(&item.original_transaction_id)),
            ("policyId", text(&item.policy_id)),
            (
                "compensationOriginLocator",
                text(&item.compensation_origin_locator),
            ),
            (
                "compensationAmountCents",
                fields::int(i64::try_from(item.compensation_amount_cents).unwrap_or(i64::MAX)),
            ),
            (
                "correctionIntentLocator",
                text(&item.correction_intent_locator),
            ),
            ("compensationSubtype", text(&item.compensation_subtype)),
            ("acceptedAt", fields::timestamp(self.accepted_at)),
        ])
    }
}

/// Serializes the effect for outputs, camelCase:
/// `{"effectId","effectIndex","lineage","transferLeg","seatId",…,"compensationSubtype"}`
/// (the reservation id, migration id and acceptance time are the outcome's).
impl Serialize for LedgerEffect {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let item = &self.item;
        let mut s = serializer.serialize_struct("LedgerEffect", 17)?;
        s.serialize_field("effectId", &self.effect_id)?;
        s.serialize_field("effectIndex", &self.effect_index)?;
        s.serialize_field("lineage", self.lineage.as_str())?;
        s.serialize_field("transferLeg", &self.transfer_leg.map(TransferLeg::as_str))?;
        s.serialize_field("seatId", &item.seat_id)?;
        s.serialize_field("targetSeatId", &item.target_seat_id)?;
        s.serialize_field("actorSeatId", &item.actor_seat_id)?;
        s.serialize_field("mechanism", &item.mechanism)?;
        s.serialize_field("amount", &item.amount.as_ref().map(Amount::as_str))?;
        s.serialize_field("accountType", &item.account_type)?;
        s.serialize_field("type", &item.r#type)?;
        s.serialize_field("originalTransactionId", &item.original_transaction_id)?;
        s.serialize_field("policyId", &item.policy_id)?;
        s.serialize_field(
            "compensationOriginLocator",
            &item.compensation_origin_locator,
        )?;
        s.serialize_field("compensationAmountCents", &item.compensation_amount_cents)?;
        s.serialize_field("correctionIntentLocator", &item.correction_intent_locator)?;
        s.serialize_field("compensationSubtype", &item.compensation_subtype)?;
        s.end()
    }
}

#[cfg(test)]
mod tests;
