//! The call's table, row by row, and whole paths through it: the program fed each
//! answer at its time, as the call machine feeds it, and what it asks for next. The
//! settle program's rows run here under the held lease; over the store in `settle`.

use super::*;
use crate::lease::StatusOutput;
use crate::registration::{RegistrationOutcome, RegistrationOutput};
use crate::sends::provider::{Closing, ProviderAnswer};
use crate::sends::record::Mode;
use crate::sends::{AttemptState, CommandStatus, SendOutcomeOutput, SendPermit, SendStatus};
use crate::settle::{MIN_SEND_DEADLINE, SettleOutput};
use serde_json::json;
use std::time::Duration;

fn fence() -> crate::fence::FenceEpoch {
    crate::fence::FenceEpoch::new(3).unwrap()
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_micros(1_800_000_000_000_000 + seconds * 1_000_000).unwrap()
}

fn envelope(id: &str) -> ResultEnvelope {
    ResultEnvelope::new(&json!({"id": id, "amount": 500})).unwrap()
}

fn input() -> crate::identity::CommandInput {
    crate::identity::CommandInput::new(crate::identity::CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: "CANARYcaller",
        command_id: "ca1a0000-c0de-4bad-8eed-00000000ca1d",
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &json!({"sku": "CANARYsku"}),
    })
    .unwrap()
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(crate::sends::ProviderPlanRequest {
        provider: "stripe",
        account: "acct_CANARY",
        mode: "test",
        api_version: "2024-06-20",
        operation: "charge",
        endpoint: "POST /v1/payment_intents",
        parameters: &json!({"amount": 1250}),
        key_retention_seconds: 86_400,
    })
    .unwrap()
}

fn program() -> ExecuteProgram {
    let input = input();
    let identity = input.identity();
    let lease = crate::identity::LeaseId::parse("1ea5e001-0000-4000-8000-000000000001").unwrap();
    let owner = input.lease_owner(&identity, &lease).unwrap();
    ExecuteProgram::new(identity, owner, plan(), Concurrency::Preconditions, true).unwrap()
}

/// What the program asked for next, in a form a table compares.
#[derive(Debug, Clone, PartialEq)]
enum Asked {
    /// The call's first start.
    Start,
    /// A second start, to record the answer the call holds.
    StartAgain,
    BeginSend {
        fence: crate::fence::FenceEpoch,
    },
    Send {
        attempt: AttemptNumber,
        resend: bool,
        key: String,
        deadline: Duration,
    },
    /// `record_send_outcome` of the answer.
    Record {
        fence: crate::fence::FenceEpoch,
        attempt: AttemptNumber,
        outcome: ProviderAnswer,
    },
    /// `send_status`, the plan checked first.
    Status,
    Lookup {
        key: String,
        deadline: Duration,
    },
    /// The provider's object read by id.
    Retrieve {
        key: String,
        replayable: bool,
        cancel: bool,
        act_by: Timestamp,
        deadline: Duration,
    },
    /// `reconcile_send` of the evidence.
    Reconcile {
        fence: crate::fence::FenceEpoch,
        attempt: AttemptNumber,
        evidence: ProviderAnswer,
    },
    FetchResult,
    /// `record_late_charge` of a success held, under the key of `attempt`.
    LateCharge {
        attempt: AttemptNumber,
        commitment: crate::digest::Digest,
    },
    /// `release_lease` at this fence; the call's answer after it (`release.rs`).
    Release(crate::fence::FenceEpoch),
    Left(crate::fence::FenceEpoch, Execution),
    /// The call's answer, this call's own.
    Done(Execution),
    /// The call's answer, a terminal outcome the journal had stored before it.
    Replayed(Execution),
}

/// The provider's answer a record of `finding` (with `envelope`) stands for.
fn answer_of(finding: &Closing, envelope: Option<&ResultEnvelope>) -> ProviderAnswer {
    match (finding, envelope) {
        (Closing::Succeeded(_), Some(envelope)) => ProviderAnswer::Succeeded(envelope.clone()),
        (Closing::Succeeded(_), None) => panic!("a success without its envelope"),
        (Closing::Declined, _) => ProviderAnswer::Declined,
        (Closing::Ambiguous, _) => ProviderAnswer::Unknown,
        (Closing::ReplayedUnknown, _) => ProviderAnswer::ReplayedUnknown,
        (Closing::Indeterminate, _) => ProviderAnswer::Indeterminate,
        (Closing::AwaitingCustomer, _) => ProviderAnswer::CustomerMustAct(action()),
        (Closing::Absent, _) => ProviderAnswer::NotFound,
        (Closing::Closed, _) => ProviderAnswer::Closed,
    }
}

/// The action the tests' provider hands over: a hosted page whose address is a canary.
fn action() -> crate::sends::CustomerAction {
    crate::sends::CustomerAction::Open {
        url: crate::sends::Handoff::new("https://pay.example/CANARYsession"),
    }
}

