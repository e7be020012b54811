//! `Journal::pending` against the emulator, in this binary's mode: exactly the
//! commands whose lease expired without a terminal transition are listed, each with
//! its send state and what would move it on; a running lease, a settled command and a
//! registration without a lease are not; the listing reads only the lifecycles not
//! yet settled, then one batch per expired one; nothing leaks.

use super::support::{self, command};
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::ProviderAnswer;
use command_journal::pending::{PendingCommand, Unblock};
use command_journal::sends::{AttemptNumber, AttemptState};
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, FenceEpoch, Journal, LeaseId, LeaseOutput, ProviderPlan, ProviderPlanRequest,
    TerminalReferenceFingerprint,
};
use serde_json::json;
use std::sync::Arc;

fn start_time() -> DateTime<Utc> {
    DateTime::from_timestamp(1_930_000_000, 0).expect("time")
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_pending",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250, "currency": "eur"}),
        key_retention_seconds: 86_400,
    })
    .expect("valid plan")
}

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(0x51, n)).expect("lease")
}

async fn started(journal: &Journal, cmd: &CommandInput, n: u64) -> FenceEpoch {
    match journal.start(cmd, &lease(n)).await.expect("start").lease {
        LeaseOutput::Acquired { fence_epoch, .. } => fence_epoch,
        other => panic!("{other:?}"),
    }
}

fn hash(cmd: &CommandInput) -> String {
    cmd.identity().command_key_hash().to_string()
}

