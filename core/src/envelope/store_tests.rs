//! The envelope transitions over the shared in-memory [`Store`], which runs them by
//! the runner's rules: `complete_with_result`, `record_send_outcome` and
//! `reconcile_send` with an envelope, and `result`.

use super::ResultEnvelope;
use super::read::ResultRead;
use super::record::WithResult;
use super::stored::{self, StoredResult};
use crate::digest::Digest;
use crate::document::fields::{self, FieldMap};
use crate::document::lifecycle;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{
    CommandIdentity, CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint,
};
use crate::lease::{Acquire, LeaseCall, Terminal, TerminalOutput, TerminalRequest};
use crate::registration::Registration;
use crate::sends::AttemptNumber;
use crate::sends::SendOutcomeOutput;
use crate::sends::begin::BeginSend;
use crate::sends::guard::Guarded;
use crate::sends::provider::Closing;
use crate::sends::record::Record;
use crate::sends::tests::{CUTOFF, SEC, T0, at, plan};
use crate::testing::Store;
use crate::transaction::Write;
use serde_json::json;
use std::sync::LazyLock;

const CALLER_ID: &str = "CANARYcallerR";
const COMMAND_ID: &str = "ca1a0000-c0de-4bad-8eed-0000000e0e01";
const SECRET: &str = "CANARYenvelopeSecret";
const T1: i64 = T0 + SEC;

static INPUT: LazyLock<CommandInput> = LazyLock::new(|| {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: CALLER_ID,
        command_id: COMMAND_ID,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &json!({"sku": "CANARYsku"}),
    })
    .expect("valid command")
});

fn identity() -> CommandIdentity {
    INPUT.identity()
}

fn hash() -> Digest {
    identity().command_key_hash().clone()
}

fn call(holder: u8, now: i64) -> LeaseCall {
    let lease = LeaseId::parse(&format!(
        "1ea5e0{holder:02x}-0000-4000-8000-0000000000{holder:02x}"
    ))
    .expect("lease id");
    let owner = INPUT.lease_owner(&identity(), &lease).expect("owner");
    LeaseCall::new(identity(), owner, at(now))
}

/// Envelope `n`: a charge whose id carries the canary.
fn envelope(n: i64) -> ResultEnvelope {
    ResultEnvelope::new(
        &json!({"id": format!("ch_{SECRET}"), "amount": 1250 + n, "currency": "eur"}),
    )
    .expect("envelope")
}

fn commitment(envelope: &ResultEnvelope) -> Digest {
    identity().terminal_commitment(&envelope.reference())
}

/// `complete_with_result` by holder 0, fence 1, at `now`.
fn complete(envelope: &ResultEnvelope, now: i64) -> WithResult<Guarded> {
    let request = TerminalRequest::Succeed(commitment(envelope));
    let terminal = Terminal::new(call(0, now), FenceEpoch::stored(1), request);
    WithResult::new(Guarded::new(terminal, &hash()), &hash(), at(now), envelope)
}

fn result_at(store: &mut Store, now: i64) -> Result<Option<ResultEnvelope>, JournalError> {
    store.answer(&ResultRead::new(call(9, now).command().clone()))
}

fn result(store: &mut Store) -> Result<Option<ResultEnvelope>, JournalError> {
    result_at(store, T1 + 10 * SEC)
}

fn registered() -> Store {
    let mut store = Store::new();
    store
        .answer(&Registration::new(identity(), at(T0 - SEC)))
        .expect("registered");
    store
}

fn leased() -> Store {
    let mut store = registered();
    store.answer(&Acquire::new(call(0, T0))).expect("leased");
    store
}

fn results_path() -> String {
    stored::path(&hash())
}

/// Runs `op`, checks it wrote nothing, and returns its error code.
fn refused<T>(store: &mut Store, op: &T) -> &'static str
where
    T: crate::transaction::Transition,
    T::Output: std::fmt::Debug + PartialEq,
{
    let before = store.clone();
    let ran = store.run(op);
    assert_eq!(*store, before, "a refusal wrote");
    match ran.result {
        Ok(output) => panic!("answered {output:?}"),
        Err(error) => error.code(),
    }
}

