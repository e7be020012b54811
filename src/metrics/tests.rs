//! What the operator metrics record, read back through `metrics-util`'s debugging
//! recorder installed for the test's thread only: the outcome of every answer of a
//! lease's story run over the in-memory store, RPCs and retries by code, and no label
//! value outside the fixed vocabulary.

use super::*;
use crate::identity::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
use crate::sends::{AttemptNumber, SendPermit};
use crate::sends::{BeginSendOutput, SendOutcomeOutput};
use crate::time::Timestamp;
use command_journal_core::error::JournalError;
use command_journal_core::identity::Digest;
use command_journal_core::testing::Store;
use command_journal_core::tools::call::Labelled;
use command_journal_core::tools::lease::{Acquire, LeaseCall, Terminal, TerminalRequest};
use command_journal_core::tools::registration::Registration;
use command_journal_core::tools::start::Start;
use command_journal_core::tools::transaction::Transition;
use command_journal_core::{Execution, FenceEpoch, LeaseOutput, ResultEnvelope, TerminalOutput};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use serde_json::json;
use std::collections::BTreeMap;

const CALLER_ID: &str = "CANARYcaller_metrics";
const COMMAND_ID: &str = "3e7a1c00-c0de-4bad-8eed-0000000000aa";
const LEASES: [&str; 2] = [
    "5ea5e0aa-aaaa-4aaa-8aaa-0000000000aa",
    "5ea5e0bb-bbbb-4bbb-9bbb-0000000000bb",
];
const SEC: i64 = 1_000_000;
const T0: i64 = 1_800_000_000_000_000;

/// `(name, sorted labels)` → the counter's value, or the histogram's sample count.
type Recorded = BTreeMap<(String, Vec<(String, String)>), u64>;

/// Runs `body` with a debugging recorder installed for this thread only, and
/// returns everything it recorded.
fn recorded(body: impl FnOnce()) -> Recorded {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    ::metrics::with_local_recorder(&recorder, body);
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.sort();
            let value = match value {
                DebugValue::Counter(n) => n,
                DebugValue::Histogram(samples) => samples.len() as u64,
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                DebugValue::Gauge(value) => value.into_inner() as u64,
            };
            ((key.name().to_owned(), labels), value)
        })
        .collect()
}

fn key(name: &str, labels: &[(&str, &str)]) -> (String, Vec<(String, String)>) {
    let mut labels: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    labels.sort();
    (name.to_owned(), labels)
}

fn ops(operation: &str, outcome: &str) -> (String, Vec<(String, String)>) {
    key(
        OPERATIONS_TOTAL,
        &[("operation", operation), ("outcome", outcome)],
    )
}

fn input() -> CommandInput {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: CALLER_ID,
        command_id: COMMAND_ID,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &json!({"sku": "CANARYsku_metrics"}),
    })
    .expect("valid command")
}

fn at(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros).expect("in range")
}

fn owner(holder: usize) -> Digest {
    let input = input();
    let lease = LeaseId::parse(LEASES[holder]).expect("lease id");
    input
        .lease_owner(&input.identity(), &lease)
        .expect("lease owner")
}

fn call(holder: usize, now: i64) -> LeaseCall {
    LeaseCall::new(input().identity(), owner(holder), at(now))
}

/// Runs `op` over `store` and records it as `Journal::run` does.
fn run<T>(store: &mut Store, op: &T)
where
    T: Transition,
    T::Output: Labelled + std::fmt::Debug + PartialEq,
{
    let result: Result<T::Output, JournalError> = store.answer(op);
    let outcome = match &result {
        Ok(output) => output.label(),
        Err(error) => error.code(),
    };
    operation(op.name().label(), outcome, Duration::from_millis(3));
}

