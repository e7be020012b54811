//! Strict parsing of the serializer input's JSON parts: unknown keys, wrong types
//! and values outside the rules are `invalid_input` naming the container.

use super::plan::{
    Amount, COMPENSATION_SUBTYPE_KEY, CommandFamily, EffectPlanItem, Intent, MAX_EFFECTS,
    TRANSFER_KEYS, TransferPlan, V4_EFFECT_KEYS, check_version, intent_is_valid, text_is_valid,
};
use crate::error::JournalError;
use crate::identity::MAX_SAFE_INTEGER;
use serde_json::{Map, Value};

/// `value` as an object whose keys all belong to `allowed`; else `field` is invalid.
pub fn object<'a>(
    value: &'a Value,
    allowed: &[&str],
    field: &'static str,
) -> Result<&'a Map<String, Value>, JournalError> {
    match value {
        Value::Object(map) if map.keys().all(|key| allowed.contains(&key.as_str())) => Ok(map),
        _ => Err(JournalError::invalid(field)),
    }
}

/// Fails on `key` unless it is absent or null.
pub(super) fn absent_or_null(
    map: &Map<String, Value>,
    key: &'static str,
) -> Result<(), JournalError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(()),
        Some(_) => Err(JournalError::invalid(key)),
    }
}

/// An integer version: 4 and 5 are supported, any other integer is unsupported, and
/// anything that is not a JSON integer is invalid.
pub(super) fn json_version(value: Option<&Value>) -> Result<u32, JournalError> {
    let Some(Value::Number(number)) = value else {
        return Err(JournalError::invalid("fingerprintVersion"));
    };
    if !(number.is_i64() || number.is_u64()) {
        return Err(JournalError::invalid("fingerprintVersion"));
    }
    let version = number
        .as_u64()
        .and_then(|v| u32::try_from(v).ok())
        .ok_or(JournalError::UnsupportedFingerprintVersion)?;
    check_version(version)?;
    Ok(version)
}

/// An optional text scalar: absent or null is `None`, a valid string is `Some`.
fn json_text(
    map: &Map<String, Value>,
    key: &str,
    field: &'static str,
) -> Result<Option<String>, JournalError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text_is_valid(text) => Ok(Some(text.clone())),
        Some(_) => Err(JournalError::invalid(field)),
    }
}

/// A required text scalar.
fn json_required_text(
    map: &Map<String, Value>,
    key: &str,
    field: &'static str,
) -> Result<String, JournalError> {
    json_text(map, key, field)?.ok_or(JournalError::invalid(field))
}

/// An optional amount given as a JSON string; `signed` allows negative amounts.
fn json_amount(
    map: &Map<String, Value>,
    key: &str,
    signed: bool,
    field: &'static str,
) -> Result<Option<Amount>, JournalError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Amount::parse(text)
            .filter(|amount| signed || !amount.is_negative())
            .map(Some)
            .ok_or(JournalError::invalid(field)),
        Some(_) => Err(JournalError::invalid(field)),
    }
}

/// An integer from 0 to 2^53-1.
fn json_safe_uint(value: &Value) -> Option<u64> {
    value.as_u64().filter(|n| *n <= MAX_SAFE_INTEGER)
}

/// The effects array: 1 to [`MAX_EFFECTS`] effects, each strictly parsed.
pub(super) fn json_effects(value: Option<&Value>) -> Result<Vec<EffectPlanItem>, JournalError> {
    const F: &str = "effects";
    let Some(Value::Array(items)) = value else {
        return Err(JournalError::invalid(F));
    };
    if !(1..=MAX_EFFECTS).contains(&items.len()) {
        return Err(JournalError::invalid(F));
    }
    items.iter().map(json_effect).collect()
}

