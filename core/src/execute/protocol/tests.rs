//! The protocol table, row by row, and whole paths through it.

use super::*;
use crate::sends::{AttemptState, SendPermit};
use serde_json::json;

fn fence() -> FenceEpoch {
    FenceEpoch::new(3).unwrap()
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_micros(1_800_000_000_000_000 + seconds * 1_000_000).unwrap()
}

fn envelope(id: &str) -> ResultEnvelope {
    ResultEnvelope::new(&json!({"id": id, "amount": 500})).unwrap()
}

fn acquired() -> Event {
    Event::Started(LeaseOutput::Acquired {
        fence_epoch: fence(),
        lease_expires_at: at(60),
    })
}

/// Attempt `n` of a table row.
fn nth(n: i64) -> AttemptNumber {
    AttemptNumber::new(n).unwrap()
}

fn permit(attempt: i64, resend: bool) -> Event {
    Event::BeganSend(Ok(BeginSendOutput::Permitted(SendPermit {
        attempt: nth(attempt),
        resend,
        provider_idempotency_key: format!("key-{attempt}"),
        send_cutoff_at: at(86_400),
        lease_expires_at: at(60),
    })))
}

fn status(attempt: i64, state: AttemptState, needs_reconciliation: bool) -> Event {
    Event::Status(Some(SendStatus {
        attempt: nth(attempt),
        state,
        send_cutoff_at: at(-1),
        needs_reconciliation,
        absence_provable_from: needs_reconciliation.then(|| at(-1)),
        plan_fingerprint: crate::digest::frame_digest("plan", 1, &[]),
        key: format!("stored-key-{attempt}"),
    }))
}

/// Runs `events` (each at its time) from a new call, returning every step.
fn run(events: Vec<(Event, Timestamp)>) -> Vec<Result<Step, JournalError>> {
    let (mut protocol, first) = Protocol::new();
    assert_eq!(first, Step::Start);
    events
        .into_iter()
        .map(|(event, now)| protocol.step(event, Now::unstepped(now)))
        .collect()
}

/// The steps of `events` all at time 0; the last must be `Done`.
fn steps(events: Vec<Event>) -> Vec<Step> {
    run(events.into_iter().map(|e| (e, at(0))).collect())
        .into_iter()
        .map(|step| step.unwrap())
        .collect()
}

fn send_step(attempt: i64, resend: bool) -> Step {
    Step::Send {
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
            Event::Sent(ProviderAnswer::Succeeded(sent.clone())),
            Event::Recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
        ]),
        vec![
            Step::BeginSend { fence: fence() },
            send_step(1, false),
            Step::Record {
                fence: fence(),
                attempt: nth(1),
                outcome: ProviderAnswer::Succeeded(sent.clone()),
            },
            Step::Done(Execution::Succeeded(sent)),
        ]
    );
}

#[test]
fn decline_is_recorded_and_answered() {
    assert_eq!(
        steps(vec![
            acquired(),
            permit(1, false),
            Event::Sent(ProviderAnswer::Declined),
            Event::Recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal))),
        ])[2..],
        [
            Step::Record {
                fence: fence(),
                attempt: nth(1),
                outcome: ProviderAnswer::Declined,
            },
            Step::Done(Execution::Declined),
        ]
    );
}

