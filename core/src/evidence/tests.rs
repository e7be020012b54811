//! Recording evidence through the call machine over the in-memory store: the key
//! index written with every attempt that opens, an unknown key acknowledged without a
//! write, each answer given settled by the one settle program under a lease the call
//! takes itself (never asking the provider), the same evidence twice written once,
//! and every index the journal cannot hold to its command refused.

use super::program::EvidenceProgram;
use super::{Evidence, EvidenceOutcome};
use crate::call::{CallOptions, Concurrency, Input, Io, Now, Single};
use crate::digest::Digest;
use crate::envelope::ResultEnvelope;
use crate::error::JournalError;
use crate::identity::{CommandIdentity, CommandInput, CommandRequest};
use crate::lease::{CommandCall, CommandState, LeaseCall};
use crate::recovery::owner::recovery_owner;
use crate::sends::begin::BeginSend;
use crate::sends::key_index::{self, KeyIndex};
use crate::sends::provider::ProviderAnswer;
use crate::sends::status::SendStatusRead;
use crate::sends::{AttemptNumber, AttemptState, BeginSendOutput, ProviderAccount, ProviderPlan};
use crate::settle::{Settle, Settled, Source};
use crate::start::Start;
use crate::testing::{CallTrace, Store, fresh_lease};
use crate::time::Timestamp;
use crate::transaction::Transition;
use serde_json::json;
use std::num::NonZeroU32;

const T0: i64 = 1_800_000_000_123_456;
const SEC: i64 = 1_000_000;

fn at(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros).expect("time")
}

fn input() -> CommandInput {
    static PAYLOAD: std::sync::LazyLock<serde_json::Value> =
        std::sync::LazyLock::new(|| json!({"sku": "CANARYsku"}));
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: "CANARYcaller",
        command_id: "ca1a0000-c0de-4bad-8eed-00000000e7e1",
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &PAYLOAD,
    })
    .expect("valid command")
}

fn identity() -> CommandIdentity {
    input().identity()
}

fn hash() -> Digest {
    identity().command_key_hash().clone()
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(crate::sends::ProviderPlanRequest {
        provider: "stub",
        account: "acct_evidence",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250}),
        key_retention_seconds: 86_400,
    })
    .expect("valid plan")
}

fn account() -> ProviderAccount {
    ProviderAccount::new("stub", "acct_evidence", "test").expect("valid account")
}

fn envelope() -> ResultEnvelope {
    ResultEnvelope::new(&json!({"id": "ch_CANARY", "status": "succeeded"})).expect("envelope")
}

fn options() -> CallOptions {
    CallOptions {
        concurrency: Concurrency::Preconditions,
        attempts: NonZeroU32::new(10).expect("ten"),
        fast_paths: true,
        deadline: None,
    }
}

fn run<T>(store: &mut Store, op: T, now: i64) -> Result<T::Output, JournalError>
where
    T: Transition,
    T::Output: crate::call::Labelled,
{
    store
        .call(Single::new(op), options(), at(now), |_, _| None)
        .0
}

/// The provider idempotency key of attempt `n`, as the stored plan derives it.
fn key(n: i64) -> String {
    let attempt = AttemptNumber::new(n).expect("attempt");
    crate::sends::plan::attempt_key(&identity(), plan().operation(), attempt)
}

/// A client takes the lease at `now` and is permitted to send the current attempt.
fn client_permitted(store: &mut Store, now: i64) {
    client_sends(store, now);
}

/// A client sends attempt 1 at `now` and hears that the customer must act (a hosted
/// page): the attempt waits for its customer.
fn client_awaiting(store: &mut Store, now: i64) {
    let (call, fence) = client_sends(store, now);
    let action = crate::sends::CustomerAction::Open {
        url: crate::sends::Handoff::new("https://pay.example/CANARYpage"),
    };
    let answer = ProviderAnswer::CustomerMustAct(action);
    let record = crate::sends::record::Record::prepare(
        call,
        fence,
        AttemptNumber::FIRST,
        &answer,
        Some(plan()),
        crate::sends::record::Mode::Outcome,
    )
    .expect("prepared");
    run(store, record, now + SEC).expect("recorded");
    let send = state(store, now + 2 * SEC).send.expect("send");
    assert_eq!(send.state, AttemptState::AwaitingCustomer);
}

