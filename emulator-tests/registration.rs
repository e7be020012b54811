//! Registration (B2A) against the emulator: races, retries, conflicts, corruption.

use super::support::{self, command, get, list, put};
use command_journal::JournalError;
use command_journal::RegistrationOutcome;
use serde_json::json;

fn root_path(cmd: &command_journal::CommandInput) -> String {
    format!("checkoutRequests/{}", cmd.identity().command_key_hash())
}

fn audit_path(cmd: &command_journal::CommandInput) -> String {
    format!(
        "auditEvents/commerce_command_{}_0000000001",
        cmd.identity().command_key_hash()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_four_concurrent_registrations_create_exactly_one_pair() {
    let journal = support::fresh_journal().await;
    for round in 0..3 {
        let cmd = command(round, json!({"sku": "tee", "round": round}));
        let tasks: Vec<_> = (0..24)
            .map(|_| {
                let journal = journal.clone();
                let cmd = cmd.clone();
                tokio::spawn(async move { journal.register_command(&cmd).await })
            })
            .collect();
        let mut new = 0;
        let mut existing = 0;
        for task in tasks {
            match task.await.expect("task").map(|o| o.outcome()) {
                Ok(RegistrationOutcome::RegisteredNew) => new += 1,
                Ok(RegistrationOutcome::RegisteredExisting) => existing += 1,
                Err(error) => panic!("round {round}: registration failed: {}", error.code()),
            }
        }
        assert_eq!((new, existing), (1, 23), "round {round}");
    }
    let connection = journal.connection();
    assert_eq!(list(connection, "", "checkoutRequests").await.len(), 3);
    assert_eq!(list(connection, "", "auditEvents").await.len(), 3);
}

#[tokio::test]
async fn an_uncontended_registration_is_one_commit_and_a_replay_one_read() {
    let journal = support::fresh_journal().await;
    let cmd = command(1, json!({"a": 1}));
    let before = journal.stats();
    let output = journal.register_command(&cmd).await.expect("register");
    assert_eq!(output.outcome(), RegistrationOutcome::RegisteredNew);
    let used = journal.stats().since(&before);
    assert_eq!(
        (
            used.calls,
            used.attempts,
            used.batch_gets,
            used.commits,
            used.rpcs()
        ),
        // The blind creation alone, in either mode (it takes no lock).
        (1, 1, 0, 1, 1)
    );
    // The read-only retry: its blind creation refused, one BatchGet, in either mode
    // (transaction mode's first read after it takes no lock: an observation needs
    // none, so no transaction and no rollback).
    let before = journal.stats();
    let output = journal.register_command(&cmd).await.expect("retry");
    assert_eq!(output.outcome(), RegistrationOutcome::RegisteredExisting);
    let used = journal.stats().since(&before);
    assert_eq!(
        (
            used.attempts,
            used.batch_gets,
            used.commits,
            used.rollbacks,
            used.rpcs()
        ),
        (2, 1, 1, 0, 2)
    );
    assert_eq!(used.conflicts, 1, "the refused blind creation");
}

#[tokio::test]
async fn a_retry_after_success_writes_nothing() {
    let journal = support::fresh_journal().await;
    let cmd = command(2, json!({"sku": "mug"}));
    journal.register_command(&cmd).await.expect("register");
    let connection = journal.connection();
    let root = get(connection, &root_path(&cmd)).await.expect("root");
    let audit = get(connection, &audit_path(&cmd)).await.expect("audit");
    for _ in 0..3 {
        let output = journal.register_command(&cmd).await.expect("retry");
        assert_eq!(output.outcome(), RegistrationOutcome::RegisteredExisting);
    }
    assert_eq!(get(connection, &root_path(&cmd)).await, Some(root));
    assert_eq!(get(connection, &audit_path(&cmd)).await, Some(audit));
}

#[tokio::test]
async fn a_payload_conflict_writes_nothing() {
    let journal = support::fresh_journal().await;
    let cmd = command(3, json!({"amount": 100}));
    journal.register_command(&cmd).await.expect("register");
    let connection = journal.connection();
    let root = get(connection, &root_path(&cmd)).await;
    let conflicting = command(3, json!({"amount": 999}));
    assert_eq!(
        journal.register_command(&conflicting).await,
        Err(JournalError::CommandConflict)
    );
    assert_eq!(get(connection, &root_path(&cmd)).await, root);
    assert_eq!(list(connection, "", "auditEvents").await.len(), 1);
}

#[tokio::test]
async fn the_stored_documents_have_exactly_the_design_fields_and_nothing_raw() {
    let journal = support::fresh_journal().await;
    let cmd = command(4, json!({"secret": "CANARYpayload_77aa"}));
    journal.register_command(&cmd).await.expect("register");
    let connection = journal.connection();
    let root = get(connection, &root_path(&cmd)).await.expect("root");
    let mut names: Vec<&str> = root.fields.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "callerScopeKind",
            "commandKeyHash",
            "commandRevision",
            "commandType",
            "endpointSchemaVersion",
            "environment",
            "journalSchemaVersion",
            "payloadFingerprint",
            "registeredAt",
            "state"
        ]
    );
    let audit = get(connection, &audit_path(&cmd)).await.expect("audit");
    assert_eq!(audit.fields.len(), 11);
    let text = format!("{root:?}{audit:?}");
    for canary in ["CANARY", &support::uuid(1, 4)] {
        assert!(!text.contains(canary), "stored documents contain {canary}");
    }
}

