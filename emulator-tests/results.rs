//! Result envelopes against the emulator, in this binary's concurrency mode: stored
//! with the success in one commit, read back byte-identical, retries that write
//! nothing, conflicts, tampering answered `journal_corrupt` with nothing written, the
//! send layer's `SucceededWith`, and a canary scan.

use super::support::{self, command, get, list, put};
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::ProviderAnswer;
use command_journal::sends::{AttemptNumber, BeginSendOutput, SendOutcomeOutput};
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, Connection, Journal, JournalError, LeaseId, LeaseOutput, ProviderPlan,
    ProviderPlanRequest, ResultEnvelope, Stats, TerminalOutput, TerminalReferenceFingerprint,
    verify,
};
use gcloud_sdk::google::firestore::v1::Value;
use gcloud_sdk::google::firestore::v1::value::ValueType;
use serde_json::json;
use std::sync::Arc;

const CANARY: &str = "CANARYenvelope_7d1f";

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(26, n)).expect("lease id")
}

/// Envelope `n`: a charge whose id carries the canary.
fn envelope(n: i64) -> ResultEnvelope {
    ResultEnvelope::new(&json!({
        "id": format!("ch_{CANARY}"),
        "amount": 1250 + n,
        "currency": "eur",
        "status": "succeeded",
    }))
    .expect("envelope")
}

fn results_path(cmd: &CommandInput) -> String {
    format!(
        "checkoutRequests/{}/results/current",
        cmd.identity().command_key_hash()
    )
}

fn lifecycle_path(cmd: &CommandInput) -> String {
    format!(
        "checkoutRequests/{}/lifecycle/current",
        cmd.identity().command_key_hash()
    )
}

fn start() -> DateTime<Utc> {
    DateTime::from_timestamp(1_920_000_000, 250_000_000).expect("time")
}

/// A journal with a manual clock at `start()`, on a fresh project.
async fn clocked() -> (Journal, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(start()));
    let journal = support::clocked_journal(support::fresh_connection().await, clock.clone());
    (journal, clock)
}

/// Registers and leases `cmd` for `lease(1)`: fence 1.
async fn leased(journal: &Journal, cmd: &CommandInput) {
    let started = journal.start(cmd, &lease(1)).await.expect("start");
    assert!(matches!(started.lease, LeaseOutput::Acquired { fence_epoch: f, .. } if f.get() == 1));
}

/// Stats of what `since` to now wrote: documents and absence guards.
fn wrote(journal: &Journal, since: &Stats) -> (u64, u64) {
    let d = journal.stats().since(since);
    (d.documents_written, d.absence_guards)
}

fn text(doc: &gcloud_sdk::google::firestore::v1::Document, field: &str) -> String {
    match doc.fields.get(field).and_then(|v| v.value_type.as_ref()) {
        Some(ValueType::StringValue(s)) => s.clone(),
        other => panic!("{field}: {other:?}"),
    }
}

fn code<T: std::fmt::Debug>(result: Result<T, JournalError>) -> &'static str {
    match result {
        Ok(output) => panic!("answered {output:?}"),
        Err(error) => {
            let shown = format!("{error} {error:?}");
            assert!(!shown.contains(CANARY), "the envelope in an error");
            error.code()
        }
    }
}