fn asked(next: Next<ExecuteOp, Executed>) -> Asked {
    match next {
        Next::Done(Executed {
            execution,
            replayed: false,
        }) => Asked::Done(execution),
        Next::Done(Executed {
            execution,
            replayed: true,
        }) => Asked::Replayed(execution),
        Next::Send(request) => Asked::Send {
            attempt: request.attempt,
            resend: request.resend,
            key: request.key,
            deadline: request.deadline,
        },
        Next::Lookup(request) => Asked::Lookup {
            key: request.key,
            deadline: request.deadline,
        },
        Next::Retrieve(request) => Asked::Retrieve {
            key: request.key,
            replayable: request.replayable,
            cancel: request.cancel,
            act_by: request.act_by,
            deadline: request.deadline,
        },
        Next::Run(run) => match run.op {
            ExecuteOp::Start(_) | ExecuteOp::Opening(_) => Asked::Start,
            ExecuteOp::BeginSend(op) => Asked::BeginSend { fence: op.fence() },
            ExecuteOp::Result(_) => Asked::FetchResult,
            ExecuteOp::Settle(SettleOp::Start(_)) => Asked::StartAgain,
            ExecuteOp::Settle(SettleOp::Status(_)) => Asked::Status,
            ExecuteOp::Settle(SettleOp::LateCharge(op)) => {
                let (attempt, commitment) = op.parts();
                Asked::LateCharge {
                    attempt,
                    commitment: commitment.clone(),
                }
            }
            ExecuteOp::Settle(SettleOp::Record(op)) => {
                let (record, envelope) = op.parts();
                let (fence, attempt, finding, mode) = record.parts();
                let answer = answer_of(finding, envelope);
                match mode {
                    Mode::Outcome => Asked::Record {
                        fence,
                        attempt,
                        outcome: answer,
                    },
                    Mode::Reconciliation => Asked::Reconcile {
                        fence,
                        attempt,
                        evidence: answer,
                    },
                }
            }
            ExecuteOp::Release(op) => Asked::Release(op.fence()),
            other => panic!("an execute call runs no {other:?}"),
        },
    }
}

type Heard = Answered<ExecuteOp>;

fn started_with(lease: LeaseOutput) -> Heard {
    Answered::Ran(Ok(ExecuteOutput::Started(StartOutput {
        registration: RegistrationOutput::new(RegistrationOutcome::RegisteredExisting),
        lease,
    })))
}

fn acquired() -> Heard {
    started_with(LeaseOutput::Acquired {
        fence_epoch: fence(),
        lease_expires_at: at(60),
    })
}

fn began(result: Result<BeginSendOutput, JournalError>) -> Heard {
    Answered::Ran(result.map(ExecuteOutput::BeganSend))
}

fn settle(output: SettleOutput) -> Heard {
    Answered::Ran(Ok(ExecuteOutput::Settle(output)))
}

fn recorded(result: Result<SendOutcomeOutput, JournalError>) -> Heard {
    Answered::Ran(result.map(|output| ExecuteOutput::Settle(SettleOutput::Recorded(output))))
}

fn restarted(lease: LeaseOutput) -> Heard {
    settle(SettleOutput::Leased(lease))
}

fn fetched(result: Option<ResultEnvelope>) -> Heard {
    Answered::Ran(Ok(ExecuteOutput::Result(result)))
}

/// Attempt `n` of a table row.
fn nth(n: i64) -> AttemptNumber {
    AttemptNumber::new(n).unwrap()
}

fn permit(attempt: i64, resend: bool) -> Heard {
    began(Ok(BeginSendOutput::Permitted(SendPermit {
        attempt: nth(attempt),
        resend,
        provider_idempotency_key: format!("key-{attempt}"),
        send_cutoff_at: at(86_400),
        act_by: at(86_400),
        lease_expires_at: at(60),
    })))
}

fn send_status(attempt: i64, state: AttemptState, needs_reconciliation: bool) -> SendStatus {
    SendStatus {
        attempt: nth(attempt),
        state,
        send_cutoff_at: at(-1),
        act_by: at(-1),
        needs_reconciliation,
        absence_provable_from: needs_reconciliation.then(|| at(-1)),
        plan_fingerprint: crate::digest::frame_digest("plan", 1, &[]),
        key: format!("stored-key-{attempt}"),
    }
}

fn status_of(send: Option<SendStatus>) -> Heard {
    settle(SettleOutput::Status(CommandStatus {
        command: StatusOutput::leased(2, fence(), true),
        send,
    }))
}

fn status(attempt: i64, state: AttemptState, needs_reconciliation: bool) -> Heard {
    status_of(Some(send_status(attempt, state, needs_reconciliation)))
}

fn cutoff_passed() -> Heard {
    began(Err(JournalError::SendCutoffPassed))
}

/// Runs `answers` (each at its time, on a clock that never steps) from a new call,
/// returning what it asked for after each; an error ends the run.
fn run(answers: Vec<(Heard, Timestamp)>) -> Vec<Result<Asked, JournalError>> {
    let answers = answers
        .into_iter()
        .map(|(answer, now)| (answer, Now::unstepped(now)))
        .collect();
    run_on(Now::unstepped(at(0)), answers)
}

