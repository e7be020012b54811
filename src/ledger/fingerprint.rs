//! Versioned replay fingerprints for ledger commands: serializer versions 4 and 5
//! (the latter adds the compensation subtype), described in `docs/ledger.md`.
//!
//! Pure code: no clock, no I/O. A [`FingerprintInput`] is validated and normalized once
//! (by [`FingerprintInput::from_json`] or the typed constructors) and can then be
//! serialized under any version that has a serializer here, so a stored version-4
//! reservation replays under version 4 while new commands use
//! [`CURRENT_FINGERPRINT_VERSION`].
//!
//! The fingerprint is the lowercase hex SHA-256 of the UTF-8 bytes of RFC 8785 (JCS)
//! canonical JSON:
//!
//! - effect-plan families (every family except `internal_transfer`):
//!   `{"effects": [...], "intent": ...}`. Each effect has exactly the twelve keys of
//!   [`V4_EFFECT_KEYS`] under version 4, and those plus `compensation_subtype` under
//!   version 5. Effects keep the order they were given in (the accepted creation
//!   order). The intent is the family's tuple as a JSON array, or `null` for
//!   `reversal` and `effect_plan`.
//! - `internal_transfer`: the seven-key transfer object of [`TRANSFER_KEYS`] alone, with
//!   no envelope; identical bytes under versions 4 and 5.
//!
//! Rules this module sets:
//!
//! - Amounts are JSON strings (a JSON number is rejected) matching
//!   `-?(0|[1-9][0-9]{0,12})(\.[0-9]{1,2})?`, normalized to exactly two decimals
//!   (`"12.5"` → `"12.50"`, `"3"` → `"3.00"`). More than two decimals, exponents, `+`,
//!   leading zeros, whitespace, an empty string and negative zero are rejected, never
//!   rounded. At most 13 integer digits, so every amount in cents is below 2^53.
//! - Effect amounts may be negative (a signed ledger row); the rent intent's
//!   `requestedPaymentAmount` and the transfer `amount` may not (their direction is
//!   carried elsewhere).
//! - Text scalars are non-empty strings of at most [`MAX_TEXT_BYTES`] bytes, or null; an
//!   empty string is rejected so it can never stand in for null. `policyUuid` must be
//!   canonical lowercase hyphenated UUID text.
//! - An absent field and an explicit `null` are the same; `compensation_amount_cents`
//!   is then 0.
//! - Version 4 does not cover `compensation_subtype`: an effect carrying one is
//!   serialized without it under version 4 (the old serializer's exact coverage), and
//!   nothing is fabricated for it.
//! - An effect plan has 1 to [`MAX_EFFECTS`] effects.
//!
//! Every rejection is [`JournalError::InvalidInput`] naming the container of the bad
//! value (`input`, `family`, `fingerprintVersion`, `effects`, `intent`, `transfer`),
//! never the value or an unknown key's text. A version with no serializer here (1–3,
//! or any integer other than 4 and 5) is [`JournalError::UnsupportedFingerprintVersion`].

use crate::digest::Digest;
use crate::error::JournalError;
use crate::identity::MAX_SAFE_INTEGER;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// The fingerprint version every newly accepted command uses.
pub const CURRENT_FINGERPRINT_VERSION: u32 = 5;
/// The largest number of effects one effect-plan command may carry.
pub const MAX_EFFECTS: usize = 256;
/// The largest text scalar (seat id, locator, correlation, ...) in UTF-8 bytes.
pub const MAX_TEXT_BYTES: usize = 1024;
/// The largest number of integer digits an amount may have.
const MAX_AMOUNT_INTEGER_DIGITS: usize = 13;

/// The twelve effect keys version 4 hashes, in this order.
pub const V4_EFFECT_KEYS: [&str; 12] = [
    "seat_id",
    "target_seat_id",
    "actor_seat_id",
    "mechanism",
    "amount",
    "account_type",
    "type",
    "original_transaction_id",
    "policy_id",
    "compensation_origin_locator",
    "compensation_amount_cents",
    "correction_intent_locator",
];
/// The key version 5 adds to every effect (null for non-compensating effects).
pub const COMPENSATION_SUBTYPE_KEY: &str = "compensation_subtype";
/// The seven keys of the internal-transfer serializer.
pub const TRANSFER_KEYS: [&str; 7] = [
    "account_direction",
    "target_seat_id",
    "actor_seat_id",
    "amount",
    "type",
    "original_transaction_id",
    "policy_id",
];
const TOP_LEVEL_KEYS: [&str; 5] = [
    "family",
    "fingerprintVersion",
    "effects",
    "intent",
    "transfer",
];

