//! Whether a listed command waits, and why, over the in-memory store: a running
//! lease waits for nobody; an expired one without a send waits for a retry; an open
//! attempt waits for a re-send or evidence before its cutoff, for evidence after it;
//! a settled command is not pending; a broken journal fails closed.

use super::read::PendingRead;
use super::*;
use crate::document::lifecycle;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{CommandInput, CommandRequest, LeaseId};
use crate::lease::{LeaseCall, LeaseOutput};
use crate::sends::AttemptNumber;
use crate::sends::begin::BeginSend;
use crate::sends::provider::ProviderAnswer;
use crate::sends::record::Record;
use crate::sends::{ProviderPlan, ProviderPlanRequest};
use crate::start::Start;
use crate::testing::{Store, fresh_lease};
use serde_json::json;

const T0: i64 = 1_800_000_000_123_456;
const SEC: i64 = 1_000_000;

fn input() -> CommandInput {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: "CANARYcaller",
        command_id: "ca1a0000-c0de-4bad-8eed-00000000ca1c",
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &json!({"sku": "CANARYsku"}),
    })
    .expect("valid command")
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_pending",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250}),
        key_retention_seconds: 86_400,
    })
    .expect("valid plan")
}

fn at(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros).expect("time")
}

fn call(lease: &LeaseId, now: Timestamp) -> LeaseCall {
    let input = input();
    let identity = input.identity();
    let owner = input.lease_owner(&identity, lease).expect("owner");
    LeaseCall::new(identity, owner, now)
}

fn hash() -> Digest {
    input().identity().command_key_hash().clone()
}

/// A store with the command started at `T0` under `lease`; its fence.
fn started(store: &mut Store, lease: &LeaseId) -> FenceEpoch {
    let input = input();
    let identity = input.identity();
    let owner = input.lease_owner(&identity, lease).expect("owner");
    match store
        .answer(&Start::new(identity, owner, at(T0)))
        .expect("start")
        .lease
    {
        LeaseOutput::Acquired { fence_epoch, .. } => fence_epoch,
        other => panic!("{other:?}"),
    }
}

fn pending_at(store: &mut Store, micros: i64) -> Option<PendingCommand> {
    store
        .answer(&PendingRead::new(hash(), at(micros)))
        .expect("pending read")
}

#[test]
fn a_lease_waits_for_nobody_until_it_expires_then_for_a_retry() {
    let mut store = Store::new();
    let lease = fresh_lease();
    let fence = started(&mut store, &lease);
    assert_eq!(pending_at(&mut store, T0 + 59 * SEC), None);
    let waiting = pending_at(&mut store, T0 + 60 * SEC).expect("pending at expiry");
    assert_eq!(waiting.since, at(T0 + 60 * SEC));
    assert_eq!(waiting.fence_epoch, fence);
    assert_eq!(waiting.send, None);
    assert_eq!(waiting.unblocked_by, Unblock::Retry);
    assert_eq!(waiting.state, LifecycleState::Leased);
    assert_eq!(waiting.command_key_hash, hash());
}

#[test]
fn an_open_attempt_waits_for_a_resend_or_evidence_then_for_evidence_past_its_cutoff() {
    let mut store = Store::new();
    let lease = fresh_lease();
    let fence = started(&mut store, &lease);
    store
        .answer(&BeginSend::new(call(&lease, at(T0)), fence, plan()))
        .expect("begin_send");
    let before_cutoff = pending_at(&mut store, T0 + 61 * SEC).expect("pending");
    let send = before_cutoff.send.clone().expect("a send");
    assert_eq!(
        (send.attempt, send.state),
        (AttemptNumber::FIRST, AttemptState::Sending)
    );
    assert_eq!(before_cutoff.unblocked_by, Unblock::ResendOrEvidence);
    let cutoff = send.send_cutoff_at.micros();
    assert!(send.absence_provable_from.is_some());
    let after_cutoff = pending_at(&mut store, cutoff).expect("pending");
    assert_eq!(after_cutoff.unblocked_by, Unblock::Evidence);

    // Recorded ambiguous, the same; recorded succeeded, nothing waits.
    let identity = input().identity();
    let (closing, _) = ProviderAnswer::Unknown.closing(&identity);
    store
        .answer(&Record::outcome(
            call(&lease, at(T0 + SEC)),
            fence,
            AttemptNumber::FIRST,
            closing,
            plan(),
        ))
        .expect("ambiguous");
    let ambiguous = pending_at(&mut store, T0 + 61 * SEC).expect("pending");
    assert_eq!(
        ambiguous.send.map(|s| s.state),
        Some(AttemptState::Ambiguous)
    );
    let reference =
        crate::identity::TerminalReferenceFingerprint::parse(&"ab".repeat(32)).expect("ref");
    let (closing, _) = ProviderAnswer::SucceededWithReference(reference).closing(&identity);
    store
        .answer(&Record::reconciliation(
            call(&lease, at(T0 + 2 * SEC)),
            fence,
            AttemptNumber::FIRST,
            closing,
            plan(),
        ))
        .expect("reconciled");
    assert_eq!(pending_at(&mut store, T0 + 61 * SEC), None);
}

