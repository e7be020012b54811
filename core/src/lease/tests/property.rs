//! Property: random histories against an oracle of the lease state machine.

use super::*;

#[derive(Debug, Clone)]
enum Action {
    Acquire {
        holder: usize,
        lag: i64,
    },
    Complete {
        holder: usize,
        fence_offset: i64,
        reference: usize,
        lag: i64,
    },
    Fail {
        holder: usize,
        fence_offset: i64,
        lag: i64,
    },
    Advance(i64),
}

fn action() -> impl Strategy<Value = Action> {
    // Most calls use the current time; some were captured earlier (a rerun).
    let lag = || prop_oneof![4 => Just(0_i64), 1 => (1_i64..=90).prop_map(|s| s * SEC)];
    // Mostly the stored fence, sometimes one below or above it.
    let fence = || prop_oneof![2 => Just(0_i64), 1 => -1_i64..=1];
    prop_oneof![
        3 => (0_usize..3, lag()).prop_map(|(holder, lag)| Action::Acquire { holder, lag }),
        2 => (0_usize..3, fence(), 0_usize..2, lag()).prop_map(
            |(holder, fence_offset, reference, lag)| Action::Complete {
                holder,
                fence_offset,
                reference,
                lag,
            }
        ),
        2 => (0_usize..3, fence(), lag()).prop_map(|(holder, fence_offset, lag)| Action::Fail {
            holder,
            fence_offset,
            lag,
        }),
        3 => prop_oneof![
            (0_i64..=90).prop_map(|s| s * SEC),
            0_i64..=90 * SEC,
        ]
        .prop_map(Action::Advance),
    ]
}

/// What the lease state machine (`docs/leases.md`) says an operation does.
enum Predicted<O> {
    Observe(O),
    Reject(JournalError),
    Mutate(Life, O),
}

fn predict_acquire(current: Option<&Life>, holder: usize, now: i64) -> Predicted<LeaseOutput> {
    match current {
        None if now < REGISTERED => Predicted::Reject(JournalError::ClockRegression),
        None => {
            let life = Life::first(holder, now);
            let output = life.held();
            Predicted::Mutate(life, output)
        }
        Some(l) if l.state == "succeeded" => Predicted::Observe(LeaseOutput::Succeeded),
        Some(l) if l.state == "failed_final" => Predicted::Observe(LeaseOutput::FailedFinal),
        // Active (which includes every time earlier than updatedAt): read-only.
        Some(l) if now < l.expires => Predicted::Observe(if l.owner == owner(holder) {
            l.held()
        } else {
            LeaseOutput::Busy
        }),
        Some(l) => {
            let life = l.taken_over(holder, now);
            let output = life.held();
            Predicted::Mutate(life, output)
        }
    }
}

fn predict_terminal(
    current: Option<&Life>,
    holder: usize,
    fence: i64,
    reference: Option<usize>,
    now: i64,
) -> Predicted<TerminalOutput> {
    let (state, output) = match reference {
        Some(_) => ("succeeded", TerminalOutput::Succeeded),
        None => ("failed_final", TerminalOutput::FailedFinal),
    };
    let Some(l) = current else {
        return Predicted::Reject(JournalError::LeaseNotHeld);
    };
    if l.owner != owner(holder) {
        Predicted::Reject(JournalError::LeaseNotHeld)
    } else if l.fence != fence {
        Predicted::Reject(JournalError::StaleFence)
    } else if l.state != "leased" {
        if l.state == state && l.commitment == reference.map(commitment) {
            Predicted::Observe(output)
        } else {
            Predicted::Reject(JournalError::TerminalConflict)
        }
    } else if now < l.updated {
        Predicted::Reject(JournalError::ClockRegression)
    } else if now >= l.expires {
        Predicted::Reject(JournalError::LeaseExpired)
    } else {
        Predicted::Mutate(
            match reference {
                Some(r) => l.succeeded(now, r),
                None => l.failed(now),
            },
            output,
        )
    }
}

