//! `command-journal ledger fingerprint | accept | replay`.
//!
//! Input shapes (one JSON object on stdin, duplicate keys rejected, unknown keys
//! `invalid_input` on `input` unless noted):
//!
//! - `fingerprint`: the serializer input itself, `{"family", "fingerprintVersion",
//!   "effects", "intent"}` or `{"family": "internal_transfer", "fingerprintVersion",
//!   "transfer"}`. Prints `{"fingerprint", "fingerprintVersion", "canonical"}`, where
//!   `canonical` is the exact text hashed. Needs no journal.
//! - `accept`: `{"classId", "featCode", "idempotencyKey",
//!   "scope": {"seatId", "actorSeatId"}, "plan": <fingerprint input>}`. Prints the
//!   outcome (`accepted` or `replayed`, the reservation and its effects).
//! - `replay`: `{"classId", "featCode", "idempotencyKey", "scope": {…}}` plus exactly
//!   one of `"charge": {"family": "store_purchase" | "rent_payment" |
//!   "insurance_premium" | "overdraft_fee", "intent": {…}}` (the intent object as in
//!   the fingerprint input) or `"reversal": {"actorSeatId", "mechanism",
//!   "compensationSubtype"}` (each a string or null; absent is null). Prints the
//!   outcome `replayed` or `{"outcome": "not_reserved", "reservationId"}`.
//!
//! `accept` and `replay` without a journal (no project or emulator) are `unavailable`.

use super::input::Input;
use command_journal::identity::LedgerKey;
use command_journal::ledger::fingerprint::{
    CURRENT_FINGERPRINT_VERSION, CommandFamily, FingerprintInput, Intent,
};
use command_journal::ledger::{LedgerScope, ReversalAuthority};
use command_journal::{Journal, JournalError};
use serde_json::{Map, Value, json};

/// Runs ledger subcommand `action` on the JSON object `stdin`.
pub async fn run(
    action: &str,
    stdin: &str,
    journal: Option<&Journal>,
) -> Result<Value, JournalError> {
    match action {
        "fingerprint" => fingerprint(stdin),
        "accept" => {
            let mut input = Input::parse(stdin)?;
            let key = key(&mut input)?;
            let scope = scope(input.value("scope")?)?;
            let plan = FingerprintInput::from_json(&input.value("plan")?)?;
            input.finish()?;
            let journal = journal.ok_or_else(no_journal)?;
            output(&journal.accept_ledger_command(&key, &plan, &scope).await?)
        }
        "replay" => {
            let mut input = Input::parse(stdin)?;
            let key = key(&mut input)?;
            let scope = scope(input.value("scope")?)?;
            let charge = input.value("charge").ok();
            let reversal = input.value("reversal").ok();
            input.finish()?;
            let replay = match (charge, reversal) {
                (Some(charge), None) => {
                    let intent = charge_intent(charge)?;
                    let journal = journal.ok_or_else(no_journal)?;
                    journal
                        .replay_reserved_charge(&key, &scope, &intent)
                        .await?
                }
                (None, Some(reversal)) => {
                    let authority = reversal_authority(reversal)?;
                    let journal = journal.ok_or_else(no_journal)?;
                    journal
                        .replay_reserved_reversal(&key, &scope, &authority)
                        .await?
                }
                _ => return Err(JournalError::InvalidInput { field: "input" }),
            };
            output(&replay)
        }
        _ => Err(JournalError::InvalidInput { field: "action" }),
    }
}

fn fingerprint(stdin: &str) -> Result<Value, JournalError> {
    let value = command_journal::strict_json::parse(stdin)
        .ok_or(JournalError::InvalidInput { field: "input" })?;
    let input = FingerprintInput::from_json(&value)?;
    let fingerprint = input.fingerprint(input.version())?;
    Ok(json!({
        "fingerprint": fingerprint.digest.as_str(),
        "fingerprintVersion": fingerprint.version,
        "canonical": fingerprint.canonical,
    }))
}

/// The answer of an operation that validated its input but was given no journal.
pub fn no_journal() -> JournalError {
    JournalError::Unavailable {
        last_code: None,
        attempts: 0,
        deadline: false,
    }
}

fn output(value: &impl serde::Serialize) -> Result<Value, JournalError> {
    // The outputs are plain data and always serialize; the mapping only keeps the
    // signature total, as `commands` does.
    serde_json::to_value(value).map_err(|_| JournalError::Internal {
        reason: "output serialization failed",
    })
}

fn key(input: &mut Input) -> Result<LedgerKey, JournalError> {
    let class_id = input.string("classId")?;
    let feat_code = input.string("featCode")?;
    let idempotency_key = input.string("idempotencyKey")?;
    LedgerKey::new(&class_id, &feat_code, &idempotency_key)
}

/// `value` as an object whose keys all belong to `allowed`.
fn object(
    value: Value,
    allowed: &[&str],
    field: &'static str,
) -> Result<Map<String, Value>, JournalError> {
    match value {
        Value::Object(map) if map.keys().all(|k| allowed.contains(&k.as_str())) => Ok(map),
        _ => Err(JournalError::InvalidInput { field }),
    }
}

fn scope(value: Value) -> Result<LedgerScope, JournalError> {
    const F: &str = "scope";
    let map = object(value, &["seatId", "actorSeatId"], F)?;
    match (map.get("seatId"), map.get("actorSeatId")) {
        (Some(Value::String(seat)), Some(Value::String(actor))) => LedgerScope::new(seat, actor),
        _ => Err(JournalError::InvalidInput { field: F }),
    }
}