/// Runs `answers` (each at its reading of the driver's clocks) from a new call begun
/// at `begun`, returning what it asked for after each; an error ends the run.
fn run_on(begun: Now, answers: Vec<(Heard, Now)>) -> Vec<Result<Asked, JournalError>> {
    let mut program = program();
    let first = program.next(Answered::Nothing, begun).map(asked);
    assert_eq!(first, Ok(Asked::Start));
    let mut steps = Vec::new();
    for (answer, now) in answers {
        let step = program.next(answer, now).map(asked);
        let step = release::answered(&mut program, step, now);
        let ended = step.is_err() || matches!(step, Ok(Asked::Done(_) | Asked::Replayed(_)));
        steps.push(step);
        if ended {
            break;
        }
    }
    steps
}

/// What `answers` (all at time 0) asked for; the last must be `Done`.
fn steps(answers: Vec<Heard>) -> Vec<Asked> {
    run(answers.into_iter().map(|a| (a, at(0))).collect())
        .into_iter()
        .map(|step| step.unwrap())
        .collect()
}

fn send_step(attempt: i64, resend: bool) -> Asked {
    Asked::Send {
        attempt: nth(attempt),
        resend,
        key: format!("key-{attempt}"),
        deadline: Duration::from_secs(50),
    }
}

#[test]
fn first_send_succeeds_and_answers_the_envelope_sent() {
    let sent = envelope("ch_1");
    assert_eq!(
        steps(vec![
            acquired(),
            permit(1, false),
            Answered::Sent(ProviderAnswer::Succeeded(sent.clone())),
            recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
        ]),
        vec![
            Asked::BeginSend { fence: fence() },
            send_step(1, false),
            Asked::Record {
                fence: fence(),
                attempt: nth(1),
                outcome: ProviderAnswer::Succeeded(sent.clone()),
            },
            Asked::Done(Execution::Succeeded(sent)),
        ]
    );
}

#[test]
fn the_send_carries_the_plans_parameters() {
    let mut program = program();
    program
        .next(Answered::Nothing, Now::unstepped(at(0)))
        .unwrap();
    program.next(acquired(), Now::unstepped(at(0))).unwrap();
    match program
        .next(permit(1, false), Now::unstepped(at(0)))
        .unwrap()
    {
        Next::Send(request) => assert_eq!(request.parameters, json!({"amount": 1250})),
        other => panic!("{other:?}"),
    }
    // And its `Debug` shows where the call stands, never a parameter or a key.
    let printed = format!("{program:?}");
    assert!(
        !printed.contains("1250") && !printed.contains("key-1"),
        "{printed}"
    );
}

#[test]
fn decline_is_recorded_and_answered() {
    assert_eq!(
        steps(vec![
            acquired(),
            permit(1, false),
            Answered::Sent(ProviderAnswer::Declined),
            recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal))),
        ])[2..],
        [
            Asked::Record {
                fence: fence(),
                attempt: nth(1),
                outcome: ProviderAnswer::Declined,
            },
            Asked::Done(Execution::Declined),
        ]
    );
}

#[test]
fn ambiguous_send_is_recorded_then_retried_after_the_lease() {
    let answers = run(vec![
        (acquired(), at(0)),
        (permit(1, false), at(0)),
        (Answered::Sent(ProviderAnswer::Unknown), at(20)),
        (
            recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
            at(21),
        ),
    ]);
    assert_eq!(
        answers[2],
        Ok(Asked::Record {
            fence: fence(),
            attempt: nth(1),
            outcome: ProviderAnswer::Unknown,
        })
    );
    // Released at once (an event or the job may record the key's answer), the
    // retry-after still the lease's remaining time: no other holder re-sends the key
    // before `lastSentAt + 60 s` (`resend_not_yet`).
    assert_eq!(
        answers[3],
        Ok(Asked::Left(
            fence(),
            Execution::RetryLater {
                after: Duration::from_secs(39)
            }
        ))
    );
}

#[test]
fn a_not_found_from_a_send_is_recorded_as_unknown() {
    assert_eq!(
        steps(vec![
            acquired(),
            permit(1, false),
            Answered::Sent(ProviderAnswer::NotFound),
        ])[2],
        Asked::Record {
            fence: fence(),
            attempt: nth(1),
            outcome: ProviderAnswer::Unknown,
        }
    );
}

#[test]
fn a_takeover_re_sends_the_same_attempt() {
    assert_eq!(
        steps(vec![acquired(), permit(1, true)])[1],
        send_step(1, true)
    );
}

#[test]
fn the_deadline_keeps_the_margin_below_the_lease() {
    // 30.5 s of lease left when the permit arrives: 20.5 s for the provider.
    let answers = run(vec![
        (acquired(), at(0)),
        (
            permit(1, false),
            Timestamp::from_micros(at(29).micros() + 500_000).unwrap(),
        ),
    ]);
    let Ok(Asked::Send { deadline, .. }) = &answers[1] else {
        panic!("{answers:?}")
    };
    assert_eq!(*deadline, Duration::from_millis(20_500));
}

