//! The call machine, driven over the in-memory store (`crate::testing::call`): which
//! I/O each kind of call asks for, in both modes, and what it does when a fast path
//! is refused, an RPC fails, a transaction is left open or a deadline passes.

use super::*;
use crate::digest::Digest;
use crate::error::GrpcCode;
use crate::execute::program::ExecuteProgram;
use crate::execute::{Executed, Execution};
use crate::identity::{CommandIdentity, CommandInput, CommandRequest, LeaseId};
use crate::lease::{Acquire, CommandCall, LeaseCall, LeaseOutput, StatusRead};
use crate::registration::{Registration, RegistrationOutcome};
use crate::sends::plan::{ProviderPlan, ProviderPlanRequest};
use crate::sends::provider::ProviderAnswer;
use crate::testing::{CallTrace, Store};
use crate::time::Timestamp;
use serde_json::json;

const NOW: i64 = 1_800_000_000_123_456;

fn input() -> CommandInput {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: "CANARYcaller7",
        command_id: "ca1a0000-c0de-4bad-8eed-00000000ca1b",
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &json!({"sku": "CANARYsku"}),
    })
    .unwrap()
}

fn identity() -> CommandIdentity {
    input().identity()
}

fn owner(i: usize) -> Digest {
    let lease = LeaseId::parse(&format!("1ea5e0{i:02x}-0000-4000-8000-0000000000{i:02x}")).unwrap();
    input().lease_owner(&identity(), &lease).unwrap()
}

fn now() -> Timestamp {
    Timestamp::from_micros(NOW).unwrap()
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stripe",
        account: "acct_CANARYaccount",
        mode: "test",
        api_version: "2024-06-20",
        operation: "charge",
        endpoint: "POST /v1/payment_intents",
        parameters: &json!({"amount": 1250}),
        key_retention_seconds: 86_400,
    })
    .unwrap()
}

fn options(concurrency: Concurrency, attempts: u32) -> CallOptions {
    CallOptions {
        concurrency,
        attempts: NonZeroU32::new(attempts).unwrap(),
        fast_paths: true,
        deadline: None,
    }
}

fn registration() -> Single<Registration> {
    Single::new(Registration::new(identity(), now()))
}

fn status() -> Single<StatusRead> {
    Single::new(StatusRead::new(CommandCall::new(identity(), now())))
}

/// Transaction mode with every attempt in a transaction: no blind creation, no
/// unlocked first read.
fn locked() -> CallOptions {
    CallOptions {
        fast_paths: false,
        ..options(Concurrency::Transaction, 10)
    }
}

/// A hook that answers nothing: the store does every step.
fn store_does<O>(_: &mut Store, _: &Io<O, u64>) -> Option<Input<u64>> {
    None
}

fn metric(name: OperationName, outcome: &'static str) -> Metric {
    Metric { name, outcome }
}

#[test]
fn a_new_command_registers_with_one_blind_commit_and_an_existing_one_reads_at_once() {
    let mut store = Store::new();
    let options = options(Concurrency::Preconditions, 1);
    let (first, trace) = store.call(registration(), options, now(), store_does);
    assert_eq!(first.unwrap().outcome(), RegistrationOutcome::RegisteredNew);
    assert_eq!(trace.steps, ["blind"]);
    assert_eq!(
        trace.metrics,
        [metric(OperationName::Register, "registered_new")]
    );
    // Refused, the blind commit spends none of the single attempt: the read follows
    // at once and answers.
    let (second, trace) = store.call(registration(), options, now(), store_does);
    assert_eq!(
        second.unwrap().outcome(),
        RegistrationOutcome::RegisteredExisting
    );
    assert_eq!(trace.steps, ["blind", "wait_now", "read"]);
}

#[test]
fn transaction_mode_reads_in_a_transaction_and_rolls_back_an_observation() {
    let mut store = Store::new();
    let options = options(Concurrency::Transaction, 10);
    store
        .call(registration(), options, now(), store_does)
        .0
        .unwrap();
    let (status, trace) = store.call(status(), options, now(), store_does);
    assert!(status.is_ok());
    assert_eq!(trace.steps, ["begin", "rollback"]);
}

