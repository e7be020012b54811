//! The customer in the loop, as the call sees it: a send answered "the customer must
//! act" is recorded as `awaiting_customer` and its action handed to the caller (never
//! stored); a later call never re-sends the waiting attempt but reads its object by
//! id, and its charge, refusal or closing settles the command.

use super::*;

#[test]
fn a_must_act_is_recorded_and_its_action_handed_to_the_caller() {
    assert_eq!(
        steps(vec![
            acquired(),
            permit(1, false),
            Answered::Sent(ProviderAnswer::CustomerMustAct(action())),
            recorded(Ok(SendOutcomeOutput::AwaitingCustomer { attempt: nth(1) })),
        ])[2..],
        [
            Asked::Record {
                fence: fence(),
                attempt: nth(1),
                outcome: ProviderAnswer::CustomerMustAct(action()),
            },
            Asked::Left(fence(), Execution::CustomerMustAct(action())),
        ]
    );
}

#[test]
fn the_send_asks_the_customer_to_act_by_the_attempts_stored_cutoff() {
    let mut program = program();
    let now = Now::unstepped(at(0));
    assert!(program.next(Answered::Nothing, now).is_ok());
    assert!(program.next(acquired(), now).is_ok());
    match program.next(permit(1, false), now) {
        Ok(Next::Send(request)) => assert_eq!(request.act_by, at(86_400)),
        other => panic!("expected a send, got {other:?}"),
    }
}

/// The status of attempt 1 waiting for its customer, its stored cutoff `cutoff`: as a
/// waiting attempt's status says, no absence of it is provable.
fn waiting(cutoff: Timestamp) -> Heard {
    status_of(Some(SendStatus {
        absence_provable_from: None,
        send_cutoff_at: cutoff,
        act_by: cutoff,
        ..send_status(1, AttemptState::AwaitingCustomer, true)
    }))
}

/// The read by id of attempt 1's object, at time 0, its stored cutoff `cutoff`.
fn retrieve(cutoff: Timestamp, replayable: bool, cancel: bool) -> Asked {
    Asked::Retrieve {
        key: "stored-key-1".to_owned(),
        replayable,
        cancel,
        act_by: cutoff,
        deadline: Duration::from_secs(50),
    }
}

/// The customer's return: the waiting attempt is never re-sent nor looked up; its
/// object is read by id (the key replayable before the stored cutoff, the object
/// cancelled once the customer's window, which ends there, has passed), and the
/// answer settles it: a charge (the customer paid), a refusal (the challenge failed),
/// a closed object (abandoned: the command fails with nothing charged).
#[test]
fn a_later_call_reads_a_waiting_attempt_by_id_and_never_re_sends_it() {
    let paid = envelope("pi_paid");
    let before = at(86_400);
    let after = at(-1);
    for (cutoff, found, recorded_as, answer) in [
        (
            before,
            ProviderAnswer::Succeeded(paid.clone()),
            TerminalOutput::Succeeded,
            Execution::Succeeded(paid.clone()),
        ),
        (
            before,
            ProviderAnswer::Declined,
            TerminalOutput::FailedFinal,
            Execution::Declined,
        ),
        (
            after,
            ProviderAnswer::Closed,
            TerminalOutput::FailedFinal,
            Execution::Declined,
        ),
    ] {
        let asked = steps(vec![
            acquired(),
            cutoff_passed(),
            waiting(cutoff),
            Answered::Retrieved(found.clone()),
            recorded(Ok(SendOutcomeOutput::Terminal(recorded_as))),
        ]);
        assert_eq!(
            asked[2..],
            [
                retrieve(cutoff, cutoff == before, cutoff == after),
                Asked::Reconcile {
                    fence: fence(),
                    attempt: nth(1),
                    evidence: found,
                },
                Asked::Done(answer),
            ]
        );
    }
}

/// The customer may still act: the action read by id is handed over, nothing
/// written; an answer that tells nothing writes nothing either.
#[test]
fn a_read_that_says_the_customer_may_still_act_hands_the_action_over() {
    let cutoff = at(86_400);
    let asked = steps(vec![
        acquired(),
        cutoff_passed(),
        waiting(cutoff),
        Answered::Retrieved(ProviderAnswer::CustomerMustAct(action())),
    ]);
    assert_eq!(
        asked[2..],
        [
            retrieve(cutoff, true, false),
            Asked::Left(fence(), Execution::CustomerMustAct(action())),
        ]
    );
    for heard in [ProviderAnswer::Unknown, ProviderAnswer::NotFound] {
        let asked = steps(vec![
            acquired(),
            cutoff_passed(),
            waiting(cutoff),
            Answered::Retrieved(heard.clone()),
        ]);
        assert_eq!(
            asked[3],
            Asked::Left(fence(), Execution::PendingReconciliation),
            "{heard:?}"
        );
    }
}