#[test]
fn too_little_lease_left_sends_nothing() {
    // At start: 10.5 s left, 0.5 s after the margin.
    let answers = run(vec![(
        acquired(),
        Timestamp::from_micros(at(49).micros() + 500_000).unwrap(),
    )]);
    assert_eq!(
        answers[0],
        Ok(Asked::Left(
            fence(),
            Execution::RetryLater {
                after: Duration::from_secs(11)
            }
        ))
    );
    // After the permit: the permit stands, nothing is sent.
    let answers = run(vec![(acquired(), at(0)), (permit(1, false), at(50))]);
    assert_eq!(
        answers[1],
        Ok(Asked::Left(
            fence(),
            Execution::RetryLater {
                after: Duration::from_secs(10)
            }
        ))
    );
    // Exactly at the bound, 1 s, the send starts.
    let answers = run(vec![(acquired(), at(0)), (permit(1, false), at(49))]);
    assert!(
        matches!(&answers[1], Ok(Asked::Send { deadline, .. }) if *deadline == MIN_SEND_DEADLINE)
    );
}

#[test]
fn busy_and_terminal_starts() {
    assert_eq!(
        steps(vec![started_with(LeaseOutput::Busy)]),
        vec![Asked::Done(Execution::InProgress)]
    );
    assert_eq!(
        steps(vec![started_with(LeaseOutput::FailedFinal)]),
        vec![Asked::Replayed(Execution::Declined)]
    );
    let stored = envelope("ch_9");
    assert_eq!(
        steps(vec![
            started_with(LeaseOutput::Succeeded),
            fetched(Some(stored.clone())),
        ]),
        vec![
            Asked::FetchResult,
            Asked::Replayed(Execution::Succeeded(stored))
        ]
    );
    assert_eq!(
        steps(vec![started_with(LeaseOutput::Succeeded), fetched(None)]),
        vec![
            Asked::FetchResult,
            Asked::Replayed(Execution::SucceededWithoutResult)
        ]
    );
}

#[test]
fn begin_send_on_a_terminal_command() {
    assert_eq!(
        steps(vec![
            acquired(),
            began(Ok(BeginSendOutput::Terminal(TerminalOutput::Succeeded))),
        ])[1],
        Asked::FetchResult
    );
    assert_eq!(
        steps(vec![
            acquired(),
            began(Ok(BeginSendOutput::Terminal(TerminalOutput::FailedFinal))),
        ])[1],
        Asked::Replayed(Execution::Declined)
    );
}

#[test]
fn a_permit_decided_with_the_start_goes_on_from_the_permit() {
    // Chained in preconditions mode, or opened in one transaction: the call goes on
    // from the permit it was answered, at the time it hears it.
    let started = StartOutput {
        registration: RegistrationOutput::new(RegistrationOutcome::RegisteredNew),
        lease: LeaseOutput::Acquired {
            fence_epoch: fence(),
            lease_expires_at: at(60),
        },
    };
    let permitted = BeginSendOutput::Permitted(SendPermit {
        attempt: nth(1),
        resend: false,
        provider_idempotency_key: "key-1".to_owned(),
        send_cutoff_at: at(86_400),
        act_by: at(86_400),
        lease_expires_at: at(60),
    });
    let cases: [(Heard, Timestamp, Result<Asked, JournalError>); 3] = [
        (
            Answered::Chained(
                ExecuteOutput::Started(started),
                ExecuteOutput::BeganSend(permitted.clone()),
            ),
            at(0),
            Ok(send_step(1, false)),
        ),
        // Heard 50 s later: too little lease left to send; the permit stands.
        (
            Answered::Ran(Ok(ExecuteOutput::Opened(
                started,
                Some(Ok(permitted.clone())),
            ))),
            at(50),
            Ok(Asked::Release(fence())),
        ),
        // The permit refused beside the lease it followed: the refusal is the answer.
        (
            Answered::Ran(Ok(ExecuteOutput::Opened(
                started,
                Some(Err(JournalError::PlanConflict)),
            ))),
            at(0),
            Err(JournalError::PlanConflict),
        ),
    ];
    for (answer, now, expected) in cases {
        let mut program = program();
        program
            .next(Answered::Nothing, Now::unstepped(at(0)))
            .unwrap();
        assert_eq!(
            program.next(answer, Now::unstepped(now)).map(asked),
            expected
        );
    }
}

#[test]
fn the_opening_chains_a_permit_only_after_an_acquired_lease() {
    let mut program = program();
    let Next::Run(run) = program
        .next(Answered::Nothing, Now::unstepped(at(0)))
        .unwrap()
    else {
        panic!("the call starts");
    };
    let started = |lease| StartOutput {
        registration: RegistrationOutput::new(RegistrationOutcome::RegisteredNew),
        lease,
    };
    let acquired = started(LeaseOutput::Acquired {
        fence_epoch: fence(),
        lease_expires_at: at(60),
    });
    let chained = program.chained(
        &run.op,
        &ExecuteOutput::Started(acquired),
        Now::unstepped(at(0)),
    );
    assert!(matches!(chained, Some(ExecuteOp::BeginSend(op)) if op.fence() == fence()));
    for lease in [
        LeaseOutput::Busy,
        LeaseOutput::Succeeded,
        LeaseOutput::FailedFinal,
    ] {
        let output = ExecuteOutput::Started(started(lease));
        assert!(
            program
                .chained(&run.op, &output, Now::unstepped(at(0)))
                .is_none(),
            "{lease:?}"
        );
    }
}