#[test]
fn a_listed_command_without_a_lifecycle_or_with_a_broken_one_fails_closed() {
    let mut store = Store::new();
    let read = PendingRead::new(hash(), at(T0));
    assert!(matches!(
        store.answer(&read),
        Err(JournalError::JournalCorrupt { .. })
    ));
    let lease = fresh_lease();
    started(&mut store, &lease);
    let path = lifecycle::path(&hash());
    store
        .get_mut(&path)
        .expect("lifecycle")
        .insert("fenceEpoch".into(), crate::document::fields::int(0));
    assert!(matches!(
        store.answer(&PendingRead::new(hash(), at(T0 + 61 * SEC))),
        Err(JournalError::JournalCorrupt { .. })
    ));
}

#[test]
fn its_json_names_the_hash_and_never_a_raw_value() {
    let mut store = Store::new();
    let lease = fresh_lease();
    started(&mut store, &lease);
    let waiting = pending_at(&mut store, T0 + 61 * SEC).expect("pending");
    let text = serde_json::to_string(&waiting).expect("json");
    assert!(text.contains(hash().as_str()), "{text}");
    assert!(text.contains("\"unblockedBy\":\"retry\""), "{text}");
    assert!(!text.contains("CANARY"), "{text}");
}

#[test]
fn an_indeterminate_attempt_waits_for_its_final_state_never_for_a_resend_or_an_absence() {
    for (answer, state) in [
        (
            ProviderAnswer::ReplayedUnknown,
            AttemptState::ReplayedUnknown,
        ),
        (ProviderAnswer::Indeterminate, AttemptState::Indeterminate),
        (
            ProviderAnswer::CustomerMustAct(crate::sends::CustomerAction::Open {
                url: crate::sends::Handoff::new("https://pay.example/CANARY"),
            }),
            AttemptState::AwaitingCustomer,
        ),
    ] {
        let (reason, named) = match state {
            AttemptState::AwaitingCustomer => (Unblock::Customer, "customer"),
            _ => (Unblock::FinalEvidence, "final_evidence"),
        };
        let mut store = Store::new();
        let lease = fresh_lease();
        let fence = started(&mut store, &lease);
        store
            .answer(&BeginSend::new(call(&lease, at(T0)), fence, plan()))
            .expect("begin_send");
        let (closing, _) = answer.closing(&input().identity());
        store
            .answer(&Record::outcome(
                call(&lease, at(T0 + SEC)),
                fence,
                AttemptNumber::FIRST,
                closing,
                plan(),
            ))
            .expect("recorded");
        // Its lease still runs: nobody waits yet.
        assert_eq!(pending_at(&mut store, T0 + 59 * SEC), None);
        // Before its cutoff, past the usual window, past the key's retention: only its
        // final state moves it (a re-send replays the stored answer; no "not found"
        // proves an absence), and the listing says so with its own reason.
        for now in [T0 + 61 * SEC, T0 + 3_600 * SEC, T0 + 86_400 * SEC] {
            let waiting = pending_at(&mut store, now).expect("pending");
            let send = waiting.send.clone().expect("a send");
            assert_eq!((send.attempt, send.state), (AttemptNumber::FIRST, state));
            assert_eq!(waiting.unblocked_by, reason);
            assert_eq!(send.absence_provable_from, None);
            let text = serde_json::to_string(&waiting).expect("json");
            assert!(
                text.contains(&format!("\"unblockedBy\":\"{named}\"")),
                "{text}"
            );
            assert!(!text.contains("CANARY"), "{text}");
        }
    }
}

/// A listed command's lifecycle that is broken in any way (a field added, one of
/// another type, a state of another spelling or type, one missing) fails its read
/// closed, whether its lease has expired or not, and nothing is written: the journal's
/// own `lifecycle/current` is never skipped as if it were a foreign document.
#[test]
fn a_listed_lifecycle_broken_in_any_way_fails_closed_and_writes_nothing() {
    use crate::document::fields;
    let text = |s: &str| crate::document::value::Value {
        value_type: Some(crate::document::value::ValueType::StringValue(s.to_owned())),
    };
    // Each field set to a value, or removed.
    let breaks = [
        ("note", Some(text("CANARY"))),
        ("state", Some(text("LEASED"))),
        ("state", Some(fields::int(1))),
        ("leaseExpiresAt", Some(text("later"))),
        ("leaseExpiresAt", None),
        ("state", None),
    ];
    for (i, (name, value)) in breaks.into_iter().enumerate() {
        let mut store = Store::new();
        started(&mut store, &fresh_lease());
        let map = store.get_mut(&lifecycle::path(&hash())).expect("lifecycle");
        match value {
            Some(value) => map.insert(name.into(), value),
            None => map.remove(name),
        };
        let before = store.documents();
        for now in [T0, T0 + 61 * SEC] {
            assert!(
                matches!(
                    store.answer(&PendingRead::new(hash(), at(now))),
                    Err(JournalError::JournalCorrupt { .. })
                ),
                "break {i} at {now}"
            );
        }
        assert_eq!(store.documents(), before, "break {i}");
    }
}
