//! What the call does with evidence its command can no longer take, and with an
//! attempt the provider may still complete: a success it holds for a command that
//! ended, or whose attempt moved on, without it is recorded as a late charge (the
//! settle program's step), and an answer the provider documents as indeterminate is
//! looked up at once, its lookup's unknown answers proving nothing.

use super::*;
use crate::sends::{LateChargeOutput, LateReason};

fn charged_late(result: Result<LateChargeOutput, JournalError>) -> Heard {
    Answered::Ran(result.map(|output| ExecuteOutput::Settle(SettleOutput::LateCharge(output))))
}

fn recorded_late() -> Heard {
    charged_late(Ok(LateChargeOutput::Recorded {
        attempt: nth(1),
        reason: LateReason::AttemptAbsent,
        new: true,
    }))
}

/// The late charge of `charge` under attempt 1's key.
fn late(charge: &ResultEnvelope) -> Asked {
    Asked::LateCharge {
        attempt: nth(1),
        commitment: input().identity().terminal_commitment(&charge.reference()),
    }
}

/// A success this call holds (sent, or found by its lookup) for a command that ended,
/// or whose attempt moved on, without it is recorded as a late charge, then the call
/// answers what the journal holds; a decline held is no charge and nothing is late.
#[test]
fn a_success_the_command_ended_without_is_recorded_as_a_late_charge() {
    let charge = envelope("ch_1");
    let success = ProviderAnswer::Succeeded(charge.clone());
    // Held through a lost lease; the command ended by the time a lease was asked again.
    let held = || {
        vec![
            acquired(),
            permit(1, false),
            Answered::Sent(success.clone()),
            recorded(Err(JournalError::LeaseExpired)),
            recorded(Err(JournalError::LeaseExpired)),
        ]
    };
    for (ended, then) in [
        (LeaseOutput::Succeeded, Asked::FetchResult),
        (
            LeaseOutput::FailedFinal,
            Asked::Replayed(Execution::Declined),
        ),
    ] {
        let mut answers = held();
        answers.push(restarted(ended));
        answers.push(recorded_late());
        let got = steps(answers);
        assert_eq!(got[4], Asked::StartAgain, "{ended:?}");
        assert_eq!(got[5..], [late(&charge), then], "{ended:?}");
    }
    // The command's own charge after all: its stored answer.
    let mut answers = held();
    answers.push(restarted(LeaseOutput::Succeeded));
    answers.push(charged_late(Ok(LateChargeOutput::OwnCharge)));
    assert_eq!(steps(answers)[6], Asked::FetchResult);
    // Recording it failed: the call ends with that error.
    let mut answers: Vec<(Heard, Timestamp)> = held().into_iter().map(|a| (a, at(0))).collect();
    answers.push((restarted(LeaseOutput::FailedFinal), at(0)));
    answers.push((charged_late(Err(JournalError::corrupt("late"))), at(0)));
    assert_eq!(run(answers)[6], Err(JournalError::corrupt("late")));
    // Refused by the reconciliation: the command ended (terminal_conflict) or its
    // attempt moved on (attempt_mismatch) without the charge the lookup found.
    for refusal in [
        JournalError::TerminalConflict,
        JournalError::AttemptMismatch,
    ] {
        let got = steps(vec![
            acquired(),
            cutoff_passed(),
            status(1, AttemptState::Ambiguous, true),
            Answered::LookedUp(success.clone()),
            recorded(Err(refusal)),
            recorded_late(),
        ]);
        assert_eq!(
            got[4..],
            [late(&charge), Asked::Done(Execution::InProgress)],
            "{refusal:?}"
        );
    }
    // A decline held is no charge: the refusal stands, and a terminal start answers
    // as before.
    let got = run(vec![
        (acquired(), at(0)),
        (cutoff_passed(), at(0)),
        (status(1, AttemptState::Ambiguous, true), at(0)),
        (Answered::LookedUp(ProviderAnswer::Declined), at(0)),
        (recorded(Err(JournalError::TerminalConflict)), at(0)),
    ]);
    assert_eq!(got[4], Err(JournalError::TerminalConflict));
    let got = steps(vec![
        acquired(),
        permit(1, false),
        Answered::Sent(ProviderAnswer::Declined),
        recorded(Err(JournalError::LeaseExpired)),
        recorded(Err(JournalError::LeaseExpired)),
        restarted(LeaseOutput::Succeeded),
    ]);
    assert_eq!(got[5], Asked::FetchResult);
    // A replay (nothing held): a terminal start answers at once, nothing late.
    assert_eq!(
        steps(vec![started_with(LeaseOutput::FailedFinal)]),
        [Asked::Replayed(Execution::Declined)]
    );
}

/// A fresh answer the provider documents as indeterminate (Stripe's 500) is recorded,
/// then looked up at once under the same lease (no retry after the lease, no re-send):
/// a charge found settles it; an unknown answer from the lookup, of any kind, and a
/// "not found" (never provable for such an attempt) write nothing.
#[test]
fn an_indeterminate_answer_is_recorded_then_looked_up_at_once() {
    let found = envelope("pi_1");
    let indeterminate = |after: Vec<Heard>| {
        let mut send = send_status(1, AttemptState::Indeterminate, true);
        send.send_cutoff_at = at(86_400);
        send.absence_provable_from = None;
        let mut answers = vec![
            acquired(),
            permit(1, false),
            Answered::Sent(ProviderAnswer::Indeterminate),
            recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
            status_of(Some(send)),
        ];
        answers.extend(after);
        steps(answers)
    };
    let got = indeterminate(vec![
        Answered::LookedUp(ProviderAnswer::Succeeded(found.clone())),
        recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))),
    ]);
    assert_eq!(
        got[2],
        Asked::Record {
            fence: fence(),
            attempt: nth(1),
            outcome: ProviderAnswer::Indeterminate,
        }
    );
    assert_eq!(got[3], Asked::Status, "looked up at once");
    assert_eq!(
        got[4],
        Asked::Lookup {
            key: "stored-key-1".to_owned(),
            deadline: Duration::from_secs(50),
        }
    );
    assert_eq!(
        got[5],
        Asked::Reconcile {
            fence: fence(),
            attempt: nth(1),
            evidence: ProviderAnswer::Succeeded(found.clone()),
        }
    );
    assert_eq!(got[6], Asked::Done(Execution::Succeeded(found)));
    for nothing in [
        ProviderAnswer::Indeterminate,
        ProviderAnswer::ReplayedUnknown,
        ProviderAnswer::Unknown,
        ProviderAnswer::NotFound,
    ] {
        let got = indeterminate(vec![Answered::LookedUp(nothing.clone())]);
        assert_eq!(
            got[5],
            Asked::Left(fence(), Execution::PendingReconciliation),
            "{nothing:?}"
        );
    }
    // An ordinary unknown answer is retried later (a re-send, once the lease it was
    // sent under would have ended), its lease released meanwhile.
    let got = steps(vec![
        acquired(),
        permit(1, false),
        Answered::Sent(ProviderAnswer::Unknown),
        recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
    ]);
    assert!(
        matches!(got[3], Asked::Left(_, Execution::RetryLater { .. })),
        "{got:?}"
    );
}
