//! `command-journal ledger fingerprint | accept | replay`.
//!
//! Input shapes (one JSON object on stdin; a duplicate or unknown top-level key is
//! `invalid_input` naming that key, an unknown key inside `plan` names `plan`):
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
//!   "compensationSubtype"}` (each a string or null; absent is null); neither is
//!   `invalid_input` on `charge`, both on `reversal`. Prints the
//!   outcome `replayed` or `{"outcome": "not_reserved", "reservationId"}`.
//!
//! `accept` and `replay` without a journal (no project or emulator) are `unavailable`.

use super::input::{Failure, Input, object as stdin_object, only_keys};
use super::schema::Subject;
use crate::LedgerCmd;
use command_journal::identity::LedgerKey;
use command_journal::ledger::fingerprint::{
    CURRENT_FINGERPRINT_VERSION, CommandFamily, FingerprintInput, Intent,
};
use command_journal::ledger::{LedgerScope, ReversalAuthority};
use command_journal::{Journal, JournalError};
use serde_json::{Map, Value, json};

/// Runs ledger subcommand `action` on the JSON object `stdin`.
pub async fn run(
    action: &LedgerCmd,
    stdin: &str,
    journal: Option<&Journal>,
) -> Result<Value, Failure> {
    match action {
        LedgerCmd::Fingerprint => fingerprint(stdin),
        LedgerCmd::Accept => {
            let mut input = Input::parse(stdin)?;
            input.only(&Subject::LedgerAccept.keys())?;
            let key = key(&mut input)?;
            let scope = scope(input.value("scope")?)?;
            let plan = plan(&input.value("plan")?)?;
            input.finish()?;
            let journal = journal.ok_or(JournalError::Unavailable)?;
            Ok(output(
                &journal.accept_ledger_command(&key, &plan, &scope).await?,
            )?)
        }
        LedgerCmd::Replay => {
            let mut input = Input::parse(stdin)?;
            input.only(&Subject::LedgerReplay.keys())?;
            let key = key(&mut input)?;
            let scope = scope(input.value("scope")?)?;
            let charge = input.optional_value("charge");
            let reversal = input.optional_value("reversal");
            input.finish()?;
            let replay = match (charge, reversal) {
                (Some(charge), None) => {
                    let intent = charge_intent(charge)?;
                    let journal = journal.ok_or(JournalError::Unavailable)?;
                    journal
                        .replay_reserved_charge(&key, &scope, &intent)
                        .await?
                }
                (None, Some(reversal)) => {
                    let authority = reversal_authority(reversal)?;
                    let journal = journal.ok_or(JournalError::Unavailable)?;
                    journal
                        .replay_reserved_reversal(&key, &scope, &authority)
                        .await?
                }
                (None, None) => return Err(JournalError::InvalidInput { field: "charge" }.into()),
                (Some(_), Some(_)) => {
                    return Err(JournalError::InvalidInput { field: "reversal" }.into());
                }
            };
            Ok(output(&replay)?)
        }
    }
}

fn fingerprint(stdin: &str) -> Result<Value, Failure> {
    let map = stdin_object(stdin)?;
    only_keys(&map, &Subject::LedgerFingerprint.keys())?;
    let input = FingerprintInput::from_json(&Value::Object(map))?;
    let fingerprint = input.fingerprint(input.version())?;
    Ok(json!({
        "fingerprint": fingerprint.digest.as_str(),
        "fingerprintVersion": fingerprint.version,
        "canonical": fingerprint.canonical,
    }))
}

/// The `plan` object: a fingerprint input, whose own unknown keys are the plan's fault.
fn plan(value: &Value) -> Result<FingerprintInput, JournalError> {
    FingerprintInput::from_json(value).map_err(|error| match error {
        JournalError::InvalidInput { field: "input" } => {
            JournalError::InvalidInput { field: "plan" }
        }
        other => other,
    })
}

