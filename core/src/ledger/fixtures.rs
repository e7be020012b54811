//! Test fixtures shared by the ledger unit tests: commands, plans, historical rows and
//! imports into the shared in-memory store ([`crate::testing::Store`]).

use super::accept::Accept;
use super::effect::{self, LedgerEffect, Lineage};
use super::fingerprint::{EffectPlanItem, FingerprintInput};
use super::integrity;
use super::migration::{HistoricalCommand, Link};
use super::outcome::LedgerOutcome;
use super::reservation::{self, LedgerScope, ReservationDocument, ReservationSchema};
use super::stored::{self, Stored};
use crate::digest::Digest;
use crate::document::fields::{self, FieldMap};
use crate::identity::LedgerKey;
use crate::testing::Store;
use crate::time::Timestamp;
use serde_json::{Value, json};

/// The policy id every fixture plan names.
pub const POLICY: &str = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";

/// Ledger key `n` of the fixtures' class and feature.
pub fn key(n: u32) -> LedgerKey {
    LedgerKey::new("class-7", "FEAT-STORE", &format!("idem-{n}")).expect("key")
}

/// The reservation id of key `n`.
pub fn rid(n: u32) -> Digest {
    key(n).reservation_id()
}

/// The fixtures' ledger scope.
pub fn scope() -> LedgerScope {
    LedgerScope::new("seat-A", "seat-A").expect("scope")
}

/// The fixtures' captured time.
pub fn now() -> Timestamp {
    Timestamp::from_micros(1_800_000_000_123_456).expect("time")
}

/// `value` parsed as a fingerprint input (panics when invalid).
pub fn plan(value: Value) -> FingerprintInput {
    FingerprintInput::from_json(&value).expect("valid plan")
}

/// A one-effect store purchase of `amount` under `version`.
/// A store purchase of `quantity` at `amount` under serializer `version`, as JSON.
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

/// An overdraft fee of `amount` (a debit of the seat and the credit of the class's fee
/// account), with force authority `forced`: its amounts are derived.
pub fn fee(amount: &str, forced: bool) -> FingerprintInput {
    let credit = amount.strip_prefix('-').unwrap_or(amount);
    plan(json!({
        "family": "overdraft_fee",
        "fingerprintVersion": 5,
        "effects": [
            {"seat_id": "seat-A", "target_seat_id": "seat-A", "actor_seat_id": "seat-A",
             "mechanism": "FEE", "amount": amount, "account_type": "checking", "type": "FEE"},
            {"seat_id": "class-7", "target_seat_id": "seat-A", "actor_seat_id": "seat-A",
             "mechanism": "FEE", "amount": credit, "account_type": "fees", "type": "FEE"},
        ],
        "intent": {"forceAuthority": forced},
    }))
}

/// A rent payment of `amount` for obligation `rent-2026-10`, requesting `requested`
/// (`None`: the outstanding balance, a derived amount).
pub fn rent(amount: &str, requested: Option<&str>) -> FingerprintInput {
    plan(json!({
        "family": "rent_payment",
        "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "target_seat_id": "seat-A", "actor_seat_id": "seat-A",
                     "mechanism": "WALLET", "amount": amount, "account_type": "checking",
                     "type": "RENT"}],
        "intent": {"obligationCorrelation": "rent-2026-10", "requestedPaymentAmount": requested},
    }))
}

/// A store purchase of 2 at `amount` under serializer `version`.
pub fn store(version: u32, amount: &str) -> FingerprintInput {
    plan(store_json(version, amount, 2))
}

/// An internal transfer of `amount`.
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

/// A store in which key `n` accepted `plan` (reservation schema version 2).
pub fn accept_into(memory: &mut Store, n: u32, plan: &FingerprintInput) -> LedgerOutcome {
    memory
        .answer(&Accept::new(&key(n), plan, &scope(), now()).expect("op"))
        .expect("accepted")
}

/// The reservation of key `n` and its rows, parsed from `memory` (no integrity check).
pub(crate) fn stored_of(memory: &Store, n: u32) -> Stored {
    let reservation =
        ReservationDocument::parse(rid(n).as_str(), &memory[&reservation::path(&rid(n))])
            .expect("reservation");
    let effects = reservation
        .effect_ids
        .iter()
        .map(|id| LedgerEffect::parse(id, &memory[&effect::path(id)]).expect("effect"))
        .collect();
    Stored {
        reservation,
        effects,
    }
}