#[tokio::test]
async fn an_envelope_is_stored_with_the_success_and_read_back_byte_identical() {
    let (journal, _clock) = clocked().await;
    let connection = journal.connection();
    let cmd = command(26_001, json!({"sku": "tee"}));
    leased(&journal, &cmd).await;
    let before = journal.stats();
    let done = journal
        .complete_with_result(&cmd, &lease(1), crate::support::fence_at(1), &envelope(0))
        .await
        .expect("complete");
    assert_eq!(done, TerminalOutput::Succeeded);
    // The lifecycle, its event and the result; the plan's absence guarded.
    assert_eq!(wrote(&journal, &before), (3, 1));
    assert_eq!(journal.stats().since(&before).commits, 1);

    let stored = get(connection, &results_path(&cmd))
        .await
        .expect("results doc");
    let lifecycle = get(connection, &lifecycle_path(&cmd))
        .await
        .expect("lifecycle");
    assert_eq!(stored.create_time, lifecycle.update_time, "one commit");
    assert_eq!(stored.create_time, stored.update_time);
    assert_eq!(text(&stored, "envelope"), envelope(0).canonical());
    let mut names: Vec<&str> = stored.fields.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "commandKeyHash",
            "createdAt",
            "envelope",
            "resultSchemaVersion"
        ]
    );

    let read = journal
        .result(&cmd)
        .await
        .expect("result")
        .expect("envelope");
    assert_eq!(read.canonical(), envelope(0).canonical());
    assert_eq!(read, envelope(0));

    // Exact retries, before and after expiry, answer the same and write nothing.
    let before = journal.stats();
    for _ in 0..3 {
        let again = journal
            .complete_with_result(&cmd, &lease(1), crate::support::fence_at(1), &envelope(0))
            .await
            .expect("retry");
        assert_eq!(again, TerminalOutput::Succeeded);
        let read = journal
            .result(&cmd)
            .await
            .expect("result")
            .expect("envelope");
        assert_eq!(read.canonical(), envelope(0).canonical());
    }
    assert_eq!(wrote(&journal, &before), (0, 0));
    assert_eq!(journal.stats().since(&before).commits, 0);
    let unchanged = get(connection, &results_path(&cmd)).await.expect("doc");
    assert_eq!(unchanged, stored);

    // Another envelope, or another bare reference, conflicts.
    let before = journal.stats();
    assert_eq!(
        code(
            journal
                .complete_with_result(&cmd, &lease(1), crate::support::fence_at(1), &envelope(1))
                .await
        ),
        "terminal_conflict"
    );
    let other = TerminalReferenceFingerprint::parse(&"ab".repeat(32)).expect("reference");
    assert_eq!(
        code(
            journal
                .complete_command(&cmd, &lease(1), crate::support::fence_at(1), &other)
                .await
        ),
        "terminal_conflict"
    );
    assert_eq!(wrote(&journal, &before), (0, 0));
    let report = verify(connection, &mut |_| {}).await.expect("verify");
    assert!(report.clean, "{:?}", report.findings);
}

#[tokio::test]
async fn without_an_envelope_the_result_is_none() {
    let (journal, _clock) = clocked().await;
    let cmd = command(26_002, json!({"sku": "mug"}));
    assert_eq!(code(journal.result(&cmd).await), "not_registered");
    journal.register_command(&cmd).await.expect("register");
    assert_eq!(journal.result(&cmd).await, Ok(None));
    journal.acquire_lease(&cmd, &lease(1)).await.expect("lease");
    assert_eq!(journal.result(&cmd).await, Ok(None));
    let reference = envelope(0).reference();
    journal
        .complete_command(&cmd, &lease(1), crate::support::fence_at(1), &reference)
        .await
        .expect("complete");
    assert_eq!(journal.result(&cmd).await, Ok(None));
    // The success had no envelope: storing one now would not be its commit.
    assert_eq!(
        code(
            journal
                .complete_with_result(&cmd, &lease(1), crate::support::fence_at(1), &envelope(0))
                .await
        ),
        "terminal_conflict"
    );
    assert!(
        get(journal.connection(), &results_path(&cmd))
            .await
            .is_none()
    );
}