/// Fails with `UnsupportedFingerprintVersion` unless this crate has a serializer for
/// `version` (4 or 5).
pub fn check_version(version: u32) -> Result<(), JournalError> {
    match version {
        4 | 5 => Ok(()),
        _ => Err(JournalError::UnsupportedFingerprintVersion),
    }
}

/// The originating command family; selects the serializer together with the version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandFamily {
    /// Store purchase, intent `("STORE_PURCHASE", policy_uuid, quantity)`.
    StorePurchase,
    /// Rent payment, intent `("RENT_PAYMENT", obligation_correlation, amount_or_null)`.
    RentPayment,
    /// Manual insurance premium, intent
    /// `("INSURANCE_PREMIUM", entitlement_id, selected_obligation_correlation_or_null)`.
    InsurancePremium,
    /// Explicit overdraft fee, intent `("OVERDRAFT_FEE", force_authority)`.
    OverdraftFee,
    /// A reversal: its effect vector alone establishes equivalence (intent null).
    Reversal,
    /// A generic effect plan: its effect vector alone establishes equivalence.
    EffectPlan,
    /// An internal transfer, hashed with its own seven-key serializer.
    InternalTransfer,
}

impl CommandFamily {
    /// Every family, in declaration order.
    pub const ALL: [Self; 7] = [
        Self::StorePurchase,
        Self::RentPayment,
        Self::InsurancePremium,
        Self::OverdraftFee,
        Self::Reversal,
        Self::EffectPlan,
        Self::InternalTransfer,
    ];

    /// Parses the exact snake_case name; anything else is `invalid_input` on `family`.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        Self::ALL
            .into_iter()
            .find(|family| family.as_str() == text)
            .ok_or(JournalError::invalid("family"))
    }

    /// The exact snake_case name stored and accepted on input.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StorePurchase => "store_purchase",
            Self::RentPayment => "rent_payment",
            Self::InsurancePremium => "insurance_premium",
            Self::OverdraftFee => "overdraft_fee",
            Self::Reversal => "reversal",
            Self::EffectPlan => "effect_plan",
            Self::InternalTransfer => "internal_transfer",
        }
    }

    /// True for every family hashed with the `{effects, intent}` envelope.
    pub fn is_effect_plan(self) -> bool {
        self != Self::InternalTransfer
    }
}

/// A monetary amount normalized to exactly two decimals (`"12.50"`, `"-4.10"`).
///
/// Only [`Amount::parse`] constructs one, so the text is always canonical.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Amount(String);

impl Amount {
    /// Parses `-?(0|[1-9][0-9]{0,12})(\.[0-9]{1,2})?` except negative zero, padding the
    /// fraction to two digits; anything else (including a third decimal) is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        let (negative, magnitude) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (whole, fraction) = match magnitude.split_once('.') {
            Some((whole, fraction)) => (whole, Some(fraction)),
            None => (magnitude, None),
        };
        let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !all_digits(whole)
            || whole.len() > MAX_AMOUNT_INTEGER_DIGITS
            || (whole.len() > 1 && whole.starts_with('0'))
        {
            return None;
        }
        let fraction = match fraction {
            None => "",
            Some(f) if all_digits(f) && f.len() <= 2 => f,
            Some(_) => return None,
        };
        if negative && whole == "0" && fraction.bytes().all(|b| b == b'0') {
            return None;
        }
        let sign = if negative { "-" } else { "" };
        Some(Self(format!("{sign}{whole}.{fraction:0<2}")))
    }

    /// The normalized two-decimal text that is hashed.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when the amount is below zero.
    pub fn is_negative(&self) -> bool {
        self.0.starts_with('-')
    }
}