/// One effect object with only the known keys.
fn json_effect(value: &Value) -> Result<EffectPlanItem, JournalError> {
    const F: &str = "effects";
    let allowed: Vec<&str> = V4_EFFECT_KEYS
        .into_iter()
        .chain([COMPENSATION_SUBTYPE_KEY])
        .collect();
    let map = object(value, &allowed, F)?;
    let compensation_amount_cents = match map.get("compensation_amount_cents") {
        None | Some(Value::Null) => 0,
        Some(cents) => json_safe_uint(cents).ok_or(JournalError::invalid(F))?,
    };
    Ok(EffectPlanItem {
        seat_id: json_text(map, "seat_id", F)?,
        target_seat_id: json_text(map, "target_seat_id", F)?,
        actor_seat_id: json_text(map, "actor_seat_id", F)?,
        mechanism: json_text(map, "mechanism", F)?,
        amount: json_amount(map, "amount", true, F)?,
        account_type: json_text(map, "account_type", F)?,
        r#type: json_text(map, "type", F)?,
        original_transaction_id: json_text(map, "original_transaction_id", F)?,
        policy_id: json_text(map, "policy_id", F)?,
        compensation_origin_locator: json_text(map, "compensation_origin_locator", F)?,
        compensation_amount_cents,
        correction_intent_locator: json_text(map, "correction_intent_locator", F)?,
        compensation_subtype: json_text(map, COMPENSATION_SUBTYPE_KEY, F)?,
    })
}

/// The intent `family` requires (null for the families without one).
pub(super) fn json_intent(
    family: CommandFamily,
    value: Option<&Value>,
) -> Result<Option<Intent>, JournalError> {
    const F: &str = "intent";
    let value = value.unwrap_or(&Value::Null);
    let intent = match family {
        CommandFamily::Reversal | CommandFamily::EffectPlan | CommandFamily::InternalTransfer => {
            return if value.is_null() {
                Ok(None)
            } else {
                Err(JournalError::invalid(F))
            };
        }
        CommandFamily::StorePurchase => {
            let map = object(value, &["policyUuid", "quantity"], F)?;
            let policy_uuid = json_required_text(map, "policyUuid", F)?;
            let quantity = map
                .get("quantity")
                .and_then(json_safe_uint)
                .filter(|q| *q >= 1)
                .ok_or(JournalError::invalid(F))?;
            Intent::StorePurchase {
                policy_uuid,
                quantity,
            }
        }
        CommandFamily::RentPayment => {
            let map = object(
                value,
                &["obligationCorrelation", "requestedPaymentAmount"],
                F,
            )?;
            Intent::RentPayment {
                obligation_correlation: json_required_text(map, "obligationCorrelation", F)?,
                requested_payment_amount: json_amount(map, "requestedPaymentAmount", false, F)?,
            }
        }
        CommandFamily::InsurancePremium => {
            let map = object(
                value,
                &["entitlementId", "selectedObligationCorrelation"],
                F,
            )?;
            Intent::InsurancePremium {
                entitlement_id: json_required_text(map, "entitlementId", F)?,
                selected_obligation_correlation: json_text(
                    map,
                    "selectedObligationCorrelation",
                    F,
                )?,
            }
        }
        CommandFamily::OverdraftFee => {
            let map = object(value, &["forceAuthority"], F)?;
            let Some(Value::Bool(force_authority)) = map.get("forceAuthority") else {
                return Err(JournalError::invalid(F));
            };
            Intent::OverdraftFee {
                force_authority: *force_authority,
            }
        }
    };
    if intent_is_valid(&intent) {
        Ok(Some(intent))
    } else {
        Err(JournalError::invalid(F))
    }
}

/// The transfer object with only its seven keys.
pub(super) fn json_transfer(value: Option<&Value>) -> Result<TransferPlan, JournalError> {
    const F: &str = "transfer";
    let map = object(value.unwrap_or(&Value::Null), &TRANSFER_KEYS, F)?;
    Ok(TransferPlan {
        account_direction: json_text(map, "account_direction", F)?,
        target_seat_id: json_text(map, "target_seat_id", F)?,
        actor_seat_id: json_text(map, "actor_seat_id", F)?,
        amount: json_amount(map, "amount", false, F)?,
        r#type: json_text(map, "type", F)?,
        original_transaction_id: json_text(map, "original_transaction_id", F)?,
        policy_id: json_text(map, "policy_id", F)?,
    })
}