#[test]
fn transaction_mode_creates_without_a_lock_and_takes_one_for_a_replacement() {
    let mut store = Store::new();
    let options = options(Concurrency::Transaction, 1);
    // A new command: the blind creation, no transaction.
    let (first, trace) = store.call(registration(), options, now(), store_does);
    assert_eq!(first.unwrap().outcome(), RegistrationOutcome::RegisteredNew);
    assert_eq!(trace.steps, ["blind"]);
    // Registered: the blind creation is refused and the unlocked read answers.
    let (second, trace) = store.call(registration(), options, now(), store_does);
    assert_eq!(
        second.unwrap().outcome(),
        RegistrationOutcome::RegisteredExisting
    );
    assert_eq!(trace.steps, ["blind", "wait_now", "read"]);
    // A first acquisition creates the lifecycle: read and committed without a lock.
    let acquire = |holder, at| {
        let call = LeaseCall::new(
            identity(),
            owner(holder),
            Timestamp::from_micros(at).unwrap(),
        );
        Single::new(Acquire::new(call))
    };
    let (acquired, trace) = store.call(acquire(1, NOW), options, now(), store_does);
    assert!(matches!(acquired, Ok(LeaseOutput::Acquired { .. })));
    assert_eq!(trace.steps, ["read", "commit"]);
    // A takeover replaces the lifecycle: the unlocked decision is dropped unsent and
    // taken again in a transaction, spending none of the single attempt.
    let later = NOW + 61_000_000;
    let (taken, trace) = store.call(acquire(2, later), options, now(), store_does);
    match taken {
        Ok(LeaseOutput::Acquired { fence_epoch, .. }) => assert_eq!(fence_epoch.get(), 2),
        other => panic!("{other:?}"),
    }
    assert_eq!(trace.steps, ["read", "begin", "commit"]);
}

#[test]
fn failures_spend_the_budget_and_then_the_call_ends_unavailable() {
    let mut store = Store::new();
    let (answer, trace) = store.call(
        status(),
        options(Concurrency::Preconditions, 3),
        now(),
        |_, io| {
            matches!(io, Io::Read { .. }).then_some(Input::Read(Err(RpcFailure::Retry {
                code: GrpcCode::Unavailable,
                cause: RetryCause::Transient,
            })))
        },
    );
    assert_eq!(
        answer,
        Err(JournalError::unavailable(
            Some(GrpcCode::Unavailable),
            3,
            false
        ))
    );
    assert_eq!(trace.steps, ["read", "retry", "read", "retry", "read"]);
    assert_eq!(
        trace.metrics,
        [metric(OperationName::Status, "unavailable")]
    );
}

#[test]
fn a_failed_commit_in_a_transaction_is_rolled_back_and_the_retry_names_it() {
    let mut store = Store::new();
    let mut retried = Vec::new();
    let mut aborted = false;
    let (answer, trace) = store.call(registration(), locked(), now(), |_, io| match io {
        Io::Commit { transaction, .. } if !aborted => {
            aborted = true;
            assert!(transaction.is_some(), "a transaction's commit names it");
            Some(Input::Committed(Err(RpcFailure::Retry {
                code: GrpcCode::Aborted,
                cause: RetryCause::Contention,
            })))
        }
        Io::Read {
            consistency: Consistency::Begin { retrying },
            ..
        } => {
            retried.push(retrying.clone());
            None
        }
        _ => None,
    });
    assert!(answer.is_ok());
    assert_eq!(
        trace.steps,
        ["begin", "commit", "rollback", "retry", "begin", "commit"]
    );
    assert_eq!(retried, [None, Some(TransactionId(vec![1]))]);
}

#[test]
fn a_deadline_passing_with_a_transaction_open_rolls_it_back_first() {
    let mut store = Store::new();
    let (answer, trace) = store.call(registration(), locked(), now(), |_, io| {
        matches!(io, Io::Commit { .. }).then_some(Input::DeadlinePassed)
    });
    assert_eq!(answer, Err(JournalError::unavailable(None, 1, true)));
    assert_eq!(trace.steps, ["begin", "commit", "rollback"]);
    assert!(store.is_empty(), "nothing committed");
}

/// `execution` as the call that recorded it answers it.
fn first(execution: Execution) -> Executed {
    Executed {
        execution,
        replayed: false,
    }
}

/// `execution` as a later call answers it, stored before.
fn replayed(execution: Execution) -> Executed {
    Executed {
        execution,
        replayed: true,
    }
}