/// One effect of an effect plan, normalized; field names are its JSON keys.
///
/// `None` encodes as JSON null. The default is a non-recovery effect with every field
/// null and zero compensation cents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EffectPlanItem {
    /// The scoped seat the effect posts to.
    pub seat_id: Option<String>,
    /// The target seat.
    pub target_seat_id: Option<String>,
    /// The acting seat.
    pub actor_seat_id: Option<String>,
    /// The mechanism's canonical scalar value.
    pub mechanism: Option<String>,
    /// The two-decimal amount, or null where the family excludes a derived amount.
    pub amount: Option<Amount>,
    /// The account type.
    pub account_type: Option<String>,
    /// The transaction type (JSON key `type`).
    pub r#type: Option<String>,
    /// The corrected original transaction, for corrections.
    pub original_transaction_id: Option<String>,
    /// The policy identity.
    pub policy_id: Option<String>,
    /// Where the compensation originates; null for non-recovery effects.
    pub compensation_origin_locator: Option<String>,
    /// Compensation in cents, 0 to 2^53-1; 0 for non-recovery effects.
    pub compensation_amount_cents: u64,
    /// The correction intent; null for non-recovery effects.
    pub correction_intent_locator: Option<String>,
    /// The structured compensation reason; covered by version 5 only.
    pub compensation_subtype: Option<String>,
}

/// The originating FEAT's business tuple, bound by the shared charge families.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Intent {
    /// `("STORE_PURCHASE", policy_uuid, quantity)`.
    StorePurchase {
        /// Canonical lowercase hyphenated UUID text.
        policy_uuid: String,
        /// 1 to 2^53-1.
        quantity: u64,
    },
    /// `("RENT_PAYMENT", obligation_correlation, requested_payment_amount_or_null)`.
    RentPayment {
        /// The obligation paid.
        obligation_correlation: String,
        /// A requested partial payment (non-negative), or null.
        requested_payment_amount: Option<Amount>,
    },
    /// `("INSURANCE_PREMIUM", entitlement_id, selected_obligation_correlation_or_null)`.
    InsurancePremium {
        /// The entitlement charged.
        entitlement_id: String,
        /// A selected existing obligation, or null.
        selected_obligation_correlation: Option<String>,
    },
    /// `("OVERDRAFT_FEE", force_authority)`.
    OverdraftFee {
        /// Whether the fee was forced by explicit authority.
        force_authority: bool,
    },
}

impl Intent {
    /// The one family this tuple belongs to.
    pub fn family(&self) -> CommandFamily {
        match self {
            Self::StorePurchase { .. } => CommandFamily::StorePurchase,
            Self::RentPayment { .. } => CommandFamily::RentPayment,
            Self::InsurancePremium { .. } => CommandFamily::InsurancePremium,
            Self::OverdraftFee { .. } => CommandFamily::OverdraftFee,
        }
    }
}

/// The internal-transfer command, normalized; field names are the serializer's keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransferPlan {
    /// The account direction.
    pub account_direction: Option<String>,
    /// The scoped target seat.
    pub target_seat_id: Option<String>,
    /// The scoped actor seat.
    pub actor_seat_id: Option<String>,
    /// The requested amount (non-negative).
    pub amount: Option<Amount>,
    /// The transfer type (JSON key `type`).
    pub r#type: Option<String>,
    /// The original transaction identity.
    pub original_transaction_id: Option<String>,
    /// The policy identity.
    pub policy_id: Option<String>,
}

/// A computed fingerprint together with the exact text that was hashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    /// The serializer version used.
    pub version: u32,
    /// Lowercase hex SHA-256 of the UTF-8 bytes of `canonical`.
    pub digest: Digest,
    /// The RFC 8785 canonical JSON text that was hashed.
    pub canonical: String,
}

/// A validated, normalized ledger command ready to be fingerprinted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FingerprintInput {
    family: CommandFamily,
    version: u32,
    body: Body,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Body {
    EffectPlan {
        effects: Vec<EffectPlanItem>,
        intent: Option<Intent>,
    },
    Transfer(TransferPlan),
}

impl FingerprintInput {
    /// Validates and normalizes the serializer input object (`family`,
    /// `fingerprintVersion`, and `effects` + `intent` or `transfer`).
    pub fn from_json(value: &Value) -> Result<Self, JournalError> {
        let top = object(value, &TOP_LEVEL_KEYS, "input")?;
        let family = match top.get("family") {
            Some(Value::String(text)) => CommandFamily::parse(text)?,
            _ => return Err(JournalError::invalid("family")),
        };
        let version = json_version(top.get("fingerprintVersion"))?;
        if family.is_effect_plan() {
            absent_or_null(top, "transfer")?;
            let effects = json_effects(top.get("effects"))?;
            let intent = json_intent(family, top.get("intent"))?;
            Self::effect_plan(family, version, effects, intent)
        } else {
            absent_or_null(top, "effects")?;
            absent_or_null(top, "intent")?;
            let transfer = json_transfer(top.get("transfer"))?;
            Self::internal_transfer(version, transfer)
        }
    }