#[tokio::test]
async fn a_tampered_envelope_is_journal_corrupt_and_nothing_is_written() {
    let (journal, _clock) = clocked().await;
    let connection = journal.connection();
    let cmd = command(26_003, json!({"sku": "cap"}));
    leased(&journal, &cmd).await;
    journal
        .complete_with_result(&cmd, &lease(1), crate::support::fence_at(1), &envelope(0))
        .await
        .expect("complete");
    let original = get(connection, &results_path(&cmd)).await.expect("doc");
    let tamperings = [
        envelope(9).canonical().to_owned(),
        envelope(0).canonical().replace(':', ": "),
        "{}".to_owned(),
    ];
    for tampered in tamperings {
        let mut fields = original.fields.clone();
        fields.insert(
            "envelope".into(),
            Value {
                value_type: Some(ValueType::StringValue(tampered)),
            },
        );
        put(connection, &results_path(&cmd), fields).await;
        let before = journal.stats();
        assert_eq!(code(journal.result(&cmd).await), "journal_corrupt");
        assert_eq!(
            code(
                journal
                    .complete_with_result(
                        &cmd,
                        &lease(1),
                        crate::support::fence_at(1),
                        &envelope(0)
                    )
                    .await
            ),
            "journal_corrupt"
        );
        assert_eq!(wrote(&journal, &before), (0, 0));
        let report = verify(connection, &mut |_| {}).await.expect("verify");
        let found: Vec<&str> = report.findings.iter().map(|f| f.code.as_str()).collect();
        assert!(found.contains(&"rewritten_document"), "{found:?}");
        assert!(
            found.contains(&"result_commitment_mismatch") || found.contains(&"malformed_result"),
            "{found:?}"
        );
    }

    // A stray results document before the success blocks it, unwritten.
    let stray = command(26_004, json!({"sku": "bag"}));
    leased(&journal, &stray).await;
    let mut fields = original.fields.clone();
    fields.insert(
        "commandKeyHash".into(),
        Value {
            value_type: Some(ValueType::StringValue(
                stray.identity().command_key_hash().to_string(),
            )),
        },
    );
    put(connection, &results_path(&stray), fields).await;
    let before = journal.stats();
    assert_eq!(code(journal.result(&stray).await), "journal_corrupt");
    assert_eq!(
        code(
            journal
                .complete_with_result(&stray, &lease(1), crate::support::fence_at(1), &envelope(0))
                .await
        ),
        "journal_corrupt"
    );
    assert_eq!(wrote(&journal, &before), (0, 0));
    let status = journal.status(&stray).await.expect("status");
    assert_eq!(status.state.as_str(), "leased");
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stripe",
        account: "acct_results",
        mode: "test",
        api_version: "2024-06-20",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250}),
        key_retention_seconds: 86_400,
    })
    .expect("plan")
}

const SUCCEEDED: SendOutcomeOutput = SendOutcomeOutput::Terminal(TerminalOutput::Succeeded);

#[tokio::test]
async fn a_send_outcome_or_reconciliation_stores_its_envelope() {
    let (journal, clock) = clocked().await;
    let connection = journal.connection();
    let sent = command(26_005, json!({"sku": "sent"}));
    let late = command(26_006, json!({"sku": "late"}));
    for cmd in [&sent, &late] {
        leased(&journal, cmd).await;
        let permit = journal
            .begin_send(cmd, &lease(1), crate::support::fence_at(1), &plan())
            .await
            .expect("begin");
        assert!(matches!(permit, BeginSendOutput::Permitted(_)));
    }
    clock.advance(TimeDelta::seconds(1));
    let outcome = ProviderAnswer::Succeeded(envelope(0));
    let answered = journal
        .record_send_outcome(
            &sent,
            &lease(1),
            crate::support::fence_at(1),
            &plan(),
            AttemptNumber::FIRST,
            &outcome,
        )
        .await
        .expect("outcome");
    assert_eq!(answered, SUCCEEDED);
    let read = journal
        .result(&sent)
        .await
        .expect("result")
        .expect("envelope");
    assert_eq!(read.canonical(), envelope(0).canonical());
    let before = journal.stats();
    assert_eq!(
        journal
            .record_send_outcome(
                &sent,
                &lease(1),
                crate::support::fence_at(1),
                &plan(),
                AttemptNumber::FIRST,
                &outcome
            )
            .await,
        Ok(SUCCEEDED)
    );
    assert_eq!(wrote(&journal, &before), (0, 0));
    let other = ProviderAnswer::Succeeded(envelope(1));
    assert_eq!(
        code(
            journal
                .record_send_outcome(
                    &sent,
                    &lease(1),
                    crate::support::fence_at(1),
                    &plan(),
                    AttemptNumber::FIRST,
                    &other
                )
                .await
        ),
        "terminal_conflict"
    );

    // Ambiguous, then past the cutoff: only reconciliation ends it, with the envelope.
    journal
        .record_send_outcome(
            &late,
            &lease(1),
            crate::support::fence_at(1),
            &plan(),
            AttemptNumber::FIRST,
            &ProviderAnswer::Unknown,
        )
        .await
        .expect("ambiguous");
    clock.advance(TimeDelta::seconds(64_800));
    let taken = journal
        .acquire_lease(&late, &lease(2))
        .await
        .expect("takeover");
    assert!(matches!(taken, LeaseOutput::Acquired { fence_epoch: f, .. } if f.get() == 2));
    assert_eq!(
        code(
            journal
                .begin_send(&late, &lease(2), crate::support::fence_at(2), &plan())
                .await
        ),
        "send_cutoff_passed"
    );
    let evidence = ProviderAnswer::Succeeded(envelope(2));
    let reconciled = journal
        .reconcile_send(
            &late,
            &lease(2),
            crate::support::fence_at(2),
            &plan(),
            AttemptNumber::FIRST,
            &evidence,
        )
        .await
        .expect("reconcile");
    assert_eq!(reconciled, SUCCEEDED);
    let read = journal
        .result(&late)
        .await
        .expect("result")
        .expect("envelope");
    assert_eq!(read.canonical(), envelope(2).canonical());
    let before = journal.stats();
    assert_eq!(
        journal
            .reconcile_send(
                &late,
                &lease(2),
                crate::support::fence_at(2),
                &plan(),
                AttemptNumber::FIRST,
                &evidence
            )
            .await,
        Ok(SUCCEEDED)
    );
    assert_eq!(wrote(&journal, &before), (0, 0));

    let report = verify(connection, &mut |_| {}).await.expect("verify");
    assert!(report.clean, "{:?}", report.findings);
}

