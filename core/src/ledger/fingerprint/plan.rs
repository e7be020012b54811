//! The normalized parts of a ledger command (family, amounts, effects, intent,
//! transfer), the serializers' keys and limits, and the rules every part obeys.

use crate::error::JournalError;
use crate::identity::MAX_SAFE_INTEGER;

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
/// Fails with `UnsupportedFingerprintVersion` unless this crate has a serializer for
/// `version` (4 or 5).
pub(crate) fn check_version(version: u32) -> Result<(), JournalError> {
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
    pub(crate) fn is_effect_plan(self) -> bool {
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
    pub(crate) fn is_negative(&self) -> bool {
        self.0.starts_with('-')
    }

    /// The amount's magnitude in cents (`"-12.50"` → 1250): at most 13 integer
    /// digits, so always below 10^15.
    pub(crate) fn magnitude_cents(&self) -> u64 {
        let digits = self.0.trim_start_matches('-').replace('.', "");
        digits.parse().unwrap_or(u64::MAX)
    }

    /// The non-negative amount of `cents` cents, when it has at most 13 integer digits.
    pub(crate) fn from_cents(cents: u64) -> Option<Self> {
        Self::parse(&format!("{}.{:02}", cents / 100, cents % 100))
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

/// Whether `text` is a valid text scalar: non-empty, at most [`MAX_TEXT_BYTES`] bytes.
pub(super) fn text_is_valid(text: &str) -> bool {
    !text.is_empty() && text.len() <= MAX_TEXT_BYTES
}

/// Whether an optional text scalar is null or valid.
fn opt_text_is_valid(text: &Option<String>) -> bool {
    text.as_deref().is_none_or(text_is_valid)
}

/// Whether an optional amount is null or not negative.
fn non_negative(amount: &Option<Amount>) -> bool {
    amount.as_ref().is_none_or(|a| !a.is_negative())
}

/// Whether `text` is canonical lowercase hyphenated UUID text.
fn is_canonical_uuid(text: &str) -> bool {
    uuid::Uuid::try_parse(text).is_ok_and(|uuid| uuid.hyphenated().to_string() == text)
}

/// Whether every text of `effect` is valid and its cents are a safe integer.
pub(super) fn effect_is_valid(effect: &EffectPlanItem) -> bool {
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

/// Whether `intent`'s values are within their rules.
pub(super) fn intent_is_valid(intent: &Intent) -> bool {
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

/// Whether every text of `transfer` is valid and its amount not negative.
pub(super) fn transfer_is_valid(transfer: &TransferPlan) -> bool {
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