/// Runs one `execute` of the plan by holder `holder` now, the provider declining.
fn execute(store: &mut Store, holder: usize, options: CallOptions) -> (Executed, CallTrace) {
    let declined = ProviderAnswer::Declined;
    let (answer, trace) = execute_at(store, holder, options, now(), declined.clone(), declined);
    (answer.unwrap(), trace)
}

#[test]
fn execute_takes_two_rpcs_new_and_two_replayed_in_preconditions_mode() {
    let mut store = Store::new();
    let options = options(Concurrency::Preconditions, 10);
    let (answer, trace) = execute(&mut store, 1, options);
    assert_eq!(answer, first(Execution::Declined));
    assert_eq!(trace.steps, ["blind", "send", "planned"]);
    assert_eq!(trace.rpcs(), 2);
    assert_eq!(
        trace.metrics,
        [
            metric(OperationName::Start, "acquired"),
            metric(OperationName::BeginSend, "permitted"),
            metric(OperationName::RecordSendOutcome, "failed_final"),
            metric(OperationName::Execute, "declined"),
        ]
    );
    assert_eq!(
        trace.began,
        [
            "journal.execute",
            "journal.start",
            "journal.record_send_outcome"
        ]
    );
    // A replay: the chained commit is refused, the start reads, and the answer comes
    // from what that read left known.
    let (answer, trace) = execute(&mut store, 2, options);
    assert_eq!(answer, replayed(Execution::Declined));
    assert_eq!(trace.steps, ["blind", "wait_now", "read"]);
    assert_eq!(trace.rpcs(), 2);
}

#[test]
fn execute_takes_four_rpcs_new_and_two_replayed_in_transaction_mode() {
    let mut store = Store::new();
    let options = options(Concurrency::Transaction, 10);
    let (answer, trace) = execute(&mut store, 1, options);
    assert_eq!(answer, first(Execution::Declined));
    assert_eq!(trace.steps, ["begin", "commit", "send", "begin", "commit"]);
    assert_eq!(
        trace.metrics,
        [
            metric(OperationName::Start, "acquired"),
            metric(OperationName::BeginSend, "permitted"),
            metric(OperationName::RecordSendOutcome, "failed_final"),
            metric(OperationName::Execute, "declined"),
        ]
    );
    let (answer, trace) = execute(&mut store, 2, options);
    assert_eq!(answer, replayed(Execution::Declined));
    assert_eq!(trace.steps, ["begin", "rollback"]);
    assert_eq!(trace.rpcs(), 2);
}

#[test]
fn without_fast_paths_every_transition_reads_and_decides() {
    let mut store = Store::new();
    let options = CallOptions {
        fast_paths: false,
        ..options(Concurrency::Preconditions, 10)
    };
    let (answer, trace) = execute(&mut store, 1, options);
    assert_eq!(answer, first(Execution::Declined));
    assert_eq!(
        trace.steps,
        ["read", "commit", "read", "commit", "send", "read", "commit"]
    );
}

#[test]
fn a_driver_that_polls_out_of_turn_gets_an_internal_error() {
    let mut call = Call::<_, u64>::new(status(), options(Concurrency::Preconditions, 1));
    assert!(matches!(
        call.poll(Now::unstepped(now())),
        Io::Began(OperationName::Status)
    ));
    assert!(matches!(call.poll(Now::unstepped(now())), Io::Read { .. }));
    assert!(matches!(
        call.poll(Now::unstepped(now())),
        Io::Done(Err(JournalError::Internal { .. }))
    ));
}

/// Runs one `execute` of the plan by holder `holder` at `at`, the provider's sends
/// answered `sent` and its lookups `looked_up`.
fn execute_at(
    store: &mut Store,
    holder: usize,
    options: CallOptions,
    at: Timestamp,
    sent: ProviderAnswer,
    looked_up: ProviderAnswer,
) -> (Result<Executed, JournalError>, CallTrace) {
    let program = ExecuteProgram::new(
        identity(),
        owner(holder),
        plan(),
        options.concurrency,
        options.fast_paths,
    )
    .unwrap();
    store.call(program, options, at, |_, io| match io {
        Io::Send(_) => Some(Input::Sent(sent.clone())),
        Io::Lookup(_) => Some(Input::LookedUp(looked_up.clone())),
        _ => None,
    })
}

