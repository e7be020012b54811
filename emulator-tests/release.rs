//! A released lease against the emulator: the exact documents a release leaves (the
//! version-2 lifecycle, its `leaseReleases/{fence}` record, no audit event), the
//! takeover at once that follows (fence + 1, a version-1 lifecycle), and every late
//! write of the released fence refused with nothing written; verify clean after.

use super::send_randomized::assert_verified;
use super::support::{self, command, get, list};
use chrono::{DateTime, Utc};
use command_journal::sends::{AttemptNumber, BeginSendOutput};
use command_journal::time::{Clock, ManualClock};
use command_journal::{
    CommandInput, FenceEpoch, Journal, JournalError, LeaseId, LeaseOutput, ProviderAnswer,
    ProviderPlan, ProviderPlanRequest, TerminalReferenceFingerprint, Timestamp,
};
use command_journal_core::tools::lease::{LeaseCall, Release, ReleaseOutput};
use gcloud_sdk::google::firestore::v1::Document;
use gcloud_sdk::google::firestore::v1::value::ValueType;
use serde_json::json;
use std::sync::Arc;

fn start() -> DateTime<Utc> {
    DateTime::from_timestamp(1_930_000_000, 125_000_000).expect("time")
}

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(55, n)).expect("lease id")
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_release",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250}),
        key_retention_seconds: 86_400,
    })
    .expect("valid plan")
}

fn fence(output: LeaseOutput) -> FenceEpoch {
    match output {
        LeaseOutput::Acquired { fence_epoch, .. } => fence_epoch,
        other => panic!("expected a lease: {other:?}"),
    }
}

fn hash(cmd: &CommandInput) -> String {
    cmd.identity().command_key_hash().to_string()
}

/// The release of `fence` by the holder of `lease`, at the journal's time.
async fn release(
    journal: &Journal,
    clock: &ManualClock,
    cmd: &CommandInput,
    lease: &LeaseId,
    fence: FenceEpoch,
) -> Result<ReleaseOutput, JournalError> {
    let identity = cmd.identity();
    let owner = cmd.lease_owner(&identity, lease).expect("owner");
    let now = Timestamp::from_datetime(clock.now()).expect("time");
    let op = Release::new(LeaseCall::new(identity, owner, now), fence);
    journal.run_transition(&op).await
}

fn field<'a>(document: &'a Document, name: &str) -> &'a ValueType {
    document.fields[name].value_type.as_ref().expect("a value")
}

fn integer(document: &Document, name: &str) -> i64 {
    match field(document, name) {
        ValueType::IntegerValue(value) => *value,
        other => panic!("{name}: {other:?}"),
    }
}

fn time(document: &Document, name: &str) -> (i64, i32) {
    match field(document, name) {
        ValueType::TimestampValue(t) => (t.seconds, t.nanos),
        other => panic!("{name}: {other:?}"),
    }
}

/// The audit events of `cmd`.
async fn events(journal_connection: &command_journal::Connection, cmd: &CommandInput) -> usize {
    let prefix = format!("commerce_command_{}_", hash(cmd));
    list(journal_connection, "", "auditEvents")
        .await
        .into_iter()
        .filter(|d| {
            d.name
                .rsplit('/')
                .next()
                .is_some_and(|id| id.starts_with(&prefix))
        })
        .count()
}