fn no_canary(store: &Store) {
    for (path, doc) in store.iter() {
        if path == &results_path() {
            continue; // the envelope is domain data the caller chose to store
        }
        let text = format!("{path} {doc:?}");
        for canary in ["CANARY", COMMAND_ID] {
            assert!(!text.contains(canary), "{path} holds a raw value");
        }
    }
}

#[test]
fn a_success_with_an_envelope_stores_it_in_the_same_commit() {
    let mut store = leased();
    let ran = store.run(&complete(&envelope(0), T1));
    assert_eq!(ran.result, Ok(TerminalOutput::Succeeded));
    let paths: Vec<&str> = ran.writes.iter().map(Write::path).collect();
    let created = ran
        .writes
        .iter()
        .filter(|w| matches!(w, Write::Create { .. }))
        .count();
    assert_eq!(
        ran.writes.len(),
        4,
        "lifecycle, event, plan absence, result"
    );
    assert_eq!(created, 2, "the terminal event and the result");
    assert!(paths.contains(&results_path().as_str()));
    // One commit: the result's write time is the lifecycle's.
    assert_eq!(
        store.written(&results_path()).map(|w| w.0),
        store.written(&lifecycle::path(&hash())).map(|w| w.1)
    );
    let doc = store.get(&results_path()).expect("results doc");
    let expected = fields::map([
        ("resultSchemaVersion", fields::int(1)),
        ("commandKeyHash", fields::string(hash().as_str())),
        ("envelope", fields::string(envelope(0).canonical())),
        ("createdAt", fields::timestamp(at(T1))),
    ]);
    assert_eq!(doc, &expected);
    let got = result(&mut store).expect("read").expect("an envelope");
    assert_eq!(got.canonical(), envelope(0).canonical());
    no_canary(&store);
}

#[test]
fn retries_write_nothing_and_another_envelope_conflicts() {
    let mut store = leased();
    store.answer(&complete(&envelope(0), T1)).expect("done");
    let before = store.clone();
    // Exact retries, even after the lease expired.
    for now in [T1, T1 + SEC, T0 + 120 * SEC] {
        let ran = store.run(&complete(&envelope(0), now));
        assert_eq!(ran.result, Ok(TerminalOutput::Succeeded));
        assert!(ran.writes.is_empty());
    }
    assert_eq!(store, before);
    assert_eq!(
        refused(&mut store, &complete(&envelope(1), T1)),
        "terminal_conflict"
    );
    // A bare reference that is not the envelope's conflicts as before.
    let other = TerminalReferenceFingerprint::parse(&"ab".repeat(32)).expect("reference");
    let bare = Terminal::new(
        call(0, T1),
        FenceEpoch::stored(1),
        TerminalRequest::Succeed(identity().terminal_commitment(&other)),
    );
    assert_eq!(
        refused(&mut store, &Guarded::new(bare, &hash())),
        "terminal_conflict"
    );
    // The envelope's own reference, bare, is the same success: it observes.
    let same = Terminal::new(
        call(0, T1),
        FenceEpoch::stored(1),
        TerminalRequest::Succeed(commitment(&envelope(0))),
    );
    let ran = store.run(&Guarded::new(same, &hash()));
    assert_eq!(ran.result, Ok(TerminalOutput::Succeeded));
    assert!(ran.writes.is_empty());
    assert_eq!(store, before);
}

#[test]
fn without_an_envelope_the_result_is_none() {
    let mut store = registered();
    assert_eq!(result(&mut store), Ok(None), "registered");
    store.answer(&Acquire::new(call(0, T0))).expect("leased");
    assert_eq!(result(&mut store), Ok(None), "leased");
    let bare = Terminal::new(
        call(0, T1),
        FenceEpoch::stored(1),
        TerminalRequest::Succeed(commitment(&envelope(0))),
    );
    store.answer(&Guarded::new(bare, &hash())).expect("done");
    assert_eq!(
        result(&mut store),
        Ok(None),
        "succeeded with a bare reference"
    );
    // Storing the envelope afterwards would not be the same commit: a conflict.
    assert_eq!(
        refused(&mut store, &complete(&envelope(0), T1)),
        "terminal_conflict"
    );
    let mut failed = leased();
    let fail = Terminal::new(call(0, T1), FenceEpoch::stored(1), TerminalRequest::Fail);
    failed.answer(&Guarded::new(fail, &hash())).expect("failed");
    assert_eq!(result(&mut failed), Ok(None), "failed");
    assert_eq!(
        refused(&mut failed, &complete(&envelope(0), T1)),
        "terminal_conflict"
    );
    let mut unknown = Store::new();
    assert_eq!(
        result(&mut unknown).map_err(|e| e.code()),
        Err("not_registered")
    );
}

