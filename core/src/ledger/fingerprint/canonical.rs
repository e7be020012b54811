//! The JSON values the serializers hash, before RFC 8785 canonicalization.

use super::plan::{Amount, COMPENSATION_SUBTYPE_KEY, EffectPlanItem, Intent, TransferPlan};
use serde_json::{Map, Value};

/// A text scalar, or null.
fn text_value(text: &Option<String>) -> Value {
    text.as_ref()
        .map_or(Value::Null, |text| Value::String(text.clone()))
}

/// A two-decimal amount string, or null.
fn amount_value(amount: &Option<Amount>) -> Value {
    amount.as_ref().map_or(Value::Null, |amount| {
        Value::String(amount.as_str().to_owned())
    })
}

/// One effect's object under `version` (12 keys, and the subtype under 5).
pub(super) fn effect_value(effect: &EffectPlanItem, version: u32) -> Value {
    let mut map = Map::new();
    let mut put = |key: &str, value: Value| {
        map.insert(key.to_owned(), value);
    };
    put("seat_id", text_value(&effect.seat_id));
    put("target_seat_id", text_value(&effect.target_seat_id));
    put("actor_seat_id", text_value(&effect.actor_seat_id));
    put("mechanism", text_value(&effect.mechanism));
    put("amount", amount_value(&effect.amount));
    put("account_type", text_value(&effect.account_type));
    put("type", text_value(&effect.r#type));
    put(
        "original_transaction_id",
        text_value(&effect.original_transaction_id),
    );
    put("policy_id", text_value(&effect.policy_id));
    put(
        "compensation_origin_locator",
        text_value(&effect.compensation_origin_locator),
    );
    put(
        "compensation_amount_cents",
        Value::from(effect.compensation_amount_cents),
    );
    put(
        "correction_intent_locator",
        text_value(&effect.correction_intent_locator),
    );
    if version == 5 {
        put(
            COMPENSATION_SUBTYPE_KEY,
            text_value(&effect.compensation_subtype),
        );
    }
    Value::Object(map)
}

/// The intent tuple as an array, or null.
pub(super) fn intent_value(intent: Option<&Intent>) -> Value {
    let tuple = match intent {
        None => return Value::Null,
        Some(Intent::StorePurchase {
            policy_uuid,
            quantity,
        }) => vec![
            Value::from("STORE_PURCHASE"),
            Value::from(policy_uuid.as_str()),
            Value::from(*quantity),
        ],
        Some(Intent::RentPayment {
            obligation_correlation,
            requested_payment_amount,
        }) => vec![
            Value::from("RENT_PAYMENT"),
            Value::from(obligation_correlation.as_str()),
            amount_value(requested_payment_amount),
        ],
        Some(Intent::InsurancePremium {
            entitlement_id,
            selected_obligation_correlation,
        }) => vec![
            Value::from("INSURANCE_PREMIUM"),
            Value::from(entitlement_id.as_str()),
            text_value(selected_obligation_correlation),
        ],
        Some(Intent::OverdraftFee { force_authority }) => {
            vec![Value::from("OVERDRAFT_FEE"), Value::from(*force_authority)]
        }
    };
    Value::Array(tuple)
}

/// The seven-key transfer object.
pub(super) fn transfer_value(transfer: &TransferPlan) -> Value {
    let mut map = Map::new();
    let mut put = |key: &str, value: Value| {
        map.insert(key.to_owned(), value);
    };
    put("account_direction", text_value(&transfer.account_direction));
    put("target_seat_id", text_value(&transfer.target_seat_id));
    put("actor_seat_id", text_value(&transfer.actor_seat_id));
    put("amount", amount_value(&transfer.amount));
    put("type", text_value(&transfer.r#type));
    put(
        "original_transaction_id",
        text_value(&transfer.original_transaction_id),
    );
    put("policy_id", text_value(&transfer.policy_id));
    Value::Object(map)
}