/// Checks `ran` against the prediction; returns the lifecycle after the step.
fn check_prediction<O: Debug + PartialEq>(
    ran: &Ran<O>,
    predicted: Predicted<O>,
    current: Option<&Life>,
    context: &str,
) -> Option<Life> {
    match predicted {
        Predicted::Observe(output) => {
            assert_eq!(ran.result, Ok(output), "{context}");
            assert!(ran.writes.is_empty(), "{context}");
            current.cloned()
        }
        Predicted::Reject(error) => {
            assert_eq!(ran.result, Err(error), "{context}");
            assert!(ran.writes.is_empty(), "{context}");
            current.cloned()
        }
        Predicted::Mutate(life, output) => {
            assert_eq!(ran.result, Ok(output), "{context}");
            let writes = if current.is_none() {
                create_writes(&life)
            } else {
                replace_writes(&life)
            };
            assert_eq!(ran.writes, writes, "{context}");
            Some(life)
        }
    }
}

fn stored_lifecycle(store: &Store) -> Option<Lifecycle> {
    store
        .get(&lifecycle_path())
        .map(|fields| Lifecycle::parse(&hash(), fields).expect("stored lifecycle parses"))
}

/// The lease invariants over one step, independent of the oracle.
fn check_invariants(
    before: &Store,
    after: &Store,
    writes: &[Write],
    acquired_fence: Option<i64>,
    now: i64,
    context: &str,
) {
    // The registration is immutable.
    for path in [root_path(), audit_path(1)] {
        assert_eq!(before.get(&path), after.get(&path), "{context}");
    }
    let old = stored_lifecycle(before);
    let new = stored_lifecycle(after);
    // Exactly one new audit event per mutation and none otherwise.
    let old_audits = audit_revisions(before);
    let new_audits = audit_revisions(after);
    if writes.is_empty() {
        assert!(
            before == after,
            "{context}: a non-mutation changed the store"
        );
    } else {
        assert_eq!(writes.len(), 2, "{context}");
        assert_eq!(new_audits.len(), old_audits.len() + 1, "{context}");
        assert_eq!(
            after.len(),
            before.len() + 1 + usize::from(old.is_none()),
            "{context}"
        );
    }
    // Audit revisions are exactly 1..=current revision.
    let revision = new.as_ref().map_or(1, |l| l.command_revision);
    assert_eq!(new_audits, (1..=revision).collect::<Vec<_>>(), "{context}");
    match (&old, &new) {
        (None, None) => {}
        (None, Some(n)) => {
            assert_eq!(
                (n.fence_epoch.get(), n.command_revision),
                (1, 2),
                "{context}"
            );
            assert_eq!(n.state, LifecycleState::Leased, "{context}");
        }
        (Some(_), None) => panic!("{context}: the lifecycle disappeared"),
        (Some(o), Some(n)) => {
            if o.state != LifecycleState::Leased {
                // Terminal: never changes again.
                assert_eq!(
                    before[&lifecycle_path()],
                    after[&lifecycle_path()],
                    "{context}"
                );
            }
            let event_type = |rev: i64| after.get(&audit_path(rev)).map(|e| e["eventType"].clone());
            let took_over = !writes.is_empty()
                && event_type(n.command_revision)
                    == Some(fields::string("command_lease_taken_over"));
            if took_over {
                assert_eq!(
                    Some(n.fence_epoch),
                    o.fence_epoch.next(),
                    "{context}: takeover fence"
                );
                assert_eq!(n.command_revision, o.command_revision + 1, "{context}");
                assert_eq!(n.created_at, o.created_at, "{context}");
            } else {
                assert_eq!(n.fence_epoch, o.fence_epoch, "{context}: fence moved");
                assert_eq!(
                    n.lease_owner_fingerprint, o.lease_owner_fingerprint,
                    "{context}"
                );
            }
            if o.state != LifecycleState::Leased {
                assert_eq!(n.state, o.state, "{context}: terminal state changed");
            }
        }
    }
    // Every Acquired output carries the stored fence.
    if let Some(fence) = acquired_fence {
        assert_eq!(
            new.as_ref().map(|l| l.fence_epoch.get()),
            Some(fence),
            "{context}"
        );
    }
    // At most one holder: at the step's time, at most one holder is answered with a
    // held lease without a write, and it is the stored owner.
    let holding: Vec<usize> = (0..3)
        .filter(|&h| {
            matches!(
                after.attempt(&acquire(h, now)).decision,
                Decision::Observe(LeaseOutput::Acquired { .. })
            )
        })
        .collect();
    assert!(holding.len() <= 1, "{context}: holders {holding:?}");
    if let (Some(&h), Some(n)) = (holding.first(), &new) {
        assert_eq!(owner(h), n.lease_owner_fingerprint, "{context}");
    }
}