/// A well-formed results document of `envelope` at `time`.
fn results_doc(envelope: &ResultEnvelope, time: i64) -> FieldMap {
    StoredResult {
        command_key_hash: hash(),
        envelope: envelope.clone(),
        created_at: at(time),
    }
    .encode()
}

#[test]
fn a_stray_results_document_is_corrupt_and_blocks_the_success() {
    for (name, mut store) in [
        ("registered", registered()),
        ("leased", leased()),
        ("unregistered", Store::new()),
    ] {
        store.insert(results_path(), results_doc(&envelope(0), T1));
        assert_eq!(
            result(&mut store).map_err(|e| e.code()),
            Err("journal_corrupt"),
            "{name}"
        );
        if name == "leased" {
            assert_eq!(
                refused(&mut store, &complete(&envelope(0), T1)),
                "journal_corrupt"
            );
        }
    }
    let mut failed = leased();
    let fail = Terminal::new(call(0, T1), FenceEpoch::stored(1), TerminalRequest::Fail);
    failed.answer(&Guarded::new(fail, &hash())).expect("failed");
    failed.insert(results_path(), results_doc(&envelope(0), T1));
    assert_eq!(
        result(&mut failed).map_err(|e| e.code()),
        Err("journal_corrupt")
    );
    // The terminal transition refuses first; either way nothing is written.
    assert_eq!(
        refused(&mut failed, &complete(&envelope(0), T1)),
        "terminal_conflict"
    );
}

#[test]
fn an_altered_envelope_is_corrupt_for_the_read_and_the_retry() {
    let canonical = envelope(0).canonical().to_owned();
    type Alter = Box<dyn Fn(&mut FieldMap)>;
    fn text(t: &str) -> crate::document::value::Value {
        fields::string(t)
    }
    let alterations: Vec<(&str, Alter)> = vec![
        (
            "re-spaced",
            Box::new(move |d| {
                d.insert("envelope".into(), text(&canonical.replace(':', ": ")));
            }),
        ),
        (
            "another envelope",
            Box::new(|d| {
                d.insert("envelope".into(), text(envelope(1).canonical()));
            }),
        ),
        (
            "not an object",
            Box::new(|d| {
                d.insert("envelope".into(), text("[1]"));
            }),
        ),
        (
            "not a string",
            Box::new(|d| {
                d.insert("envelope".into(), fields::int(1));
            }),
        ),
        (
            "created later",
            Box::new(|d| {
                d.insert("createdAt".into(), fields::timestamp(at(T1 + 1)));
            }),
        ),
        (
            "schema version",
            Box::new(|d| {
                d.insert("resultSchemaVersion".into(), fields::int(2));
            }),
        ),
        (
            "another command",
            Box::new(|d| {
                d.insert("commandKeyHash".into(), text(&"ab".repeat(32)));
            }),
        ),
        (
            "an extra field",
            Box::new(|d| {
                d.insert("note".into(), text("x"));
            }),
        ),
        (
            "a missing field",
            Box::new(|d| {
                d.remove("createdAt");
            }),
        ),
    ];
    for (name, alter) in alterations {
        let mut store = leased();
        store.answer(&complete(&envelope(0), T1)).expect("done");
        alter(store.get_mut(&results_path()).expect("doc"));
        let error = result(&mut store).expect_err(name);
        assert_eq!(error.code(), "journal_corrupt", "{name}");
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains(SECRET), "{name}: the envelope in an error");
        assert_eq!(
            refused(&mut store, &complete(&envelope(0), T1)),
            "journal_corrupt",
            "{name}: retry"
        );
    }
    // Deleted: the success looks bare, so the retry conflicts and the read is None.
    let mut store = leased();
    store.answer(&complete(&envelope(0), T1)).expect("done");
    store.remove(&results_path());
    assert_eq!(result(&mut store), Ok(None));
    assert_eq!(
        refused(&mut store, &complete(&envelope(0), T1)),
        "terminal_conflict"
    );
}