/// A client takes the lease at `now` and is permitted to send the current attempt:
/// its call and fence.
fn client_sends(store: &mut Store, now: i64) -> (LeaseCall, crate::fence::FenceEpoch) {
    let owner = input()
        .lease_owner(&identity(), &fresh_lease())
        .expect("owner");
    let started = run(store, Start::new(identity(), owner.clone(), at(now)), now).expect("start");
    let crate::lease::LeaseOutput::Acquired { fence_epoch, .. } = started.lease else {
        panic!("{started:?}");
    };
    let call = LeaseCall::new(identity(), owner, at(now));
    match run(
        store,
        BeginSend::new(call.clone(), fence_epoch, plan()),
        now,
    )
    .expect("begin")
    {
        BeginSendOutput::Permitted(_) => {}
        other => panic!("{other:?}"),
    }
    (call, fence_epoch)
}

/// Attempt 1 sent, proven absent by a job past its settle window.
fn first_attempt_absent(store: &mut Store) {
    client_permitted(store, T0);
    let owner = recovery_owner(&hash(), &fresh_lease());
    let job = Settle::taking(hash(), owner, Some(account()), Source::Lookup);
    let mut asked = 0;
    let (result, _) = store.call_with_clocks(
        job,
        options(),
        || Now::unstepped(at(T0 + 400 * SEC)),
        |_, io| match io {
            Io::Lookup(_) => {
                asked += 1;
                Some(Input::LookedUp(ProviderAnswer::NotFound))
            }
            _ => None,
        },
    );
    assert_eq!((result, asked), (Ok(Settled::Absent), 2));
}

fn state(store: &mut Store, now: i64) -> crate::sends::CommandStatus {
    let read = SendStatusRead::new(CommandCall::new(identity(), at(now)));
    run(store, read, now).expect("status")
}

/// Records `evidence` at `now`, declaring the plan's account; the provider is never
/// asked (a send or lookup fails the test).
fn record(
    store: &mut Store,
    evidence: Evidence,
    now: i64,
) -> (Result<EvidenceOutcome, JournalError>, CallTrace) {
    record_at(store, evidence, Some(account()), now)
}

fn record_at(
    store: &mut Store,
    evidence: Evidence,
    account: Option<ProviderAccount>,
    now: i64,
) -> (Result<EvidenceOutcome, JournalError>, CallTrace) {
    let program = EvidenceProgram::new(evidence, fresh_lease(), account);
    store.call_with_clocks(
        program,
        options(),
        || Now::unstepped(at(now)),
        |_, io| match io {
            Io::Lookup(_) | Io::Send(_) => panic!("evidence asked the provider: {io:?}"),
            _ => None,
        },
    )
}

fn given(n: i64, answer: ProviderAnswer) -> Evidence {
    Evidence::new(key(n), answer)
}

#[test]
fn every_attempt_that_opens_writes_its_keys_index_and_a_resend_writes_none() {
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let expected = |n: i64| KeyIndex {
        command_key_hash: hash(),
        attempt: AttemptNumber::new(n).expect("attempt"),
    };
    let stored = |store: &Store, n: i64| {
        store
            .get(&key_index::path(&key(n)))
            .map(|fields| KeyIndex::parse(fields).expect("strict"))
    };
    assert_eq!(stored(&store, 1), Some(expected(1)));
    assert_eq!(store.count(key_index::COLLECTION), 1);
    // A takeover re-sends attempt 1 under the same key: no index written again.
    let written = store.written(&key_index::path(&key(1)));
    client_permitted(&mut store, T0 + 61 * SEC);
    assert_eq!(store.written(&key_index::path(&key(1))), written);
    // Attempt 2 opens after attempt 1's proven absence: its own index.
    let mut store = Store::new();
    first_attempt_absent(&mut store);
    client_permitted(&mut store, T0 + 470 * SEC);
    assert_eq!(stored(&store, 2), Some(expected(2)));
    assert_eq!(store.count(key_index::COLLECTION), 2);
    // No raw value in the index: its id is a digest of the key, its fields three.
    for (path, fields) in store.iter().filter(|(p, _)| p.starts_with("providerKeys/")) {
        assert!(!path.contains(&key(1)[4..]) && !path.contains(&key(2)[4..]));
        assert_eq!(fields.len(), 3, "{path}");
        assert!(!format!("{fields:?}").contains("CANARY"));
    }
}

