//! Billed operations per journal operation, measured: the documents each operation's
//! reads returned and found absent, the documents its acknowledged commits wrote, and
//! its absence guards (deletes of nothing), from `Journal::stats`, with exact counts
//! in this binary's mode. The printed rows are the crate's side of the
//! "Billed operations" table in `BENCHMARKS.md`
//! (`cargo test --all-features --test emulator billing -- --nocapture`).

use super::support::{self, command};
use command_journal::ledger::{FingerprintInput, LedgerKey, LedgerScope};
use command_journal::sends::AttemptNumber;
use command_journal::{
    Concurrency, Journal, LeaseId, LeaseOutput, Stats, TerminalReferenceFingerprint,
};
use serde_json::json;

/// `(found, missing, written, guards, rpcs)` of one operation.
type Billed = (u64, u64, u64, u64, u64);

fn billed(used: &Stats) -> Billed {
    (
        used.documents_found,
        used.documents_missing,
        used.documents_written,
        used.absence_guards,
        used.rpcs(),
    )
}

/// Runs `f`, checks what it was billed against `expected` and prints the row.
async fn measure<F: std::future::Future<Output = ()>>(
    journal: &Journal,
    name: &str,
    expected: Billed,
    f: F,
) -> Billed {
    let before = journal.stats();
    f.await;
    let used = billed(&journal.stats().since(&before));
    println!(
        "billed mode={} op={name:?} found={} missing={} written={} guards={} rpcs={}",
        support::mode().as_str(),
        used.0,
        used.1,
        used.2,
        used.3,
        used.4
    );
    assert_eq!(
        used, expected,
        "{name}: (found, missing, written, guards, rpcs)"
    );
    used
}

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(11, n)).expect("lease id")
}

fn fence(output: LeaseOutput) -> command_journal::FenceEpoch {
    match output {
        LeaseOutput::Acquired { fence_epoch, .. } => fence_epoch,
        other => panic!("expected a lease: {other:?}"),
    }
}

