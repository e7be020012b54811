//! Ledger reservations (docs/ledger.md) against the emulator: races, stored versions,
//! orphan effects, scope, reversal linkage and replay before pricing.

use super::support::{self, get, list, put, race};
use command_journal::Connection;
use command_journal::Timestamp;
use command_journal::identity::Digest;
use command_journal::ledger::LedgerKey;
use command_journal::ledger::{EffectPlanItem, FingerprintInput, Intent};
use command_journal::ledger::{
    HistoricalCommand, LedgerOutcome, LedgerReplay, LedgerScope, Lineage, Outcome,
    ReversalAuthority, TransferLeg,
};
use command_journal::{Journal, JournalError};
use gcloud_sdk::google::firestore::v1::value::ValueType;
use gcloud_sdk::google::firestore::v1::{Document, Value};
use serde_json::{Value as Json, json};
use std::collections::HashMap;

const ROUNDS: u32 = 3;
const RACERS: u64 = 24;
const POLICY: &str = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";

fn key(tag: &str, n: u32) -> LedgerKey {
    LedgerKey::new("class-7", "FEAT-STORE", &format!("{tag}-{n}")).expect("key")
}

fn scope() -> LedgerScope {
    LedgerScope::new("seat-A", "seat-A").expect("scope")
}

fn plan(value: Json) -> FingerprintInput {
    FingerprintInput::from_json(&value).expect("plan")
}

/// A store purchase charged in two effects: the price and a handling fee.
fn store_json(version: u32, price: &str, quantity: u64) -> Json {
    json!({
        "family": "store_purchase",
        "fingerprintVersion": version,
        "effects": [
            {"seat_id": "seat-A", "actor_seat_id": "seat-A", "mechanism": "WALLET",
             "amount": format!("-{price}"), "account_type": "checking", "type": "PURCHASE",
             "policy_id": "policy-7"},
            {"seat_id": "seat-A", "actor_seat_id": "seat-A", "mechanism": "WALLET",
             "amount": "-0.25", "account_type": "checking", "type": "FEE"},
        ],
        "intent": {"policyUuid": POLICY, "quantity": quantity},
    })
}

fn store(version: u32, price: &str) -> FingerprintInput {
    plan(store_json(version, price, 2))
}

fn store_intent(quantity: u64) -> Intent {
    Intent::StorePurchase {
        policy_uuid: POLICY.into(),
        quantity,
    }
}

fn transfer(amount: &str) -> FingerprintInput {
    plan(json!({
        "family": "internal_transfer", "fingerprintVersion": 5,
        "transfer": {"account_direction": "checking_to_savings", "target_seat_id": "seat-A",
                     "actor_seat_id": "seat-A", "amount": amount, "type": "INTERNAL"},
    }))
}

fn three_effects(n: u32) -> FingerprintInput {
    plan(json!({
        "family": "effect_plan", "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "amount": format!("-{n}.00")},
                    {"seat_id": "seat-B", "amount": format!("{n}.00")},
                    {"seat_id": "seat-C", "amount": null}],
    }))
}

fn reversal(original: &str, subtype: Option<&str>) -> FingerprintInput {
    plan(json!({
        "family": "reversal", "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "actor_seat_id": "officer-1", "mechanism": "WALLET",
                     "amount": "12.50", "account_type": "checking", "type": "REVERSAL",
                     "original_transaction_id": original, "compensation_subtype": subtype,
                     "compensation_amount_cents": if subtype.is_some() { 1250 } else { 0 }}],
    }))
}

fn authority(actor: &str, subtype: Option<&str>) -> ReversalAuthority {
    ReversalAuthority {
        actor_seat_id: Some(actor.into()),
        mechanism: Some("WALLET".into()),
        compensation_subtype: subtype.map(Into::into),
    }
}