#[test]
fn an_unknown_key_is_acknowledged_and_writes_nothing() {
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let before = store.documents();
    // Not of the journal's form: nothing read.
    for key in [
        "pi_123",
        "",
        "cj1-",
        "cj1-ABC",
        &format!("cj1-{}", "A".repeat(64)),
    ] {
        let evidence = Evidence::new(key, ProviderAnswer::Succeeded(envelope()));
        let (result, trace) = record(&mut store, evidence, T0 + 61 * SEC);
        assert_eq!(result, Ok(EvidenceOutcome::UnknownObject), "{key}");
        assert!(trace.steps.is_empty(), "{key}: {:?}", trace.steps);
    }
    // Of its form, indexed nowhere (another command's key, a later attempt's): one
    // read of the index.
    let elsewhere = format!("cj1-{}", "b".repeat(64));
    for key in [elsewhere, key(2)] {
        let evidence = Evidence::new(key, ProviderAnswer::Succeeded(envelope()));
        let (result, trace) = record(&mut store, evidence, T0 + 61 * SEC);
        assert_eq!(result, Ok(EvidenceOutcome::UnknownObject));
        assert_eq!(trace.steps, ["read"]);
        assert_eq!(
            trace.metrics.last().map(|m| (m.name, m.outcome)),
            Some((
                crate::transaction::OperationName::RecordEvidence,
                "unknown_object"
            ))
        );
    }
    assert_eq!(store.documents(), before);
}

#[test]
fn a_charge_given_settles_the_open_attempt_with_no_lookup_and_again_writes_nothing() {
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    // The client's lease runs: in progress, nothing written.
    let before = store.documents();
    let charge = || given(1, ProviderAnswer::Succeeded(envelope()));
    let (result, trace) = record(&mut store, charge(), T0 + 30 * SEC);
    assert_eq!(result, Ok(EvidenceOutcome::InProgress));
    // The index, the command's read, the takeover's read (busy): no commit.
    assert_eq!(trace.steps, ["read", "read", "read"]);
    assert_eq!(store.documents(), before);
    // Once it has expired: the index, the command's read, the takeover, the
    // reconciliation planned from it; the provider never asked.
    let (result, trace) = record(&mut store, charge(), T0 + 61 * SEC);
    assert_eq!(result, Ok(EvidenceOutcome::Succeeded));
    assert_eq!(trace.steps, ["read", "read", "read", "commit", "planned"]);
    let status = state(&mut store, T0 + 62 * SEC);
    assert_eq!(status.command.state, CommandState::Succeeded);
    let stored = crate::envelope::stored::path(&hash());
    assert!(store.get(&stored).is_some(), "the envelope stored");
    // The same evidence again, and the same charge in any order after it: nothing.
    let before = store.documents();
    for evidence in [charge(), given(1, ProviderAnswer::Declined), charge()] {
        let (result, _) = record(&mut store, evidence, T0 + 63 * SEC);
        assert_eq!(result, Ok(EvidenceOutcome::AlreadySettled));
    }
    assert_eq!(store.documents(), before, "nothing written twice");
}