#[test]
fn past_the_cutoff_the_provider_is_asked_before_anything_else() {
    let found = envelope("ch_late");
    assert_eq!(
        steps(vec![
            acquired(),
            cutoff_passed(),
            status(1, AttemptState::Ambiguous, true),
            Answered::LookedUp(ProviderAnswer::Succeeded(found.clone())),
            recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
        ]),
        vec![
            Asked::BeginSend { fence: fence() },
            Asked::Status,
            Asked::Lookup {
                key: "stored-key-1".to_owned(),
                deadline: Duration::from_secs(50),
            },
            Asked::Reconcile {
                fence: fence(),
                attempt: nth(1),
                evidence: ProviderAnswer::Succeeded(found.clone()),
            },
            Asked::Done(Execution::Succeeded(found)),
        ]
    );
}

#[test]
fn past_the_cutoff_a_declined_lookup_fails_the_command() {
    assert_eq!(
        steps(vec![
            acquired(),
            cutoff_passed(),
            status(2, AttemptState::Sending, true),
            Answered::LookedUp(ProviderAnswer::Declined),
            recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal))),
        ])[3..],
        [
            Asked::Reconcile {
                fence: fence(),
                attempt: nth(2),
                evidence: ProviderAnswer::Declined,
            },
            Asked::Done(Execution::Declined),
        ]
    );
}

#[test]
fn past_the_cutoff_proven_absence_opens_one_new_attempt() {
    let sent = envelope("ch_2");
    assert_eq!(
        steps(vec![
            acquired(),
            cutoff_passed(),
            status(1, AttemptState::Ambiguous, true),
            Answered::LookedUp(ProviderAnswer::NotFound),
            recorded(Ok(SendOutcomeOutput::Absent { attempt: nth(1) })),
            permit(2, false),
            Answered::Sent(ProviderAnswer::Succeeded(sent.clone())),
            recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
        ])[3..],
        [
            Asked::Reconcile {
                fence: fence(),
                attempt: nth(1),
                evidence: ProviderAnswer::NotFound,
            },
            Asked::BeginSend { fence: fence() },
            send_step(2, false),
            Asked::Record {
                fence: fence(),
                attempt: nth(2),
                outcome: ProviderAnswer::Succeeded(sent.clone()),
            },
            Asked::Done(Execution::Succeeded(sent)),
        ]
    );
}

#[test]
fn a_second_absence_in_one_call_is_refused() {
    let answers = run(vec![
        (acquired(), at(0)),
        (cutoff_passed(), at(0)),
        (status(1, AttemptState::Ambiguous, true), at(0)),
        (Answered::LookedUp(ProviderAnswer::NotFound), at(0)),
        (
            recorded(Ok(SendOutcomeOutput::Absent { attempt: nth(1) })),
            at(0),
        ),
        (cutoff_passed(), at(0)),
        (status(2, AttemptState::Sending, true), at(0)),
        (Answered::LookedUp(ProviderAnswer::NotFound), at(0)),
        (
            recorded(Ok(SendOutcomeOutput::Absent { attempt: nth(2) })),
            at(0),
        ),
    ]);
    assert_eq!(answers.len(), 9, "every answer heard: {answers:?}");
    assert!(matches!(
        answers.last(),
        Some(Err(JournalError::Internal { .. }))
    ));
}

#[test]
fn past_the_cutoff_an_unavailable_lookup_writes_nothing() {
    assert_eq!(
        steps(vec![
            acquired(),
            cutoff_passed(),
            status(1, AttemptState::Ambiguous, true),
            Answered::LookedUp(ProviderAnswer::Unknown),
        ])[3],
        Asked::Left(fence(), Execution::PendingReconciliation)
    );
}

#[test]
fn past_the_cutoff_too_little_lease_left_to_look_up_retries_later() {
    let answers = run(vec![
        (acquired(), at(0)),
        (cutoff_passed(), at(0)),
        (status(1, AttemptState::Ambiguous, true), at(50)),
    ]);
    assert_eq!(
        answers[2],
        Ok(Asked::Left(
            fence(),
            Execution::RetryLater {
                after: Duration::from_secs(10)
            }
        ))
    );
}

#[test]
fn an_ambiguous_answer_past_the_cutoff_goes_to_the_lookup() {
    assert_eq!(
        steps(vec![
            acquired(),
            permit(1, true),
            Answered::Sent(ProviderAnswer::Unknown),
            recorded(Err(JournalError::SendCutoffPassed)),
            status(1, AttemptState::Sending, true),
        ])[3..],
        [
            Asked::Status,
            Asked::Lookup {
                key: "stored-key-1".to_owned(),
                deadline: Duration::from_secs(50),
            },
        ]
    );
}

#[test]
fn an_answer_whose_record_is_refused_is_reconciled_never_dropped() {
    let charge = envelope("ch_1");
    for (sent, evidence) in [
        (
            ProviderAnswer::Succeeded(charge.clone()),
            ProviderAnswer::Succeeded(charge.clone()),
        ),
        (ProviderAnswer::Declined, ProviderAnswer::Declined),
    ] {
        for refusal in [
            JournalError::SendCutoffPassed,
            JournalError::LeaseExpired,
            JournalError::AttemptMismatch,
        ] {
            let got = steps(vec![
                acquired(),
                permit(1, false),
                Answered::Sent(sent.clone()),
                recorded(Err(refusal)),
            ]);
            assert_eq!(
                got[3],
                Asked::Reconcile {
                    fence: fence(),
                    attempt: nth(1),
                    evidence: evidence.clone(),
                },
                "{refusal:?}"
            );
        }
    }
}