/// Every document of the project but the envelopes, as text.
async fn documents_but_envelopes(connection: &Connection) -> Vec<String> {
    let mut texts = Vec::new();
    for root in list(connection, "", "checkoutRequests").await {
        let path = root
            .name
            .split("/documents/")
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        texts.push(format!("{root:?}"));
        for collection in ["lifecycle", "providerSends"] {
            for doc in list(connection, &path, collection).await {
                texts.push(format!("{doc:?}"));
            }
        }
        let results = list(connection, &path, "results").await;
        assert!(results.len() <= 1);
    }
    for event in list(connection, "", "auditEvents").await {
        texts.push(format!("{event:?}"));
    }
    texts
}

#[tokio::test]
async fn the_envelope_appears_only_in_its_own_document() {
    let (journal, _clock) = clocked().await;
    let cmd = command(26_007, json!({"sku": "canary"}));
    leased(&journal, &cmd).await;
    journal
        .complete_with_result(&cmd, &lease(1), crate::support::fence_at(1), &envelope(0))
        .await
        .expect("complete");
    let shown = [
        format!("{:?}", envelope(0)),
        format!("{:?}", ProviderAnswer::Succeeded(envelope(0))),
        format!("{:?}", ProviderAnswer::Succeeded(envelope(0))),
        format!("{:?}", journal.result(&cmd).await),
        format!(
            "{:?}",
            journal
                .complete_with_result(&cmd, &lease(1), crate::support::fence_at(1), &envelope(1))
                .await
        ),
    ];
    for text in shown {
        assert!(!text.contains(CANARY), "{text}");
        assert!(!text.contains("1250"), "{text}");
    }
    let texts = documents_but_envelopes(journal.connection()).await;
    assert!(texts.len() >= 4);
    for text in texts {
        assert!(
            !text.contains(CANARY),
            "a journal document holds the envelope"
        );
    }
    let stored = get(journal.connection(), &results_path(&cmd))
        .await
        .expect("doc");
    assert!(text(&stored, "envelope").contains(CANARY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_completions_store_exactly_one_envelope() {
    let (journal, _clock) = clocked().await;
    let cmd = command(26_008, json!({"sku": "race"}));
    leased(&journal, &cmd).await;
    let answers = support::race(8, |i| {
        let journal = journal.clone();
        let cmd = cmd.clone();
        async move {
            journal
                .complete_with_result(
                    &cmd,
                    &lease(1),
                    crate::support::fence_at(1),
                    &envelope((i % 2) as i64),
                )
                .await
        }
    })
    .await;
    let stored = journal
        .result(&cmd)
        .await
        .expect("result")
        .expect("envelope");
    let winner = (0..2)
        .find(|n| envelope(*n) == stored)
        .expect("one of the raced envelopes");
    for (i, answer) in answers.into_iter().enumerate() {
        if (i % 2) as i64 == winner {
            assert_eq!(answer, Ok(TerminalOutput::Succeeded), "task {i}");
        } else {
            assert_eq!(code(answer), "terminal_conflict", "task {i}");
        }
    }
    let path = format!("checkoutRequests/{}", cmd.identity().command_key_hash());
    assert_eq!(list(journal.connection(), &path, "results").await.len(), 1);
    let report = verify(journal.connection(), &mut |_| {})
        .await
        .expect("verify");
    assert!(report.clean, "{:?}", report.findings);
}
