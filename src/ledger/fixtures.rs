//! Test fixtures shared by the ledger unit tests: commands, plans, historical rows and
//! imports into the shared in-memory store ([`crate::testing::Store`]).

use super::effect::{self, LedgerEffect, Lineage};
use super::fingerprint::{EffectPlanItem, FingerprintInput};
use super::migration::{HistoricalCommand, Link};
use super::outcome::LedgerOutcome;
use super::reservation::LedgerScope;
use super::stored;
use crate::digest::Digest;
use crate::identity::LedgerKey;
use crate::testing::Store;
use crate::time::Timestamp;
use serde_json::{Value, json};

pub const POLICY: &str = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";

pub fn key(n: u32) -> LedgerKey {
    LedgerKey::new("class-7", "FEAT-STORE", &format!("idem-{n}")).expect("key")
}

pub fn rid(n: u32) -> Digest {
    key(n).reservation_id()
}

pub fn scope() -> LedgerScope {
    LedgerScope::new("seat-A", "seat-A").expect("scope")
}

pub fn now() -> Timestamp {
    Timestamp::from_micros(1_800_000_000_123_456).expect("time")
}

pub fn plan(value: Value) -> FingerprintInput {
    FingerprintInput::from_json(&value).expect("valid plan")
}

/// A one-effect store purchase of `amount` under `version`.
pub fn store_json(version: u32, amount: &str, quantity: u64) -> Value {
    json!({
        "family": "store_purchase",
        "fingerprintVersion": version,
        "effects": [{
            "seat_id": "seat-A", "target_seat_id": "seat-A", "actor_seat_id": "seat-A",
            "mechanism": "WALLET", "amount": amount, "account_type": "checking",
            "type": "DEBIT", "policy_id": "policy-7"
        }],
        "intent": {"policyUuid": POLICY, "quantity": quantity},
    })
}

pub fn store(version: u32, amount: &str) -> FingerprintInput {
    plan(store_json(version, amount, 2))
}

pub fn transfer(amount: &str) -> FingerprintInput {
    plan(json!({
        "family": "internal_transfer",
        "fingerprintVersion": 5,
        "transfer": {
            "account_direction": "checking_to_savings", "target_seat_id": "seat-A",
            "actor_seat_id": "seat-A", "amount": amount, "type": "INTERNAL_TRANSFER",
        },
    }))
}

/// A one-effect reversal of `original`; compensating (1250 cents) when `subtype` is
/// given, so the subtype applies to it.
pub fn reversal_json(version: u32, original: &str, subtype: Option<&str>) -> Value {
    let cents = if subtype.is_some() { 1250 } else { 0 };
    json!({
        "family": "reversal",
        "fingerprintVersion": version,
        "effects": [{
            "seat_id": "seat-A", "target_seat_id": "seat-A", "actor_seat_id": "officer-1",
            "mechanism": "WALLET", "amount": "12.50", "account_type": "checking",
            "type": "REVERSAL", "original_transaction_id": original,
            "compensation_subtype": subtype, "compensation_amount_cents": cents,
        }],
    })
}

/// A historical command for `plan`'s effects (an internal transfer's derived legs)
/// with `plan`'s fingerprint under `version` (or any digest when the version has no
/// serializer), naming rows `legacy-0`, `legacy-1`, ….
pub fn historical(plan: &FingerprintInput, version: u32) -> HistoricalCommand {
    historical_tagged(plan, version, "legacy")
}

/// As [`historical`], naming rows `{tag}-0`, `{tag}-1`, ….
pub fn historical_tagged(plan: &FingerprintInput, version: u32, tag: &str) -> HistoricalCommand {
    let fingerprint = plan
        .fingerprint(version)
        .map(|f| f.digest)
        .unwrap_or_else(|_| Digest::parse(&"3".repeat(64)).expect("digest"));
    let effects: Vec<EffectPlanItem> = match plan.transfer() {
        Some(transfer) => stored::transfer_legs(transfer).expect("legs").to_vec(),
        None => plan.effects().to_vec(),
    };
    HistoricalCommand {
        family: plan.family(),
        fingerprint,
        fingerprint_version: version,
        accepted_at: Timestamp::from_micros(1_600_000_000_000_000).expect("time"),
        migration_id: "mig-2026-10".into(),
        effect_ids: (0..effects.len()).map(|i| format!("{tag}-{i}")).collect(),
        effects,
    }
}

/// A `historical_unlinked` row `id` holding `item`, as an import would leave it.
pub fn unlinked(id: &str, item: &EffectPlanItem) -> LedgerEffect {
    LedgerEffect {
        effect_id: id.to_owned(),
        lineage: Lineage::HistoricalUnlinked,
        reservation_id: None,
        effect_index: None,
        migration_id: None,
        transfer_leg: None,
        item: item.clone(),
        accepted_at: Timestamp::from_micros(1_500_000_000_000_000).expect("time"),
    }
}

/// Imports the rows `command` names into `memory`, as `historical_unlinked` rows
/// holding its effects (an import writes outside the journal's operations).
pub fn import(memory: &mut Store, command: &HistoricalCommand) {
    for (id, item) in command.effect_ids.iter().zip(&command.effects) {
        memory.insert(effect::path(id), unlinked(id, item).encode());
    }
}

/// Imports `command`'s rows and links them under key `n`.
pub fn import_and_link(memory: &mut Store, n: u32, command: &HistoricalCommand) -> LedgerOutcome {
    import(memory, command);
    memory
        .answer(&Link::new(&key(n), &scope(), command, now()).expect("link"))
        .expect("linked")
}
