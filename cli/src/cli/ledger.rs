//! `command-journal ledger fingerprint | accept | replay | link`.
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
//! - `link`: `{"classId", "featCode", "idempotencyKey", "scope": {…}, "historical":
//!   {"family", "fingerprint", "fingerprintVersion", "acceptedAt", "migrationId",
//!   "effectIds", "effects"}}`: what the migration proved — the command family, the
//!   accepted fingerprint (64 lowercase hex, stored as given) and its version (1–5),
//!   the acceptance time (RFC 3339), the migration id, the document ids of the
//!   existing `historical_unlinked` rows in accepted creation order, and each row's
//!   monetary content (effect objects as in the fingerprint input). Prints the outcome
//!   `linked` or `already_linked` with the reservation and its (relabelled) rows.
//!
//! `accept`, `replay` and `link` validate the whole object before connecting.
//! Their refusals are the library's (exit 3): for `accept`, a plan declaring another
//! `fingerprintVersion` than the stored reservation's is `replay_mismatch`, and a new
//! reversal returning more than its original booked `reversal_exceeds_original`; for
//! `accept` and `replay`, stored rows that contradict their reservation (integrity
//! digest or rebuilt fingerprint, `docs/ledger.md`) are `journal_corrupt`.

use super::input::{Failure, Input, object as stdin_object, only_keys};
use super::output::to_json;
use super::schema::Subject;
use crate::Timestamp;
use crate::identity::Digest;
use crate::ledger::LedgerKey;
use crate::ledger::{CURRENT_FINGERPRINT_VERSION, CommandFamily, FingerprintInput, Intent};
use crate::ledger::{HistoricalCommand, LedgerScope, ReversalAuthority};
use crate::{Journal, JournalError};
use serde_json::{Map, Value, json};

/// Which ledger subcommand that needs a journal to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerAction {
    /// `ledger accept`.
    Accept,
    /// `ledger replay`.
    Replay,
    /// `ledger link`.
    Link,
}

/// A ledger operation with its stdin object validated; each carries the command's
/// key and scope.
#[derive(Debug)]
pub enum LedgerCall {
    /// `ledger accept`: the plan to accept.
    Accept(LedgerKey, LedgerScope, FingerprintInput),
    /// `ledger replay` of a charge: its business tuple.
    ReplayCharge(LedgerKey, LedgerScope, Intent),
    /// `ledger replay` of a reversal: its authority.
    ReplayReversal(LedgerKey, LedgerScope, ReversalAuthority),
    /// `ledger link`: the migration's proven command.
    Link(LedgerKey, LedgerScope, HistoricalCommand),
}

impl LedgerCall {
    /// Validates the whole stdin object of `action`: unknown keys first, then each
    /// key in the documented order.
    pub fn parse(action: LedgerAction, stdin: &str) -> Result<Self, Failure> {
        let mut input = Input::parse(stdin)?;
        input.only(&action.subject().keys())?;
        let key = key(&mut input)?;
        let scope = scope(input.value("scope")?)?;
        match action {
            LedgerAction::Accept => {
                let plan = plan(&input.value("plan")?)?;
                input.finish()?;
                Ok(Self::Accept(key, scope, plan))
            }
            LedgerAction::Replay => {
                let charge = input.optional_value("charge");
                let reversal = input.optional_value("reversal");
                input.finish()?;
                match (charge, reversal) {
                    (Some(charge), None) => {
                        Ok(Self::ReplayCharge(key, scope, charge_intent(charge)?))
                    }
                    (None, Some(reversal)) => Ok(Self::ReplayReversal(
                        key,
                        scope,
                        reversal_authority(reversal)?,
                    )),
                    (None, None) => Err(JournalError::invalid("charge").into()),
                    (Some(_), Some(_)) => Err(JournalError::invalid("reversal").into()),
                }
            }
            LedgerAction::Link => {
                let command = historical(input.value("historical")?)?;
                input.finish()?;
                Ok(Self::Link(key, scope, command))
            }
        }
    }

    /// Runs the operation on `journal` and returns its outcome as JSON.
    pub async fn execute(self, journal: &Journal) -> Result<Value, JournalError> {
        match self {
            Self::Accept(key, scope, plan) => {
                to_json(journal.accept_ledger_command(&key, &plan, &scope).await?)
            }
            Self::ReplayCharge(key, scope, intent) => to_json(
                journal
                    .replay_reserved_charge(&key, &scope, &intent)
                    .await?,
            ),
            Self::ReplayReversal(key, scope, authority) => to_json(
                journal
                    .replay_reserved_reversal(&key, &scope, &authority)
                    .await?,
            ),
            Self::Link(key, scope, command) => to_json(
                journal
                    .link_historical_effects(&key, &scope, &command)
                    .await?,
            ),
        }
    }
}

