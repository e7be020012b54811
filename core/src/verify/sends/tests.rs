//! The send checks over histories the decisions themselves wrote (through the shared
//! in-memory store, with its commit times), clean and then tampered with, one edit a
//! row.

use super::*;
use crate::document::fields::{self, FieldMap};
use crate::sends::tests::{
    self as send_tests, Absent, Ambiguous, Declined, Indeterminate, Op, ReplayedUnknown, SEC, T0,
    succeeded,
};
use crate::testing::Store;
use std::collections::BTreeMap;

const TK: i64 = T0 + 61 * SEC;

/// Every document of `store` with its commit times: created at its first write seen
/// after a step, last written at its current update time.
struct Timed {
    store: Store,
    created: BTreeMap<String, u64>,
}

impl Timed {
    fn run(steps: &[Op]) -> Self {
        let mut timed = Self {
            store: send_tests::leased(),
            created: BTreeMap::new(),
        };
        timed.note();
        for op in steps {
            timed.step(op);
        }
        timed
    }

    /// Runs one more operation.
    fn step(&mut self, op: &Op) {
        send_tests::apply(&mut self.store, op);
        self.note();
    }

    fn note(&mut self) {
        for path in self.store.keys() {
            let time = self.store.update_time(path).expect("stored");
            self.created.entry(path.clone()).or_insert(time);
        }
    }

    fn doc(&self, path: &str) -> Option<StoredDoc> {
        let fields = self.store.get(path)?.clone();
        let time = |t: u64| WriteTime {
            seconds: i64::try_from(t).expect("small"),
            nanos: 0,
        };
        Some(StoredDoc {
            path: path.to_owned(),
            fields,
            created: time(*self.created.get(path).unwrap_or(&0)),
            updated: time(self.store.update_time(path).expect("stored")),
        })
    }

    fn findings(&self) -> Vec<(FindingCode, String)> {
        let h = send_tests::hash();
        let plan = self.doc(&bound_plan::path(&h));
        let current = self.doc(&attempt::path(&h));
        let events: Vec<(i64, StoredDoc)> = self
            .store
            .keys()
            .filter_map(|p| {
                let revision = p.strip_prefix(&format!("auditEvents/provider_send_{h}_"))?;
                Some((revision.parse().ok()?, self.doc(p)?))
            })
            .collect();
        let lifecycle_path = format!("checkoutRequests/{h}/lifecycle/current");
        let lifecycle_doc = self.doc(&lifecycle_path);
        let result = self.doc(&crate::envelope::stored::path(&h));
        let lifecycle = lifecycle_doc
            .as_ref()
            .and_then(|d| Lifecycle::parse(&h, &d.fields).ok());
        let docs = SendDocs {
            plan: plan.as_ref(),
            current: current.as_ref(),
            events: events.iter().map(|(r, d)| (*r, d)).collect(),
            lifecycle: lifecycle_doc.as_ref().zip(lifecycle.as_ref()),
            result: result.as_ref(),
        };
        check_sends(&h, &docs)
            .into_iter()
            .map(|f| (f.code, f.path.rsplit('/').next().unwrap_or("").to_owned()))
            .collect()
    }
}