/// Sets field `name` of the document at `path` to `value`, as an edit outside the
/// journal's operations would.
pub fn edit(memory: &mut Store, path: &str, name: &str, value: crate::document::value::Value) {
    let mut doc: FieldMap = memory[path].clone();
    doc.insert(name.to_owned(), value);
    memory.insert(path.to_owned(), doc);
}

/// Sets the amount of effect `i` of key `n`.
pub fn edit_amount(memory: &mut Store, n: u32, i: usize, amount: &str) {
    let path = effect::path(&effect::effect_id(&rid(n), i));
    edit(memory, &path, "amount", fields::string(amount));
}

/// Recomputes and stores key `n`'s integrity digest over its stored reservation and
/// rows, as a writer that also recomputes the digest would (a newer crate, or an edit
/// made with knowledge of the digest).
pub fn reseal(memory: &mut Store, n: u32) {
    let mut stored = stored_of(memory, n);
    stored.reservation.integrity_digest =
        Some(integrity::integrity_digest(&stored.reservation, &stored.effects).expect("digest"));
    memory.insert(reservation::path(&rid(n)), stored.reservation.encode());
}

/// Rewrites key `n`'s reservation as schema version 1 (without its integrity digest),
/// as a release before the digest stored it.
pub fn strip_digest(memory: &mut Store, n: u32) {
    let mut stored = stored_of(memory, n);
    stored.reservation.schema = ReservationSchema::V1;
    stored.reservation.integrity_digest = None;
    memory.insert(reservation::path(&rid(n)), stored.reservation.encode());
}

/// Rewrites key `n`'s reservation, which accepted `plan`, as a release before derived
/// amounts were excluded stored it: schema version 2, the fingerprint of `plan`'s
/// effects as booked, and the digest of that framing.
pub fn as_schema_2(memory: &mut Store, n: u32, plan: &FingerprintInput) {
    let mut stored = stored_of(memory, n);
    stored.reservation.schema = ReservationSchema::V2;
    stored.reservation.fingerprint = plan
        .fingerprint(stored.reservation.fingerprint_version)
        .expect("fingerprint")
        .digest;
    stored.reservation.integrity_digest =
        Some(integrity::integrity_digest(&stored.reservation, &stored.effects).expect("digest"));
    memory.insert(reservation::path(&rid(n)), stored.reservation.encode());
}

/// A one-effect `effect_plan` debiting 10.00 (the tampering case of `emulator-tests/tampering.rs`).
pub fn debit_plan() -> FingerprintInput {
    plan(json!({
        "family": "effect_plan", "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "target_seat_id": "seat-A", "actor_seat_id": "seat-A",
                     "amount": "-10.00", "account_type": "checking", "type": "DEBIT"}],
    }))
}

/// Puts a command in a store and returns the plan its exact retry sends.
pub type Setup = fn(&mut Store) -> FingerprintInput;

/// An edit of stored documents outside the journal's operations.
pub type Tamper = Box<dyn Fn(&mut Store)>;

/// Key 1 accepted [`debit_plan`]; returns the plan.
pub fn accepted_effect_plan(memory: &mut Store) -> FingerprintInput {
    let plan = debit_plan();
    accept_into(memory, 1, &plan);
    plan
}

/// Key 1 accepted an internal transfer of 10.00; returns the plan.
pub fn accepted_transfer(memory: &mut Store) -> FingerprintInput {
    let plan = transfer("10.00");
    accept_into(memory, 1, &plan);
    plan
}

/// Key 1 accepted a store purchase of 12.50, quantity 2; returns the plan.
pub fn accepted_store(memory: &mut Store) -> FingerprintInput {
    let plan = store(5, "12.5");
    accept_into(memory, 1, &plan);
    plan
}

/// Key 2 accepted a store purchase and key 1 a compensating version-5 reversal of its
/// effect (actor `officer-1`, mechanism `WALLET`, subtype `DUPLICATE_CHARGE`); returns
/// the reversal plan.
pub fn accepted_reversal(memory: &mut Store) -> FingerprintInput {
    accept_into(memory, 2, &store(5, "12.5"));
    let original = effect::effect_id(&rid(2), 0);
    let plan = plan(reversal_json(5, &original, Some("DUPLICATE_CHARGE")));
    accept_into(memory, 1, &plan);
    plan
}