#[tokio::test]
async fn a_release_leaves_exactly_its_two_documents_and_is_taken_over_at_once() {
    let connection = support::fresh_connection().await;
    let clock = Arc::new(ManualClock::new(start()));
    let journal = support::clocked_journal(connection.clone(), clock.clone());
    let cmd = command(55_001, json!({"order": "release-1"}));
    let first = fence(journal.start(&cmd, &lease(1)).await.expect("start").lease);
    let root = format!("checkoutRequests/{}", hash(&cmd));
    let lifecycle = format!("{root}/lifecycle/current");
    let acquired = get(&connection, &lifecycle).await.expect("lifecycle");
    assert_eq!(events(&connection, &cmd).await, 2);

    clock.advance(chrono::TimeDelta::milliseconds(20_250));
    assert_eq!(
        release(&journal, &clock, &cmd, &lease(1), first).await,
        Ok(ReleaseOutput::Released)
    );
    let released = get(&connection, &lifecycle).await.expect("lifecycle");
    let at = Timestamp::from_datetime(clock.now()).expect("time");
    let at = (
        at.micros().div_euclid(1_000_000),
        i32::try_from(at.micros().rem_euclid(1_000_000) * 1_000).expect("nanos"),
    );
    assert_eq!(integer(&released, "lifecycleSchemaVersion"), 2);
    assert_eq!(integer(&released, "fenceEpoch"), 1);
    assert_eq!(integer(&released, "commandRevision"), 2);
    assert_eq!(time(&released, "leaseExpiresAt"), at);
    assert_eq!(time(&released, "updatedAt"), at);
    // Every other field as acquired.
    for name in released.fields.keys() {
        if !["lifecycleSchemaVersion", "leaseExpiresAt", "updatedAt"].contains(&name.as_str()) {
            assert_eq!(released.fields[name], acquired.fields[name], "{name}");
        }
    }
    assert_eq!(released.fields.len(), 12);
    let records = list(&connection, &root, "leaseReleases").await;
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert!(
        record.name.ends_with("/leaseReleases/0000000001"),
        "{}",
        record.name
    );
    assert_eq!(record.fields.len(), 4);
    assert_eq!(integer(record, "leaseReleaseSchemaVersion"), 1);
    assert_eq!(integer(record, "fenceEpoch"), 1);
    assert_eq!(time(record, "releasedAt"), at);
    assert_eq!(
        field(record, "commandKeyHash"),
        &ValueType::StringValue(hash(&cmd))
    );
    // No audit event: the record is the release's.
    assert_eq!(events(&connection, &cmd).await, 2);
    // The same release again: already released, nothing written.
    let before = support::documents(&connection).await;
    assert_eq!(
        release(&journal, &clock, &cmd, &lease(1), first).await,
        Ok(ReleaseOutput::AlreadyReleased)
    );
    assert_eq!(support::documents(&connection).await, before);
    assert_verified(&connection).await;

    // A takeover at that very instant: fence 2, a version-1 lifecycle, its event.
    let second = fence(
        journal
            .acquire_lease(&cmd, &lease(2))
            .await
            .expect("acquire"),
    );
    assert_eq!(second.get(), 2);
    let taken = get(&connection, &lifecycle).await.expect("lifecycle");
    assert_eq!(integer(&taken, "lifecycleSchemaVersion"), 1);
    assert_eq!(integer(&taken, "commandRevision"), 3);
    assert_eq!(time(&taken, "leaseAcquiredAt"), at);
    assert_eq!(events(&connection, &cmd).await, 3);
    assert_eq!(list(&connection, &root, "leaseReleases").await.len(), 1);
    assert_verified(&connection).await;
}

#[tokio::test]
async fn a_released_holders_late_writes_are_refused_with_nothing_written() {
    let connection = support::fresh_connection().await;
    let clock = Arc::new(ManualClock::new(start()));
    let journal = support::clocked_journal(connection.clone(), clock.clone());
    let reference = TerminalReferenceFingerprint::parse(&"cd".repeat(32)).expect("reference");

    // Without a send: complete and fail by the released fence.
    let cmd = command(55_002, json!({"order": "release-2"}));
    let held = fence(journal.start(&cmd, &lease(3)).await.expect("start").lease);
    clock.advance(chrono::TimeDelta::seconds(5));
    assert_eq!(
        release(&journal, &clock, &cmd, &lease(3), held).await,
        Ok(ReleaseOutput::Released)
    );
    let before = support::documents(&connection).await;
    assert_eq!(
        journal
            .complete_command(&cmd, &lease(3), held, &reference)
            .await,
        Err(JournalError::LeaseExpired)
    );
    assert_eq!(
        journal.fail_command(&cmd, &lease(3), held).await,
        Err(JournalError::LeaseExpired)
    );
    assert_eq!(support::documents(&connection).await, before);

    // With a send: its outcome and a re-send by the released fence.
    let sent = command(55_003, json!({"order": "release-3"}));
    let held = fence(journal.start(&sent, &lease(4)).await.expect("start").lease);
    match journal
        .begin_send(&sent, &lease(4), held, &plan())
        .await
        .expect("begin_send")
    {
        BeginSendOutput::Permitted(_) => {}
        other => panic!("{other:?}"),
    }
    clock.advance(chrono::TimeDelta::seconds(5));
    assert_eq!(
        release(&journal, &clock, &sent, &lease(4), held).await,
        Ok(ReleaseOutput::Released)
    );
    let before = support::documents(&connection).await;
    for answer in [ProviderAnswer::Unknown, ProviderAnswer::Declined] {
        assert_eq!(
            journal
                .record_send_outcome(
                    &sent,
                    &lease(4),
                    held,
                    &plan(),
                    AttemptNumber::FIRST,
                    &answer
                )
                .await,
            Err(JournalError::LeaseExpired),
            "{answer:?}"
        );
    }
    let resend = journal.begin_send(&sent, &lease(4), held, &plan()).await;
    assert!(
        !matches!(resend, Ok(BeginSendOutput::Permitted(_))),
        "a released fence was permitted to send: {resend:?}"
    );
    assert_eq!(support::documents(&connection).await, before);
    assert_verified(&connection).await;
}