#[test]
fn ambiguous_send_is_recorded_then_retried_after_the_lease() {
    let answers = run(vec![
        (acquired(), at(0)),
        (permit(1, false), at(0)),
        (Event::Sent(ProviderAnswer::Unknown), at(20)),
        (
            Event::Recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
            at(21),
        ),
    ]);
    assert_eq!(
        answers[2],
        Ok(Step::Record {
            fence: fence(),
            attempt: nth(1),
            outcome: ProviderAnswer::Unknown,
        })
    );
    assert_eq!(
        answers[3],
        Ok(Step::Done(Execution::RetryLater {
            after: Duration::from_secs(39)
        }))
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
    let Ok(Step::Send { deadline, .. }) = &answers[1] else {
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
        Ok(Step::Done(Execution::RetryLater {
            after: Duration::from_secs(11)
        }))
    );
    // After the permit: the permit stands, nothing is sent.
    let answers = run(vec![(acquired(), at(0)), (permit(1, false), at(50))]);
    assert_eq!(
        answers[1],
        Ok(Step::Done(Execution::RetryLater {
            after: Duration::from_secs(10)
        }))
    );
    // Exactly at the bound, 1 s, the send starts.
    let answers = run(vec![(acquired(), at(0)), (permit(1, false), at(49))]);
    assert!(matches!(answers[1], Ok(Step::Send { deadline, .. }) if deadline == MIN_SEND_DEADLINE));
}

#[test]
fn busy_and_terminal_starts() {
    assert_eq!(
        steps(vec![Event::Started(LeaseOutput::Busy)]),
        vec![Step::Done(Execution::InProgress)]
    );
    assert_eq!(
        steps(vec![Event::Started(LeaseOutput::FailedFinal)]),
        vec![Step::Done(Execution::Declined)]
    );
    let stored = envelope("ch_9");
    assert_eq!(
        steps(vec![
            Event::Started(LeaseOutput::Succeeded),
            Event::Fetched(Some(stored.clone())),
        ]),
        vec![Step::FetchResult, Step::Done(Execution::Succeeded(stored))]
    );
    assert_eq!(
        steps(vec![
            Event::Started(LeaseOutput::Succeeded),
            Event::Fetched(None),
        ]),
        vec![
            Step::FetchResult,
            Step::Done(Execution::SucceededWithoutResult)
        ]
    );
}

#[test]
fn begin_send_on_a_terminal_command() {
    assert_eq!(
        steps(vec![
            acquired(),
            Event::BeganSend(Ok(BeginSendOutput::Terminal(TerminalOutput::Succeeded))),
        ])[1],
        Step::FetchResult
    );
    assert_eq!(
        steps(vec![
            acquired(),
            Event::BeganSend(Ok(BeginSendOutput::Terminal(TerminalOutput::FailedFinal))),
        ])[1],
        Step::Done(Execution::Declined)
    );
}

#[test]
fn past_the_cutoff_the_provider_is_asked_before_anything_else() {
    let found = envelope("ch_late");
    assert_eq!(
        steps(vec![
            acquired(),
            Event::BeganSend(Err(JournalError::SendCutoffPassed)),
            status(1, AttemptState::Ambiguous, true),
            Event::LookedUp(ProviderAnswer::Succeeded(found.clone())),
            Event::Reconciled(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
        ]),
        vec![
            Step::BeginSend { fence: fence() },
            Step::Status,
            Step::Lookup {
                attempt: nth(1),
                key: "stored-key-1".to_owned(),
                deadline: Duration::from_secs(50),
            },
            Step::Reconcile {
                fence: fence(),
                attempt: nth(1),
                evidence: ProviderAnswer::Succeeded(found.clone()),
            },
            Step::Done(Execution::Succeeded(found)),
        ]
    );
}

#[test]
fn past_the_cutoff_a_declined_lookup_fails_the_command() {
    assert_eq!(
        steps(vec![
            acquired(),
            Event::BeganSend(Err(JournalError::SendCutoffPassed)),
            status(2, AttemptState::Sending, true),
            Event::LookedUp(ProviderAnswer::Declined),
            Event::Reconciled(Ok(SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal))),
        ])[3..],
        [
            Step::Reconcile {
                fence: fence(),
                attempt: nth(2),
                evidence: ProviderAnswer::Declined,
            },
            Step::Done(Execution::Declined),
        ]
    );
}

#[test]
fn past_the_cutoff_proven_absence_opens_one_new_attempt() {
    let sent = envelope("ch_2");
    assert_eq!(
        steps(vec![
            acquired(),
            Event::BeganSend(Err(JournalError::SendCutoffPassed)),
            status(1, AttemptState::Ambiguous, true),
            Event::LookedUp(ProviderAnswer::NotFound),
            Event::Reconciled(Ok(SendOutcomeOutput::Absent { attempt: nth(1) })),
            permit(2, false),
            Event::Sent(ProviderAnswer::Succeeded(sent.clone())),
            Event::Recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
        ])[3..],
        [
            Step::Reconcile {
                fence: fence(),
                attempt: nth(1),
                evidence: ProviderAnswer::NotFound,
            },
            Step::BeginSend { fence: fence() },
            send_step(2, false),
            Step::Record {
                fence: fence(),
                attempt: nth(2),
                outcome: ProviderAnswer::Succeeded(sent.clone()),
            },
            Step::Done(Execution::Succeeded(sent)),
        ]
    );
}

#[test]
fn a_second_absence_in_one_call_is_refused() {
    let answers = run(vec![
        (acquired(), at(0)),
        (Event::BeganSend(Err(JournalError::SendCutoffPassed)), at(0)),
        (status(1, AttemptState::Ambiguous, true), at(0)),
        (Event::LookedUp(ProviderAnswer::NotFound), at(0)),
        (
            Event::Reconciled(Ok(SendOutcomeOutput::Absent { attempt: nth(1) })),
            at(0),
        ),
        (Event::BeganSend(Err(JournalError::SendCutoffPassed)), at(0)),
        (status(2, AttemptState::Sending, true), at(0)),
        (Event::LookedUp(ProviderAnswer::NotFound), at(0)),
        (
            Event::Reconciled(Ok(SendOutcomeOutput::Absent { attempt: nth(2) })),
            at(0),
        ),
    ]);
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
            Event::BeganSend(Err(JournalError::SendCutoffPassed)),
            status(1, AttemptState::Ambiguous, true),
            Event::LookedUp(ProviderAnswer::Unknown),
        ])[3],
        Step::Done(Execution::PendingReconciliation)
    );
}