fn output(value: &impl serde::Serialize) -> Result<Value, JournalError> {
    // The outputs are plain data and always serialize; the mapping only keeps the
    // signature total, as `commands` does.
    serde_json::to_value(value).map_err(|_| JournalError::Unavailable)
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
        let out = block(run(&LedgerCmd::Fingerprint, stdin, None)).expect("fingerprint");
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
            block(run(&LedgerCmd::Fingerprint, dup, None)),
            Err(Failure::Key {
                key: "family".into(),
                expected: super::super::input::DUPLICATE_KEY
            })
        );
        let v3 = r#"{"family":"effect_plan","fingerprintVersion":3,"effects":[{}]}"#;
        assert_eq!(
            block(run(&LedgerCmd::Fingerprint, v3, None)),
            Err(Failure::Journal(
                JournalError::UnsupportedFingerprintVersion
            ))
        );
    }

    #[test]
    fn accept_and_replay_validate_input_before_needing_a_journal() {
        let base = r#""classId":"c","featCode":"f","idempotencyKey":"k","scope":{"seatId":"s","actorSeatId":"a"}"#;
        let plan = r#""plan":{"family":"effect_plan","fingerprintVersion":5,"effects":[{}]}"#;
        let accept = format!("{{{base},{plan}}}");
        assert_eq!(
            block(run(&LedgerCmd::Accept, &accept, None)),
            Err(Failure::Journal(JournalError::Unavailable))
        );
        let extra = format!("{{{base},{plan},\"x\":1}}");
        assert_eq!(
            block(run(&LedgerCmd::Accept, &extra, None)),
            Err(Failure::Key {
                key: "x".into(),
                expected: super::super::input::UNKNOWN_KEY
            })
        );
        let plan_extra = format!(
            "{{{base},\"plan\":{{\"family\":\"effect_plan\",\"fingerprintVersion\":5,\"effects\":[{{}}],\"x\":1}}}}"
        );
        assert_eq!(
            block(run(&LedgerCmd::Accept, &plan_extra, None)),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "plan"
            }))
        );
        let bad_scope = r#"{"classId":"c","featCode":"f","idempotencyKey":"k","scope":{"seatId":"s"},"plan":{}}"#;
        assert_eq!(
            block(run(&LedgerCmd::Accept, bad_scope, None)),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "scope"
            }))
        );
        let charge = format!(
            "{{{base},\"charge\":{{\"family\":\"overdraft_fee\",\"intent\":{{\"forceAuthority\":false}}}}}}"
        );
        assert_eq!(
            block(run(&LedgerCmd::Replay, &charge, None)),
            Err(Failure::Journal(JournalError::Unavailable))
        );
        let not_a_charge =
            format!("{{{base},\"charge\":{{\"family\":\"reversal\",\"intent\":null}}}}");
        assert_eq!(
            block(run(&LedgerCmd::Replay, &not_a_charge, None)),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "family"
            }))
        );
        let bad_intent = format!(
            "{{{base},\"charge\":{{\"family\":\"store_purchase\",\"intent\":{{\"quantity\":0}}}}}}"
        );
        assert_eq!(
            block(run(&LedgerCmd::Replay, &bad_intent, None)),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "intent"
            }))
        );
        let both = format!("{{{base},\"charge\":{{}},\"reversal\":{{}}}}");
        assert_eq!(
            block(run(&LedgerCmd::Replay, &both, None)),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "reversal"
            }))
        );
        assert_eq!(
            block(run(&LedgerCmd::Replay, &format!("{{{base}}}"), None)),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "charge"
            }))
        );
        let reversal = format!("{{{base},\"reversal\":{{\"actorSeatId\":7}}}}");
        assert_eq!(
            block(run(&LedgerCmd::Replay, &reversal, None)),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "reversal"
            }))
        );
        let reversal = format!("{{{base},\"reversal\":{{\"mechanism\":\"WALLET\"}}}}");
        assert_eq!(
            block(run(&LedgerCmd::Replay, &reversal, None)),
            Err(Failure::Journal(JournalError::Unavailable))
        );
    }
}