fn histories() -> Vec<(&'static str, Vec<Op>)> {
    vec![
        ("nothing sent", vec![]),
        ("open", vec![Op::Begin(0, 1, T0)]),
        (
            "ambiguous, taken over, re-sent, succeeded",
            vec![
                Op::Begin(0, 1, T0),
                Op::Outcome(0, 1, 1, Ambiguous, T0 + 1),
                Op::Acquire(1, TK),
                Op::Begin(1, 2, TK),
                Op::Outcome(1, 2, 1, succeeded(0), TK + 1),
            ],
        ),
        (
            "reconciled absent past the cutoff, attempt 2 declined",
            vec![
                Op::Begin(0, 1, T0),
                Op::Acquire(1, send_tests::CUTOFF + SEC),
                Op::Reconcile(1, 2, 1, Absent, send_tests::CUTOFF + SEC),
                Op::Begin(1, 2, send_tests::CUTOFF + SEC + 1),
                Op::Outcome(1, 2, 2, Declined, send_tests::CUTOFF + SEC + 2),
            ],
        ),
        (
            "reconciled succeeded",
            vec![
                Op::Begin(0, 1, T0),
                Op::Reconcile(0, 1, 1, succeeded(1), T0 + 1),
            ],
        ),
        (
            "re-sent before the cutoff, the sender's success after it",
            vec![
                Op::Begin(0, 1, T0),
                Op::Acquire(1, send_tests::CUTOFF - 30 * SEC),
                Op::Begin(1, 2, send_tests::CUTOFF - SEC),
                Op::Outcome(1, 2, 1, succeeded(0), send_tests::CUTOFF + SEC),
            ],
        ),
        (
            "a replayed unknown, found by the lookup",
            vec![
                Op::Begin(0, 1, T0),
                Op::Outcome(0, 1, 1, ReplayedUnknown, T0 + 1),
                Op::Reconcile(0, 1, 1, succeeded(0), T0 + 2),
            ],
        ),
        (
            "ambiguous, re-sent, a replayed unknown, found declined a day later",
            vec![
                Op::Begin(0, 1, T0),
                Op::Outcome(0, 1, 1, Ambiguous, T0 + 1),
                Op::Acquire(1, TK),
                Op::Begin(1, 2, TK),
                Op::Outcome(1, 2, 1, ReplayedUnknown, TK + 1),
                Op::Acquire(1, TK + 86_400 * SEC),
                Op::Reconcile(1, 3, 1, Declined, TK + 86_400 * SEC),
            ],
        ),
        (
            "an indeterminate answer, still open",
            vec![
                Op::Begin(0, 1, T0),
                Op::Outcome(0, 1, 1, Indeterminate, T0 + 1),
            ],
        ),
        (
            "an absence at the first provable instant",
            vec![
                Op::Begin(0, 1, T0),
                Op::Acquire(1, send_tests::PROVABLE - SEC),
                Op::Reconcile(1, 2, 1, Absent, send_tests::PROVABLE),
            ],
        ),
    ]
}

#[test]
fn an_absence_dated_inside_the_senders_lease_is_not_proven() {
    let h = send_tests::hash();
    let mut timed = Timed::run(&[
        Op::Begin(0, 1, T0),
        Op::Acquire(1, send_tests::PROVABLE - SEC),
        Op::Reconcile(1, 2, 1, Absent, send_tests::PROVABLE),
    ]);
    assert_eq!(timed.findings(), vec![]);
    // A forger who can keep commit times moves the absence into the sender's lease.
    let early = fields::timestamp(send_tests::at(T0 + 2 * SEC));
    for (path, field) in [
        (event::path(&h, 2), "occurredAt"),
        (attempt::path(&h), "outcomeAt"),
    ] {
        let doc = timed.store.forge(&path).expect("document");
        doc.insert(field.to_owned(), early.clone());
    }
    let wanted = (
        FindingCode::AbsenceNotProven,
        format!("provider_send_{h}_0000000002"),
    );
    assert!(timed.findings().contains(&wanted), "{:?}", timed.findings());
}