/// A re-send's "the customer must act" is the provider's replay of the key's first
/// answer: recorded, then the object is read by id at once under the same lease.
#[test]
fn a_replayed_must_act_is_read_by_id_at_once() {
    let cutoff = at(86_400);
    let paid = envelope("pi_paid_meanwhile");
    let asked = steps(vec![
        acquired(),
        permit(1, true),
        Answered::Sent(ProviderAnswer::CustomerMustAct(action())),
        recorded(Ok(SendOutcomeOutput::AwaitingCustomer { attempt: nth(1) })),
        waiting(cutoff),
        Answered::Retrieved(ProviderAnswer::Succeeded(paid.clone())),
        recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
    ]);
    assert_eq!(
        asked[3..],
        [
            Asked::Status,
            retrieve(cutoff, true, false),
            Asked::Reconcile {
                fence: fence(),
                attempt: nth(1),
                evidence: ProviderAnswer::Succeeded(paid.clone()),
            },
            Asked::Done(Execution::Succeeded(paid)),
        ]
    );
}

/// A lookup's answers about a waiting attempt (as the one before this design
/// asked, or a job's) prove nothing of it: "the customer must act" and "closed" from
/// a lookup write nothing.
#[test]
fn a_lookups_must_act_or_closed_proves_nothing() {
    for heard in [
        ProviderAnswer::CustomerMustAct(action()),
        ProviderAnswer::Closed,
    ] {
        let asked = steps(vec![
            acquired(),
            cutoff_passed(),
            status(1, AttemptState::Ambiguous, true),
            Answered::LookedUp(heard.clone()),
        ]);
        assert_eq!(
            asked[3],
            Asked::Left(fence(), Execution::PendingReconciliation),
            "{heard:?}"
        );
    }
}

/// The action never shows in what the call prints of itself.
#[test]
fn the_action_never_shows_in_debug() {
    let shown = format!(
        "{:?} {:?}",
        Execution::CustomerMustAct(action()),
        ProviderAnswer::CustomerMustAct(action())
    );
    assert!(!shown.contains("CANARY"), "{shown}");
}

/// A plan's customer window ends before the stored cutoff: the send carries the
/// permit's `act_by` (the window's end), not the cutoff.
#[test]
fn the_send_asks_the_customer_to_act_by_the_permits_act_by() {
    let mut program = program();
    let now = Now::unstepped(at(0));
    assert!(program.next(Answered::Nothing, now).is_ok());
    assert!(program.next(acquired(), now).is_ok());
    let windowed = began(Ok(BeginSendOutput::Permitted(SendPermit {
        attempt: nth(1),
        resend: false,
        provider_idempotency_key: "key-1".to_owned(),
        send_cutoff_at: at(86_400),
        act_by: at(3_600),
        lease_expires_at: at(60),
    })));
    match program.next(windowed, now) {
        Ok(Next::Send(request)) => assert_eq!(request.act_by, at(3_600)),
        other => panic!("expected a send, got {other:?}"),
    }
}

/// The customer's return after the window ended but before the cutoff: the key may
/// still be replayed, and the object is cancelled (the window is the status's
/// `act_by`, not the cutoff); a microsecond before its end, it is not.
#[test]
fn a_return_past_the_window_but_before_the_cutoff_cancels() {
    let cutoff = at(86_400);
    for (act_by, cancel) in [(at(0), true), (at(1), false)] {
        let status = status_of(Some(SendStatus {
            absence_provable_from: None,
            send_cutoff_at: cutoff,
            act_by,
            ..send_status(1, AttemptState::AwaitingCustomer, true)
        }));
        let asked = steps(vec![acquired(), cutoff_passed(), status]);
        assert_eq!(
            asked[2],
            Asked::Retrieve {
                key: "stored-key-1".to_owned(),
                replayable: true,
                cancel,
                act_by,
                deadline: Duration::from_secs(50),
            },
            "act_by {act_by:?}"
        );
    }
}