#[test]
fn refusals_of_the_terminal_transition_pass_through_unwritten() {
    let mut store = leased();
    let at_fence = |fence: i64, holder: u8, now: i64| {
        let terminal = Terminal::new(
            call(holder, now),
            FenceEpoch::stored(fence),
            TerminalRequest::Succeed(commitment(&envelope(0))),
        );
        WithResult::new(
            Guarded::new(terminal, &hash()),
            &hash(),
            at(now),
            &envelope(0),
        )
    };
    assert_eq!(refused(&mut store, &at_fence(2, 0, T1)), "stale_fence");
    assert_eq!(refused(&mut store, &at_fence(1, 1, T1)), "lease_not_held");
    assert_eq!(
        refused(&mut store, &at_fence(1, 0, T0 + 60 * SEC)),
        "lease_expired"
    );
    // Once a plan is bound, only the send layer ends the command.
    store
        .answer(&BeginSend::new(call(0, T1), FenceEpoch::stored(1), plan(0)))
        .expect("permit");
    assert_eq!(
        refused(&mut store, &at_fence(1, 0, T1 + SEC)),
        "send_outcome_required"
    );
}

fn record(envelope: &ResultEnvelope, now: i64) -> WithResult<Record> {
    let op = Record::outcome(
        call(0, now),
        FenceEpoch::stored(1),
        AttemptNumber::FIRST,
        Closing::Succeeded(commitment(envelope)),
        plan(0),
    );
    WithResult::new(op, &hash(), at(now), envelope)
}

fn reconcile(envelope: &ResultEnvelope, now: i64) -> WithResult<Record> {
    let op = Record::reconciliation(
        call(0, now),
        FenceEpoch::stored(1),
        AttemptNumber::FIRST,
        Closing::Succeeded(commitment(envelope)),
        plan(0),
    );
    WithResult::new(op, &hash(), at(now), envelope)
}

const SUCCEEDED: SendOutcomeOutput = SendOutcomeOutput::Terminal(TerminalOutput::Succeeded);

#[test]
fn a_send_outcome_with_an_envelope_stores_it_with_the_success() {
    let mut store = leased();
    store
        .answer(&BeginSend::new(call(0, T1), FenceEpoch::stored(1), plan(0)))
        .expect("permit");
    let ran = store.run(&record(&envelope(0), T1 + SEC));
    assert_eq!(ran.result, Ok(SUCCEEDED));
    // lifecycle, its event, the send record, its event, the result
    assert_eq!(ran.writes.len(), 5);
    assert_eq!(
        store.written(&results_path()).map(|w| w.0),
        store.written(&lifecycle::path(&hash())).map(|w| w.1)
    );
    let got = result(&mut store).expect("read").expect("envelope");
    assert_eq!(got.canonical(), envelope(0).canonical());
    let before = store.clone();
    let ran = store.run(&record(&envelope(0), T1 + 2 * SEC));
    assert_eq!((ran.result, ran.writes.len()), (Ok(SUCCEEDED), 0));
    let ran = store.run(&reconcile(&envelope(0), T1 + 2 * SEC));
    assert_eq!((ran.result, ran.writes.len()), (Ok(SUCCEEDED), 0));
    assert_eq!(store, before);
    assert_eq!(
        refused(&mut store, &record(&envelope(1), T1 + 2 * SEC)),
        "terminal_conflict"
    );
    assert_eq!(
        refused(&mut store, &reconcile(&envelope(1), T1 + 2 * SEC)),
        "terminal_conflict"
    );
    no_canary(&store);
}