impl LedgerAction {
    /// The stdin object it reads.
    pub fn subject(self) -> Subject {
        match self {
            Self::Accept => Subject::LedgerAccept,
            Self::Replay => Subject::LedgerReplay,
            Self::Link => Subject::LedgerLink,
        }
    }
}

/// The migration's proven command; each part is `invalid_input` on its own name.
fn historical(value: Value) -> Result<HistoricalCommand, JournalError> {
    let mut map = object(
        value,
        &[
            "family",
            "fingerprint",
            "fingerprintVersion",
            "acceptedAt",
            "migrationId",
            "effectIds",
            "effects",
        ],
        "historical",
    )?;
    let family = match map.get("family") {
        Some(Value::String(text)) => CommandFamily::parse(text)?,
        _ => return Err(JournalError::InvalidInput { field: "family" }),
    };
    let fingerprint = match map.get("fingerprint") {
        Some(Value::String(text)) => Digest::parse(text),
        _ => None,
    }
    .ok_or(JournalError::InvalidInput {
        field: "fingerprint",
    })?;
    let fingerprint_version = map
        .get("fingerprintVersion")
        .and_then(Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or(JournalError::InvalidInput {
            field: "fingerprintVersion",
        })?;
    let accepted_at = match map.get("acceptedAt") {
        Some(Value::String(text)) => chrono::DateTime::parse_from_rfc3339(text)
            .ok()
            .and_then(|t| Timestamp::from_datetime(t.with_timezone(&chrono::Utc))),
        _ => None,
    }
    .ok_or(JournalError::InvalidInput {
        field: "acceptedAt",
    })?;
    let migration_id = match map.get("migrationId") {
        Some(Value::String(text)) => text.clone(),
        _ => {
            return Err(JournalError::InvalidInput {
                field: "migrationId",
            });
        }
    };
    let effect_ids = match map.get("effectIds") {
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|id| id.as_str().map(str::to_owned))
            .collect::<Option<Vec<String>>>(),
        _ => None,
    }
    .ok_or(JournalError::InvalidInput { field: "effectIds" })?;
    // The fingerprint input's own parser validates each effect object.
    let probe = json!({
        "family": CommandFamily::EffectPlan.as_str(),
        "fingerprintVersion": CURRENT_FINGERPRINT_VERSION,
        "effects": map.remove("effects").unwrap_or(Value::Null),
    });
    let effects = FingerprintInput::from_json(&probe)
        .map_err(|_| JournalError::InvalidInput { field: "effects" })?
        .effects()
        .to_vec();
    Ok(HistoricalCommand {
        family,
        fingerprint,
        fingerprint_version,
        accepted_at,
        migration_id,
        effect_ids,
        effects,
    })
}

/// `ledger fingerprint`'s stdin object: the serializer input itself.
pub fn parse_fingerprint(stdin: &str) -> Result<FingerprintInput, Failure> {
    let map = stdin_object(stdin)?;
    only_keys(&map, &Subject::LedgerFingerprint.keys())?;
    Ok(FingerprintInput::from_json(&Value::Object(map))?)
}

