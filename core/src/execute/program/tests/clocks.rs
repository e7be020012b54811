//! The call's clocks: every duration derived from the lease (the provider's deadline,
//! the lookup's, a `Retry-After`) is the lesser of what is left on the trusted
//! clock's two readings, so that no wall-clock step lengthens it; and a recording cut
//! by the call's own deadline ends the call.

use super::*;

/// A reading `at_s` seconds on the trusted clock, `steady_s` seconds into the call on
/// its steady time.
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
        let got = run_on(
            heard,
            vec![(acquired(), heard), (permit(1, false), permit_at)],
        );
        assert_eq!(got[0], Ok(Asked::BeginSend { fence: fence() }), "{case}");
        let expected = match expected {
            Ok(seconds) => Asked::Send {
                attempt: nth(1),
                resend: false,
                key: "key-1".to_owned(),
                deadline: Duration::from_secs_f64(seconds),
            },
            Err(after) => Asked::Left(
                fence(),
                Execution::RetryLater {
                    after: Duration::from_secs(after),
                },
            ),
        };
        assert_eq!(got[1], Ok(expected), "{case}");
    }
}

#[test]
fn a_permit_decided_with_the_start_is_measured_from_the_start_s_reading() {
    // The start and its permit committed together, decided at 0 s: the clock stepped
    // back 120 s by the time the permit is heard, 0.5 s later, the provider still gets
    // only what is left of the lease since the start, less the margin.
    let opened = Answered::Chained(
        ExecuteOutput::Started(StartOutput {
            registration: RegistrationOutput::new(RegistrationOutcome::RegisteredExisting),
            lease: LeaseOutput::Acquired {
                fence_epoch: fence(),
                lease_expires_at: at(60),
            },
        }),
        ExecuteOutput::BeganSend(BeginSendOutput::Permitted(SendPermit {
            attempt: nth(1),
            resend: false,
            provider_idempotency_key: "key-1".to_owned(),
            send_cutoff_at: at(86_400),
            act_by: at(86_400),
            lease_expires_at: at(60),
        })),
    );
    let got = run_on(clocks(0.0, 0.0), vec![(opened, clocks(-119.5, 0.5))]);
    assert_eq!(
        got,
        vec![Ok(Asked::Send {
            attempt: nth(1),
            resend: false,
            key: "key-1".to_owned(),
            deadline: Duration::from_millis(49_500),
        })]
    );
}

#[test]
fn a_wall_clock_stepped_back_lengthens_no_lookup_and_no_retry_after_comes_early() {
    // The cutoff passed: the lookup's deadline, at 2 s into the call on a clock
    // stepped back 100 s, is what is left of the lease on the monotonic clock.
    let looked_up = run_on(
        clocks(0.0, 0.0),
        vec![
            (acquired(), clocks(0.0, 0.0)),
            (cutoff_passed(), clocks(0.5, 0.5)),
            (
                status(1, AttemptState::Ambiguous, true),
                clocks(-100.0, 2.0),
            ),
        ],
    );
    assert_eq!(
        looked_up[2],
        Ok(Asked::Lookup {
            key: "stored-key-1".to_owned(),
            deadline: Duration::from_secs(48),
        })
    );
    // An ambiguous answer recorded 20 s into the call, the clock stepped back 100 s:
    // retry once the lease has run out on the stepped clock too, 160 s on (40 s in
    // real time): a caller sooner would find it held wherever clocks agree with it.
    let retried = run_on(
        clocks(0.0, 0.0),
        vec![
            (acquired(), clocks(0.0, 0.0)),
            (permit(1, false), clocks(0.0, 0.0)),
            (
                Answered::Sent(ProviderAnswer::Unknown),
                clocks(-100.0, 19.0),
            ),
            (
                recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
                clocks(-100.0, 20.0),
            ),
        ],
    );
    assert_eq!(
        retried.last(),
        Some(&Ok(Asked::Left(
            fence(),
            Execution::RetryLater {
                after: Duration::from_secs(160)
            }
        )))
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
        let got = run_on(
            clocks(0.0, 0.0),
            vec![
                (acquired(), clocks(0.0, 0.0)),
                (permit(1, false), clocks(0.0, 0.0)),
                (Answered::Sent(ProviderAnswer::Unknown), recorded_at),
                (
                    recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
                    recorded_at,
                ),
            ],
        );
        assert_eq!(
            got.last(),
            Some(&Ok(Asked::Left(
                fence(),
                Execution::RetryLater {
                    after: Duration::from_secs(after)
                }
            ))),
            "{case}"
        );
    }
    // Too little lease left for a send, 49.5 s in, the clock stepped forward 5 s: the
    // lease lasts 10.5 s in real time, not the 5.5 s the stepped clock shows.
    let got = run_on(
        clocks(0.0, 0.0),
        vec![
            (acquired(), clocks(0.0, 0.0)),
            (permit(1, false), clocks(54.5, 49.5)),
        ],
    );
    assert_eq!(
        got[1],
        Ok(Asked::Left(
            fence(),
            Execution::RetryLater {
                after: Duration::from_secs(11)
            }
        ))
    );
}

#[test]
fn a_lease_is_heard_at_the_reading_its_start_captured() {
    // The start captured 0 s (its lease expiring at 60 s); the trusted clock stepped
    // back 2 s while the lease was taken, and the start answered 3 s on the steady
    // time: the permit 5 s in on the steady time leaves the provider 60 - 5 - 10 s,
    // not the 2 s more a lease heard at the answer's reading would give.
    let got = run_on(
        clocks(0.0, 0.0),
        vec![
            (acquired(), clocks(1.0, 3.0)),
            (permit(1, false), clocks(3.0, 5.0)),
        ],
    );
    assert_eq!(
        got[1],
        Ok(Asked::Send {
            attempt: nth(1),
            resend: false,
            key: "key-1".to_owned(),
            deadline: Duration::from_secs(45),
        })
    );
}

#[test]
fn a_recording_cut_by_the_call_s_deadline_ends_the_call_with_it() {
    // The provider's success is in hand, but the call's deadline passed before it was
    // recorded: the call ends `unavailable`, nothing reconciled; the permit stands,
    // and the next call re-sends under the same key.
    let passed = JournalError::unavailable(None, 0, true);
    let got = steps_until_error(vec![
        acquired(),
        permit(1, false),
        Answered::Sent(ProviderAnswer::Succeeded(envelope("ch_1"))),
        recorded(Err(passed)),
    ]);
    assert_eq!(got.last(), Some(&Err(passed)));
    // Any other refusal of that answer reconciles it (it is evidence).
    let got = steps_until_error(vec![
        acquired(),
        permit(1, false),
        Answered::Sent(ProviderAnswer::Succeeded(envelope("ch_1"))),
        recorded(Err(JournalError::unavailable(None, 3, false))),
    ]);
    assert!(
        matches!(got.last(), Some(Ok(Asked::Reconcile { .. }))),
        "{got:?}"
    );
}

/// What `answers` (all at time 0) asked for, up to an error.
fn steps_until_error(answers: Vec<Heard>) -> Vec<Result<Asked, JournalError>> {
    run(answers.into_iter().map(|a| (a, at(0))).collect())
}
