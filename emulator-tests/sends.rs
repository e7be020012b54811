//! The provider send layer against the emulator, in this binary's concurrency mode:
//! races with exact counts of documents and events, the cutoff boundary to the
//! microsecond, and a canary scan of documents, outputs and errors.

use super::send_randomized::assert_verified;
use super::support::{self, command, get, list, race};
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::ProviderAnswer;
use command_journal::sends::{AttemptNumber, BeginSendOutput, SendOutcomeOutput};
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, Connection, Journal, JournalError, LeaseId, LeaseOutput, ProviderPlan,
    ProviderPlanRequest, TerminalOutput, TerminalReferenceFingerprint,
};
use gcloud_sdk::google::firestore::v1::Document;
use serde_json::json;
use std::sync::Arc;

const ROUNDS: u64 = 2;
const ACCOUNT: &str = "acct_CANARYaccount_e2e";
const PARAMETER: &str = "CANARYparameter_e2e";
/// 24 h of key retention: an 18 h cutoff.
const RETENTION: i64 = 86_400;
const CUTOFF: TimeDelta = TimeDelta::seconds(64_800);

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(6, n)).expect("lease id")
}

fn reference(n: u8) -> TerminalReferenceFingerprint {
    TerminalReferenceFingerprint::parse(&format!("{n:02x}").repeat(32)).expect("reference")
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stripe",
        account: ACCOUNT,
        mode: "test",
        api_version: "2024-06-20",
        operation: "charge",
        endpoint: "POST /v1/payment_intents",
        parameters: &json!({"amount": 1250, "note": PARAMETER}),
        key_retention_seconds: RETENTION,
    })
    .expect("valid plan")
}

fn start() -> DateTime<Utc> {
    DateTime::from_timestamp(1_910_000_000, 123_456_000).expect("time")
}

/// A journal on `connection` whose clock reads `at`.
fn at(connection: &Connection, at: DateTime<Utc>) -> Journal {
    support::clocked_journal(connection.clone(), Arc::new(ManualClock::new(at)))
}

fn hash(cmd: &CommandInput) -> String {
    cmd.identity().command_key_hash().to_string()
}

/// The command's send documents (plan, current), its B2B audit events and its send
/// events, counted.
async fn counts(connection: &Connection, cmd: &CommandInput) -> (usize, usize, usize) {
    let h = hash(cmd);
    let sends = list(
        connection,
        &format!("checkoutRequests/{h}"),
        "providerSends",
    )
    .await
    .len();
    let events: Vec<Document> = list(connection, "", "auditEvents").await;
    let id = |d: &Document| d.name.rsplit('/').next().unwrap_or_default().to_owned();
    let b2b = events
        .iter()
        .filter(|d| id(d).starts_with(&format!("commerce_command_{h}_")))
        .count();
    let send = events
        .iter()
        .filter(|d| id(d).starts_with(&format!("provider_send_{h}_")))
        .count();
    (sends, b2b, send)
}

fn permit(answer: &Result<BeginSendOutput, JournalError>) -> (AttemptNumber, bool, String) {
    match answer {
        Ok(BeginSendOutput::Permitted(p)) => {
            (p.attempt, p.resend, p.provider_idempotency_key.clone())
        }
        other => panic!("expected a permit, got {other:?}"),
    }
}

/// Registers `cmd`, leases it to holder 0 at `start()`, opens attempt 1 and records
/// it ambiguous; returns the journal at `start()`.
async fn ambiguous_attempt(connection: &Connection, cmd: &CommandInput) -> Journal {
    let journal = at(connection, start());
    journal.register_command(cmd).await.expect("register");
    let acquired = journal
        .acquire_lease(cmd, &lease(0))
        .await
        .expect("acquire");
    assert!(matches!(acquired, LeaseOutput::Acquired { fence_epoch: f, .. } if f.get() == 1));
    let first = journal
        .begin_send(cmd, &lease(0), crate::support::fence_at(1), &plan())
        .await;
    assert_eq!(permit(&first), (AttemptNumber::FIRST, false, key_of(cmd)));
    let ambiguous = journal
        .record_send_outcome(
            cmd,
            &lease(0),
            crate::support::fence_at(1),
            &plan(),
            AttemptNumber::FIRST,
            &ProviderAnswer::Unknown,
        )
        .await;
    assert_eq!(
        ambiguous,
        Ok(SendOutcomeOutput::Ambiguous {
            attempt: AttemptNumber::FIRST
        })
    );
    journal
}