/// A journal written before the indeterminate rule: a stored 500 "proven" absent
/// under the usual window, attempt 2 opened. `verify` reports that absence as not
/// proven (Stripe may have completed attempt 1 since: look for a second charge), and
/// nothing is built on an absence still current (`begin_send` fails closed).
#[test]
fn an_absence_recorded_after_a_stored_500_under_the_old_rule_is_not_proven() {
    use crate::sends::reverted::{Rule, with_reverted};
    let h = send_tests::hash();
    let provable = TK + 360 * SEC;
    let timed = with_reverted(&[Rule::IndeterminateNeverAbsent], || {
        Timed::run(&[
            Op::Begin(0, 1, T0),
            Op::Outcome(0, 1, 1, Ambiguous, T0 + 1),
            Op::Acquire(1, TK),
            Op::Begin(1, 2, TK),
            Op::Outcome(1, 2, 1, ReplayedUnknown, TK + 1),
            Op::Acquire(1, provable),
            Op::Reconcile(1, 3, 1, Absent, provable),
        ])
    });
    let wanted = (
        FindingCode::AbsenceNotProven,
        format!("provider_send_{h}_0000000005"),
    );
    assert!(timed.findings().contains(&wanted), "{:?}", timed.findings());
    let mut store = timed.store.clone();
    let (answer, wrote) = send_tests::apply(&mut store, &Op::Begin(1, 3, provable + 1));
    assert_eq!((answer.as_str(), wrote), ("journal_corrupt", 0));
    // The same history, attempt 2 opened before this library: still reported.
    let mut opened = timed;
    with_reverted(&[Rule::IndeterminateNeverAbsent], || {
        opened.step(&Op::Begin(1, 3, provable + 1));
    });
    assert!(
        opened.findings().contains(&wanted),
        "{:?}",
        opened.findings()
    );
}

#[test]
fn histories_the_decisions_wrote_are_clean() {
    for (name, steps) in histories() {
        let timed = Timed::run(&steps);
        assert_eq!(timed.findings(), vec![], "{name}");
    }
}

fn edit(timed: &mut Timed, path: &str, change: impl FnOnce(&mut FieldMap)) {
    let doc = timed.store.get_mut(path).expect("document to edit");
    change(doc);
}

#[test]
fn every_tampering_is_found_at_its_cause() {
    use FindingCode as C;
    let h = send_tests::hash();
    let plan = bound_plan::path(&h);
    let current = attempt::path(&h);
    let event = |r: i64| event::path(&h, r);
    let lifecycle = format!("checkoutRequests/{h}/lifecycle/current");
    let steps = vec![
        Op::Begin(0, 1, T0),
        Op::Outcome(0, 1, 1, Ambiguous, T0 + 1),
        Op::Acquire(1, TK),
        Op::Begin(1, 2, TK),
        Op::Outcome(1, 2, 1, succeeded(0), TK + 1),
    ];
    type Tamper = Box<dyn Fn(&mut Timed)>;
    let (p, c, e1, e2, e3, l) = (
        plan.clone(),
        current.clone(),
        event(1),
        event(2),
        event(3),
        lifecycle.clone(),
    );
    let rows: Vec<(&str, Tamper, (FindingCode, &str))> = vec![
        (
            "plan rewritten in place",
            Box::new(move |t| edit(t, &p, |_| {})),
            (C::PlanNotImmutable, "plan"),
        ),
        (
            "plan removed",
            Box::new({
                let p = plan.clone();
                move |t| {
                    t.store.remove(&p);
                }
            }),
            (C::UnpairedSendRecord, "current"),
        ),
        (
            "a middle event removed",
            Box::new(move |t| {
                t.store.remove(&e2);
            }),
            (C::SendAuditGap, "provider_send_placeholder_0000000002"),
        ),
        (
            "an event malformed",
            Box::new(move |t| {
                edit(t, &e1, |f| {
                    f.remove("attempt");
                })
            }),
            (C::MalformedSendDocument, "e1"),
        ),
        (
            "an extra event past the current revision",
            Box::new({
                let (e3, h) = (e3.clone(), h.clone());
                move |t| {
                    let mut copy = t.store[&e3].clone();
                    copy.insert("sendRevision".to_owned(), fields::int(9));
                    t.store.insert(event::path(&h, 9), copy);
                }
            }),
            (C::ExtraSendEvent, "e9"),
        ),
        (
            "the opening's cutoff moved, with the record's",
            Box::new({
                let (e1, c) = (event(1), current.clone());
                move |t| {
                    let later = fields::timestamp(send_tests::at(send_tests::CUTOFF + SEC));
                    for path in [&e1, &c] {
                        let later = later.clone();
                        edit(t, path, move |f| {
                            f.insert("sendCutoffAt".to_owned(), later);
                        });
                    }
                }
            }),
            (C::SendCutoffMismatch, "e1"),
        ),
        (
            "the re-send's fence rewritten to the first holder's",
            Box::new(move |t| {
                edit(t, &e3, |f| {
                    f.insert("fenceEpoch".to_owned(), fields::int(1));
                })
            }),
            (C::SendChainMismatch, "e3"),
        ),
        (
            "the record says declined while the command succeeded",
            Box::new(move |t| {
                edit(t, &c, |f| {
                    f.insert("state".to_owned(), fields::string("declined"));
                })
            }),
            (C::SendChainMismatch, "current"),
        ),
        (
            "the lifecycle no longer terminal",
            Box::new(move |t| {
                edit(t, &l, |f| {
                    f.insert("state".to_owned(), fields::string("leased"));
                })
            }),
            (C::SendLifecycleMismatch, "current"),
        ),
    ];
    for (name, tamper, (code, at_doc)) in rows {
        let mut timed = Timed::run(&steps);
        assert_eq!(timed.findings(), vec![], "{name}: clean before");
        tamper(&mut timed);
        let findings = timed.findings();
        let wanted = match at_doc {
            "e1" => format!("provider_send_{h}_0000000001"),
            "e3" => format!("provider_send_{h}_0000000003"),
            "e9" => format!("provider_send_{h}_0000000009"),
            "provider_send_placeholder_0000000002" => format!("provider_send_{h}_0000000002"),
            other => other.to_owned(),
        };
        assert!(
            findings.contains(&(code, wanted.clone())),
            "{name}: expected {code:?} at {wanted}, got {findings:?}"
        );
    }
}