fn historical(plan: &FingerprintInput, version: u32, tag: &str) -> HistoricalCommand {
    let fingerprint = match plan.fingerprint(version) {
        Ok(fingerprint) => fingerprint.digest,
        // No serializer for this version: the migration's proven digest.
        Err(_) => Digest::parse(&"3c".repeat(32)).expect("digest"),
    };
    let effects = plan.effects().to_vec();
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

/// The stored fields of a `historical_unlinked` row `id` holding `item`, as an import
/// leaves it.
pub fn unlinked_row_of(id: &str, item: &EffectPlanItem) -> HashMap<String, Value> {
    let text = |v: &Option<String>| v.as_deref().map_or_else(null, string);
    let mut fields = unlinked_row(id);
    for (name, value) in [
        ("seatId", text(&item.seat_id)),
        ("targetSeatId", text(&item.target_seat_id)),
        ("actorSeatId", text(&item.actor_seat_id)),
        ("mechanism", text(&item.mechanism)),
        (
            "amount",
            item.amount
                .as_ref()
                .map_or_else(null, |a| string(a.as_str())),
        ),
        ("accountType", text(&item.account_type)),
        ("type", text(&item.r#type)),
        ("originalTransactionId", text(&item.original_transaction_id)),
        ("policyId", text(&item.policy_id)),
        (
            "compensationOriginLocator",
            text(&item.compensation_origin_locator),
        ),
        (
            "compensationAmountCents",
            int(i64::try_from(item.compensation_amount_cents).expect("cents")),
        ),
        (
            "correctionIntentLocator",
            text(&item.correction_intent_locator),
        ),
        ("compensationSubtype", text(&item.compensation_subtype)),
    ] {
        fields.insert(name.to_owned(), value);
    }
    fields
}

/// Imports the rows `command` names as `historical_unlinked` rows holding its effects.
pub async fn import(connection: &Connection, command: &HistoricalCommand) {
    for (id, item) in command.effect_ids.iter().zip(&command.effects) {
        put(
            connection,
            &format!("ledgerTransactions/{id}"),
            unlinked_row_of(id, item),
        )
        .await;
    }
}

fn document_id(document: &Document) -> &str {
    document.name.rsplit('/').next().unwrap_or_default()
}

/// The reservation documents and effect rows stored for `key`.
async fn stored(journal: &Journal, key: &LedgerKey) -> (Vec<Document>, Vec<Document>) {
    let rid = key.reservation_id().to_string();
    let prefix = format!("{rid}_");
    let connection = journal.connection();
    let reservations = list(connection, "", "ledgerReservations")
        .await
        .into_iter()
        .filter(|d| document_id(d) == rid)
        .collect();
    let effects = list(connection, "", "ledgerTransactions")
        .await
        .into_iter()
        .filter(|d| document_id(d).starts_with(&prefix))
        .collect();
    (reservations, effects)
}

/// Every document of both ledger collections, by name, with its update time.
async fn everything(journal: &Journal) -> HashMap<String, Document> {
    let connection = journal.connection();
    let mut all = list(connection, "", "ledgerReservations").await;
    all.extend(list(connection, "", "ledgerTransactions").await);
    all.into_iter().map(|d| (d.name.clone(), d)).collect()
}

fn reservation_path(key: &LedgerKey) -> String {
    format!("ledgerReservations/{}", key.reservation_id())
}

fn effect_path(key: &LedgerKey, index: usize) -> String {
    format!("ledgerTransactions/{}_{index:04}", key.reservation_id())
}

fn replayed(result: Result<LedgerReplay, JournalError>) -> LedgerOutcome {
    match result {
        Ok(LedgerReplay::Replayed(outcome)) => outcome,
        other => panic!("expected a replay, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_four_concurrent_accepts_of_one_plan_create_one_reservation() {
    let journal = support::fresh_journal().await;
    let plans = [store(5, "12.50"), transfer("40.00"), three_effects(7)];
    for round in 0..ROUNDS {
        let key = key("same", round);
        let plan = plans[round as usize % plans.len()].clone();
        let before = journal.stats();
        let results = race(RACERS, |_| {
            let (journal, key, plan) = (journal.clone(), key.clone(), plan.clone());
            async move { journal.accept_ledger_command(&key, &plan, &scope()).await }
        })
        .await;
        let used = journal.stats().since(&before);
        eprintln!(
            "ledger same-plan race round {round} ({:?}): {used:?}",
            plan.family()
        );
        let outcomes: Vec<&LedgerOutcome> = results
            .iter()
            .map(|r| match r {
                Ok(outcome) => outcome,
                Err(error) => panic!("round {round}: accept failed: {}", error.code()),
            })
            .collect();
        let accepted = outcomes
            .iter()
            .filter(|o| o.outcome == Outcome::Accepted)
            .count();
        let replays = outcomes
            .iter()
            .filter(|o| o.outcome == Outcome::Replayed)
            .count();
        assert_eq!(
            (accepted, replays),
            (1, RACERS as usize - 1),
            "round {round}"
        );
        let effect_ids = outcomes[0].effect_ids();
        assert!(
            outcomes.iter().all(|o| o.effect_ids() == effect_ids
                && o.effects == outcomes[0].effects
                && o.accepted_at == outcomes[0].accepted_at),
            "round {round}: every caller sees the same effects"
        );
        let (reservations, effects) = stored(&journal, &key).await;
        assert_eq!(reservations.len(), 1, "round {round}");
        assert_eq!(effects.len(), effect_ids.len(), "round {round}");
        assert_eq!(used.commits - used.conflicts, 1, "one successful commit");
        assert!(used.attempts <= used.calls * 3, "{used:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_four_different_plans_under_one_key_accept_one_and_mismatch_the_rest() {
    let journal = support::fresh_journal().await;
    for round in 0..ROUNDS {
        let key = key("different", round);
        let before = journal.stats();
        let results = race(RACERS, |i| {
            let (journal, key) = (journal.clone(), key.clone());
            let plan = store(5, &format!("{}.00", 10 + i));
            async move {
                let outcome = journal.accept_ledger_command(&key, &plan, &scope()).await;
                outcome.map(|o| (i, o))
            }
        })
        .await;
        let used = journal.stats().since(&before);
        eprintln!("ledger different-plan race round {round}: {used:?}");
        let mut winner = None;
        let mut mismatches = 0;
        for result in results {
            match result {
                Ok((i, outcome)) => {
                    assert_eq!(outcome.outcome, Outcome::Accepted, "round {round}");
                    assert!(winner.replace((i, outcome)).is_none(), "two winners");
                }
                Err(JournalError::ReplayMismatch) => mismatches += 1,
                Err(error) => panic!("round {round}: unexpected {}", error.code()),
            }
        }
        assert_eq!(mismatches, RACERS - 1, "round {round}");
        let (i, outcome) = winner.expect("one accept");
        let (reservations, effects) = stored(&journal, &key).await;
        assert_eq!(
            (reservations.len(), effects.len()),
            (1, 2),
            "round {round}: no extra effect"
        );
        let price = outcome.effects[0].item.amount.as_ref().map(|a| a.as_str());
        assert_eq!(price, Some(format!("-{}.00", 10 + i).as_str()));
        let winning = store(5, &format!("{}.00", 10 + i));
        let again = journal
            .accept_ledger_command(&key, &winning, &scope())
            .await
            .expect("the winner's retry");
        assert_eq!(again.outcome, Outcome::Replayed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_replays_and_accepts_of_one_command_agree() {
    let journal = support::fresh_journal().await;
    for round in 0..2 {
        let key = key("mixed", round);
        let results = race(RACERS, |i| {
            let (journal, key) = (journal.clone(), key.clone());
            async move {
                if i % 2 == 0 {
                    match journal
                        .replay_reserved_charge(&key, &scope(), &store_intent(2))
                        .await?
                    {
                        LedgerReplay::Replayed(outcome) => Ok(Some(outcome)),
                        LedgerReplay::NotReserved { .. } => Ok(None),
                    }
                } else {
                    let plan = store(5, "12.50");
                    journal
                        .accept_ledger_command(&key, &plan, &scope())
                        .await
                        .map(Some)
                }
            }
        })
        .await;
        let outcomes: Vec<LedgerOutcome> = results
            .into_iter()
            .filter_map(|r| r.unwrap_or_else(|e| panic!("round {round}: {}", e.code())))
            .collect();
        let accepted = outcomes
            .iter()
            .filter(|o| o.outcome == Outcome::Accepted)
            .count();
        assert_eq!(accepted, 1, "round {round}");
        assert!(outcomes.iter().all(|o| o.effects == outcomes[0].effects));
        let (reservations, effects) = stored(&journal, &key).await;
        assert_eq!((reservations.len(), effects.len()), (1, 2));
    }
}

#[tokio::test]
async fn a_stored_version_four_reservation_replays_under_version_four() {
    let journal = support::fresh_journal().await;
    // Linked by the migration.
    let linked = key("v4-linked", 0);
    let command = historical(&store(4, "12.50"), 4, "v4");
    import(journal.connection(), &command).await;
    let outcome = journal
        .link_historical_effects(&linked, &scope(), &command)
        .await
        .expect("linked");
    assert_eq!(outcome.outcome, Outcome::Linked);
    // Accepted canonically by an earlier release, which wrote reservation schema
    // version 1 (no integrity digest): written as the owner.
    let canonical = key("v4-canonical", 0);
    journal
        .accept_ledger_command(&canonical, &store(5, "12.50"), &scope())
        .await
        .expect("accepted");
    let path = reservation_path(&canonical);
    let mut doc = get(journal.connection(), &path).await.expect("reservation");
    assert_eq!(doc.fields["reservationSchemaVersion"], int(3));
    assert!(doc.fields.contains_key("integrityDigest"));
    let v4 = store(4, "12.50").fingerprint(4).expect("v4").digest;
    doc.fields.insert("fingerprintVersion".into(), int(4));
    doc.fields.insert("fingerprint".into(), string(v4.as_str()));
    doc.fields.insert("reservationSchemaVersion".into(), int(1));
    doc.fields.remove("integrityDigest");
    put(journal.connection(), &path, doc.fields).await;

    for key in [&linked, &canonical] {
        let before = everything(&journal).await;
        let outcome = journal
            .accept_ledger_command(key, &store(4, "12.50"), &scope())
            .await
            .expect("replayed");
        assert_eq!(outcome.outcome, Outcome::Replayed);
        assert_eq!(outcome.fingerprint_version, 4);
        // Declaring another version than the stored one is a different command.
        assert_eq!(
            journal
                .accept_ledger_command(key, &store(5, "12.50"), &scope())
                .await,
            Err(JournalError::ReplayMismatch)
        );
        let replay = replayed(
            journal
                .replay_reserved_charge(key, &scope(), &store_intent(2))
                .await,
        );
        assert_eq!(replay.fingerprint_version, 4);
        assert_eq!(
            journal
                .accept_ledger_command(key, &store(4, "12.75"), &scope())
                .await,
            Err(JournalError::ReplayMismatch)
        );
        assert_eq!(
            journal
                .replay_reserved_charge(key, &scope(), &store_intent(3))
                .await,
            Err(JournalError::ReplayMismatch)
        );
        assert_eq!(everything(&journal).await, before, "nothing written");
    }
    let lineages: Vec<Lineage> = replayed(
        journal
            .replay_reserved_charge(&linked, &scope(), &store_intent(2))
            .await,
    )
    .effects
    .iter()
    .map(|e| e.lineage)
    .collect();
    assert_eq!(lineages, [Lineage::HistoricalLinked; 2]);
}

#[tokio::test]
async fn a_stored_version_three_reservation_fails_closed_and_writes_nothing() {
    let journal = support::fresh_journal().await;
    let key = key("v3", 0);
    let command = historical(&store(5, "12.50"), 3, "v3");
    import(journal.connection(), &command).await;
    journal
        .link_historical_effects(&key, &scope(), &command)
        .await
        .expect("linked");
    let before = everything(&journal).await;
    assert_eq!(before.len(), 3);
    assert_eq!(
        journal
            .accept_ledger_command(&key, &store(5, "12.50"), &scope())
            .await,
        Err(JournalError::UnsupportedFingerprintVersion)
    );
    assert_eq!(
        journal
            .replay_reserved_charge(&key, &scope(), &store_intent(2))
            .await,
        Err(JournalError::UnsupportedFingerprintVersion)
    );
    // The migration itself is idempotent and never recomputes the digest.
    let again = journal
        .link_historical_effects(&key, &scope(), &command)
        .await
        .expect("already linked");
    assert_eq!(again.outcome, Outcome::AlreadyLinked);
    assert_eq!(again.fingerprint, command.fingerprint);
    assert_eq!(everything(&journal).await, before, "nothing written");
}

pub fn int(v: i64) -> Value {
    Value {
        value_type: Some(ValueType::IntegerValue(v)),
    }
}

pub fn string(v: &str) -> Value {
    Value {
        value_type: Some(ValueType::StringValue(v.into())),
    }
}

pub fn null() -> Value {
    Value {
        value_type: Some(ValueType::NullValue(0)),
    }
}

/// A well-formed `historical_unlinked` row with id `id`.
fn unlinked_row(id: &str) -> HashMap<String, Value> {
    let mut fields: HashMap<String, Value> = [
        "seatId",
        "targetSeatId",
        "actorSeatId",
        "mechanism",
        "amount",
        "accountType",
        "type",
        "originalTransactionId",
        "policyId",
        "compensationOriginLocator",
        "correctionIntentLocator",
        "compensationSubtype",
        "reservationId",
        "effectIndex",
        "migrationId",
        "transferLeg",
    ]
    .into_iter()
    .map(|name| (name.to_owned(), null()))
    .collect();
    fields.insert("effectSchemaVersion".into(), int(1));
    fields.insert("effectId".into(), string(id));
    fields.insert("lineage".into(), string("historical_unlinked"));
    fields.insert("seatId".into(), string("seat-A"));
    fields.insert("amount".into(), string("-12.50"));
    fields.insert("compensationAmountCents".into(), int(0));
    fields.insert(
        "acceptedAt".into(),
        Value {
            value_type: Some(ValueType::TimestampValue(
                gcloud_sdk::prost_types::Timestamp {
                    seconds: 1_500_000_000,
                    nanos: 0,
                },
            )),
        },
    );
    fields
}

#[tokio::test]
async fn a_pre_existing_effect_id_fails_the_whole_accept() {
    let journal = support::fresh_journal().await;
    let connection = journal.connection();
    // A stray row in the second slot of a two-effect command.
    let key_a = key("orphan", 0);
    put(
        connection,
        &effect_path(&key_a, 1),
        HashMap::from([("note".to_owned(), string("stray"))]),
    )
    .await;
    // A historical_unlinked row in the first slot of another command: no evidence.
    let key_b = key("orphan", 1);
    put(
        connection,
        &effect_path(&key_b, 0),
        unlinked_row(&format!("{}_0000", key_b.reservation_id())),
    )
    .await;
    let before = everything(&journal).await;
    for key in [&key_a, &key_b] {
        let result = journal
            .accept_ledger_command(key, &store(5, "12.50"), &scope())
            .await;
        assert!(
            matches!(result, Err(JournalError::JournalCorrupt { .. })),
            "{result:?}"
        );
        let replay = journal
            .replay_reserved_charge(key, &scope(), &store_intent(2))
            .await;
        if key == &key_b {
            assert!(
                matches!(replay, Err(JournalError::JournalCorrupt { .. })),
                "{replay:?}"
            );
        }
    }
    assert_eq!(everything(&journal).await, before, "no reservation written");
    assert!(get(connection, &reservation_path(&key_a)).await.is_none());
    assert!(get(connection, &effect_path(&key_a, 0)).await.is_none());
}

#[tokio::test]
async fn scope_is_checked_on_accept_and_replay() {
    let journal = support::fresh_journal().await;
    let key = key("scope", 0);
    journal
        .accept_ledger_command(&key, &store(5, "12.50"), &scope())
        .await
        .expect("accepted");
    for (seat, actor) in [("seat-B", "seat-A"), ("seat-A", "seat-B")] {
        let other = LedgerScope::new(seat, actor).expect("scope");
        assert_eq!(
            journal
                .accept_ledger_command(&key, &store(5, "12.50"), &other)
                .await,
            Err(JournalError::ScopeMismatch)
        );
        assert_eq!(
            journal
                .replay_reserved_charge(&key, &other, &store_intent(2))
                .await,
            Err(JournalError::ScopeMismatch)
        );
    }
    let (reservations, effects) = stored(&journal, &key).await;
    assert_eq!((reservations.len(), effects.len()), (1, 2));
}

#[tokio::test]
async fn a_reversal_is_a_new_reservation_linking_the_original_which_stays_unchanged() {
    let journal = support::fresh_journal().await;
    let connection = journal.connection();
    let original_key = key("charge", 0);
    let original = journal
        .accept_ledger_command(&original_key, &store(5, "12.50"), &scope())
        .await
        .expect("charge");
    let original_id = original.effects[0].effect_id.clone();
    let before = everything(&journal).await;

    let reversal_key = key("reversal", 0);
    let outcome = journal
        .accept_ledger_command(
            &reversal_key,
            &reversal(&original_id, Some("GOODWILL")),
            &scope(),
        )
        .await
        .expect("reversal");
    assert_eq!(outcome.outcome, Outcome::Accepted);
    assert_ne!(outcome.reservation_id, original.reservation_id);
    let row = get(connection, &effect_path(&reversal_key, 0))
        .await
        .expect("reversal row");
    assert_eq!(row.fields["originalTransactionId"], string(&original_id));
    assert_eq!(row.fields["compensationSubtype"], string("GOODWILL"));
    let after = everything(&journal).await;
    for (name, doc) in &before {
        assert_eq!(after.get(name), Some(doc), "the original is unchanged");
    }
    assert_eq!(after.len(), before.len() + 2);

    // Replays of the reversal compare actor, mechanism and subtype.
    let exact = replayed(
        journal
            .replay_reserved_reversal(
                &reversal_key,
                &scope(),
                &authority("officer-1", Some("GOODWILL")),
            )
            .await,
    );
    assert_eq!(exact.effects, outcome.effects);
    for changed in [
        authority("officer-2", Some("GOODWILL")),
        authority("officer-1", Some("SERVICE_FAILURE")),
        authority("officer-1", None),
    ] {
        assert_eq!(
            journal
                .replay_reserved_reversal(&reversal_key, &scope(), &changed)
                .await,
            Err(JournalError::ReplayMismatch)
        );
    }
    // The original key stays occupied by the original command.
    let again = journal
        .accept_ledger_command(&original_key, &store(5, "12.50"), &scope())
        .await
        .expect("replay");
    assert_eq!(again.outcome, Outcome::Replayed);

    // A reversal naming no existing transaction is refused unwritten; one naming a
    // legacy unlinked row links it without touching it.
    let count = everything(&journal).await.len();
    assert_eq!(
        journal
            .accept_ledger_command(
                &key("reversal", 1),
                &reversal("no-such-row", None),
                &scope()
            )
            .await,
        Err(JournalError::InvalidInput { field: "effects" })
    );
    assert_eq!(everything(&journal).await.len(), count);
    put(
        connection,
        "ledgerTransactions/legacy-tx-1",
        unlinked_row("legacy-tx-1"),
    )
    .await;
    let legacy = get(connection, "ledgerTransactions/legacy-tx-1")
        .await
        .expect("legacy row");
    journal
        .accept_ledger_command(
            &key("reversal", 2),
            &reversal("legacy-tx-1", None),
            &scope(),
        )
        .await
        .expect("reversal of a legacy row");
    assert_eq!(
        get(connection, "ledgerTransactions/legacy-tx-1").await,
        Some(legacy)
    );
}

#[tokio::test]
async fn replay_before_pricing_returns_the_original_effects_even_when_prices_changed() {
    let journal = support::fresh_journal().await;
    let key = key("pricing", 0);
    // First attempt: nothing reserved, so the caller prices (12.50) and accepts.
    assert_eq!(
        journal
            .replay_reserved_charge(&key, &scope(), &store_intent(2))
            .await,
        Ok(LedgerReplay::NotReserved {
            reservation_id: key.reservation_id()
        })
    );
    let accepted = journal
        .accept_ledger_command(&key, &store(5, "12.50"), &scope())
        .await
        .expect("accepted");
    let before = everything(&journal).await;
    // The retry replays before pricing: the original 12.50 comes back although the
    // current price is 13.00, which as a fresh plan no longer matches.
    let replay = replayed(
        journal
            .replay_reserved_charge(&key, &scope(), &store_intent(2))
            .await,
    );
    assert_eq!(replay.effects, accepted.effects);
    assert_eq!(
        replay.effects[0].item.amount.as_ref().map(|a| a.as_str()),
        Some("-12.50")
    );
    assert_eq!(
        journal
            .accept_ledger_command(&key, &store(5, "13.00"), &scope())
            .await,
        Err(JournalError::ReplayMismatch)
    );
    assert_eq!(everything(&journal).await, before);
    let json = serde_json::to_value(LedgerReplay::Replayed(replay)).expect("json");
    assert_eq!(json["outcome"], "replayed");
    assert_eq!(json["effects"][0]["amount"], "-12.50");
}

#[tokio::test]
async fn a_transfer_is_two_linked_effects() {
    let journal = support::fresh_journal().await;
    let key = key("transfer", 0);
    let outcome = journal
        .accept_ledger_command(&key, &transfer("40.5"), &scope())
        .await
        .expect("accepted");
    let legs: Vec<(Option<TransferLeg>, Option<&str>)> = outcome
        .effects
        .iter()
        .map(|e| (e.transfer_leg, e.item.amount.as_ref().map(|a| a.as_str())))
        .collect();
    assert_eq!(
        legs,
        [
            (Some(TransferLeg::Debit), Some("-40.50")),
            (Some(TransferLeg::Credit), Some("40.50"))
        ]
    );
    let (reservations, effects) = stored(&journal, &key).await;
    assert_eq!((reservations.len(), effects.len()), (1, 2));
    for (i, row) in effects.iter().enumerate() {
        assert_eq!(
            row.fields["reservationId"],
            string(key.reservation_id().as_str())
        );
        assert_eq!(
            row.fields["effectIndex"],
            int(i64::try_from(i).expect("index"))
        );
        assert_eq!(row.fields["lineage"], string("canonical_linked"));
    }
    assert_eq!(
        journal
            .accept_ledger_command(&key, &transfer("40.50"), &scope())
            .await
            .map(|o| o.outcome),
        Ok(Outcome::Replayed)
    );
}

/// A reversal of `original` by officer-9 (mechanism REVERSAL) with `shape` effects,
/// each `(compensation cents, amount)`: a compensating effect (cents above zero) has
/// subtype DUPLICATE_CHARGE, a non-compensating one null.
fn mixed_reversal(original: &str, shape: &[(u64, &str)]) -> FingerprintInput {
    let effects: Vec<Json> = shape
        .iter()
        .map(|(cents, amount)| {
            json!({"seat_id": "seat-A", "actor_seat_id": "officer-9", "mechanism": "REVERSAL",
                   "amount": amount, "type": "REVERSAL", "original_transaction_id": original,
                   "compensation_amount_cents": cents,
                   "compensation_subtype": if *cents > 0 { Some("DUPLICATE_CHARGE") } else { None }})
        })
        .collect();
    plan(json!({"family": "reversal", "fingerprintVersion": 5, "effects": effects}))
}

fn officer_9(subtype: Option<&str>) -> ReversalAuthority {
    ReversalAuthority {
        actor_seat_id: Some("officer-9".into()),
        mechanism: Some("REVERSAL".into()),
        compensation_subtype: subtype.map(Into::into),
    }
}

#[tokio::test]
async fn two_and_three_effect_reversals_replay_exactly_and_mismatch_on_any_change() {
    let journal = support::fresh_journal().await;
    let shapes: [&[(u64, &str)]; 2] = [
        &[(1250, "12.50"), (0, "0.25")],
        &[(0, "0.25"), (1250, "12.50"), (300, "3.00")],
    ];
    for (n, shape) in shapes.into_iter().enumerate() {
        // Each shape corrects a charge of its own, large enough for all its effects
        // (the reversals of one effect never return more than it booked).
        let original = journal
            .accept_ledger_command(
                &key("charged", u32::try_from(n).expect("n")),
                &store(5, "20.00"),
                &scope(),
            )
            .await
            .expect("charge");
        let original_id = original.effects[0].effect_id.clone();
        let key = key("mixed-reversal", u32::try_from(n).expect("n"));
        let accepted = journal
            .accept_ledger_command(&key, &mixed_reversal(&original_id, shape), &scope())
            .await
            .expect("accepted");
        assert_eq!(accepted.effects.len(), shape.len());
        let before = everything(&journal).await;
        let exact = replayed(
            journal
                .replay_reserved_reversal(&key, &scope(), &officer_9(Some("DUPLICATE_CHARGE")))
                .await,
        );
        assert_eq!(exact.effects, accepted.effects);
        let changed_actor = ReversalAuthority {
            actor_seat_id: Some("officer-1".into()),
            ..officer_9(Some("DUPLICATE_CHARGE"))
        };
        let changed_mechanism = ReversalAuthority {
            mechanism: Some("WALLET".into()),
            ..officer_9(Some("DUPLICATE_CHARGE"))
        };
        for changed in [
            officer_9(Some("GOODWILL")),
            officer_9(None),
            changed_actor,
            changed_mechanism,
        ] {
            assert_eq!(
                journal
                    .replay_reserved_reversal(&key, &scope(), &changed)
                    .await,
                Err(JournalError::ReplayMismatch),
                "{changed:?}"
            );
        }
        assert_eq!(everything(&journal).await, before, "nothing written");
    }
}

#[tokio::test]
async fn linking_existing_rows_leaves_one_row_per_effect_and_a_second_link_is_refused() {
    let journal = support::fresh_journal().await;
    let connection = journal.connection();
    let command = historical(&store(4, "12.50"), 4, "legacy-tx");
    import(connection, &command).await;
    let imported = everything(&journal).await;
    assert_eq!(imported.len(), 2);

    // Refusals that write nothing: a missing row, differing content, v2 multi-effect.
    let missing = HistoricalCommand {
        effect_ids: vec!["legacy-tx-0".into(), "legacy-tx-9".into()],
        ..command.clone()
    };
    let mut differing = command.clone();
    differing.effects[1].amount = command.effects[0].amount.clone();
    let v2 = HistoricalCommand {
        fingerprint_version: 2,
        ..command.clone()
    };
    let linked_key = key("linked", 0);
    for (bad, error) in [
        (missing, JournalError::InvalidInput { field: "effectIds" }),
        (differing, JournalError::InvalidInput { field: "effects" }),
        (v2, JournalError::ObsoleteMultiEffectFingerprint),
    ] {
        assert_eq!(
            journal
                .link_historical_effects(&linked_key, &scope(), &bad)
                .await,
            Err(error)
        );
    }
    assert_eq!(everything(&journal).await, imported, "nothing written");

    let outcome = journal
        .link_historical_effects(&linked_key, &scope(), &command)
        .await
        .expect("linked");
    assert_eq!(outcome.outcome, Outcome::Linked);
    assert_eq!(outcome.effect_ids(), ["legacy-tx-0", "legacy-tx-1"]);
    let after = everything(&journal).await;
    assert_eq!(
        after.len(),
        3,
        "one reservation, and still one row per effect"
    );
    let monetary = [
        "seatId",
        "targetSeatId",
        "actorSeatId",
        "mechanism",
        "amount",
        "accountType",
        "type",
        "originalTransactionId",
        "policyId",
        "compensationOriginLocator",
        "compensationAmountCents",
        "correctionIntentLocator",
        "compensationSubtype",
        "acceptedAt",
    ];
    for (i, id) in command.effect_ids.iter().enumerate() {
        let row = get(connection, &format!("ledgerTransactions/{id}"))
            .await
            .expect("row");
        let was = &imported[&row.name];
        for field in monetary {
            assert_eq!(row.fields[field], was.fields[field], "{field} unchanged");
        }
        assert_eq!(row.fields["lineage"], string("historical_linked"));
        assert_eq!(row.fields["effectIndex"], int(i64::try_from(i).expect("i")));
        assert_eq!(
            row.fields["reservationId"],
            string(linked_key.reservation_id().as_str())
        );
    }
    // The linked reservation replays under its stored version 4.
    let replay = replayed(
        journal
            .replay_reserved_charge(&linked_key, &scope(), &store_intent(2))
            .await,
    );
    assert_eq!(replay.fingerprint_version, 4);

    // A second link of the same rows is refused; the exact retry writes nothing.
    assert_eq!(
        journal
            .link_historical_effects(&key("linked", 1), &scope(), &command)
            .await,
        Err(JournalError::InvalidInput { field: "effectIds" })
    );
    let again = journal
        .link_historical_effects(&linked_key, &scope(), &command)
        .await
        .expect("already linked");
    assert_eq!(again.outcome, Outcome::AlreadyLinked);
    assert_eq!(everything(&journal).await, after, "nothing written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_links_of_the_same_rows_link_them_once() {
    let journal = support::fresh_journal().await;
    let command = historical(&store(4, "12.50"), 4, "raced");
    import(journal.connection(), &command).await;
    let journal = std::sync::Arc::new(journal);
    let results = race(8, |n| {
        let journal = journal.clone();
        let command = command.clone();
        async move {
            journal
                .link_historical_effects(
                    &key("raced", u32::try_from(n % 2).expect("n")),
                    &scope(),
                    &command,
                )
                .await
        }
    })
    .await;
    let linked: Vec<usize> = (0..results.len())
        .filter(|i| matches!(&results[*i], Ok(o) if o.outcome == Outcome::Linked))
        .collect();
    assert_eq!(linked.len(), 1, "{results:?}");
    // The winner's key answers already_linked to the other three; the other key is
    // refused four times, because the rows are linked.
    let winner = linked[0] % 2;
    for (i, result) in results.iter().enumerate() {
        if i % 2 == winner {
            assert!(
                matches!(result, Ok(o) if o.outcome == Outcome::Linked || o.outcome == Outcome::AlreadyLinked),
                "{result:?}"
            );
        } else {
            assert_eq!(
                result,
                &Err(JournalError::InvalidInput { field: "effectIds" })
            );
        }
    }
    let all = everything(&journal).await;
    assert_eq!(all.len(), 3, "one reservation, two rows");
}