fn envelope() -> crate::envelope::ResultEnvelope {
    crate::envelope::ResultEnvelope::new(&json!({"id": "ch_CANARY"})).unwrap()
}

#[test]
fn execute_status_read_neither_plans_from_nor_replaces_what_the_call_knows() {
    // The first holder's send is answered with a replayed unknown: its key can no
    // longer tell, and its lookup finds nothing yet.
    let mut store = Store::new();
    let options = options(Concurrency::Preconditions, 10);
    let (first, _) = execute_at(
        &mut store,
        1,
        options,
        now(),
        ProviderAnswer::ReplayedUnknown,
        ProviderAnswer::Unknown,
    );
    assert_eq!(first, Ok(self::first(Execution::PendingReconciliation)));
    // After the lease ran out, a second holder takes over: its permit is refused
    // (the key cannot tell), so nothing is known after it; the status read is a call
    // of its own, as `send_status` is, and keeps nothing: the reconciliation after the
    // lookup reads and decides (2 RPCs), it is not planned from the status read.
    let later = Timestamp::from_micros(NOW + 61_000_000).unwrap();
    let (second, trace) = execute_at(
        &mut store,
        2,
        options,
        later,
        ProviderAnswer::Unknown,
        ProviderAnswer::Succeeded(envelope()),
    );
    // Recorded by this call from its lookup's evidence: a first answer.
    assert_eq!(second, Ok(self::first(Execution::Succeeded(envelope()))));
    assert_eq!(
        trace.steps,
        [
            "blind", "wait_now", "read", "commit", // the start: a takeover
            "read",   // begin_send: send_cutoff_passed
            "read",   // send_status
            "lookup", // found
            "read", "commit", // reconcile_send
        ]
    );
}

/// Runs one `execute` of a new command whose journal clock moves `by` seconds while
/// the first commit is in flight, the provider declining.
fn execute_while_the_clock_moves(options: CallOptions, by: i64) -> (Executed, CallTrace) {
    let mut store = Store::new();
    let program = ExecuteProgram::new(
        identity(),
        owner(1),
        plan(),
        options.concurrency,
        options.fast_paths,
    )
    .unwrap();
    let late = std::cell::Cell::new(false);
    let later = Timestamp::from_micros(NOW + by * 1_000_000).unwrap();
    let (answer, trace) = store.call_with_clock(
        program,
        options,
        || if late.get() { later } else { now() },
        |_, io| {
            if matches!(io, Io::Commit { .. }) {
                late.set(true);
            }
            match io {
                Io::Send(_) => Some(Input::Sent(ProviderAnswer::Declined)),
                _ => None,
            }
        },
    );
    (answer.unwrap(), trace)
}

#[test]
fn a_permit_committed_with_the_start_follows_the_lease_at_the_starts_time() {
    // The lease and the permit are decided at the start's captured time; when the
    // commit answers 50 s later, too little of the lease is left to send: the permit
    // stands and the call answers retry_later (the next holder re-sends it), never an
    // internal error.
    for mode in [Concurrency::Preconditions, Concurrency::Transaction] {
        let (answer, trace) = execute_while_the_clock_moves(options(mode, 10), 50);
        assert_eq!(
            answer,
            first(Execution::RetryLater {
                after: std::time::Duration::from_secs(10)
            }),
            "{mode:?}"
        );
        assert_eq!(
            trace.metrics,
            [
                metric(OperationName::Start, "acquired"),
                metric(OperationName::BeginSend, "permitted"),
                // The lease given up before the answer.
                metric(OperationName::ReleaseLease, "released"),
                metric(OperationName::Execute, "retry_later"),
            ],
            "{mode:?}"
        );
    }
}

/// A registration in a transaction whose commit is answered with `answer()`, out of
/// turn: the open transaction is released and the call ends with an internal error.
fn out_of_turn_at_the_commit(answer: fn() -> Input<u64>) {
    let mut store = Store::new();
    let (result, trace) = store.call(registration(), locked(), now(), |_, io| {
        matches!(io, Io::Commit { .. }).then(answer)
    });
    assert!(
        matches!(result, Err(JournalError::Internal { .. })),
        "{result:?}"
    );
    assert_eq!(trace.steps, ["begin", "commit", "rollback"]);
}

#[test]
fn an_answer_out_of_turn_with_a_transaction_open_rolls_it_back() {
    out_of_turn_at_the_commit(|| Input::Waited);
}