/// Forged chains around a replayed unknown: a re-send of its key, or a plain
/// `ambiguous` over it (which would make it re-sendable again), is found whether the
/// forger states the replay as the event's origin or hides it.
#[test]
fn a_chain_that_re_sends_or_downgrades_a_replayed_unknown_is_found() {
    use FindingCode as C;
    let h = send_tests::hash();
    let (e2, e3, current) = (event::path(&h, 2), event::path(&h, 3), attempt::path(&h));
    let e3_id = format!("provider_send_{h}_0000000003");
    // Ambiguous, taken over, re-sent: the forger turns the ambiguous into a replay.
    for (origin, wanted) in [
        ("replayed_unknown", C::MalformedSendDocument),
        ("ambiguous", C::SendChainMismatch),
    ] {
        let mut timed = Timed::run(&[
            Op::Begin(0, 1, T0),
            Op::Outcome(0, 1, 1, Ambiguous, T0 + 1),
            Op::Acquire(1, TK),
            Op::Begin(1, 2, TK),
        ]);
        assert_eq!(timed.findings(), vec![], "clean before");
        let doc = timed.store.forge(&e2).expect("event 2");
        doc.insert(
            "eventType".to_owned(),
            fields::string("provider_send_replayed_unknown"),
        );
        doc.insert("toState".to_owned(), fields::string("replayed_unknown"));
        let doc = timed.store.forge(&e3).expect("event 3");
        doc.insert("fromState".to_owned(), fields::string(origin));
        let findings = timed.findings();
        assert!(
            findings.contains(&(wanted, e3_id.clone())),
            "a re-send from {origin}: {findings:?}"
        );
    }
    // A replay, then a plain ambiguous appended over it with the record to match.
    for (origin, wanted) in [
        ("replayed_unknown", C::MalformedSendDocument),
        ("sending", C::SendChainMismatch),
    ] {
        let mut timed = Timed::run(&[
            Op::Begin(0, 1, T0),
            Op::Outcome(0, 1, 1, ReplayedUnknown, T0 + 1),
        ]);
        assert_eq!(timed.findings(), vec![], "clean before");
        let later = fields::timestamp(send_tests::at(T0 + 2));
        let mut appended = timed.store[&e2].clone();
        appended.insert("sendRevision".to_owned(), fields::int(3));
        appended.insert(
            "eventType".to_owned(),
            fields::string("provider_send_ambiguous"),
        );
        appended.insert("fromState".to_owned(), fields::string(origin));
        appended.insert("toState".to_owned(), fields::string("ambiguous"));
        appended.insert("occurredAt".to_owned(), later.clone());
        let mut record = timed.store[&current].clone();
        record.insert("state".to_owned(), fields::string("ambiguous"));
        record.insert("sendRevision".to_owned(), fields::int(3));
        record.insert("outcomeAt".to_owned(), later);
        timed
            .store
            .insert_together([(e3.clone(), appended), (current.clone(), record)]);
        timed.note();
        let findings = timed.findings();
        assert!(
            findings.contains(&(wanted, e3_id.clone())),
            "an ambiguous from {origin}: {findings:?}"
        );
    }
}