    /// Validates an effect-plan command: an effect-plan `family`, a supported
    /// `version`, 1 to [`MAX_EFFECTS`] effects, and the intent the family requires
    /// (`None` exactly for `reversal` and `effect_plan`).
    pub fn effect_plan(
        family: CommandFamily,
        version: u32,
        effects: Vec<EffectPlanItem>,
        intent: Option<Intent>,
    ) -> Result<Self, JournalError> {
        if !family.is_effect_plan() {
            return Err(JournalError::invalid("family"));
        }
        check_version(version)?;
        let effects_ok =
            (1..=MAX_EFFECTS).contains(&effects.len()) && effects.iter().all(effect_is_valid);
        if !effects_ok {
            return Err(JournalError::invalid("effects"));
        }
        let intent_ok = match &intent {
            None => matches!(family, CommandFamily::Reversal | CommandFamily::EffectPlan),
            Some(intent) => intent.family() == family && intent_is_valid(intent),
        };
        if !intent_ok {
            return Err(JournalError::invalid("intent"));
        }
        Ok(Self {
            family,
            version,
            body: Body::EffectPlan { effects, intent },
        })
    }

    /// Validates an internal-transfer command under a supported `version`.
    pub fn internal_transfer(version: u32, transfer: TransferPlan) -> Result<Self, JournalError> {
        check_version(version)?;
        if !transfer_is_valid(&transfer) {
            return Err(JournalError::invalid("transfer"));
        }
        Ok(Self {
            family: CommandFamily::InternalTransfer,
            version,
            body: Body::Transfer(transfer),
        })
    }

    /// The command family.
    pub fn family(&self) -> CommandFamily {
        self.family
    }

    /// The fingerprint version the input declared (always 4 or 5).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The ordered effects; empty for an internal transfer.
    pub fn effects(&self) -> &[EffectPlanItem] {
        match &self.body {
            Body::EffectPlan { effects, .. } => effects,
            Body::Transfer(_) => &[],
        }
    }

    /// The business tuple; `None` for reversal, effect plan and internal transfer.
    pub fn intent(&self) -> Option<&Intent> {
        match &self.body {
            Body::EffectPlan { intent, .. } => intent.as_ref(),
            Body::Transfer(_) => None,
        }
    }

    /// The transfer; `Some` exactly for an internal transfer.
    pub fn transfer(&self) -> Option<&TransferPlan> {
        match &self.body {
            Body::EffectPlan { .. } => None,
            Body::Transfer(transfer) => Some(transfer),
        }
    }

    /// The RFC 8785 canonical JSON text `version`'s serializer hashes for this command.
    pub fn canonical(&self, version: u32) -> Result<String, JournalError> {
        check_version(version)?;
        let value = match &self.body {
            Body::EffectPlan { effects, intent } => {
                let effects = effects
                    .iter()
                    .map(|effect| effect_value(effect, version))
                    .collect();
                let mut envelope = Map::new();
                envelope.insert("effects".into(), Value::Array(effects));
                envelope.insert("intent".into(), intent_value(intent.as_ref()));
                Value::Object(envelope)
            }
            Body::Transfer(transfer) => transfer_value(transfer),
        };
        serde_json_canonicalizer::to_string(&value).map_err(|_| JournalError::invalid("input"))
    }

    /// The fingerprint under `version` (4 or 5), whatever version the input declared.
    pub fn fingerprint(&self, version: u32) -> Result<Fingerprint, JournalError> {
        let canonical = self.canonical(version)?;
        let digest = Digest::parse(&hex::encode(Sha256::digest(canonical.as_bytes())))
            .ok_or(JournalError::corrupt("sha-256 hex is not a digest"))?;
        Ok(Fingerprint {
            version,
            digest,
            canonical,
        })
    }
}

// ---------------------------------------------------------------------------------
// validation shared by the typed constructors and the JSON parser
// ---------------------------------------------------------------------------------