/// The fingerprint of `input`, its version and the exact canonical text hashed.
pub fn fingerprint(input: &FingerprintInput) -> Result<Value, JournalError> {
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

fn key(input: &mut Input) -> Result<LedgerKey, Failure> {
    let class_id = input.string("classId")?;
    let feat_code = input.string("featCode")?;
    let idempotency_key = input.string("idempotencyKey")?;
    Ok(LedgerKey::new(&class_id, &feat_code, &idempotency_key)?)
}

/// `value` as an object whose keys all belong to `allowed` (the fingerprint parser's
/// rule), owned.
fn object(
    value: Value,
    allowed: &[&str],
    field: &'static str,
) -> Result<Map<String, Value>, JournalError> {
    command_journal_core::tools::ledger::fingerprint::json::object(&value, allowed, field).cloned()
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
    use super::super::input::Problem;
    use super::*;

    /// Whether the stdin object of `action` validates (`Ok` means a journal is needed next).
    fn validate(action: LedgerAction, stdin: &str) -> Result<(), Failure> {
        LedgerCall::parse(action, stdin).map(drop)
    }

    fn run_fingerprint(stdin: &str) -> Result<Value, Failure> {
        Ok(fingerprint(&parse_fingerprint(stdin)?)?)
    }

    #[test]
    fn fingerprint_prints_the_canonical_text_it_hashed() {
        let stdin = r#"{"family":"overdraft_fee","fingerprintVersion":5,
            "effects":[{"seat_id":"s","amount":"2.5"}],"intent":{"forceAuthority":true}}"#;
        let out = run_fingerprint(stdin).expect("fingerprint");
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
            run_fingerprint(dup),
            Err(Failure::key("family".into(), Problem::Duplicate))
        );
        let v3 = r#"{"family":"effect_plan","fingerprintVersion":3,"effects":[{}]}"#;
        assert_eq!(
            run_fingerprint(v3),
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
        assert_eq!(validate(LedgerAction::Accept, &accept), Ok(()));
        let extra = format!("{{{base},{plan},\"x\":1}}");
        assert_eq!(
            validate(LedgerAction::Accept, &extra),
            Err(Failure::key("x".into(), Problem::Unknown))
        );
        let plan_extra = format!(
            "{{{base},\"plan\":{{\"family\":\"effect_plan\",\"fingerprintVersion\":5,\"effects\":[{{}}],\"x\":1}}}}"
        );
        assert_eq!(
            validate(LedgerAction::Accept, &plan_extra),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "plan"
            }))
        );
        let bad_scope = r#"{"classId":"c","featCode":"f","idempotencyKey":"k","scope":{"seatId":"s"},"plan":{}}"#;
        assert_eq!(
            validate(LedgerAction::Accept, bad_scope),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "scope"
            }))
        );
        let charge = format!(
            "{{{base},\"charge\":{{\"family\":\"overdraft_fee\",\"intent\":{{\"forceAuthority\":false}}}}}}"
        );
        assert_eq!(validate(LedgerAction::Replay, &charge), Ok(()));
        let not_a_charge =
            format!("{{{base},\"charge\":{{\"family\":\"reversal\",\"intent\":null}}}}");
        assert_eq!(
            validate(LedgerAction::Replay, &not_a_charge),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "family"
            }))
        );
        let bad_intent = format!(
            "{{{base},\"charge\":{{\"family\":\"store_purchase\",\"intent\":{{\"quantity\":0}}}}}}"
        );
        assert_eq!(
            validate(LedgerAction::Replay, &bad_intent),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "intent"
            }))
        );
        let both = format!("{{{base},\"charge\":{{}},\"reversal\":{{}}}}");
        assert_eq!(
            validate(LedgerAction::Replay, &both),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "reversal"
            }))
        );
        assert_eq!(
            validate(LedgerAction::Replay, &format!("{{{base}}}")),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "charge"
            }))
        );
        let reversal = format!("{{{base},\"reversal\":{{\"actorSeatId\":7}}}}");
        assert_eq!(
            validate(LedgerAction::Replay, &reversal),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "reversal"
            }))
        );
        let reversal = format!("{{{base},\"reversal\":{{\"mechanism\":\"WALLET\"}}}}");
        assert_eq!(validate(LedgerAction::Replay, &reversal), Ok(()));
    }

    #[test]
    fn link_validates_the_historical_command_before_needing_a_journal() {
        let base = r#""classId":"c","featCode":"f","idempotencyKey":"k","scope":{"seatId":"s","actorSeatId":"a"}"#;
        let historical = |fields: &str| {
            format!(
                "{{{base},\"historical\":{{\"family\":\"effect_plan\",\"fingerprint\":\"{}\",{fields}}}}}",
                "a".repeat(64)
            )
        };
        let good = r#""fingerprintVersion":4,"acceptedAt":"2020-09-13T12:26:40Z","migrationId":"m","effectIds":["x-0"],"effects":[{"amount":"1"}]"#;
        assert_eq!(validate(LedgerAction::Link, &historical(good)), Ok(()));
        let cases = [
            (good.replace("4,", "\"4\","), "fingerprintVersion"),
            (
                good.replace("2020-09-13T12:26:40Z", "yesterday"),
                "acceptedAt",
            ),
            (good.replace("[\"x-0\"]", "[7]"), "effectIds"),
            (good.replace("\"1\"", "\"1.001\""), "effects"),
            (good.replace("\"m\"", "7"), "migrationId"),
            (format!("{good},\"extra\":1"), "historical"),
        ];
        for (fields, field) in cases {
            assert_eq!(
                validate(LedgerAction::Link, &historical(&fields)),
                Err(Failure::Journal(JournalError::InvalidInput { field })),
                "{fields}"
            );
        }
        let bad_digest = historical(good).replace(&"a".repeat(64), "A");
        assert_eq!(
            validate(LedgerAction::Link, &bad_digest),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "fingerprint"
            }))
        );
    }
}