#[test]
fn codes_are_stable_and_distinct() {
    use FindingCode as C;
    let all = [
        C::MalformedSendDocument,
        C::UnpairedSendRecord,
        C::PlanNotImmutable,
        C::SendAuditGap,
        C::ExtraSendEvent,
        C::SendChainMismatch,
        C::SendCutoffMismatch,
        C::SendLifecycleMismatch,
        C::SendCommitTimeMismatch,
    ];
    let mut codes: Vec<&str> = all.iter().map(|c| c.as_str()).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), all.len());
}

#[test]
fn the_first_send_keeps_the_lifecycle_update_time() {
    // The first send rewrites the lifecycle with its exact fields: as in Firestore, a
    // write that changes nothing keeps the update time of the B2B event's commit.
    let timed = Timed::run(&[Op::Begin(0, 1, T0)]);
    let h = send_tests::hash();
    let lifecycle = timed
        .doc(&format!("checkoutRequests/{h}/lifecycle/current"))
        .expect("lifecycle");
    let lease_event = timed
        .doc(&format!("auditEvents/commerce_command_{h}_0000000002"))
        .expect("event");
    let plan_doc = timed.doc(&bound_plan::path(&h)).expect("plan");
    assert_eq!(lifecycle.updated, lease_event.created);
    assert_ne!(lifecycle.updated, plan_doc.created);
}

mod property {
    use super::*;
    use proptest::prelude::*;

    /// One random step: (kind, holder, fence, attempt, finding, clock step).
    fn step() -> impl Strategy<Value = (u8, usize, i64, i64, u8, u8)> {
        (0u8..6, 0usize..3, 1i64..4, 1i64..4, 0u8..5, 0u8..6)
    }

    /// What a step records: the sender's answers include a replayed unknown.
    fn finding(pick: u8, reconcile: bool) -> crate::sends::provider::Closing {
        match (pick, reconcile) {
            (0, _) => succeeded(0),
            (1, _) => succeeded(1),
            (2, _) => Declined,
            (3, false) => Ambiguous,
            (_, false) => ReplayedUnknown,
            (_, true) => Absent,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// Whatever the callers do, in whatever order and at whatever times, the
        /// documents the decisions leave behind pass every send check after every step.
        #[test]
        fn the_decisions_never_write_a_history_the_checks_reject(
            steps in proptest::collection::vec(step(), 1..40)
        ) {
            let mut now = T0;
            let mut ops = Vec::new();
            for (kind, holder, fence, attempt, pick, clock) in steps {
                now += match clock {
                    0 => 0,
                    1 => 1,
                    2 => SEC,
                    3 | 4 => 61 * SEC,
                    _ => 20_000 * SEC,
                };
                ops.push(match kind {
                    0 => Op::Acquire(holder, now),
                    1 | 2 => Op::Begin(holder, fence, now),
                    3 => Op::Outcome(holder, fence, attempt, finding(pick, false), now),
                    4 => Op::Reconcile(holder, fence, attempt, finding(pick, true), now),
                    _ => Op::Status(now),
                });
            }
            let mut timed = Timed::run(&[]);
            for end in 1..=ops.len() {
                timed.step(&ops[end - 1]);
                prop_assert_eq!(timed.findings(), vec![], "after {:?}", &ops[..end]);
                for (path, doc) in timed.store.iter() {
                    let text = format!("{path} {doc:?}");
                    prop_assert!(!text.contains("CANARY"));
                }
            }
        }
    }
}
