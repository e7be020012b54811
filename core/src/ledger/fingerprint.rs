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

use super::booking::{ItemRule, fingerprint_item};
use crate::digest::Digest;
use crate::error::JournalError;
use canonical::{effect_value, intent_value, transfer_value};
use json::{absent_or_null, json_effects, json_intent, json_transfer, json_version, object};
use plan::{effect_is_valid, intent_is_valid, transfer_is_valid};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

mod canonical;
pub(crate) mod json;
pub(crate) mod plan;

pub(crate) use plan::check_version;
pub use plan::{
    Amount, COMPENSATION_SUBTYPE_KEY, CURRENT_FINGERPRINT_VERSION, CommandFamily, EffectPlanItem,
    Intent, MAX_EFFECTS, MAX_TEXT_BYTES, TRANSFER_KEYS, TransferPlan, V4_EFFECT_KEYS,
};

/// The keys of the serializer input object.
const TOP_LEVEL_KEYS: [&str; 5] = [
    "family",
    "fingerprintVersion",
    "effects",
    "intent",
    "transfer",
];

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

    /// This command as the library's `Journal::accept_ledger_command` fingerprints it
    /// from its booked effects: each effect's amount null where the family's business
    /// tuple leaves it derived (an overdraft fee, a rent payment without a requested
    /// amount; `docs/ledger.md`, "Booked rows and fingerprint items"), every other
    /// field, and a transfer, unchanged. The effect rows keep the amounts booked.
    pub fn excluding_derived_amounts(&self) -> Self {
        self.items_under(ItemRule::DerivedAmountsNull)
    }

    /// This command's fingerprint items under `rule`, its effects taken as booked.
    pub(crate) fn items_under(&self, rule: ItemRule) -> Self {
        let body = match &self.body {
            Body::EffectPlan { effects, intent } => Body::EffectPlan {
                effects: effects
                    .iter()
                    .map(|e| fingerprint_item(rule, self.family, intent.as_ref(), e))
                    .collect(),
                intent: intent.clone(),
            },
            Body::Transfer(transfer) => Body::Transfer(transfer.clone()),
        };
        Self {
            family: self.family,
            version: self.version,
            body,
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

#[cfg(test)]
mod tests;