#[test]
fn a_lease_story_records_each_answer_under_its_operation() {
    let got = recorded(|| {
        let mut store = Store::new();
        let identity = input().identity();
        run(&mut store, &Start::new(identity.clone(), owner(0), at(T0)));
        run(&mut store, &Start::new(identity.clone(), owner(1), at(T0)));
        run(&mut store, &Acquire::new(call(1, T0 + SEC)));
        // After expiry the second holder takes over: fence 2.
        run(&mut store, &Acquire::new(call(1, T0 + 61 * SEC)));
        let reference = TerminalReferenceFingerprint::parse(&"ab".repeat(32)).expect("ref");
        let succeed = TerminalRequest::Succeed(identity.terminal_commitment(&reference));
        run(
            &mut store,
            &Terminal::new(call(1, T0 + 62 * SEC), FenceEpoch::stored(2), succeed),
        );
        // A stale holder is refused with its error code.
        run(
            &mut store,
            &Terminal::new(
                call(0, T0 + 63 * SEC),
                FenceEpoch::stored(1),
                TerminalRequest::Fail,
            ),
        );
        run(
            &mut store,
            &Start::new(identity.clone(), owner(0), at(T0 + 64 * SEC)),
        );
        run(&mut store, &Registration::new(identity, at(T0 + 65 * SEC)));
    });
    let expected: Recorded = [
        (ops("start", "acquired"), 1),
        (ops("start", "busy"), 1),
        (ops("acquire", "busy"), 1),
        (ops("acquire", "recovered"), 1),
        (ops("complete", "succeeded"), 1),
        (ops("fail", "lease_not_held"), 1),
        (ops("start", "replayed"), 1),
        (ops("register", "registered_existing"), 1),
        (
            key(OPERATION_DURATION_SECONDS, &[("operation", "start")]),
            3,
        ),
        (
            key(OPERATION_DURATION_SECONDS, &[("operation", "acquire")]),
            2,
        ),
        (
            key(OPERATION_DURATION_SECONDS, &[("operation", "complete")]),
            1,
        ),
        (key(OPERATION_DURATION_SECONDS, &[("operation", "fail")]), 1),
        (
            key(OPERATION_DURATION_SECONDS, &[("operation", "register")]),
            1,
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, expected);
}

#[test]
fn send_answers_map_to_fixed_outcomes() {
    let permit = |resend| {
        BeginSendOutput::Permitted(SendPermit {
            attempt: AttemptNumber::FIRST,
            resend,
            provider_idempotency_key: "cj1-CANARYkey".to_owned(),
            send_cutoff_at: at(T0),
            act_by: at(T0),
            lease_expires_at: at(T0),
        })
    };
    let second = AttemptNumber::new(2).unwrap();
    let cases: [(&dyn Labelled, &str); 9] = [
        (&permit(false), "permitted"),
        (&permit(true), "resent"),
        (
            &BeginSendOutput::Terminal(TerminalOutput::Succeeded),
            "replayed",
        ),
        (
            &SendOutcomeOutput::Terminal(TerminalOutput::Succeeded),
            "succeeded",
        ),
        (
            &SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal),
            "failed_final",
        ),
        (
            &SendOutcomeOutput::Ambiguous {
                attempt: AttemptNumber::FIRST,
            },
            "ambiguous",
        ),
        (&SendOutcomeOutput::Absent { attempt: second }, "absent"),
        (&LeaseOutput::FailedFinal, "replayed"),
        (&TerminalOutput::FailedFinal, "failed_final"),
    ];
    for (output, outcome) in cases {
        assert_eq!(output.label(), outcome);
    }
    let envelope = ResultEnvelope::new(&json!({"id": "ch_CANARY"})).expect("envelope");
    let executions = [
        (Execution::Succeeded(envelope.clone()), "succeeded"),
        (
            Execution::SucceededWithoutResult,
            "succeeded_without_result",
        ),
        (Execution::Declined, "declined"),
        (Execution::InProgress, "in_progress"),
        (
            Execution::RetryLater {
                after: Duration::from_secs(60),
            },
            "retry_later",
        ),
        (Execution::PendingReconciliation, "pending_reconciliation"),
    ];
    for (execution, outcome) in executions {
        assert_eq!(execution.label(), outcome);
    }
    assert_eq!(Some(envelope).label(), "found");
    assert_eq!(None::<ResultEnvelope>.label(), "none");
    assert_eq!(JournalError::SendCutoffPassed.code(), "send_cutoff_passed");
    let names = [
        (OperationName::BeginSend, "begin_send"),
        (OperationName::RecordSendOutcome, "record_send_outcome"),
        (OperationName::ReconcileSend, "reconcile_send"),
        (OperationName::LedgerAccept, "ledger_accept"),
        (OperationName::Execute, "execute"),
    ];
    for (name, label) in names {
        assert_eq!(operation_label(name), label);
    }
}