#[test]
fn a_decline_given_fails_the_command_and_a_charge_after_it_is_late() {
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let (result, _) = record(
        &mut store,
        given(1, ProviderAnswer::Declined),
        T0 + 61 * SEC,
    );
    assert_eq!(result, Ok(EvidenceOutcome::Declined));
    assert_eq!(
        state(&mut store, T0 + 62 * SEC).command.state,
        CommandState::FailedFinal
    );
    // The decline again writes nothing.
    let before = store.documents();
    let (result, _) = record(
        &mut store,
        given(1, ProviderAnswer::Declined),
        T0 + 63 * SEC,
    );
    assert_eq!(result, Ok(EvidenceOutcome::AlreadySettled));
    assert_eq!(store.documents(), before);
    // A charge arriving after (events in any order): a late charge, recorded once.
    let charge = || given(1, ProviderAnswer::Succeeded(envelope()));
    let (result, _) = record(&mut store, charge(), T0 + 64 * SEC);
    assert_eq!(result, Ok(EvidenceOutcome::LateCharge));
    let late = crate::sends::late::path(&hash(), AttemptNumber::FIRST);
    assert!(store.get(&late).is_some());
    let before = store.documents();
    let (result, _) = record(&mut store, charge(), T0 + 65 * SEC);
    assert_eq!(result, Ok(EvidenceOutcome::LateCharge));
    assert_eq!(store.documents(), before, "the late charge written once");
}

#[test]
fn an_earlier_attempts_charge_is_a_late_charge_and_its_refusal_nothing() {
    let mut store = Store::new();
    first_attempt_absent(&mut store);
    client_permitted(&mut store, T0 + 470 * SEC);
    let before = store.documents();
    let (result, _) = record(
        &mut store,
        given(1, ProviderAnswer::Declined),
        T0 + 471 * SEC,
    );
    assert_eq!(result, Ok(EvidenceOutcome::NothingOpen));
    assert_eq!(store.documents(), before);
    let charge = given(1, ProviderAnswer::Succeeded(envelope()));
    let (result, _) = record(&mut store, charge, T0 + 472 * SEC);
    assert_eq!(result, Ok(EvidenceOutcome::LateCharge));
    let send = state(&mut store, T0 + 473 * SEC).send.expect("send");
    assert_eq!((send.attempt.get(), send.state), (2, AttemptState::Sending));
}

#[test]
fn evidence_never_proves_an_absence_nor_settles_on_no_verdict() {
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let before = store.documents();
    for (answer, outcome) in [
        (ProviderAnswer::NotFound, EvidenceOutcome::NotFound),
        (ProviderAnswer::Unknown, EvidenceOutcome::Inconclusive),
        (
            ProviderAnswer::ReplayedUnknown,
            EvidenceOutcome::Inconclusive,
        ),
        (ProviderAnswer::Indeterminate, EvidenceOutcome::Inconclusive),
        // A closed object proves nothing of an attempt that does not wait for its
        // customer, and a waiting one settles nothing.
        (ProviderAnswer::Closed, EvidenceOutcome::Inconclusive),
        (
            ProviderAnswer::CustomerMustAct(crate::sends::CustomerAction::Open {
                url: crate::sends::Handoff::new("https://pay.example/CANARYpage"),
            }),
            EvidenceOutcome::Inconclusive,
        ),
    ] {
        // Long past the settle window, when a lookup's "not found" would prove it.
        let (result, trace) = record(&mut store, given(1, answer.clone()), T0 + 4000 * SEC);
        assert_eq!(result, Ok(outcome), "{answer:?}");
        assert_eq!(trace.steps, ["read", "read"], "no lease taken: {answer:?}");
    }
    assert_eq!(store.documents(), before);
    let send = state(&mut store, T0 + 4001 * SEC).send.expect("send");
    assert_eq!(send.state, AttemptState::Sending, "never absent");
}

#[test]
fn another_account_is_refused_and_an_undeclared_one_still_records_evidence() {
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let before = store.documents();
    let other = ProviderAccount::new("stub", "acct_other", "test").expect("account");
    let charge = || given(1, ProviderAnswer::Succeeded(envelope()));
    let (result, _) = record_at(&mut store, charge(), Some(other), T0 + 61 * SEC);
    assert_eq!(result, Ok(EvidenceOutcome::OtherAccount));
    assert_eq!(store.documents(), before);
    let (result, _) = record_at(&mut store, charge(), None, T0 + 61 * SEC);
    assert_eq!(result, Ok(EvidenceOutcome::Succeeded));
}