#[test]
fn an_ambiguous_answer_past_the_cutoff_goes_to_the_lookup() {
    assert_eq!(
        steps(vec![
            acquired(),
            permit(1, true),
            Event::Sent(ProviderAnswer::Unknown),
            Event::Recorded(Err(JournalError::SendCutoffPassed)),
            status(1, AttemptState::Sending, true),
        ])[3..],
        [
            Step::Status,
            Step::Lookup {
                attempt: nth(1),
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
                Event::Sent(sent.clone()),
                Event::Recorded(Err(refusal)),
            ]);
            assert_eq!(
                got[3],
                Step::Reconcile {
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
    let later = FenceEpoch::new(4).unwrap();
    let got = steps(vec![
        acquired(),
        permit(1, false),
        Event::Sent(ProviderAnswer::Succeeded(charge.clone())),
        Event::Recorded(Err(JournalError::LeaseExpired)),
        Event::Reconciled(Err(JournalError::LeaseExpired)),
        Event::Started(LeaseOutput::Acquired {
            fence_epoch: later,
            lease_expires_at: at(120),
        }),
        Event::Reconciled(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
    ]);
    assert_eq!(
        got[4..],
        [
            Step::Start,
            Step::Reconcile {
                fence: later,
                attempt: nth(1),
                evidence: ProviderAnswer::Succeeded(charge.clone()),
            },
            Step::Done(Execution::Succeeded(charge)),
        ]
    );
    // Refused again under the second lease: the call moves on.
    let got = steps(vec![
        acquired(),
        permit(1, false),
        Event::Sent(ProviderAnswer::Declined),
        Event::Recorded(Err(JournalError::LeaseExpired)),
        Event::Reconciled(Err(JournalError::LeaseExpired)),
        Event::Started(LeaseOutput::Busy),
    ]);
    assert_eq!(got[5], Step::Done(Execution::InProgress));
}

#[test]
fn an_absence_not_yet_provable_is_pending_reconciliation() {
    for provable_from in [Some(at(400)), None] {
        assert_eq!(
            steps(vec![
                acquired(),
                Event::BeganSend(Err(JournalError::SendCutoffPassed)),
                status(1, AttemptState::Ambiguous, true),
                Event::LookedUp(ProviderAnswer::NotFound),
                Event::Reconciled(Err(JournalError::AbsenceNotProvable { provable_from })),
            ])[4],
            Step::Done(Execution::PendingReconciliation)
        );
    }
}

#[test]
fn a_status_without_reconciliation_to_do_is_in_progress() {
    for event in [
        Event::Status(None),
        status(1, AttemptState::Succeeded, false),
        status(1, AttemptState::Sending, false),
    ] {
        assert_eq!(
            steps(vec![
                acquired(),
                Event::BeganSend(Err(JournalError::SendCutoffPassed)),
                event,
            ])[2],
            Step::Done(Execution::InProgress)
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
        let prefix = || {
            vec![
                acquired(),
                permit(1, false),
                Event::Sent(ProviderAnswer::Unknown),
            ]
        };
        let mut recorded = prefix();
        recorded.push(Event::Recorded(Err(lost)));
        assert_eq!(recorded.len(), 4);
        assert_eq!(steps(recorded)[3], Step::Done(Execution::InProgress));
        assert_eq!(
            steps(vec![acquired(), Event::BeganSend(Err(lost))])[1],
            Step::Done(Execution::InProgress)
        );
        assert_eq!(
            steps(vec![
                acquired(),
                Event::BeganSend(Err(JournalError::SendCutoffPassed)),
                status(1, AttemptState::Ambiguous, true),
                Event::LookedUp(ProviderAnswer::NotFound),
                Event::Reconciled(Err(lost)),
            ])[4],
            Step::Done(Execution::InProgress)
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
        let answers = run(vec![
            (acquired(), at(0)),
            (Event::BeganSend(Err(error)), at(0)),
        ]);
        assert_eq!(answers[1], Err(error));
        let answers = run(vec![
            (acquired(), at(0)),
            (permit(1, false), at(0)),
            (Event::Sent(ProviderAnswer::Unknown), at(0)),
            (Event::Recorded(Err(error)), at(0)),
        ]);
        assert_eq!(answers[3], Err(error));
    }
}

#[test]
fn a_step_needing_the_lease_before_start_is_an_internal_error() {
    let (mut protocol, _) = Protocol::new();
    assert!(matches!(
        protocol.step(Event::Sent(ProviderAnswer::Unknown), Now::unstepped(at(0))),
        Err(JournalError::Internal { .. })
    ));
}

#[test]
fn the_step_bound_holds() {
    let (mut protocol, _) = Protocol::new();
    let mut last = protocol.step(acquired(), Now::unstepped(at(0)));
    for _ in 0..MAX_STEPS {
        last = protocol.step(Event::Fetched(None), Now::unstepped(at(0)));
    }
    assert!(matches!(last, Err(JournalError::Internal { .. })));
}

#[test]
fn a_not_found_from_a_lookup_started_before_the_absence_was_provable_writes_nothing() {
    let status_at = |from: Option<Timestamp>| {
        let Event::Status(Some(mut send)) = status(1, AttemptState::Sending, true) else {
            unreachable!("status() answers a send status");
        };
        send.absence_provable_from = from;
        Event::Status(Some(send))
    };
    // Provable from 10 s, the status read at 0 s: the lookup may not see the charge yet.
    for from in [Some(at(10)), None] {
        assert_eq!(
            steps(vec![
                acquired(),
                Event::BeganSend(Err(JournalError::SendCutoffPassed)),
                status_at(from),
                Event::LookedUp(ProviderAnswer::NotFound),
            ])[3],
            Step::Done(Execution::PendingReconciliation),
            "{from:?}"
        );
    }
    // Provable already: the absence is recorded. Evidence of a charge counts at once.
    assert!(matches!(
        steps(vec![
            acquired(),
            Event::BeganSend(Err(JournalError::SendCutoffPassed)),
            status_at(Some(at(0))),
            Event::LookedUp(ProviderAnswer::NotFound),
        ])[3],
        Step::Reconcile {
            evidence: ProviderAnswer::NotFound,
            ..
        }
    ));
    assert!(matches!(
        steps(vec![
            acquired(),
            Event::BeganSend(Err(JournalError::SendCutoffPassed)),
            status_at(Some(at(10))),
            Event::LookedUp(ProviderAnswer::Declined),
        ])[3],
        Step::Reconcile {
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
        (Event::Sent(ProviderAnswer::ReplayedUnknown), at(2)),
        (
            Event::Recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
            at(3),
        ),
        (status(1, AttemptState::ReplayedUnknown, true), at(3)),
        (
            Event::LookedUp(ProviderAnswer::Succeeded(found.clone())),
            at(4),
        ),
        (
            Event::Reconciled(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
            at(5),
        ),
    ]);
    assert_eq!(
        answers[2],
        Ok(Step::Record {
            fence: fence(),
            attempt: nth(1),
            outcome: ProviderAnswer::ReplayedUnknown,
        })
    );
    // No "retry after the lease": the status, then the lookup, in the same call.
    assert_eq!(answers[3], Ok(Step::Status));
    assert_eq!(
        answers[4],
        Ok(Step::Lookup {
            attempt: nth(1),
            key: "stored-key-1".to_owned(),
            deadline: Duration::from_secs(47),
        })
    );
    assert_eq!(
        answers[5],
        Ok(Step::Reconcile {
            fence: fence(),
            attempt: nth(1),
            evidence: ProviderAnswer::Succeeded(found.clone()),
        })
    );
    assert_eq!(answers[6], Ok(Step::Done(Execution::Succeeded(found))));
}

#[test]
fn a_replayed_unknown_not_found_before_its_absence_is_provable_is_pending() {
    let answers = run(vec![
        (acquired(), at(0)),
        (permit(1, true), at(0)),
        (Event::Sent(ProviderAnswer::ReplayedUnknown), at(2)),
        (
            Event::Recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
            at(3),
        ),
        (
            Event::Status(Some(SendStatus {
                attempt: nth(1),
                state: AttemptState::ReplayedUnknown,
                send_cutoff_at: at(86_400),
                needs_reconciliation: true,
                absence_provable_from: Some(at(360)),
                plan_fingerprint: crate::digest::frame_digest("plan", 1, &[]),
                key: "stored-key-1".to_owned(),
            })),
            at(3),
        ),
        (Event::LookedUp(ProviderAnswer::NotFound), at(4)),
    ]);
    assert_eq!(answers[3], Ok(Step::Status));
    assert_eq!(answers[5], Ok(Step::Done(Execution::PendingReconciliation)));
}

/// The steps of a call that heard the key's stored unknown replayed on attempt 1 and
/// recorded it, up to its status read, then `after`.
fn replayed_then(after: Vec<Event>) -> Vec<Step> {
    let mut events = vec![
        acquired(),
        permit(1, true),
        Event::Sent(ProviderAnswer::ReplayedUnknown),
        Event::Recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
        status(1, AttemptState::ReplayedUnknown, true),
    ];
    events.extend(after);
    steps(events)
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
        let got = replayed_then(vec![Event::LookedUp(found.clone())]);
        let expected = match next {
            None => Step::Done(Execution::PendingReconciliation),
            Some(evidence) => Step::Reconcile {
                fence: fence(),
                attempt: nth(1),
                evidence,
            },
        };
        assert_eq!(got[5], expected, "{found:?}");
    }
}

#[test]
fn a_replay_heard_again_on_the_next_attempt_is_looked_up_and_settles_within_the_bound() {
    let charge = envelope("pi_2");
    let got = steps(vec![
        acquired(),
        Event::BeganSend(Err(JournalError::SendCutoffPassed)),
        status(1, AttemptState::ReplayedUnknown, true),
        Event::LookedUp(ProviderAnswer::NotFound),
        Event::Reconciled(Ok(SendOutcomeOutput::Absent { attempt: nth(1) })),
        permit(2, false),
        Event::Sent(ProviderAnswer::ReplayedUnknown),
        Event::Recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(2) })),
        status(2, AttemptState::ReplayedUnknown, true),
        Event::LookedUp(ProviderAnswer::Succeeded(charge.clone())),
        Event::Reconciled(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
    ]);
    assert_eq!(got[5], send_step(2, false));
    assert_eq!(
        got[6],
        Step::Record {
            fence: fence(),
            attempt: nth(2),
            outcome: ProviderAnswer::ReplayedUnknown,
        }
    );
    assert_eq!(got[7], Step::Status, "looked up at once, not retried later");
    assert_eq!(
        got[9],
        Step::Reconcile {
            fence: fence(),
            attempt: nth(2),
            evidence: ProviderAnswer::Succeeded(charge.clone()),
        }
    );
    // The charge found is the answer, byte for byte.
    assert_eq!(got[10], Step::Done(Execution::Succeeded(charge)));
}

#[test]
fn a_replay_the_journal_refuses_to_record_is_looked_up_or_left_to_the_holder() {
    // Past the cutoff (the permit was given just before it): the status, then a lookup.
    let past = steps(vec![
        acquired(),
        permit(1, true),
        Event::Sent(ProviderAnswer::ReplayedUnknown),
        Event::Recorded(Err(JournalError::SendCutoffPassed)),
    ]);
    assert_eq!(past[3], Step::Status);
    // The lease lost meanwhile: in progress, nothing more (a replay is no evidence to
    // take a second lease for).
    for lost in [JournalError::LeaseExpired, JournalError::StaleFence] {
        let got = steps(vec![
            acquired(),
            permit(1, true),
            Event::Sent(ProviderAnswer::ReplayedUnknown),
            Event::Recorded(Err(lost)),
        ]);
        assert_eq!(got[3], Step::Done(Execution::InProgress), "{lost:?}");
    }
}

/// A reading `at` seconds on the trusted clock, `steady_s` seconds into the call on its
/// steady time.
fn clocks(at_s: f64, steady_s: f64) -> Now {
    let micros = |s: f64| (s * 1e6).round() as i64;
    let steady = Duration::from_micros(micros(steady_s).unsigned_abs());
    Now {
        at: Timestamp::from_micros(at(0).micros() + micros(at_s)).unwrap(),
        steady,
        elapsed: steady,
    }
}

#[test]
fn a_wall_clock_step_never_lengthens_a_deadline_derived_from_the_lease() {
    // The lease (expiring at 60 s) is heard at `heard`, the permit at `permit`: the
    // provider's deadline, or too little left.
    let cases: [(&str, Now, Now, Result<f64, u64>); 7] = [
        ("steady", clocks(0.0, 0.0), clocks(29.5, 29.5), Ok(20.5)),
        (
            "back 120 s after the permit",
            clocks(0.0, 0.0),
            clocks(-119.5, 0.5),
            Ok(49.5),
        ),
        (
            "back 120 s before the lease was heard",
            clocks(-120.0, 0.0),
            clocks(-119.0, 1.0),
            Ok(49.0),
        ),
        (
            "back 100 s, 45 s into the call",
            clocks(0.0, 0.0),
            clocks(-100.0, 45.0),
            Ok(5.0),
        ),
        (
            "back 100 s, too little left: retry once it ran out on the stepped clock too",
            clocks(0.0, 0.0),
            clocks(-100.0, 49.5),
            Err(160),
        ),
        (
            "forward 30 s: the trusted clock binds",
            clocks(0.0, 0.0),
            clocks(30.5, 0.5),
            Ok(19.5),
        ),
        (
            "steady, too little left",
            clocks(0.0, 0.0),
            clocks(50.0, 50.0),
            Err(10),
        ),
    ];
    for (case, heard, permit_at, expected) in cases {
        let (mut protocol, _) = Protocol::new();
        assert_eq!(
            protocol.step(acquired(), heard),
            Ok(Step::BeginSend { fence: fence() }),
            "{case}"
        );
        let step = protocol.step(permit(1, false), permit_at);
        let expected = match expected {
            Ok(seconds) => Step::Send {
                attempt: nth(1),
                resend: false,
                key: "key-1".to_owned(),
                deadline: Duration::from_secs_f64(seconds),
            },
            Err(after) => Step::Done(Execution::RetryLater {
                after: Duration::from_secs(after),
            }),
        };
        assert_eq!(step, Ok(expected), "{case}");
    }
}

#[test]
fn a_wall_clock_stepped_back_lengthens_no_lookup_and_no_retry_after_comes_early() {
    // The cutoff passed: the lookup's deadline, at 2 s into the call on a clock
    // stepped back 100 s, is what is left of the lease on the monotonic clock.
    let (mut protocol, _) = Protocol::new();
    protocol.step(acquired(), clocks(0.0, 0.0)).unwrap();
    let cutoff = Event::BeganSend(Err(JournalError::SendCutoffPassed));
    assert_eq!(protocol.step(cutoff, clocks(0.5, 0.5)), Ok(Step::Status));
    let looked_up = protocol.step(
        status(1, AttemptState::Ambiguous, true),
        clocks(-100.0, 2.0),
    );
    assert!(
        matches!(looked_up, Ok(Step::Lookup { deadline, .. }) if deadline == Duration::from_secs(48)),
        "{looked_up:?}"
    );
    // An ambiguous answer recorded 20 s into the call, the clock stepped back 100 s:
    // retry once the lease has run out on the stepped clock too, 160 s on (40 s in
    // real time): a caller sooner would find it held wherever clocks agree with it.
    let answers = [
        (acquired(), clocks(0.0, 0.0)),
        (permit(1, false), clocks(0.0, 0.0)),
        (Event::Sent(ProviderAnswer::Unknown), clocks(-100.0, 19.0)),
        (
            Event::Recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
            clocks(-100.0, 20.0),
        ),
    ];
    let (mut protocol, _) = Protocol::new();
    let last = answers
        .into_iter()
        .map(|(event, now)| protocol.step(event, now))
        .last();
    assert_eq!(
        last,
        Some(Ok(Step::Done(Execution::RetryLater {
            after: Duration::from_secs(160)
        })))
    );
}

#[test]
fn a_retry_after_promises_no_takeover_before_the_lease_expires_on_either_reading() {
    // An ambiguous answer recorded 20 s after the lease was heard (expiring at 60 s):
    // whichever of the trusted clock's readings the next caller's clock agrees with,
    // its lease has not run out before the `Retry-After` passed. Stepped forward 30 s,
    // the lease has 40 s left in real time (10 s on the stepped clock); stepped back
    // 100 s, 140 s on the stepped clock (40 s in real time): the greater each time.
    for (case, recorded_at, after) in [
        ("steady", clocks(20.0, 20.0), 40),
        ("forward 30 s", clocks(50.0, 20.0), 40),
        ("back 100 s", clocks(-80.0, 20.0), 140),
    ] {
        let answers = [
            (acquired(), clocks(0.0, 0.0)),
            (permit(1, false), clocks(0.0, 0.0)),
            (Event::Sent(ProviderAnswer::Unknown), recorded_at),
            (
                Event::Recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
                recorded_at,
            ),
        ];
        let (mut protocol, _) = Protocol::new();
        let last = answers
            .into_iter()
            .map(|(event, now)| protocol.step(event, now))
            .last();
        assert_eq!(
            last,
            Some(Ok(Step::Done(Execution::RetryLater {
                after: Duration::from_secs(after)
            }))),
            "{case}"
        );
    }
    // Too little lease left for a send, 49.5 s in, the clock stepped forward 5 s: the
    // lease lasts 10.5 s in real time, not the 5.5 s the stepped clock shows.
    let (mut protocol, _) = Protocol::new();
    protocol.step(acquired(), clocks(0.0, 0.0)).unwrap();
    assert_eq!(
        protocol.step(permit(1, false), clocks(54.5, 49.5)),
        Ok(Step::Done(Execution::RetryLater {
            after: Duration::from_secs(11)
        }))
    );
}