#[test]
fn rpcs_retries_and_named_operations_are_counted_by_code() {
    let got = recorded(|| {
        rpc(RPC_BATCH_GET, GrpcCode::Ok);
        rpc(RPC_BATCH_GET, GrpcCode::Ok);
        rpc(RPC_COMMIT, GrpcCode::Aborted);
        rpc(RPC_ROLLBACK, GrpcCode::DeadlineExceeded);
        retry(GrpcCode::Aborted);
        operation("execute", "succeeded", Duration::from_millis(40));
    });
    let expected: Recorded = [
        (
            key(
                RPCS_TOTAL,
                &[("rpc", "batch_get_documents"), ("code", "OK")],
            ),
            2,
        ),
        (
            key(RPCS_TOTAL, &[("rpc", "commit"), ("code", "ABORTED")]),
            1,
        ),
        (
            key(
                RPCS_TOTAL,
                &[("rpc", "rollback"), ("code", "DEADLINE_EXCEEDED")],
            ),
            1,
        ),
        (key(RPC_RETRIES_TOTAL, &[("code", "ABORTED")]), 1),
        (ops("execute", "succeeded"), 1),
        (
            key(OPERATION_DURATION_SECONDS, &[("operation", "execute")]),
            1,
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, expected);
}

#[test]
fn a_listing_sets_every_reason_and_a_recovery_counts_its_outcome() {
    use command_journal_core::pending::{PendingCommand, Unblock};
    let waiting = |n: u8, unblocked_by| PendingCommand {
        command_key_hash: Digest::parse(&format!("{n:02x}").repeat(32)).expect("hash"),
        state: command_journal_core::pending::LifecycleState::Leased,
        fence_epoch: command_journal_core::FenceEpoch::new(1).expect("fence"),
        since: Timestamp::from_micros(T0).expect("time"),
        send: None,
        unblocked_by,
    };
    let got = recorded(|| {
        pending(&[
            waiting(1, Unblock::Evidence),
            waiting(2, Unblock::Evidence),
            waiting(3, Unblock::Retry),
            waiting(4, Unblock::FinalEvidence),
            waiting(5, Unblock::Customer),
        ]);
        recovery("succeeded");
        recovery("succeeded");
        recovery("journal_corrupt");
    });
    let expected: Recorded = [
        (key(PENDING_COMMANDS, &[("reason", "retry")]), 1),
        (
            key(PENDING_COMMANDS, &[("reason", "resend_or_evidence")]),
            0,
        ),
        (key(PENDING_COMMANDS, &[("reason", "evidence")]), 2),
        (
            key(PENDING_COMMANDS, &[("reason", "evidence_or_person")]),
            0,
        ),
        (key(PENDING_COMMANDS, &[("reason", "final_evidence")]), 1),
        (key(PENDING_COMMANDS, &[("reason", "customer")]), 1),
        (key(RECOVERIES_TOTAL, &[("outcome", "succeeded")]), 2),
        (key(RECOVERIES_TOTAL, &[("outcome", "journal_corrupt")]), 1),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, expected);
}

#[test]
fn without_a_recorder_nothing_is_recorded_and_nothing_panics() {
    describe_metrics();
    operation("start", "acquired", Duration::ZERO);
    rpc(RPC_COMMIT, GrpcCode::Ok);
    retry(GrpcCode::Unavailable);
    // Describing registers help text only: no series appears.
    assert!(recorded(describe_metrics).is_empty());
}