/// `(hash, unblocked by, send state)` of each pending command, sorted by hash.
fn shape(pending: &[PendingCommand]) -> Vec<(String, Unblock, Option<AttemptState>)> {
    let mut out: Vec<_> = pending
        .iter()
        .map(|p| {
            (
                p.command_key_hash.to_string(),
                p.unblocked_by,
                p.send.as_ref().map(|s| s.state),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[tokio::test]
async fn pending_lists_exactly_the_commands_whose_lease_expired_unsettled() {
    let connection = support::fresh_connection().await;
    let clock = Arc::new(ManualClock::new(start_time()));
    let journal = support::clocked_journal(connection.clone(), clock.clone());
    let reference = TerminalReferenceFingerprint::parse(&"cd".repeat(32)).expect("reference");
    let cmd = |n: u64| command(900 + n, json!({"order": n}));

    // Settled: started and completed.
    let settled = cmd(1);
    let fence = started(&journal, &settled, 1).await;
    journal
        .complete_command(&settled, &lease(1), fence, &reference)
        .await
        .expect("complete");
    // Registered, never leased.
    journal.register_command(&cmd(2)).await.expect("register");
    // Leased, no send: its lease will expire.
    let abandoned = cmd(3);
    started(&journal, &abandoned, 3).await;
    // Leased, permit issued, the process gone mid-send.
    let mid_send = cmd(4);
    let fence = started(&journal, &mid_send, 4).await;
    journal
        .begin_send(&mid_send, &lease(4), fence, &plan())
        .await
        .expect("begin_send");
    // Leased, the send recorded ambiguous.
    let ambiguous = cmd(5);
    let fence = started(&journal, &ambiguous, 5).await;
    journal
        .begin_send(&ambiguous, &lease(5), fence, &plan())
        .await
        .expect("begin_send");
    journal
        .record_send_outcome(
            &ambiguous,
            &lease(5),
            fence,
            &plan(),
            AttemptNumber::FIRST,
            &ProviderAnswer::Unknown,
        )
        .await
        .expect("ambiguous");

    // Before any lease expires, nothing is pending, though the three leased are
    // listed.
    let listing = journal.pending().await.expect("pending");
    assert_eq!((listing.pending.len(), listing.listed), (0, 3));

    // Past the leases; a fresh lease on one more command still runs.
    clock.advance(TimeDelta::seconds(61));
    let running = cmd(6);
    started(&journal, &running, 6).await;
    let before = journal.stats();
    let listing = journal.pending().await.expect("pending");
    let used = journal.stats().since(&before);
    assert_eq!(listing.listed, 4, "every lifecycle not yet settled");
    let mut expected = vec![
        (hash(&abandoned), Unblock::Retry, None),
        (
            hash(&mid_send),
            Unblock::ResendOrEvidence,
            Some(AttemptState::Sending),
        ),
        (
            hash(&ambiguous),
            Unblock::ResendOrEvidence,
            Some(AttemptState::Ambiguous),
        ),
    ];
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(shape(&listing.pending), expected);
    // One observation per expired command, none for the running one.
    assert_eq!(used.rpcs(), 3 * support::observation_rpcs(), "{used:?}");
    for waiting in &listing.pending {
        assert_eq!(
            waiting.since.to_datetime(),
            start_time() + TimeDelta::seconds(60)
        );
        assert_eq!(waiting.fence_epoch, 1);
    }

    // Past the cutoff, the open attempts wait for evidence only.
    clock.advance(TimeDelta::seconds(64_800));
    let listing = journal.pending().await.expect("pending");
    let open: Vec<Unblock> = listing
        .pending
        .iter()
        .filter(|p| p.send.is_some())
        .map(|p| p.unblocked_by)
        .collect();
    assert_eq!(open, vec![Unblock::Evidence, Unblock::Evidence]);

    // Settled by a retry: it leaves the listing.
    let fence = started(&journal, &abandoned, 7).await;
    journal
        .complete_command(&abandoned, &lease(7), fence, &reference)
        .await
        .expect("complete");
    let listing = journal.pending().await.expect("pending");
    assert!(
        listing
            .pending
            .iter()
            .all(|p| p.command_key_hash.to_string() != hash(&abandoned))
    );
    assert_eq!(
        listing.pending.len(),
        3,
        "the two open sends and the running lease's command, expired by now"
    );

    // Redacted: no raw value in what it prints.
    let text = serde_json::to_string(&listing.pending).expect("json");
    assert!(!text.contains("CANARY"), "{text}");
}

#[tokio::test]
async fn pending_fails_closed_on_a_broken_listed_lifecycle() {
    let connection = support::fresh_connection().await;
    let clock = Arc::new(ManualClock::new(start_time()));
    let journal = support::clocked_journal(connection.clone(), clock.clone());
    let cmd = command(950, json!({}));
    started(&journal, &cmd, 50).await;
    let path = format!("checkoutRequests/{}/lifecycle/current", hash(&cmd));
    let mut doc = support::get(&connection, &path).await.expect("lifecycle");
    doc.fields.insert(
        "fenceEpoch".into(),
        gcloud_sdk::google::firestore::v1::Value {
            value_type: Some(
                gcloud_sdk::google::firestore::v1::value::ValueType::StringValue("1".into()),
            ),
        },
    );
    support::put(&connection, &path, doc.fields).await;
    let answer = journal.pending().await;
    assert!(
        matches!(
            answer,
            Err(command_journal::JournalError::JournalCorrupt { .. })
        ),
        "{answer:?}"
    );
}

/// A charge its command ended without (attempt 1 proven absent, attempt 2 charged, and
/// then attempt 1's charge found) is recorded once (`record_late_charge`, the
/// transition `execute` and recovery run), listed by `pending` after the waiting
/// commands, named by `verify` for a person while the journal stays clean, and counted.
#[tokio::test]
async fn a_late_charge_is_recorded_once_listed_and_named_by_verify() {
    use command_journal::ResultEnvelope;
    use command_journal_core::tools::lease::CommandCall;
    use command_journal_core::tools::sends::late::RecordLateCharge;
    let connection = support::fresh_connection().await;
    let clock = Arc::new(ManualClock::new(start_time()));
    let journal = support::clocked_journal(connection.clone(), clock.clone());
    let cmd = command(960, json!({"order": 960}));
    let fence = started(&journal, &cmd, 60).await;
    journal
        .begin_send(&cmd, &lease(60), fence, &plan())
        .await
        .expect("begin_send");
    journal
        .record_send_outcome(
            &cmd,
            &lease(60),
            fence,
            &plan(),
            AttemptNumber::FIRST,
            &ProviderAnswer::Unknown,
        )
        .await
        .expect("ambiguous");
    // Proven absent once the lease and the settle window have passed; attempt 2
    // charged under its own key.
    clock.advance(TimeDelta::seconds(361));
    let fence = started(&journal, &cmd, 61).await;
    journal
        .reconcile_send(
            &cmd,
            &lease(61),
            fence,
            &plan(),
            AttemptNumber::FIRST,
            &ProviderAnswer::NotFound,
        )
        .await
        .expect("absent");
    journal
        .begin_send(&cmd, &lease(61), fence, &plan())
        .await
        .expect("attempt 2");
    let second = ResultEnvelope::new(&json!({"id": "ch_CANARY2", "amount": 1250})).expect("env");
    journal
        .record_send_outcome(
            &cmd,
            &lease(61),
            fence,
            &plan(),
            AttemptNumber::new(2).expect("2"),
            &ProviderAnswer::Succeeded(second),
        )
        .await
        .expect("succeeded");
    // Attempt 1's charge arrives after all.
    let first = ResultEnvelope::new(&json!({"id": "ch_CANARY1", "amount": 1250})).expect("env");
    let identity = cmd.identity();
    let commitment = identity.terminal_commitment(&first.reference());
    let now = command_journal::Timestamp::from_datetime(start_time() + TimeDelta::seconds(400))
        .expect("time");
    let record = RecordLateCharge::new(
        CommandCall::new(identity, now),
        AttemptNumber::FIRST,
        commitment,
    );
    let recorded = journal.run_transition(&record).await.expect("late");
    assert_eq!(recorded.label(), "recorded");
    let again = journal.run_transition(&record).await.expect("again");
    assert_eq!(again.label(), "already_recorded");

    let listing = journal.pending().await.expect("pending");
    assert!(listing.pending.is_empty(), "the command itself is settled");
    assert_eq!(listing.late_charges.len(), 1);
    let line = serde_json::to_value(&listing.late_charges[0]).expect("json");
    assert_eq!(line["commandKeyHash"], json!(hash(&cmd)));
    assert_eq!(line["unblockedBy"], "refund");
    assert_eq!(line["lateCharge"]["attempt"], 1);
    assert_eq!(line["lateCharge"]["reason"], "attempt_absent");
    assert!(!line.to_string().contains("CANARY"), "{line}");
    // Listed by its own key range only.
    let digest = cmd.identity().command_key_hash().clone();
    for index in 0..2 {
        let range = command_journal::pending::KeyRange::new(index, 2).expect("range");
        let listed = journal.pending_in(range).await.expect("pending");
        let expected = usize::from(range.contains(&digest));
        assert_eq!(listed.late_charges.len(), expected, "range {index} of 2");
    }

    let report = command_journal::verify(&connection, &mut |_| {})
        .await
        .expect("verify");
    assert!(report.clean, "{:?}", report.finding_counts);
    let named: Vec<_> = report.attention.iter().map(|a| a.code.as_str()).collect();
    assert_eq!(named, ["late_charge"]);
    assert!(report.attention[0].path.ends_with("/lateCharges/0001"));
}
