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
//! Pure: no I/O, no clock.

use super::fingerprint::{CommandFamily, EffectPlanItem, Intent};

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