#[test]
fn an_index_the_journal_cannot_hold_to_its_command_is_corrupt_and_writes_nothing() {
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let path = key_index::path(&key(1));
    let index = |hash: Digest, n: i64| KeyIndex {
        command_key_hash: hash,
        attempt: AttemptNumber::new(n).expect("attempt"),
    };
    let mut extra = index(hash(), 1).encode();
    extra.insert("key".into(), crate::document::fields::string("x"));
    let cases = [
        ("malformed", extra),
        ("another attempt", index(hash(), 2).encode()),
        (
            "no command",
            index(Digest::parse(&"d".repeat(64)).expect("hash"), 1).encode(),
        ),
    ];
    for (case, fields) in cases {
        let mut store = store.clone();
        store.insert(path.clone(), fields);
        let before = store.documents();
        let charge = given(1, ProviderAnswer::Succeeded(envelope()));
        let (result, _) = record(&mut store, charge, T0 + 61 * SEC);
        assert_eq!(
            result.map_err(|e| e.code()),
            Err("journal_corrupt"),
            "{case}"
        );
        assert_eq!(store.documents(), before, "{case}");
    }
    // An index at another key's digest naming this command: its plan derives no such
    // key.
    let mut forged = store.clone();
    let index_two = key_index::path(&format!("cj1-{}", "f".repeat(64)));
    forged.insert(index_two, index(hash(), 1).encode());
    let evidence = Evidence::new(format!("cj1-{}", "f".repeat(64)), ProviderAnswer::Declined);
    let (result, _) = record(&mut forged, evidence, T0 + 61 * SEC);
    assert_eq!(result.map_err(|e| e.code()), Err("journal_corrupt"));
}

#[test]
fn evidence_never_shows_its_key() {
    let canary = format!("cj1-{}", "c".repeat(64));
    let evidence = Evidence::new(canary.clone(), ProviderAnswer::Declined);
    let program = EvidenceProgram::new(evidence.clone(), fresh_lease(), Some(account()));
    let shown = format!("{evidence:?} {program:?}");
    assert!(!shown.contains(&"c".repeat(64)), "{shown}");
    assert!(shown.contains("Declined"), "{shown}");
}

#[test]
fn an_index_found_before_its_attempt_opened_refuses_the_permit_and_writes_nothing() {
    // A stray index document where attempt 1's will be: the first send is refused.
    let mut store = Store::new();
    let owner = input()
        .lease_owner(&identity(), &fresh_lease())
        .expect("owner");
    let started = run(
        &mut store,
        Start::new(identity(), owner.clone(), at(T0)),
        T0,
    );
    let crate::lease::LeaseOutput::Acquired { fence_epoch, .. } = started.expect("start").lease
    else {
        panic!("not acquired");
    };
    let stray = KeyIndex {
        command_key_hash: hash(),
        attempt: AttemptNumber::FIRST,
    };
    store.insert(key_index::path(&key(1)), stray.encode());
    let before = store.documents();
    let call = LeaseCall::new(identity(), owner, at(T0));
    let begin = run(&mut store, BeginSend::new(call, fence_epoch, plan()), T0);
    assert_eq!(begin.map_err(|e| e.code()), Err("journal_corrupt"));
    assert_eq!(store.documents(), before);
    // And where attempt 2's will be: the next attempt is refused too.
    let mut store = Store::new();
    first_attempt_absent(&mut store);
    let stray = KeyIndex {
        command_key_hash: hash(),
        attempt: AttemptNumber::new(2).expect("attempt"),
    };
    store.insert(key_index::path(&key(2)), stray.encode());
    let before = store.documents();
    let owner = input()
        .lease_owner(&identity(), &fresh_lease())
        .expect("owner");
    let now = T0 + 470 * SEC;
    let started = run(
        &mut store,
        Start::new(identity(), owner.clone(), at(now)),
        now,
    );
    let crate::lease::LeaseOutput::Acquired { fence_epoch, .. } = started.expect("start").lease
    else {
        panic!("not acquired");
    };
    let after_start = store.documents();
    assert_ne!(after_start, before, "the takeover");
    let call = LeaseCall::new(identity(), owner, at(now));
    let begin = run(&mut store, BeginSend::new(call, fence_epoch, plan()), now);
    assert_eq!(begin.map_err(|e| e.code()), Err("journal_corrupt"));
    assert_eq!(store.documents(), after_start);
}