/// The charge's business tuple, validated exactly as the fingerprint input's `intent`.
fn charge_intent(value: Value) -> Result<Intent, JournalError> {
    let mut map = object(value, &["family", "intent"], "charge")?;
    let family = match map.get("family") {
        Some(Value::String(text)) => CommandFamily::parse(text)?,
        _ => return Err(JournalError::InvalidInput { field: "family" }),
    };
    if !matches!(
        family,
        CommandFamily::StorePurchase
            | CommandFamily::RentPayment
            | CommandFamily::InsurancePremium
            | CommandFamily::OverdraftFee
    ) {
        return Err(JournalError::InvalidInput { field: "family" });
    }
    // The fingerprint input's own parser validates the tuple; the placeholder effect
    // (every field null) is discarded.
    let probe = json!({
        "family": family.as_str(),
        "fingerprintVersion": CURRENT_FINGERPRINT_VERSION,
        "effects": [{}],
        "intent": map.remove("intent").unwrap_or(Value::Null),
    });
    FingerprintInput::from_json(&probe)?
        .intent()
        .cloned()
        .ok_or(JournalError::InvalidInput { field: "intent" })
}

fn reversal_authority(value: Value) -> Result<ReversalAuthority, JournalError> {
    const F: &str = "reversal";
    let map = object(
        value,
        &["actorSeatId", "mechanism", "compensationSubtype"],
        F,
    )?;
    let text = |key: &str| match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(JournalError::InvalidInput { field: F }),
    };
    Ok(ReversalAuthority {
        actor_seat_id: text("actorSeatId")?,
        mechanism: text("mechanism")?,
        compensation_subtype: text("compensationSubtype")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(future)
    }

    #[test]
    fn fingerprint_prints_the_canonical_text_it_hashed() {
        let stdin = r#"{"family":"overdraft_fee","fingerprintVersion":5,
            "effects":[{"seat_id":"s","amount":"2.5"}],"intent":{"forceAuthority":true}}"#;
        let out = block(run("fingerprint", stdin, None)).expect("fingerprint");
        let canonical = out["canonical"].as_str().expect("canonical");
        assert!(canonical.contains(r#""amount":"2.50""#));
        assert!(canonical.ends_with(r#""intent":["OVERDRAFT_FEE",true]}"#));
        assert_eq!(out["fingerprintVersion"], 5);
        use sha2::Digest as _;
        let expected = hex::encode(sha2::Sha256::digest(canonical.as_bytes()));
        assert_eq!(out["fingerprint"], expected.as_str());
        assert_eq!(out.as_object().map(Map::len), Some(3));
    }

    #[test]
    fn fingerprint_rejects_duplicate_keys_and_unsupported_versions() {
        let dup = r#"{"family":"effect_plan","family":"reversal","fingerprintVersion":5}"#;
        assert_eq!(
            block(run("fingerprint", dup, None)),
            Err(JournalError::InvalidInput { field: "input" })
        );
        let v3 = r#"{"family":"effect_plan","fingerprintVersion":3,"effects":[{}]}"#;
        assert_eq!(
            block(run("fingerprint", v3, None)),
            Err(JournalError::UnsupportedFingerprintVersion)
        );
    }

    #[test]
    fn accept_and_replay_validate_input_before_needing_a_journal() {
        let base = r#""classId":"c","featCode":"f","idempotencyKey":"k","scope":{"seatId":"s","actorSeatId":"a"}"#;
        let plan = r#""plan":{"family":"effect_plan","fingerprintVersion":5,"effects":[{}]}"#;
        let accept = format!("{{{base},{plan}}}");
        assert_eq!(block(run("accept", &accept, None)), Err(no_journal()));
        let extra = format!("{{{base},{plan},\"x\":1}}");
        assert_eq!(
            block(run("accept", &extra, None)),
            Err(JournalError::InvalidInput { field: "input" })
        );
        let bad_scope = r#"{"classId":"c","featCode":"f","idempotencyKey":"k","scope":{"seatId":"s"},"plan":{}}"#;
        assert_eq!(
            block(run("accept", bad_scope, None)),
            Err(JournalError::InvalidInput { field: "scope" })
        );
        let charge = format!(
            "{{{base},\"charge\":{{\"family\":\"overdraft_fee\",\"intent\":{{\"forceAuthority\":false}}}}}}"
        );
        assert_eq!(block(run("replay", &charge, None)), Err(no_journal()));
        let not_a_charge =
            format!("{{{base},\"charge\":{{\"family\":\"reversal\",\"intent\":null}}}}");
        assert_eq!(
            block(run("replay", &not_a_charge, None)),
            Err(JournalError::InvalidInput { field: "family" })
        );
        let bad_intent = format!(
            "{{{base},\"charge\":{{\"family\":\"store_purchase\",\"intent\":{{\"quantity\":0}}}}}}"
        );
        assert_eq!(
            block(run("replay", &bad_intent, None)),
            Err(JournalError::InvalidInput { field: "intent" })
        );
        let both = format!("{{{base},\"charge\":{{}},\"reversal\":{{}}}}");
        assert_eq!(
            block(run("replay", &both, None)),
            Err(JournalError::InvalidInput { field: "input" })
        );
        let reversal = format!("{{{base},\"reversal\":{{\"actorSeatId\":7}}}}");
        assert_eq!(
            block(run("replay", &reversal, None)),
            Err(JournalError::InvalidInput { field: "reversal" })
        );
        let reversal = format!("{{{base},\"reversal\":{{\"mechanism\":\"WALLET\"}}}}");
        assert_eq!(block(run("replay", &reversal, None)), Err(no_journal()));
        assert_eq!(
            block(run("bogus", "{}", None)),
            Err(JournalError::InvalidInput { field: "action" })
        );
    }
}