#[test]
fn a_held_answer_takes_one_more_lease_when_its_lease_ran_out() {
    let charge = envelope("ch_1");
    let later = crate::fence::FenceEpoch::new(4).unwrap();
    let got = steps(vec![
        acquired(),
        permit(1, false),
        Answered::Sent(ProviderAnswer::Succeeded(charge.clone())),
        recorded(Err(JournalError::LeaseExpired)),
        recorded(Err(JournalError::LeaseExpired)),
        restarted(LeaseOutput::Acquired {
            fence_epoch: later,
            lease_expires_at: at(120),
        }),
        recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
    ]);
    assert_eq!(
        got[4..],
        [
            Asked::StartAgain,
            Asked::Reconcile {
                fence: later,
                attempt: nth(1),
                evidence: ProviderAnswer::Succeeded(charge.clone()),
            },
            Asked::Done(Execution::Succeeded(charge)),
        ]
    );
    // Busy under the second lease, or refused again under it: the call moves on.
    let held = |after: Vec<Heard>| {
        let mut answers = vec![
            acquired(),
            permit(1, false),
            Answered::Sent(ProviderAnswer::Declined),
            recorded(Err(JournalError::LeaseExpired)),
            recorded(Err(JournalError::LeaseExpired)),
        ];
        answers.extend(after);
        steps(answers).pop()
    };
    assert_eq!(
        held(vec![restarted(LeaseOutput::Busy)]),
        Some(Asked::Done(Execution::InProgress))
    );
    let again = restarted(LeaseOutput::Acquired {
        fence_epoch: later,
        lease_expires_at: at(120),
    });
    assert_eq!(
        held(vec![again, recorded(Err(JournalError::StaleFence))]),
        Some(Asked::Done(Execution::InProgress))
    );
    // Settled meanwhile: the stored result, or the decline.
    assert_eq!(
        held(vec![restarted(LeaseOutput::Succeeded)]),
        Some(Asked::FetchResult)
    );
    assert_eq!(
        held(vec![restarted(LeaseOutput::FailedFinal)]),
        Some(Asked::Replayed(Execution::Declined))
    );
}

#[test]
fn an_absence_not_yet_provable_is_pending_reconciliation() {
    for provable_from in [Some(at(400)), None] {
        assert_eq!(
            steps(vec![
                acquired(),
                cutoff_passed(),
                status(1, AttemptState::Ambiguous, true),
                Answered::LookedUp(ProviderAnswer::NotFound),
                recorded(Err(JournalError::AbsenceNotProvable { provable_from })),
            ])[4],
            Asked::Left(fence(), Execution::PendingReconciliation)
        );
    }
}

#[test]
fn a_status_without_reconciliation_to_do_is_in_progress() {
    for answer in [
        status_of(None),
        status(1, AttemptState::Succeeded, false),
        status(1, AttemptState::Sending, false),
    ] {
        assert_eq!(
            steps(vec![acquired(), cutoff_passed(), answer])[2],
            Asked::Done(Execution::InProgress)
        );
    }
}

#[test]
fn a_lost_lease_anywhere_is_in_progress() {
    for lost in [
        JournalError::LeaseExpired,
        JournalError::StaleFence,
        JournalError::LeaseNotHeld,
    ] {
        assert_eq!(
            steps(vec![
                acquired(),
                permit(1, false),
                Answered::Sent(ProviderAnswer::Unknown),
                recorded(Err(lost)),
            ])[3],
            Asked::Done(Execution::InProgress)
        );
        assert_eq!(
            steps(vec![acquired(), began(Err(lost))])[1],
            Asked::Done(Execution::InProgress)
        );
        assert_eq!(
            steps(vec![
                acquired(),
                cutoff_passed(),
                status(1, AttemptState::Ambiguous, true),
                Answered::LookedUp(ProviderAnswer::NotFound),
                recorded(Err(lost)),
            ])[4],
            Asked::Done(Execution::InProgress)
        );
    }
}

#[test]
fn other_errors_end_the_call_with_the_error() {
    for error in [
        JournalError::PlanConflict,
        JournalError::corrupt("root"),
        JournalError::TerminalConflict,
    ] {
        let answers = run(vec![(acquired(), at(0)), (began(Err(error)), at(0))]);
        assert_eq!(answers[1], Err(error));
        let answers = run(vec![
            (acquired(), at(0)),
            (permit(1, false), at(0)),
            (Answered::Sent(ProviderAnswer::Unknown), at(0)),
            (recorded(Err(error)), at(0)),
        ]);
        assert_eq!(answers[3], Err(error));
        // The status read's own refusal (the plan checked first) ends it too.
        let answers = run(vec![
            (acquired(), at(0)),
            (cutoff_passed(), at(0)),
            (Answered::Ran(Err(error)), at(0)),
        ]);
        assert_eq!(answers[2], Err(error));
    }
}