fn key_of(cmd: &CommandInput) -> String {
    cmd.identity().provider_idempotency_key(
        &command_journal::identity::OperationSlug::parse("charge").expect("op"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_four_begins_by_the_holder_after_a_takeover_record_one_resend() {
    let connection = support::fresh_connection().await;
    for round in 0..ROUNDS {
        let cmd = command(6100 + round, json!({"round": round}));
        ambiguous_attempt(&connection, &cmd).await;
        let later = at(&connection, start() + TimeDelta::seconds(61));
        let taken = later
            .acquire_lease(&cmd, &lease(1))
            .await
            .expect("takeover");
        assert!(matches!(taken, LeaseOutput::Acquired { fence_epoch: f, .. } if f.get() == 2));
        let results = race(24, |_| {
            let (journal, cmd) = (later.clone(), cmd.clone());
            async move {
                journal
                    .begin_send(&cmd, &lease(1), crate::support::fence_at(2), &plan())
                    .await
            }
        })
        .await;
        let first = permit(&results[0]);
        assert_eq!(
            first,
            (AttemptNumber::FIRST, true, key_of(&cmd)),
            "round {round}"
        );
        assert!(results.iter().all(|r| r == &results[0]), "{results:?}");
        // plan + current; registration, lease, takeover; opened, ambiguous, resent.
        assert_eq!(counts(&connection, &cmd).await, (2, 3, 3), "round {round}");
        assert_verified(&connection).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_four_workers_race_a_takeover_then_one_resends_the_ambiguous_attempt() {
    let connection = support::fresh_connection().await;
    for round in 0..ROUNDS {
        let cmd = command(6200 + round, json!({"round": round}));
        ambiguous_attempt(&connection, &cmd).await;
        let later = at(&connection, start() + TimeDelta::seconds(61));
        let results = race(24, |i| {
            let (journal, cmd) = (later.clone(), cmd.clone());
            async move {
                match journal.acquire_lease(&cmd, &lease(100 + i)).await? {
                    LeaseOutput::Acquired { fence_epoch, .. } => journal
                        .begin_send(&cmd, &lease(100 + i), fence_epoch, &plan())
                        .await
                        .map(Some),
                    LeaseOutput::Busy => Ok(None),
                    other => panic!("unexpected {other:?}"),
                }
            }
        })
        .await;
        let resent: Vec<_> = results
            .iter()
            .filter(|r| matches!(r, Ok(Some(_))))
            .collect();
        let busy = results.iter().filter(|r| matches!(r, Ok(None))).count();
        assert_eq!((resent.len(), busy), (1, 23), "round {round}: {results:?}");
        let Ok(Some(answer)) = resent[0] else {
            unreachable!()
        };
        assert_eq!(
            permit(&Ok(answer.clone())),
            (AttemptNumber::FIRST, true, key_of(&cmd))
        );
        assert_eq!(counts(&connection, &cmd).await, (2, 3, 3), "round {round}");
        assert_verified(&connection).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn succeeded_versus_ambiguous_versus_a_takeover_commit_consistently() {
    let connection = support::fresh_connection().await;
    for round in 0..4 {
        let cmd = command(6300 + round, json!({"round": round}));
        let journal = at(&connection, start());
        journal.register_command(&cmd).await.expect("register");
        journal
            .acquire_lease(&cmd, &lease(0))
            .await
            .expect("acquire");
        permit(
            &journal
                .begin_send(&cmd, &lease(0), crate::support::fence_at(1), &plan())
                .await,
        );
        // The holder's outcomes at 59 s (lease active), a takeover at 61 s.
        let holder = at(&connection, start() + TimeDelta::seconds(59));
        let taker = at(&connection, start() + TimeDelta::seconds(61));
        let succeeded = {
            let (j, c) = (holder.clone(), cmd.clone());
            tokio::spawn(async move {
                j.record_send_outcome(
                    &c,
                    &lease(0),
                    crate::support::fence_at(1),
                    &plan(),
                    AttemptNumber::FIRST,
                    &ProviderAnswer::SucceededWithReference(reference(1)),
                )
                .await
            })
        };
        let ambiguous = {
            let (j, c) = (holder.clone(), cmd.clone());
            tokio::spawn(async move {
                j.record_send_outcome(
                    &c,
                    &lease(0),
                    crate::support::fence_at(1),
                    &plan(),
                    AttemptNumber::FIRST,
                    &ProviderAnswer::Unknown,
                )
                .await
            })
        };
        let takeover = {
            let (j, c) = (taker.clone(), cmd.clone());
            tokio::spawn(async move { j.acquire_lease(&c, &lease(9)).await })
        };
        let succeeded = succeeded.await.expect("task");
        let ambiguous = ambiguous.await.expect("task");
        let takeover = takeover.await.expect("task");
        let ambiguous_wrote = ambiguous
            == Ok(SendOutcomeOutput::Ambiguous {
                attempt: AttemptNumber::FIRST,
            });
        let (sends, b2b, events) = counts(&connection, &cmd).await;
        assert_eq!(
            (sends, b2b),
            (2, 3),
            "round {round}: one terminal or one takeover"
        );
        match succeeded {
            Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded)) => {
                assert_eq!(takeover, Ok(LeaseOutput::Succeeded), "round {round}");
                assert_eq!(events, 2 + usize::from(ambiguous_wrote), "round {round}");
                if !ambiguous_wrote {
                    assert_eq!(ambiguous, Err(JournalError::TerminalConflict));
                }
            }
            Err(JournalError::LeaseNotHeld) => {
                assert!(
                    matches!(takeover, Ok(LeaseOutput::Acquired { fence_epoch: f, .. }) if f.get() == 2),
                    "round {round}: {takeover:?}"
                );
                assert_eq!(events, 1 + usize::from(ambiguous_wrote), "round {round}");
            }
            other => panic!("round {round}: {other:?}"),
        }
        assert_verified(&connection).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reconciliation_races_a_late_outcome_and_contradicting_evidence() {
    let connection = support::fresh_connection().await;
    for round in 0..ROUNDS {
        let cmd = command(6400 + round, json!({"round": round}));
        ambiguous_attempt(&connection, &cmd).await;
        // Past the cutoff, a reconciler takes over; the first holder answers late.
        let late = start() + CUTOFF + TimeDelta::seconds(5);
        let reconciler = at(&connection, late);
        let taken = reconciler
            .acquire_lease(&cmd, &lease(50))
            .await
            .expect("acquire");
        assert!(matches!(taken, LeaseOutput::Acquired { fence_epoch: f, .. } if f.get() == 2));
        assert_eq!(
            reconciler
                .begin_send(&cmd, &lease(50), crate::support::fence_at(2), &plan())
                .await,
            Err(JournalError::SendCutoffPassed)
        );
        let absent = {
            let (j, c) = (reconciler.clone(), cmd.clone());
            tokio::spawn(async move {
                j.reconcile_send(
                    &c,
                    &lease(50),
                    crate::support::fence_at(2),
                    &plan(),
                    AttemptNumber::FIRST,
                    &ProviderAnswer::NotFound,
                )
                .await
            })
        };
        let found = {
            let (j, c) = (reconciler.clone(), cmd.clone());
            tokio::spawn(async move {
                j.reconcile_send(
                    &c,
                    &lease(50),
                    crate::support::fence_at(2),
                    &plan(),
                    AttemptNumber::FIRST,
                    &ProviderAnswer::SucceededWithReference(reference(2)),
                )
                .await
            })
        };
        let outcome = {
            let (j, c) = (reconciler.clone(), cmd.clone());
            tokio::spawn(async move {
                j.record_send_outcome(
                    &c,
                    &lease(0),
                    crate::support::fence_at(1),
                    &plan(),
                    AttemptNumber::FIRST,
                    &ProviderAnswer::SucceededWithReference(reference(2)),
                )
                .await
            })
        };
        let (absent, found, outcome) = (
            absent.await.expect("task"),
            found.await.expect("task"),
            outcome.await.expect("task"),
        );
        assert_eq!(outcome, Err(JournalError::LeaseNotHeld), "round {round}");
        let (sends, b2b, events) = counts(&connection, &cmd).await;
        assert_eq!(sends, 2);
        match (&absent, &found) {
            (
                Ok(SendOutcomeOutput::Absent {
                    attempt: AttemptNumber::FIRST,
                }),
                Err(JournalError::AttemptMismatch),
            ) => {
                assert_eq!((b2b, events), (3, 3), "round {round}");
                // Only now a new attempt, with a new key.
                let next = reconciler
                    .begin_send(&cmd, &lease(50), crate::support::fence_at(2), &plan())
                    .await;
                let (attempt, resend, key) = permit(&next);
                assert_eq!((attempt, resend), (support::attempt_at(2), false));
                assert_ne!(key, key_of(&cmd));
                assert_eq!(counts(&connection, &cmd).await, (2, 3, 4));
            }
            (
                Err(JournalError::TerminalConflict),
                Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded)),
            ) => assert_eq!((b2b, events), (4, 3), "round {round}"),
            other => panic!("round {round}: {other:?}"),
        }
        assert_verified(&connection).await;
    }
}

#[tokio::test]
async fn the_cutoff_is_exact_to_the_microsecond() {
    let connection = support::fresh_connection().await;
    let cmd = command(6500, json!({"cutoff": true}));
    let journal = at(&connection, start());
    journal.register_command(&cmd).await.expect("register");
    journal
        .acquire_lease(&cmd, &lease(0))
        .await
        .expect("acquire");
    let Ok(BeginSendOutput::Permitted(first)) = journal
        .begin_send(&cmd, &lease(0), crate::support::fence_at(1), &plan())
        .await
    else {
        panic!("a permit");
    };
    let cutoff = start() + CUTOFF;
    assert_eq!(first.send_cutoff_at.to_datetime(), cutoff);
    let taker = at(&connection, cutoff - TimeDelta::seconds(30));
    taker
        .acquire_lease(&cmd, &lease(1))
        .await
        .expect("takeover");
    let before = at(&connection, cutoff - TimeDelta::microseconds(1));
    let resent = before
        .begin_send(&cmd, &lease(1), crate::support::fence_at(2), &plan())
        .await;
    assert_eq!(permit(&resent), (AttemptNumber::FIRST, true, key_of(&cmd)));
    let on = at(&connection, cutoff);
    for (holder, fence) in [(1, 2), (0, 1), (7, 3)] {
        assert_eq!(
            on.begin_send(
                &cmd,
                &lease(holder),
                crate::support::fence_at(fence),
                &plan()
            )
            .await,
            Err(JournalError::SendCutoffPassed),
            "holder {holder}"
        );
    }
    let status = serde_json::to_value(on.send_status(&cmd).await.expect("status")).expect("json");
    assert_eq!(status["send"]["needsReconciliation"], json!(true));
    assert_eq!(status["send"]["state"], json!("sending"));
    let status =
        serde_json::to_value(before.send_status(&cmd).await.expect("status")).expect("json");
    assert_eq!(status["send"]["needsReconciliation"], json!(false));
    // plan + current; registration, lease, takeover; opened, resent.
    assert_eq!(counts(&connection, &cmd).await, (2, 3, 2));
    assert_verified(&connection).await;
}

#[tokio::test]
async fn complete_and_fail_are_refused_once_a_plan_is_bound() {
    let connection = support::fresh_connection().await;
    let cmd = command(6600, json!({"guard": true}));
    let journal = at(&connection, start());
    journal.register_command(&cmd).await.expect("register");
    journal
        .acquire_lease(&cmd, &lease(0))
        .await
        .expect("acquire");
    permit(
        &journal
            .begin_send(&cmd, &lease(0), crate::support::fence_at(1), &plan())
            .await,
    );
    let lifecycle = format!("checkoutRequests/{}/lifecycle/current", hash(&cmd));
    let before = get(&connection, &lifecycle).await.expect("lifecycle");
    assert_eq!(
        journal
            .complete_command(&cmd, &lease(0), crate::support::fence_at(1), &reference(1))
            .await,
        Err(JournalError::SendOutcomeRequired)
    );
    assert_eq!(
        journal
            .fail_command(&cmd, &lease(0), crate::support::fence_at(1))
            .await,
        Err(JournalError::SendOutcomeRequired)
    );
    assert_eq!(get(&connection, &lifecycle).await, Some(before));
    assert_eq!(
        journal
            .record_send_outcome(
                &cmd,
                &lease(0),
                crate::support::fence_at(1),
                &plan(),
                AttemptNumber::FIRST,
                &ProviderAnswer::Declined
            )
            .await,
        Ok(SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal))
    );
    assert_eq!(counts(&connection, &cmd).await, (2, 3, 2));
    assert_verified(&connection).await;
}

#[tokio::test]
async fn no_raw_value_reaches_documents_outputs_or_errors() {
    let connection = support::fresh_connection().await;
    let cmd = command(6700, json!({"sku": "CANARYsku_e2e"}));
    let journal = at(&connection, start());
    let mut seen = Vec::new();
    journal.register_command(&cmd).await.expect("register");
    journal
        .acquire_lease(&cmd, &lease(0))
        .await
        .expect("acquire");
    let answer = journal
        .begin_send(&cmd, &lease(0), crate::support::fence_at(1), &plan())
        .await;
    seen.push(format!(
        "{answer:?} {}",
        serde_json::to_string(&answer.clone().expect("ok")).expect("json")
    ));
    let answer = journal
        .record_send_outcome(
            &cmd,
            &lease(0),
            crate::support::fence_at(1),
            &plan(),
            AttemptNumber::FIRST,
            &ProviderAnswer::SucceededWithReference(reference(0xab)),
        )
        .await;
    seen.push(format!("{answer:?}"));
    let refused = journal
        .begin_send(&cmd, &lease(3), crate::support::fence_at(1), &plan())
        .await;
    seen.push(format!(
        "{refused:?} {}",
        refused
            .clone()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    ));
    seen.push(format!("{:?}", plan()));
    seen.push(
        serde_json::to_string(&journal.send_status(&cmd).await.expect("status")).expect("json"),
    );
    let h = hash(&cmd);
    for doc in list(
        &connection,
        &format!("checkoutRequests/{h}"),
        "providerSends",
    )
    .await
    {
        seen.push(format!("{doc:?}"));
    }
    for doc in list(&connection, "", "auditEvents").await {
        seen.push(format!("{doc:?}"));
    }
    let lease_text = support::uuid(6, 0);
    let raw_reference = "ab".repeat(32);
    for text in &seen {
        for canary in [
            "CANARY",
            ACCOUNT,
            PARAMETER,
            &lease_text,
            &raw_reference,
            "2024-06-20",
            "payment_intents",
        ] {
            assert!(!text.contains(canary), "a raw value leaked: {canary}");
        }
    }
}

/// The same holder racing twelve `complete_command`s (which skip the send layer)
/// against twelve first `begin_send`s: exactly one side wins. Either the command
/// succeeded with no plan bound (every send answers the terminal outcome), or the plan
/// is bound and every completion is `send_outcome_required`; never both, since a
/// completion that read no plan asserts its absence at commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn completions_racing_the_first_send_never_both_commit() {
    let connection = support::fresh_connection().await;
    let mut wins = (0, 0);
    for round in 0..6 {
        let cmd = command(6900 + round, json!({"round": round}));
        let journal = at(&connection, start());
        journal.register_command(&cmd).await.expect("register");
        journal
            .acquire_lease(&cmd, &lease(0))
            .await
            .expect("acquire");
        let answers = race(24, |i| {
            let (journal, cmd) = (journal.clone(), cmd.clone());
            async move {
                if i % 2 == 0 {
                    journal
                        .complete_command(
                            &cmd,
                            &lease(0),
                            crate::support::fence_at(1),
                            &reference(1),
                        )
                        .await
                        .map(|o| format!("{o:?}"))
                } else {
                    journal
                        .begin_send(&cmd, &lease(0), crate::support::fence_at(1), &plan())
                        .await
                        .map(|o| format!("{o:?}"))
                }
            }
        })
        .await;
        let (sends, b2b, send_events) = counts(&connection, &cmd).await;
        let completed = answers
            .iter()
            .step_by(2)
            .filter(|a| a.as_ref().is_ok_and(|o| o.contains("Succeeded")))
            .count();
        let refused = answers
            .iter()
            .step_by(2)
            .filter(|a| matches!(a, Err(JournalError::SendOutcomeRequired)))
            .count();
        if sends == 0 {
            // The completion won: succeeded once (and its retries), no plan, no event.
            assert_eq!((completed, b2b, send_events), (12, 3, 0), "round {round}");
            wins.0 += 1;
        } else {
            // The send won: one binding, every completion refused, the command leased.
            assert_eq!(
                (refused, sends, b2b, send_events),
                (12, 2, 2, 1),
                "round {round}: {answers:?}"
            );
            wins.1 += 1;
        }
    }
    println!(
        "completion won {} rounds, the first send {}",
        wins.0, wins.1
    );
    assert_verified(&connection).await;
}