#[tokio::test]
async fn every_operation_is_billed_exactly_its_documents() {
    let journal = support::fresh_journal().await;
    let tx = support::mode() == Concurrency::Transaction;
    // Per mode: (preconditions, transaction).
    let pick = |p: Billed, t: Billed| if tx { t } else { p };
    let reference = TerminalReferenceFingerprint::parse(&"ab".repeat(32)).expect("reference");

    // A command end to end through start: the blind creation, then complete's read of
    // root, events 1-4, lifecycle, plan and send record (events 3 and 4, the plan and
    // the send record absent), its two writes and the plan's absence guard.
    let a = command(5_000, json!({}));
    let mut epoch = crate::support::fence_at(1);
    measure(
        &journal,
        "start (new)",
        pick((0, 0, 4, 2, 1), (0, 0, 4, 2, 1)),
        async {
            epoch = fence(journal.start(&a, &lease(1)).await.expect("start").lease);
        },
    )
    .await;
    measure(
        &journal,
        "complete",
        // The send layer's guard reads every send document too (plan, send record,
        // send events 1-3 and the stored result: all absent, in the same batch) and
        // asserts the plan still absent at commit.
        pick((4, 8, 2, 1, 2), (4, 8, 2, 1, 2)),
        async {
            journal
                .complete_command(&a, &lease(1), epoch, &reference)
                .await
                .expect("complete");
        },
    )
    .await;
    measure(
        &journal,
        "start (finished command)",
        pick((5, 1, 0, 0, 2), (5, 1, 0, 0, 2)),
        async {
            journal.start(&a, &lease(2)).await.expect("start");
        },
    )
    .await;
    measure(
        &journal,
        "status",
        pick((5, 1, 0, 0, 1), (5, 1, 0, 0, 2)),
        async {
            journal.status(&a).await.expect("status");
        },
    )
    .await;

    // The same command through the separate calls.
    let b = command(5_001, json!({}));
    measure(
        &journal,
        "register (new)",
        pick((0, 0, 2, 1, 1), (0, 0, 2, 1, 1)),
        async {
            journal.register_command(&b).await.expect("register");
        },
    )
    .await;
    measure(
        &journal,
        "register (existing)",
        pick((2, 1, 0, 0, 2), (2, 1, 0, 0, 2)),
        async {
            journal.register_command(&b).await.expect("register");
        },
    )
    .await;
    // Transaction mode commits the first acquisition without a transaction: it
    // guards absent the two events it read absent and does not create (3 and 4), so
    // the commit proves everything the transaction would have held.
    measure(
        &journal,
        "acquire",
        pick((2, 4, 2, 0, 2), (2, 4, 2, 2, 2)),
        async {
            epoch = fence(journal.acquire_lease(&b, &lease(1)).await.expect("acquire"));
        },
    )
    .await;
    measure(
        &journal,
        "fail",
        pick((4, 8, 2, 1, 2), (4, 8, 2, 1, 2)),
        async {
            journal
                .fail_command(&b, &lease(1), epoch)
                .await
                .expect("fail");
        },
    )
    .await;

    // A ledger accept of a new two-effect reservation: reservation + 2 effects
    // created, the third slot guarded; its replay reads the same 4 paths.
    let key = LedgerKey::new("class-7", "FEAT-STORE", "billing-1").expect("key");
    let scope = LedgerScope::new("seat-A", "seat-A").expect("scope");
    let plan = FingerprintInput::from_json(&json!({
        "family": "store_purchase",
        "fingerprintVersion": 5,
        "effects": [
            {"seat_id": "seat-A", "actor_seat_id": "seat-A", "mechanism": "WALLET",
             "amount": "-12.50", "account_type": "checking", "type": "PURCHASE",
             "policy_id": "policy-7"},
            {"seat_id": "seat-A", "actor_seat_id": "seat-A", "mechanism": "WALLET",
             "amount": "-0.25", "account_type": "checking", "type": "FEE"},
        ],
        "intent": {"policyUuid": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", "quantity": 2},
    }))
    .expect("plan");
    measure(
        &journal,
        "ledger accept (new)",
        pick((0, 0, 3, 1, 1), (0, 0, 3, 1, 1)),
        async {
            journal
                .accept_ledger_command(&key, &plan, &scope)
                .await
                .expect("accept");
        },
    )
    .await;
    measure(
        &journal,
        "ledger accept (replay)",
        pick((3, 1, 0, 0, 2), (3, 1, 0, 0, 2)),
        async {
            journal
                .accept_ledger_command(&key, &plan, &scope)
                .await
                .expect("replay");
        },
    )
    .await;
}

/// The permit of `began`.
fn permitted(began: command_journal::sends::BeginSendOutput) -> AttemptNumber {
    match began {
        command_journal::sends::BeginSendOutput::Permitted(permit) => permit.attempt,
        other => panic!("expected a permit: {other:?}"),
    }
}

#[tokio::test]
async fn the_send_layer_is_billed_exactly_its_documents_and_proofs() {
    use command_journal::ProviderAnswer;
    use command_journal::sends::{ProviderPlan, ProviderPlanRequest};
    use command_journal::time::ManualClock;
    use std::sync::Arc;
    let tx = support::mode() == Concurrency::Transaction;
    let pick = |p: Billed, t: Billed| if tx { t } else { p };
    let at = chrono::DateTime::from_timestamp(1_930_000_000, 0).expect("time");
    let clock = Arc::new(ManualClock::new(at));
    let journal = support::clocked_journal(support::fresh_connection().await, clock.clone());
    let plan = ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_billing",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250}),
        key_retention_seconds: 86_400,
    })
    .expect("plan");
    let c = command(5_002, json!({}));
    let epoch = fence(journal.start(&c, &lease(1)).await.expect("start").lease);
    measure(
        &journal,
        "begin_send (first)",
        pick((4, 9, 5, 0, 2), (4, 9, 5, 0, 2)),
        async {
            permitted(
                journal
                    .begin_send(&c, &lease(1), epoch, &plan)
                    .await
                    .expect("begin"),
            );
        },
    )
    .await;
    // An ambiguous answer changes no lease: in preconditions mode the commit proves
    // the lifecycle unchanged by rewriting it as read (one billed write more).
    measure(
        &journal,
        "record_send_outcome (ambiguous)",
        pick((7, 5, 3, 0, 2), (7, 5, 2, 0, 2)),
        async {
            journal
                .record_send_outcome(
                    &c,
                    &lease(1),
                    epoch,
                    &plan,
                    AttemptNumber::FIRST,
                    &ProviderAnswer::Unknown,
                )
                .await
                .expect("ambiguous");
        },
    )
    .await;
    // After the lease, another holder takes it over and re-sends the same attempt:
    // the re-send proves the lifecycle it was decided under.
    clock.advance(chrono::TimeDelta::seconds(61));
    let taken = fence(
        journal
            .acquire_lease(&c, &lease(2))
            .await
            .expect("takeover"),
    );
    measure(
        &journal,
        "begin_send (re-send after a takeover)",
        pick((10, 3, 3, 0, 2), (10, 3, 2, 0, 2)),
        async {
            permitted(
                journal
                    .begin_send(&c, &lease(2), taken, &plan)
                    .await
                    .expect("resend"),
            );
        },
    )
    .await;
}