#[test]
fn a_deadline_passed_before_an_attempt_began_counts_no_attempt() {
    // Before the first attempt, a blind creation here: nothing sent, no attempt.
    let mut store = Store::new();
    let (answer, trace) = store.call(
        registration(),
        options(Concurrency::Preconditions, 10),
        now(),
        |_, io| matches!(io, Io::Commit { .. }).then_some(Input::DeadlinePassedBeforeAttempt),
    );
    assert_eq!(answer, Err(JournalError::unavailable(None, 0, true)));
    assert_eq!(trace.steps, ["blind"]);
    assert_eq!(
        trace.metrics,
        [metric(OperationName::Register, "unavailable")]
    );
    // After a failed attempt and its backoff: that one attempt.
    let mut reads = 0;
    let (answer, trace) = store.call(
        status(),
        options(Concurrency::Transaction, 10),
        now(),
        |_, io| match io {
            Io::Read { .. } => {
                reads += 1;
                Some(match reads {
                    1 => Input::Read(Err(RpcFailure::Retry {
                        code: GrpcCode::Unavailable,
                        cause: RetryCause::Transient,
                    })),
                    _ => Input::DeadlinePassedBeforeAttempt,
                })
            }
            _ => None,
        },
    );
    assert_eq!(
        answer,
        Err(JournalError::unavailable(
            Some(GrpcCode::Unavailable),
            1,
            true
        ))
    );
    assert_eq!(trace.steps, ["begin", "retry", "begin"]);
    // Answered to anything but an attempt's beginning, it is out of turn.
    out_of_turn_at_the_commit(|| Input::DeadlinePassedBeforeAttempt);
}

#[test]
fn a_retry_names_the_attempts_made_a_refused_fast_path_included_beside_those_spent() {
    let mut store = Store::new();
    let options = options(Concurrency::Preconditions, 10);
    let _ = store.call(registration(), options, now(), store_does);
    // The blind commit is refused (the command exists), then the read fails once.
    let mut retries = Vec::new();
    let mut failed = false;
    let (answer, _) = store.call(registration(), options, now(), |_, io| match io {
        Io::Retry {
            attempts, spent, ..
        } => {
            retries.push((*attempts, *spent));
            None
        }
        Io::Read { .. } if !failed => {
            failed = true;
            Some(Input::Read(Err(RpcFailure::Retry {
                code: GrpcCode::Unavailable,
                cause: RetryCause::Transient,
            })))
        }
        _ => None,
    });
    assert!(answer.is_ok());
    assert_eq!(retries, [(1, 0), (2, 1)]);
}

#[test]
fn a_second_start_keeps_nothing_and_the_reconciliation_after_it_reads() {
    // The provider answers, but the lease runs out before the answer is recorded:
    // the call takes a second lease to record it. That start reads anew (its blind
    // creation refused), and what it read is not kept: the reconciliation under the
    // new lease reads and decides too.
    let mut store = Store::new();
    let options = options(Concurrency::Preconditions, 10);
    let program =
        ExecuteProgram::new(identity(), owner(1), plan(), options.concurrency, true).unwrap();
    let late = std::cell::Cell::new(false);
    let later = Timestamp::from_micros(NOW + 61_000_000).unwrap();
    let (answer, trace) = store.call_with_clock(
        program,
        options,
        || if late.get() { later } else { now() },
        |_, io| match io {
            Io::Send(_) => {
                late.set(true);
                Some(Input::Sent(ProviderAnswer::Succeeded(envelope())))
            }
            _ => None,
        },
    );
    assert_eq!(answer, Ok(first(Execution::Succeeded(envelope()))));
    assert_eq!(
        trace.steps,
        [
            "blind", "send", // the chained start and permit, then the send
            "read", // record_send_outcome: lease_expired
            "read", // reconcile_send under the same lease: lease_expired
            "blind", "wait_now", "read", "commit", // the second start: a takeover
            "read", "commit", // reconcile_send under the new lease
        ]
    );
    assert_eq!(
        trace.began,
        [
            "journal.execute",
            "journal.start",
            "journal.record_send_outcome",
            "journal.reconcile_send",
            "journal.start",
            "journal.reconcile_send",
        ]
    );
}

mod adversary_release;
mod deadlines;