fn check_history(actions: &[Action]) {
    let mut store = registered_store();
    let mut clock = REGISTERED;
    let mut current: Option<Life> = None;
    for (i, step) in actions.iter().enumerate() {
        let context = format!("step {i}: {step:?} at {clock}");
        let before = store.clone();
        let fence_base = current.as_ref().map_or(1, |l| l.fence);
        let (writes, acquired_fence, now, next) = match *step {
            Action::Advance(delta) => {
                clock += delta;
                (Vec::new(), None, clock, current.clone())
            }
            Action::Acquire { holder, lag } => {
                let now = clock - lag;
                let ran = run(&acquire(holder, now), &mut store);
                let predicted = predict_acquire(current.as_ref(), holder, now);
                let next = check_prediction(&ran, predicted, current.as_ref(), &context);
                let fence = match ran.result {
                    Ok(LeaseOutput::Acquired { fence_epoch, .. }) => Some(fence_epoch.get()),
                    _ => None,
                };
                (ran.writes, fence, now, next)
            }
            Action::Complete {
                holder,
                fence_offset,
                reference,
                lag,
            } => {
                let now = clock - lag;
                let fence = fence_base + fence_offset;
                let ran = run(&complete(holder, fence, reference, now), &mut store);
                let predicted =
                    predict_terminal(current.as_ref(), holder, fence, Some(reference), now);
                let next = check_prediction(&ran, predicted, current.as_ref(), &context);
                (ran.writes, None, now, next)
            }
            Action::Fail {
                holder,
                fence_offset,
                lag,
            } => {
                let now = clock - lag;
                let fence = fence_base + fence_offset;
                let ran = run(&fail(holder, fence, now), &mut store);
                let predicted = predict_terminal(current.as_ref(), holder, fence, None, now);
                let next = check_prediction(&ran, predicted, current.as_ref(), &context);
                (ran.writes, None, now, next)
            }
        };
        check_invariants(&before, &store, &writes, acquired_fence, now, &context);
        assert_eq!(
            store.get(&lifecycle_path()),
            next.as_ref().map(Life::fields).as_ref(),
            "{context}: stored lifecycle"
        );
        if let Some(life) = &next {
            assert_eq!(
                store.get(&audit_path(life.revision)),
                Some(&life.event()),
                "{context}"
            );
        }
        current = next;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        // Never write regression files next to the sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_histories_keep_one_holder_a_monotonic_fence_and_contiguous_audits(
        steps in prop::collection::vec(action(), 1..=30)
    ) {
        check_history(&steps);
    }
}

/// A fixed long history through the same checker, so the property's machinery is
/// exercised deterministically too (takeovers, expiry equality, stale calls, success).
#[test]
fn a_fixed_history_passes_the_property_checker() {
    let steps = vec![
        Action::Acquire {
            holder: 0,
            lag: 5 * SEC,
        },
        Action::Advance(2 * SEC),
        Action::Acquire { holder: 0, lag: 0 },
        Action::Acquire { holder: 1, lag: 0 },
        Action::Advance(60 * SEC),
        Action::Complete {
            holder: 0,
            fence_offset: 0,
            reference: 0,
            lag: 0,
        },
        Action::Acquire { holder: 1, lag: 0 },
        Action::Acquire {
            holder: 0,
            lag: 30 * SEC,
        },
        Action::Fail {
            holder: 0,
            fence_offset: -1,
            lag: 0,
        },
        Action::Advance(60 * SEC),
        Action::Acquire { holder: 1, lag: 0 },
        Action::Acquire { holder: 2, lag: 0 },
        Action::Advance(59 * SEC),
        Action::Complete {
            holder: 2,
            fence_offset: 0,
            reference: 1,
            lag: 0,
        },
        Action::Complete {
            holder: 2,
            fence_offset: 0,
            reference: 0,
            lag: 0,
        },
        Action::Fail {
            holder: 2,
            fence_offset: 0,
            lag: 0,
        },
        Action::Complete {
            holder: 2,
            fence_offset: 0,
            reference: 1,
            lag: 90 * SEC,
        },
        Action::Advance(90 * SEC),
        Action::Acquire { holder: 0, lag: 0 },
    ];
    check_history(&steps);
}