#[test]
fn a_closed_object_read_by_id_just_now_ends_an_attempt_awaiting_its_customer() {
    let mut store = Store::new();
    client_awaiting(&mut store, T0);
    let now = T0 + 4000 * SEC;
    let closed_at = |read: i64| Evidence::read_by_id(key(1), ProviderAnswer::Closed, at(read));
    // Refused, nothing written, no lease taken: a `Closed` from an event's body, read
    // by id too long ago (more than a lease) or later than the record, or a waiting
    // answer read by id.
    let before = store.documents();
    let waiting = ProviderAnswer::CustomerMustAct(crate::sends::CustomerAction::Open {
        url: crate::sends::Handoff::new("https://pay.example/CANARYpage"),
    });
    for evidence in [
        given(1, ProviderAnswer::Closed),
        closed_at(now - super::READ_BY_ID_FRESH_SECONDS * SEC - 1),
        closed_at(now + 1),
        Evidence::read_by_id(key(1), waiting, at(now)),
    ] {
        let shown = format!("{evidence:?}");
        let (result, trace) = record(&mut store, evidence, now);
        assert_eq!(result, Ok(EvidenceOutcome::Inconclusive), "{shown}");
        assert_eq!(trace.steps, ["read", "read"], "{shown}");
    }
    assert_eq!(store.documents(), before);
    // Read by id within the lease before the record: the lease taken over, the
    // command's final failure, nothing charged; the provider never asked.
    let evidence = closed_at(now - super::READ_BY_ID_FRESH_SECONDS * SEC);
    assert!(
        !format!("{evidence:?}").contains(&key(1)[4..]),
        "no key shown"
    );
    let (result, trace) = record(&mut store, evidence.clone(), now);
    assert_eq!(result, Ok(EvidenceOutcome::Declined));
    assert_eq!(trace.steps, ["read", "read", "read", "commit", "planned"]);
    let status = state(&mut store, now + SEC);
    assert_eq!(status.command.state, CommandState::FailedFinal);
    assert_eq!(
        status.send.map(|send| send.state),
        Some(AttemptState::Declined)
    );
    assert!(store.get(&crate::envelope::stored::path(&hash())).is_none());
    // The same event again writes nothing.
    let before = store.documents();
    let (result, _) = record(&mut store, evidence, now + 2 * SEC);
    assert_eq!(result, Ok(EvidenceOutcome::AlreadySettled));
    assert_eq!(store.documents(), before);
}

#[test]
fn a_closed_object_read_by_id_proves_nothing_of_an_attempt_not_awaiting_its_customer() {
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let before = store.documents();
    let now = T0 + 4000 * SEC;
    let evidence = Evidence::read_by_id(key(1), ProviderAnswer::Closed, at(now));
    let (result, trace) = record(&mut store, evidence, now);
    assert_eq!(result, Ok(EvidenceOutcome::Inconclusive));
    assert_eq!(trace.steps, ["read", "read"]);
    assert_eq!(store.documents(), before);
    let send = state(&mut store, now + SEC).send.expect("send");
    assert_eq!(send.state, AttemptState::Sending, "never closed");
}

/// Only what the index itself got wrong is a corrupt index: a command not registered,
/// or one whose plan derives no attempt's key equal to the key. Any other
/// `invalid_input` from the settle program keeps its kind and field (a caller answers
/// it with its own code), and other errors pass through as they are.
#[test]
fn only_an_index_naming_the_wrong_command_is_reported_corrupt() {
    use super::index_read::indexed_error;
    let corrupt = |error: &JournalError| matches!(error, JournalError::JournalCorrupt { .. });
    assert!(corrupt(&indexed_error(JournalError::NotRegistered)));
    assert!(corrupt(&indexed_error(JournalError::invalid(
        "providerIdempotencyKey"
    ))));
    for field in ["leaseId", "providerAnswer", "payload"] {
        assert_eq!(
            indexed_error(JournalError::invalid(field)),
            JournalError::invalid(field)
        );
    }
    assert_eq!(
        indexed_error(JournalError::CommandConflict),
        JournalError::CommandConflict
    );
}