#[test]
fn a_reconciled_success_after_the_cutoff_stores_its_envelope() {
    let mut store = leased();
    store
        .answer(&BeginSend::new(call(0, T1), FenceEpoch::stored(1), plan(0)))
        .expect("permit");
    let ambiguous = Record::outcome(
        call(0, T1 + SEC),
        FenceEpoch::stored(1),
        AttemptNumber::FIRST,
        Closing::Ambiguous,
        plan(0),
    );
    store.answer(&ambiguous).expect("ambiguous");
    // Long after: a takeover by holder 0 again (fence 2), then the evidence.
    let late = CUTOFF + SEC;
    store
        .answer(&Acquire::new(call(0, late)))
        .expect("taken over");
    assert_eq!(
        refused(
            &mut store,
            &WithResult::new(
                Record::outcome(
                    call(0, late + SEC),
                    FenceEpoch::stored(2),
                    AttemptNumber::FIRST,
                    Closing::Succeeded(commitment(&envelope(0))),
                    plan(0)
                ),
                &hash(),
                at(late + SEC),
                &envelope(0)
            )
        ),
        "attempt_mismatch"
    );
    let op = Record::reconciliation(
        call(0, late + SEC),
        FenceEpoch::stored(2),
        AttemptNumber::FIRST,
        Closing::Succeeded(commitment(&envelope(0))),
        plan(0),
    );
    let ran = store.run(&WithResult::new(op, &hash(), at(late + SEC), &envelope(0)));
    assert_eq!(ran.result, Ok(SUCCEEDED));
    let got = result_at(&mut store, late + 2 * SEC)
        .expect("read")
        .expect("envelope");
    assert_eq!(got, envelope(0));
    // A stray results document before the evidence: corrupt, nothing written.
    let mut stray = leased();
    stray
        .answer(&BeginSend::new(call(0, T1), FenceEpoch::stored(1), plan(0)))
        .expect("permit");
    stray.insert(results_path(), results_doc(&envelope(0), T1 + SEC));
    assert_eq!(
        refused(&mut stray, &reconcile(&envelope(0), T1 + SEC)),
        "journal_corrupt"
    );
    assert_eq!(
        refused(&mut stray, &record(&envelope(0), T1 + SEC)),
        "journal_corrupt"
    );
}

#[test]
fn a_declined_attempt_conflicts_with_an_envelope() {
    let mut store = leased();
    store
        .answer(&BeginSend::new(call(0, T1), FenceEpoch::stored(1), plan(0)))
        .expect("permit");
    store
        .answer(&Record::outcome(
            call(0, T1 + SEC),
            FenceEpoch::stored(1),
            AttemptNumber::FIRST,
            Closing::Declined,
            plan(0),
        ))
        .expect("declined");
    assert_eq!(
        refused(&mut store, &record(&envelope(0), T1 + SEC)),
        "terminal_conflict"
    );
    assert_eq!(result(&mut store), Ok(None));
}

#[test]
fn nothing_of_the_envelope_reaches_debug_output() {
    let stored = StoredResult {
        command_key_hash: hash(),
        envelope: envelope(0),
        created_at: at(T1),
    };
    let op = complete(&envelope(0), T1);
    for shown in [
        format!("{:?}", envelope(0)),
        format!("{stored:?}"),
        format!("{op:?}"),
        format!("{:?}", ResultRead::new(call(0, T1).command().clone())),
    ] {
        assert!(!shown.contains(SECRET), "{shown}");
        assert!(!shown.contains("1250"), "{shown}");
    }
}

#[test]
fn racing_successes_store_exactly_one_envelope() {
    // The same envelope twice: both succeed, one commit. Two envelopes: one wins.
    let mut store = leased();
    let answers = store.race(&[complete(&envelope(0), T1), complete(&envelope(0), T1 + 1)]);
    assert_eq!(
        answers,
        [Ok(TerminalOutput::Succeeded), Ok(TerminalOutput::Succeeded)]
    );
    assert_eq!(result(&mut store), Ok(Some(envelope(0))));
    let mut store = leased();
    let answers = store.race(&[complete(&envelope(0), T1), complete(&envelope(1), T1)]);
    let codes: Vec<&str> = answers
        .iter()
        .map(|a| {
            a.as_ref()
                .map_or_else(|e| e.code(), |_| "terminal_succeeded")
        })
        .collect();
    assert_eq!(codes, ["terminal_succeeded", "terminal_conflict"]);
    assert_eq!(result(&mut store), Ok(Some(envelope(0))));
    assert_eq!(
        store.count(&format!("checkoutRequests/{}/results", hash())),
        1
    );
}