fn text_is_valid(text: &str) -> bool {
    !text.is_empty() && text.len() <= MAX_TEXT_BYTES
}

fn opt_text_is_valid(text: &Option<String>) -> bool {
    text.as_deref().is_none_or(text_is_valid)
}

fn non_negative(amount: &Option<Amount>) -> bool {
    amount.as_ref().is_none_or(|a| !a.is_negative())
}

fn is_canonical_uuid(text: &str) -> bool {
    uuid::Uuid::try_parse(text).is_ok_and(|uuid| uuid.hyphenated().to_string() == text)
}

fn effect_is_valid(effect: &EffectPlanItem) -> bool {
    [
        &effect.seat_id,
        &effect.target_seat_id,
        &effect.actor_seat_id,
        &effect.mechanism,
        &effect.account_type,
        &effect.r#type,
        &effect.original_transaction_id,
        &effect.policy_id,
        &effect.compensation_origin_locator,
        &effect.correction_intent_locator,
        &effect.compensation_subtype,
    ]
    .into_iter()
    .all(opt_text_is_valid)
        && effect.compensation_amount_cents <= MAX_SAFE_INTEGER
}

fn intent_is_valid(intent: &Intent) -> bool {
    match intent {
        Intent::StorePurchase {
            policy_uuid,
            quantity,
        } => is_canonical_uuid(policy_uuid) && (1..=MAX_SAFE_INTEGER).contains(quantity),
        Intent::RentPayment {
            obligation_correlation,
            requested_payment_amount,
        } => text_is_valid(obligation_correlation) && non_negative(requested_payment_amount),
        Intent::InsurancePremium {
            entitlement_id,
            selected_obligation_correlation,
        } => text_is_valid(entitlement_id) && opt_text_is_valid(selected_obligation_correlation),
        Intent::OverdraftFee { .. } => true,
    }
}

fn transfer_is_valid(transfer: &TransferPlan) -> bool {
    [
        &transfer.account_direction,
        &transfer.target_seat_id,
        &transfer.actor_seat_id,
        &transfer.r#type,
        &transfer.original_transaction_id,
        &transfer.policy_id,
    ]
    .into_iter()
    .all(opt_text_is_valid)
        && non_negative(&transfer.amount)
}

// ---------------------------------------------------------------------------------
// JSON input
// ---------------------------------------------------------------------------------

/// `value` as an object whose keys all belong to `allowed`; else `field` is invalid.
fn object<'a>(
    value: &'a Value,
    allowed: &[&str],
    field: &'static str,
) -> Result<&'a Map<String, Value>, JournalError> {
    match value {
        Value::Object(map) if map.keys().all(|key| allowed.contains(&key.as_str())) => Ok(map),
        _ => Err(JournalError::invalid(field)),
    }
}

fn absent_or_null(map: &Map<String, Value>, key: &'static str) -> Result<(), JournalError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(()),
        Some(_) => Err(JournalError::invalid(key)),
    }
}

/// An integer version: 4 and 5 are supported, any other integer is unsupported, and
/// anything that is not a JSON integer is invalid.
fn json_version(value: Option<&Value>) -> Result<u32, JournalError> {
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

fn json_effects(value: Option<&Value>) -> Result<Vec<EffectPlanItem>, JournalError> {
    const F: &str = "effects";
    let Some(Value::Array(items)) = value else {
        return Err(JournalError::invalid(F));
    };
    if !(1..=MAX_EFFECTS).contains(&items.len()) {
        return Err(JournalError::invalid(F));
    }
    items.iter().map(json_effect).collect()
}

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

fn json_intent(
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

fn json_transfer(value: Option<&Value>) -> Result<TransferPlan, JournalError> {
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

// ---------------------------------------------------------------------------------
// canonical values
// ---------------------------------------------------------------------------------

fn text_value(text: &Option<String>) -> Value {
    text.as_ref()
        .map_or(Value::Null, |text| Value::String(text.clone()))
}

fn amount_value(amount: &Option<Amount>) -> Value {
    amount
        .as_ref()
        .map_or(Value::Null, |amount| Value::String(amount.0.clone()))
}

fn effect_value(effect: &EffectPlanItem, version: u32) -> Value {
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

fn intent_value(intent: Option<&Intent>) -> Value {
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

fn transfer_value(transfer: &TransferPlan) -> Value {
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

#[cfg(test)]
mod tests;
