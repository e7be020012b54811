//! The booked effect apart from its fingerprint item: a stored effect row keeps the
//! amount it booked, and the item a fingerprint hashes is rebuilt from that row by
//! the rule its reservation's schema version names (`docs/ledger.md`, "Booked rows
//! and fingerprint items").
//!
//! Seed 003 keeps "the existing derived-amount exclusion" as an explicit null in the
//! version-4 and version-5 effect items: an amount the ledger derives from state at
//! pricing time (a balance, a fee schedule over it) is not what identifies the
//! command, so an exact retry priced against a balance that moved is still the same
//! command. Which amounts are derived follows from what each family's business tuple
//! establishes:
//!
//! | family | business tuple | effect amounts |
//! |---|---|---|
//! | `store_purchase` | policy and quantity: the policy's price | booked and fingerprinted |
//! | `rent_payment` with a requested amount | the obligation and the amount requested | booked and fingerprinted |
//! | `rent_payment` without one (`null`) | the obligation only: its outstanding balance is paid | **derived**: booked, fingerprinted as null |
//! | `insurance_premium` | the entitlement (and obligation): its premium | booked and fingerprinted |
//! | `overdraft_fee` | the force authority only: the fee is computed from the balance | **derived**: booked, fingerprinted as null |
//! | `reversal`, `effect_plan` | none: the effect vector is the command | booked and fingerprinted |
//! | `internal_transfer` | its own serializer: the requested amount | booked and fingerprinted |
//!
//! A derived amount is excluded from every effect of the command, under versions 4
//! and 5 alike. The rule is selected by the reservation, never recomputed for an old
//! one: reservations of schema versions 1 and 2 fingerprinted every effect as booked
//! ([`ItemRule::AsBooked`]), and keep being compared so; schema version 3 applies the
//! table above ([`ItemRule::DerivedAmountsNull`]).
//!
//! The fields the seed fixes ([`fixed_fields_hold`]) are what every new canonical
//! effect may carry: the mechanism is null or one of the closed canonical values of
//! [`Mechanism`], and every non-recovery effect (every effect but a reversal's
//! compensating ones) has zero compensation cents and null locators and subtype.
//!
//! Pure: no I/O, no clock.

use super::fingerprint::plan::{CommandFamily, EffectPlanItem, Intent};

/// The mechanism of an effect, as its canonical scalar value (seed 003: "Mechanism
/// uses its canonical scalar value"): a closed set. An accepted effect's `mechanism`
/// is null (a transfer leg has none) or exactly one of these texts; any other text,
/// a lower-case spelling included, is refused, never normalized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mechanism {
    /// `WALLET`: the seat's own account balance funds or receives the effect (a
    /// purchase, a rent payment, a premium).
    Wallet,
    /// `FEE`: a fee the ledger charges (an overdraft fee).
    Fee,
    /// `REVERSAL`: a correction returning an effect booked before.
    Reversal,
}

impl Mechanism {
    /// Every canonical value, in declaration order.
    pub const ALL: [Self; 3] = [Self::Wallet, Self::Fee, Self::Reversal];

    /// The canonical scalar value stored and fingerprinted.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Wallet => "WALLET",
            Self::Fee => "FEE",
            Self::Reversal => "REVERSAL",
        }
    }

    /// The mechanism whose canonical value is exactly `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == text)
    }
}

/// True for a recovery effect: a compensating effect of a reversal (compensation cents
/// above zero). Every other effect of every family is a non-recovery effect.
pub(crate) fn is_recovery(family: CommandFamily, item: &EffectPlanItem) -> bool {
    family == CommandFamily::Reversal && item.compensation_amount_cents > 0
}

/// Whether `item`, an effect of a `family` command, holds the fields the seed fixes:
/// its mechanism null or canonical ([`Mechanism`]), and unless it is a recovery
/// effect ([`is_recovery`]) zero compensation cents and a null compensation origin
/// locator, correction intent locator and compensation subtype.
pub(crate) fn fixed_fields_hold(family: CommandFamily, item: &EffectPlanItem) -> bool {
    let mechanism_ok = item
        .mechanism
        .as_deref()
        .is_none_or(|m| Mechanism::parse(m).is_some());
    let recovery_ok = is_recovery(family, item)
        || (item.compensation_amount_cents == 0
            && item.compensation_origin_locator.is_none()
            && item.correction_intent_locator.is_none()
            && item.compensation_subtype.is_none());
    mechanism_ok && recovery_ok
}

/// How a reservation's fingerprint items derive from its booked effects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ItemRule {
    /// Reservation schema versions 1 and 2: each item is the booked effect as stored.
    AsBooked,
    /// Reservation schema version 3: the family's derived amounts are null in each
    /// item (the module's table); every other field is the booked one.
    DerivedAmountsNull,
}

/// True when the amounts of a `family` command with business tuple `intent` are
/// derived from state at pricing time, so its fingerprint items carry a null amount.
pub(crate) fn amounts_are_derived(family: CommandFamily, intent: Option<&Intent>) -> bool {
    match family {
        CommandFamily::OverdraftFee => true,
        CommandFamily::RentPayment => matches!(
            intent,
            Some(Intent::RentPayment {
                requested_payment_amount: None,
                ..
            })
        ),
        CommandFamily::StorePurchase
        | CommandFamily::InsurancePremium
        | CommandFamily::Reversal
        | CommandFamily::EffectPlan
        | CommandFamily::InternalTransfer => false,
    }
}

/// The fingerprint item of the booked effect `booked` of a `family` command with
/// business tuple `intent`, under `rule`.
pub(crate) fn fingerprint_item(
    rule: ItemRule,
    family: CommandFamily,
    intent: Option<&Intent>,
    booked: &EffectPlanItem,
) -> EffectPlanItem {
    match rule {
        ItemRule::DerivedAmountsNull if amounts_are_derived(family, intent) => EffectPlanItem {
            amount: None,
            ..booked.clone()
        },
        ItemRule::AsBooked | ItemRule::DerivedAmountsNull => booked.clone(),
    }
}

#[cfg(test)]
mod tests;