/// Seeds a malformed or orphan state, checks registration is `journal_corrupt`, and
/// that the seeded documents are untouched and nothing was added.
async fn assert_rejected_untouched(seed_root: bool, seed_audit: bool, mutate: fn(&mut Document)) {
    let journal = support::fresh_journal().await;
    let connection = journal.connection();
    let cmd = command(5, json!({"k": "v"}));
    // Produce exact documents with a throwaway journal, then copy them as the owner.
    let scratch = support::fresh_journal().await;
    scratch
        .register_command(&cmd)
        .await
        .expect("scratch register");
    for (wanted, path) in [(seed_root, root_path(&cmd)), (seed_audit, audit_path(&cmd))] {
        if wanted {
            let mut doc = get(scratch.connection(), &path).await.expect("scratch doc");
            if path.starts_with("checkout") {
                mutate(&mut doc);
            }
            put(connection, &path, doc.fields).await;
        }
    }
    let root_before = get(connection, &root_path(&cmd)).await;
    let audit_before = get(connection, &audit_path(&cmd)).await;
    let result = journal.register_command(&cmd).await;
    assert!(
        matches!(result, Err(JournalError::JournalCorrupt { .. })),
        "expected journal_corrupt, got {result:?}"
    );
    assert_eq!(get(connection, &root_path(&cmd)).await, root_before);
    assert_eq!(get(connection, &audit_path(&cmd)).await, audit_before);
    let roots = list(connection, "", "checkoutRequests").await.len();
    let audits = list(connection, "", "auditEvents").await.len();
    assert_eq!(
        (roots, audits),
        (usize::from(seed_root), usize::from(seed_audit))
    );
}

use gcloud_sdk::google::firestore::v1::Document;

#[tokio::test]
async fn a_root_without_its_audit_event_is_corrupt_and_untouched() {
    assert_rejected_untouched(true, false, |_| {}).await;
}

#[tokio::test]
async fn an_audit_event_without_its_root_is_corrupt_and_untouched() {
    assert_rejected_untouched(false, true, |_| {}).await;
}

#[tokio::test]
async fn a_malformed_root_is_corrupt_and_untouched() {
    assert_rejected_untouched(true, true, |doc| {
        doc.fields.insert(
            "commandRevision".into(),
            gcloud_sdk::google::firestore::v1::Value {
                value_type: Some(
                    gcloud_sdk::google::firestore::v1::value::ValueType::DoubleValue(1.0),
                ),
            },
        );
    })
    .await;
}

#[tokio::test]
async fn a_root_with_an_extra_field_is_corrupt_and_untouched() {
    assert_rejected_untouched(true, true, |doc| {
        doc.fields.insert(
            "repairedBy".into(),
            gcloud_sdk::google::firestore::v1::Value {
                value_type: Some(
                    gcloud_sdk::google::firestore::v1::value::ValueType::StringValue("x".into()),
                ),
            },
        );
    })
    .await;
}