#[test]
fn an_answer_out_of_turn_is_an_internal_error() {
    // A send's answer before any start, a permit's after the call answered.
    let mut early = program();
    early
        .next(Answered::Nothing, Now::unstepped(at(0)))
        .unwrap();
    assert!(matches!(
        early.next(
            Answered::Sent(ProviderAnswer::Unknown),
            Now::unstepped(at(0))
        ),
        Err(JournalError::Internal { .. })
    ));
    let mut late = program();
    late.next(Answered::Nothing, Now::unstepped(at(0))).unwrap();
    late.next(started_with(LeaseOutput::Busy), Now::unstepped(at(0)))
        .unwrap();
    assert!(matches!(
        late.next(permit(1, false), Now::unstepped(at(0))),
        Err(JournalError::Internal { .. })
    ));
}

#[test]
fn a_not_found_from_a_lookup_started_before_the_absence_was_provable_writes_nothing() {
    let status_at = |from: Option<Timestamp>| {
        let mut send = send_status(1, AttemptState::Sending, true);
        send.absence_provable_from = from;
        status_of(Some(send))
    };
    // Provable from 10 s, the status read at 0 s: the lookup may not see the charge yet.
    for from in [Some(at(10)), None] {
        assert_eq!(
            steps(vec![
                acquired(),
                cutoff_passed(),
                status_at(from),
                Answered::LookedUp(ProviderAnswer::NotFound),
            ])[3],
            Asked::Left(fence(), Execution::PendingReconciliation),
            "{from:?}"
        );
    }
    // Provable already: the absence is recorded. Evidence of a charge counts at once.
    assert!(matches!(
        &steps(vec![
            acquired(),
            cutoff_passed(),
            status_at(Some(at(0))),
            Answered::LookedUp(ProviderAnswer::NotFound),
        ])[3],
        Asked::Reconcile {
            evidence: ProviderAnswer::NotFound,
            ..
        }
    ));
    assert!(matches!(
        &steps(vec![
            acquired(),
            cutoff_passed(),
            status_at(Some(at(10))),
            Answered::LookedUp(ProviderAnswer::Declined),
        ])[3],
        Asked::Reconcile {
            evidence: ProviderAnswer::Declined,
            ..
        }
    ));
}

#[test]
fn a_replayed_unknown_is_recorded_then_looked_up_at_once() {
    let found = envelope("pi_1");
    let answers = run(vec![
        (acquired(), at(0)),
        (permit(1, true), at(0)),
        (Answered::Sent(ProviderAnswer::ReplayedUnknown), at(2)),
        (
            recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
            at(3),
        ),
        (status(1, AttemptState::ReplayedUnknown, true), at(3)),
        (
            Answered::LookedUp(ProviderAnswer::Succeeded(found.clone())),
            at(4),
        ),
        (
            recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
            at(5),
        ),
    ]);
    assert_eq!(
        answers[2],
        Ok(Asked::Record {
            fence: fence(),
            attempt: nth(1),
            outcome: ProviderAnswer::ReplayedUnknown,
        })
    );
    // No "retry after the lease": the status, then the lookup, in the same call.
    assert_eq!(answers[3], Ok(Asked::Status));
    assert_eq!(
        answers[4],
        Ok(Asked::Lookup {
            key: "stored-key-1".to_owned(),
            deadline: Duration::from_secs(47),
        })
    );
    assert_eq!(
        answers[5],
        Ok(Asked::Reconcile {
            fence: fence(),
            attempt: nth(1),
            evidence: ProviderAnswer::Succeeded(found.clone()),
        })
    );
    assert_eq!(answers[6], Ok(Asked::Done(Execution::Succeeded(found))));
}

#[test]
fn a_replayed_unknown_not_found_before_its_absence_is_provable_is_pending() {
    let mut send = send_status(1, AttemptState::ReplayedUnknown, true);
    send.send_cutoff_at = at(86_400);
    send.absence_provable_from = Some(at(360));
    let answers = run(vec![
        (acquired(), at(0)),
        (permit(1, true), at(0)),
        (Answered::Sent(ProviderAnswer::ReplayedUnknown), at(2)),
        (
            recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
            at(3),
        ),
        (status_of(Some(send)), at(3)),
        (Answered::LookedUp(ProviderAnswer::NotFound), at(4)),
    ]);
    assert_eq!(answers[3], Ok(Asked::Status));
    assert_eq!(
        answers[5],
        Ok(Asked::Left(fence(), Execution::PendingReconciliation))
    );
}

/// What a call that heard the key's stored unknown replayed on attempt 1 and recorded
/// it asked for, up to its status read, then after `after`.
fn replayed_then(after: Vec<Heard>) -> Vec<Asked> {
    let mut answers = vec![
        acquired(),
        permit(1, true),
        Answered::Sent(ProviderAnswer::ReplayedUnknown),
        recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
        status(1, AttemptState::ReplayedUnknown, true),
    ];
    answers.extend(after);
    steps(answers)
}

#[test]
fn after_a_replay_a_lookup_that_replays_or_fails_proves_nothing() {
    // A lookup answering a replay or failing writes nothing; a decline found, or a
    // not found once the absence is provable (from -1 s in `status`, the status read
    // at 0 s), is reconciled.
    for (found, next) in [
        (ProviderAnswer::ReplayedUnknown, None),
        (ProviderAnswer::Unknown, None),
        (ProviderAnswer::Declined, Some(ProviderAnswer::Declined)),
        (ProviderAnswer::NotFound, Some(ProviderAnswer::NotFound)),
    ] {
        let got = replayed_then(vec![Answered::LookedUp(found.clone())]);
        let expected = match next {
            None => Asked::Left(fence(), Execution::PendingReconciliation),
            Some(evidence) => Asked::Reconcile {
                fence: fence(),
                attempt: nth(1),
                evidence,
            },
        };
        assert_eq!(got[5], expected, "{found:?}");
    }
}

#[test]
fn a_replay_heard_again_on_the_next_attempt_is_looked_up_and_settles() {
    let charge = envelope("pi_2");
    let got = steps(vec![
        acquired(),
        cutoff_passed(),
        status(1, AttemptState::ReplayedUnknown, true),
        Answered::LookedUp(ProviderAnswer::NotFound),
        recorded(Ok(SendOutcomeOutput::Absent { attempt: nth(1) })),
        permit(2, false),
        Answered::Sent(ProviderAnswer::ReplayedUnknown),
        recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(2) })),
        status(2, AttemptState::ReplayedUnknown, true),
        Answered::LookedUp(ProviderAnswer::Succeeded(charge.clone())),
        recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
    ]);
    assert_eq!(got[5], send_step(2, false));
    assert_eq!(
        got[6],
        Asked::Record {
            fence: fence(),
            attempt: nth(2),
            outcome: ProviderAnswer::ReplayedUnknown,
        }
    );
    assert_eq!(
        got[7],
        Asked::Status,
        "looked up at once, not retried later"
    );
    assert_eq!(
        got[9],
        Asked::Reconcile {
            fence: fence(),
            attempt: nth(2),
            evidence: ProviderAnswer::Succeeded(charge.clone()),
        }
    );
    // The charge found is the answer, byte for byte.
    assert_eq!(got[10], Asked::Done(Execution::Succeeded(charge)));
}

#[test]
fn a_replay_the_journal_refuses_to_record_is_looked_up_or_left_to_the_holder() {
    // Past the cutoff (the permit was given just before it): the status, then a lookup.
    let past = steps(vec![
        acquired(),
        permit(1, true),
        Answered::Sent(ProviderAnswer::ReplayedUnknown),
        recorded(Err(JournalError::SendCutoffPassed)),
    ]);
    assert_eq!(past[3], Asked::Status);
    // The lease lost meanwhile: in progress, nothing more (a replay is no evidence to
    // take a second lease for).
    for lost in [JournalError::LeaseExpired, JournalError::StaleFence] {
        let got = steps(vec![
            acquired(),
            permit(1, true),
            Answered::Sent(ProviderAnswer::ReplayedUnknown),
            recorded(Err(lost)),
        ]);
        assert_eq!(got[3], Asked::Done(Execution::InProgress), "{lost:?}");
    }
}

mod clocks;
mod customer;
mod customer_model;
mod late;
mod release;

#[test]
fn a_terminal_outcome_this_call_did_not_record_is_a_replay() {
    let stored = envelope("ch_7");
    let terminal = |outcome| began(Ok(BeginSendOutput::Terminal(outcome)));
    let cases: Vec<(&str, Vec<Heard>, Asked)> = vec![
        (
            "a start that finds the success",
            vec![
                started_with(LeaseOutput::Succeeded),
                fetched(Some(stored.clone())),
            ],
            Asked::Replayed(Execution::Succeeded(stored.clone())),
        ),
        (
            "a permit that finds the success",
            vec![
                acquired(),
                terminal(TerminalOutput::Succeeded),
                fetched(Some(stored.clone())),
            ],
            Asked::Replayed(Execution::Succeeded(stored.clone())),
        ),
        (
            "a second lease that finds the decline another recorded",
            vec![
                acquired(),
                permit(1, false),
                Answered::Sent(ProviderAnswer::Declined),
                recorded(Err(JournalError::LeaseExpired)),
                recorded(Err(JournalError::LeaseExpired)),
                restarted(LeaseOutput::FailedFinal),
            ],
            Asked::Replayed(Execution::Declined),
        ),
        (
            "this call's send, its success recorded",
            vec![
                acquired(),
                permit(1, false),
                Answered::Sent(ProviderAnswer::Succeeded(stored.clone())),
                recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
            ],
            Asked::Done(Execution::Succeeded(stored.clone())),
        ),
        (
            "this call's send, its decline recorded",
            vec![
                acquired(),
                permit(1, false),
                Answered::Sent(ProviderAnswer::Declined),
                recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal))),
            ],
            Asked::Done(Execution::Declined),
        ),
        (
            "another holder's lease",
            vec![started_with(LeaseOutput::Busy)],
            Asked::Done(Execution::InProgress),
        ),
    ];
    for (name, answers, answered) in cases {
        assert_eq!(steps(answers).pop(), Some(answered), "{name}");
    }
}
