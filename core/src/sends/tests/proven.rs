//! Proven-safe advancement (`docs/providers.md`, "Proven absence"): each sequence an
//! adversary tried is refused with nothing written, and the provable absence still
//! opens attempt n + 1 under a new key.

use super::*;
use crate::envelope::ResultEnvelope;
use crate::envelope::record::WithResult;
use crate::envelope::stored;
use crate::fence::FenceEpoch;
use crate::sends::AttemptNumber;
use crate::sends::attempt;
use crate::sends::bound_plan;
use crate::sends::event;
use crate::sends::plan::ProviderLookup;
use crate::sends::record::Record;
use Op::{
    Acquire as Acq, Begin, BeginOther, Complete, Outcome, OutcomeOther, Reconcile as Rec,
    ReconcileOther, Status,
};

/// Attempt 1's key retention ends (a key-store provider may forget the key).
const FORGOTTEN: i64 = T0 + 86_400 * SEC;

/// The same plan as plan 0 with a durable lookup and no settle window.
fn durable() -> ProviderPlan {
    plan(0)
        .with_lookup(ProviderLookup::Durable, 0)
        .expect("durable plan")
}

fn not_provable(from: Option<i64>) -> String {
    let error = JournalError::AbsenceNotProvable {
        provable_from: from.map(at),
    };
    error.code().to_owned()
}

#[test]
fn an_absence_is_refused_while_the_senders_request_may_be_in_flight() {
    let code = not_provable(None);
    let store = case(
        "the sender's own lease",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            // The same holder, lease active: its own POST may still be processed.
            (Rec(0, 1, 1, Absent, T0 + SEC), &code, 0),
            (Begin(0, 1, T0 + 2 * SEC), "permit 1 false", 0),
            // After a takeover, until the settle window has passed since the lease.
            (Acq(1, T0 + 61 * SEC), "acquired 2", 2),
            (Rec(1, 2, 1, Absent, T0 + 61 * SEC), &code, 0),
            (Acq(1, PROVABLE - 30 * SEC), "acquired 3", 2),
            (Rec(1, 3, 1, Absent, PROVABLE - 1), &code, 0),
            (Acq(2, PROVABLE - 1), "lease_busy", 0),
        ],
    );
    assert_eq!(send_counts(&store), (2, 1));
    // The refusal says from when: the lease's end plus the settle window.
    let mut store = leased();
    apply(&mut store, &Begin(0, 1, T0));
    let refused = store.answer(&Record::reconciliation(
        call(0, T0 + SEC),
        FenceEpoch::stored(1),
        AttemptNumber::FIRST,
        Absent,
        plan(0),
    ));
    assert_eq!(
        refused,
        Err(JournalError::AbsenceNotProvable {
            provable_from: Some(at(PROVABLE))
        })
    );
}

#[test]
fn a_provable_absence_still_opens_the_next_attempt_under_a_new_key() {
    let store = case(
        "provable",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Acq(1, PROVABLE - SEC), "acquired 2", 2),
            (Rec(1, 2, 1, Absent, PROVABLE), "send_absent 1", 2),
            (Begin(1, 2, PROVABLE + 1), "permit 2 false", 3),
        ],
    );
    assert_eq!(send_counts(&store), (2, 3));
    // A re-send moves the window: it counts from the last permit.
    case(
        "after a re-send",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Acq(1, T0 + 61 * SEC), "acquired 2", 2),
            (Begin(1, 2, T0 + 70 * SEC), "permit 1 true", 2),
            (Acq(2, T0 + 350 * SEC), "acquired 3", 2),
            (Rec(2, 3, 1, Absent, PROVABLE + SEC), &not_provable(None), 0),
            (Acq(2, T0 + 420 * SEC), "acquired 4", 2),
            (
                Rec(2, 4, 1, Absent, T0 + 430 * SEC - 1),
                &not_provable(None),
                0,
            ),
            (Rec(2, 4, 1, Absent, T0 + 430 * SEC), "send_absent 1", 2),
        ],
    );
}

#[test]
fn a_key_store_absence_is_refused_once_the_key_may_be_forgotten() {
    let never = not_provable(None);
    case(
        "key store",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Acq(1, FORGOTTEN - SEC), "acquired 2", 2),
            (Rec(1, 2, 1, Absent, FORGOTTEN), &never, 0),
            (
                Rec(1, 2, 1, Absent, FORGOTTEN + 10 * 86_400 * SEC),
                "lease_expired",
                0,
            ),
            // Evidence of a charge or a decline is still accepted at any time.
            (
                Rec(1, 2, 1, Declined, FORGOTTEN + SEC),
                "terminal_failed_final",
                4,
            ),
        ],
    );
    let mut store = leased();
    apply(&mut store, &Begin(0, 1, T0));
    apply(&mut store, &Acq(1, FORGOTTEN - 2 * SEC));
    let last = Record::reconciliation(
        call(1, FORGOTTEN - 1),
        FenceEpoch::stored(2),
        AttemptNumber::FIRST,
        Absent,
        plan(0),
    );
    assert_eq!(
        store.answer(&last),
        Ok(SendOutcomeOutput::Absent {
            attempt: AttemptNumber::FIRST
        })
    );
    // A durable lookup answers for the key at any time.
    let mut store = leased();
    store
        .answer(&BeginSend::new(
            call(0, T0),
            FenceEpoch::stored(1),
            durable(),
        ))
        .expect("permit");
    let late = T0 + 40 * 86_400 * SEC;
    store
        .answer(&Acquire::new(call(1, late)))
        .expect("acquired");
    let reconcile = Record::reconciliation(
        call(1, late + SEC),
        FenceEpoch::stored(2),
        AttemptNumber::FIRST,
        Absent,
        durable(),
    );
    assert_eq!(
        store.answer(&reconcile),
        Ok(SendOutcomeOutput::Absent {
            attempt: AttemptNumber::FIRST
        })
    );
    // Its settle window of 0 still waits for the sender's lease.
    let mut store = leased();
    store
        .answer(&BeginSend::new(
            call(0, T0),
            FenceEpoch::stored(1),
            durable(),
        ))
        .expect("permit");
    let early = Record::reconciliation(
        call(0, T0 + 59 * SEC),
        FenceEpoch::stored(1),
        AttemptNumber::FIRST,
        Absent,
        durable(),
    );
    assert_eq!(
        store.answer(&early),
        Err(JournalError::AbsenceNotProvable {
            provable_from: Some(at(T0 + 60 * SEC))
        })
    );
}

/// The same plan as plan 0 with a `final_state` lookup (Stripe's).
fn final_state() -> ProviderPlan {
    plan(0)
        .with_lookup(ProviderLookup::FinalState, 0)
        .expect("final_state plan")
}

#[test]
fn a_final_state_plan_proves_no_absence_of_an_unanswered_attempt_ever() {
    // Sent, unanswered (`sending`), then taken over: at the instant a durable plan's
    // absence is provable, a day later, and forty days later, "not found" is refused
    // with no instant (nothing but evidence ends it), and nothing is written.
    for late in [60 * SEC, 86_400 * SEC, 40 * 86_400 * SEC] {
        let mut store = leased();
        store
            .answer(&BeginSend::new(
                call(0, T0),
                FenceEpoch::stored(1),
                final_state(),
            ))
            .expect("permit");
        store
            .answer(&Acquire::new(call(1, T0 + late)))
            .expect("acquired");
        let before = store.documents();
        let absent = Record::reconciliation(
            call(1, T0 + late + SEC),
            FenceEpoch::stored(2),
            AttemptNumber::FIRST,
            Absent,
            final_state(),
        );
        assert_eq!(
            store.answer(&absent),
            Err(JournalError::AbsenceNotProvable {
                provable_from: None
            }),
            "{late}"
        );
        assert_eq!(store.documents(), before, "{late}: nothing written");
        // A charge found by the lookup, or a decline, is still evidence.
        let found = Record::reconciliation(
            call(1, T0 + late + 2 * SEC),
            FenceEpoch::stored(2),
            AttemptNumber::FIRST,
            Declined,
            final_state(),
        );
        assert!(store.answer(&found).is_ok(), "{late}: a decline recorded");
    }
    // The same sequence under a durable plan is an absence (the case that must still
    // pass): the rule is the plan's, never the caller's.
    let mut store = leased();
    store
        .answer(&BeginSend::new(
            call(0, T0),
            FenceEpoch::stored(1),
            durable(),
        ))
        .expect("permit");
    store
        .answer(&Acquire::new(call(1, T0 + 60 * SEC)))
        .expect("acquired");
    let absent = Record::reconciliation(
        call(1, T0 + 61 * SEC),
        FenceEpoch::stored(2),
        AttemptNumber::FIRST,
        Absent,
        durable(),
    );
    assert_eq!(
        store.answer(&absent),
        Ok(SendOutcomeOutput::Absent {
            attempt: AttemptNumber::FIRST
        })
    );
}

#[test]
fn another_plan_is_a_conflict_before_any_cutoff_or_state_rule() {
    let store = case(
        "plan first",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (
                OutcomeOther(0, 1, 1, succeeded(0), t1()),
                "plan_conflict",
                0,
            ),
            (OutcomeOther(0, 1, 1, Ambiguous, t1()), "plan_conflict", 0),
            (ReconcileOther(0, 1, 1, Absent, t1()), "plan_conflict", 0),
            (Acq(1, CUTOFF + SEC), "acquired 2", 2),
            (BeginOther(1, 2, CUTOFF + SEC), "plan_conflict", 0),
            (
                ReconcileOther(1, 2, 1, Absent, CUTOFF + SEC),
                "plan_conflict",
                0,
            ),
            (
                ReconcileOther(1, 2, 9, Declined, CUTOFF + SEC),
                "plan_conflict",
                0,
            ),
            // A stranger with another plan learns nothing else either.
            (
                ReconcileOther(3, 9, 1, Absent, CUTOFF + SEC),
                "plan_conflict",
                0,
            ),
            (Rec(1, 2, 1, Absent, CUTOFF + 2 * SEC), "send_absent 1", 2),
            (BeginOther(1, 2, CUTOFF + 3 * SEC), "plan_conflict", 0),
        ],
    );
    assert_eq!(send_counts(&store), (2, 2));
}

#[test]
fn the_senders_answer_is_evidence_after_the_cutoff() {
    let late = CUTOFF - 30 * SEC;
    case(
        "a re-send answered after the cutoff",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Acq(1, late), "acquired 2", 2),
            (Begin(1, 2, CUTOFF - SEC), "permit 1 true", 2),
            (
                Outcome(1, 2, 1, succeeded(0), CUTOFF + SEC),
                "terminal_succeeded",
                4,
            ),
        ],
    );
    // Not by a fence that did not send it, and not after the sender's lease.
    case(
        "only the sender, only while its lease runs",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Acq(1, late), "acquired 2", 2),
            (Begin(1, 2, CUTOFF - SEC), "permit 1 true", 2),
            (
                Outcome(1, 2, 1, succeeded(0), late + 60 * SEC),
                "lease_expired",
                0,
            ),
            (
                Outcome(0, 1, 1, succeeded(0), CUTOFF + SEC),
                "lease_not_held",
                0,
            ),
        ],
    );
}

fn t1() -> i64 {
    T0 + SEC
}

/// The send record and its latest event, as stored.
fn send_docs(store: &Store) -> (String, FieldMap, String, FieldMap) {
    let h = hash();
    let record = attempt::path(&h);
    let fields = store.get(&record).expect("send record").clone();
    let parsed = attempt::SendAttempt::parse(&h, &fields).expect("parses");
    let event = event::path(&h, parsed.send_revision);
    let event_fields = store.get(&event).expect("event").clone();
    (record, fields, event, event_fields)
}

use crate::document::fields::FieldMap;

#[test]
fn forged_send_state_is_never_built_on() {
    // Plan and send record deleted, send event 1 left: no success without evidence.
    let mut store = leased();
    apply(&mut store, &Begin(0, 1, T0));
    store.remove(&bound_plan::path(&hash()));
    store.remove(&attempt::path(&hash()));
    assert_eq!(
        apply(&mut store, &Complete(0, 1, t1())),
        ("journal_corrupt".to_owned(), 0)
    );
    assert_eq!(
        apply(&mut store, &Op::Fail(0, 1, t1())),
        ("journal_corrupt".to_owned(), 0)
    );

    // A legitimate, provable absence to forge from.
    let mut proven = leased();
    apply(&mut proven, &Begin(0, 1, T0));
    apply(&mut proven, &Acq(1, PROVABLE - SEC));
    assert_eq!(
        apply(&mut proven, &Rec(1, 2, 1, Absent, PROVABLE)).0,
        "send_absent 1"
    );
    let (record, absent, event, absent_event) = send_docs(&proven);

    // Written as two writes: the record and its event are not one commit.
    let mut forged = proven.clone();
    forged.insert(record.clone(), absent.clone());
    assert_eq!(
        apply(&mut forged, &Begin(1, 2, PROVABLE + 1)),
        ("journal_corrupt".to_owned(), 0)
    );
    assert_eq!(
        apply(&mut forged, &Status(PROVABLE + 1)),
        ("journal_corrupt".to_owned(), 0)
    );

    // Written in one batch, but dated inside the sender's lease: not a proven absence.
    let mut early = proven.clone();
    let moved = crate::document::fields::timestamp(at(T0 + 2 * SEC));
    let mut record_fields = absent.clone();
    record_fields.insert("outcomeAt".to_owned(), moved.clone());
    let mut event_fields = absent_event.clone();
    event_fields.insert("occurredAt".to_owned(), moved);
    early.insert_together([
        (record.clone(), record_fields),
        (event.clone(), event_fields),
    ]);
    assert_eq!(
        apply(&mut early, &Begin(1, 2, PROVABLE + 1)),
        ("journal_corrupt".to_owned(), 0)
    );

    // The untouched absence opens attempt 2.
    assert_eq!(
        apply(&mut proven, &Begin(1, 2, PROVABLE + 1)).0,
        "permit 2 false"
    );
}

#[test]
fn a_missing_stored_result_fails_closed() {
    let mut store = leased();
    apply(&mut store, &Begin(0, 1, T0));
    let envelope = ResultEnvelope::new(&json!({"id": "ch_1", "amount": 1250})).expect("envelope");
    let commitment = identity().terminal_commitment(&envelope.reference());
    let op = Record::outcome(
        call(0, t1()),
        FenceEpoch::stored(1),
        AttemptNumber::FIRST,
        Closing::Succeeded(commitment),
        plan(0),
    );
    let ran = store.run(&WithResult::new(op, &hash(), at(t1()), &envelope));
    assert_eq!(
        ran.result,
        Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded))
    );
    let (_, record, _, _) = send_docs(&store);
    assert_eq!(
        record.get("resultStored"),
        Some(&crate::document::fields::boolean(true))
    );
    let mut deleted = store.clone();
    deleted.remove(&stored::path(&hash()));
    let read = crate::envelope::read::ResultRead::new(call(0, t1() + SEC).command().clone());
    assert!(matches!(
        deleted.answer(&read),
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(
        apply(&mut deleted, &Status(t1() + SEC)).0,
        "journal_corrupt"
    );
    // The intact journal answers the envelope.
    assert_eq!(store.answer(&read), Ok(Some(envelope)));
}

#[test]
fn documents_of_the_first_version_stay_readable() {
    use crate::sends::bound_plan::BoundPlan;
    // A plan bound before version 2: its own fingerprint frame and the implied lookup.
    let mut bound = BoundPlan::bind(&plan(0), &identity(), at(T0), FenceEpoch::FIRST);
    bound.version = 1;
    bound.plan_fingerprint = plan(0).fingerprint_v(&identity(), 1);
    bound.account_fingerprint = None;
    let fields = bound.encode();
    assert_eq!(fields.len(), bound_plan::FIELDS_V1.len());
    let parsed = BoundPlan::parse(&hash(), &fields).expect("a version-1 plan parses");
    assert_eq!(
        (parsed.version, parsed.lookup),
        (1, ProviderLookup::KeyStore)
    );
    assert_eq!(parsed.lookup_settle_seconds, 300);
    assert!(parsed.is(&plan(0), &identity()));
    assert!(
        !parsed.is(&durable(), &identity()),
        "another lookup is another plan"
    );
    assert!(!parsed.is(&plan(1), &identity()));
    // A send record of version 1: no resultStored, read as not stored.
    let mut store = leased();
    apply(&mut store, &Begin(0, 1, T0));
    let mut record = store.get(&attempt::path(&hash())).expect("record").clone();
    record.remove("resultStored");
    record.insert(
        "sendSchemaVersion".to_owned(),
        crate::document::fields::int(1),
    );
    let parsed = attempt::SendAttempt::parse(&hash(), &record).expect("a version-1 record parses");
    assert_eq!((parsed.version, parsed.result_stored), (1, false));
    // A version-2 document missing a field of its version fails closed.
    let mut broken = store.get(&attempt::path(&hash())).expect("record").clone();
    broken.remove("resultStored");
    assert!(attempt::SendAttempt::parse(&hash(), &broken).is_err());
}

#[test]
fn plans_of_version_two_stay_readable_and_prove_no_account() {
    use crate::sends::bound_plan::BoundPlan;
    let mut bound = BoundPlan::bind(&plan(0), &identity(), at(T0), FenceEpoch::FIRST);
    bound.version = 2;
    bound.account_fingerprint = None;
    let fields = bound.encode();
    assert_eq!(fields.len(), bound_plan::FIELDS_V2.len());
    let parsed = BoundPlan::parse(&hash(), &fields).expect("a version-2 plan parses");
    assert_eq!(
        (parsed.version, parsed.account_fingerprint.as_ref()),
        (2, None)
    );
    assert!(parsed.is(&plan(0), &identity()));
    assert!(!parsed.is(&plan(1), &identity()));
    // No account fingerprint: no account is proven, the right one or another.
    assert_eq!(parsed.is_account(&plan(0).provider_account()), None);
    // A version-2 document with a version-3 field, or a version-3 one without it,
    // fails closed.
    let mut mixed = fields.clone();
    mixed.insert(
        "sendSchemaVersion".to_owned(),
        crate::document::fields::int(3),
    );
    assert!(BoundPlan::parse(&hash(), &mixed).is_err());
}

#[test]
fn plans_of_version_three_prove_their_account_and_only_theirs() {
    use crate::sends::ProviderAccount;
    use crate::sends::bound_plan::BoundPlan;
    let bound = BoundPlan::bind(&plan(0), &identity(), at(T0), FenceEpoch::FIRST);
    let fields = bound.encode();
    assert_eq!(fields.len(), bound_plan::FIELDS_V3.len());
    let parsed = BoundPlan::parse(&hash(), &fields).expect("a version-3 plan parses");
    assert_eq!(parsed, bound);
    let mine = plan(0).provider_account();
    assert_eq!(parsed.is_account(&mine), Some(true));
    // The plan's parameters are not part of the account: another plan to the same
    // account proves the same account.
    assert_eq!(parsed.is_account(&plan(1).provider_account()), Some(true));
    let declared = ProviderAccount::new(mine.provider(), super::ACCOUNT, mine.mode().as_str())
        .expect("valid account");
    assert_eq!(declared, mine, "the fixture's account, declared");
    for (provider, account, mode) in [
        ("other", super::ACCOUNT, mine.mode().as_str()),
        (mine.provider(), "acct_other", mine.mode().as_str()),
        (mine.provider(), super::ACCOUNT, "live"),
    ] {
        let other = ProviderAccount::new(provider, account, mode).expect("valid account");
        assert_eq!(parsed.is_account(&other), Some(false), "{provider} {mode}");
    }
    // Bound to the command: the same account under another command fingerprints
    // differently.
    let another = crate::digest::Digest::parse(&"b".repeat(64)).expect("digest");
    assert_ne!(mine.fingerprint(&another), mine.fingerprint(&hash()));
    // A stored account fingerprint that the plan's account does not match is not
    // this plan, even with the plan fingerprint equal.
    let mut tampered = bound.clone();
    tampered.account_fingerprint = Some(another);
    assert!(!tampered.is(&plan(0), &identity()));
    // Every field is required and typed.
    for name in bound_plan::FIELDS_V3 {
        let mut missing = fields.clone();
        missing.remove(*name);
        assert!(BoundPlan::parse(&hash(), &missing).is_err(), "{name}");
    }
    let mut bad = fields.clone();
    bad.insert(
        "accountFingerprint".to_owned(),
        crate::document::fields::string("ACCT"),
    );
    assert!(BoundPlan::parse(&hash(), &bad).is_err());
}

#[test]
fn a_declared_account_is_validated_and_never_echoed() {
    use crate::sends::ProviderAccount;
    for (provider, account, mode, field) in [
        ("Stripe", "acct_CANARY", "test", "provider"),
        ("stripe", "", "test", "account"),
        ("stripe", "acct_\nCANARY", "test", "account"),
        ("stripe", "acct_CANARY", "prod", "mode"),
    ] {
        let error = ProviderAccount::new(provider, account, mode).expect_err("refused");
        assert_eq!(error, JournalError::invalid(field));
        assert!(!format!("{error} {error:?}").contains("CANARY"));
    }
    let long = "a".repeat(256);
    assert_eq!(
        ProviderAccount::new("stripe", &long, "test"),
        Err(JournalError::invalid("account"))
    );
    let account = ProviderAccount::new("stripe", "acct_CANARY", "live").expect("valid");
    assert!(!format!("{account:?}").contains("CANARY"));
}

#[test]
fn the_status_shows_the_instant_the_check_decides_by() {
    use crate::sends::absence::{self, Sent};
    use crate::sends::bound_plan::BoundPlan;
    let sent = Sent {
        first_sent_at: at(T0),
        last_sent_at: at(T0 + 600 * SEC),
        indeterminate: false,
    };
    let indeterminate = Sent {
        indeterminate: true,
        ..sent
    };
    for plan in [plan(0), durable()] {
        let bound = BoundPlan::bind(&plan, &identity(), at(T0), FenceEpoch::FIRST);
        for step in 0..2_000 {
            // An indeterminate attempt's absence is never provable, and never shown.
            let now = at(T0 + step * 60 * SEC);
            assert_eq!(absence::provable_from(&bound, indeterminate, now), None);
            assert_eq!(
                absence::check(&bound, indeterminate, now),
                Err(JournalError::AbsenceNotProvable {
                    provable_from: None
                })
            );
        }
        for step in 0..2_000 {
            let now = at(T0 + step * 60 * SEC);
            let shown = absence::provable_from(&bound, sent, now);
            let expected = match absence::check(&bound, sent, now) {
                Ok(()) => absence::window(&bound, sent).map(|(from, _)| from),
                Err(JournalError::AbsenceNotProvable { provable_from }) => provable_from,
                Err(other) => panic!("{other:?}"),
            };
            assert_eq!(shown, expected, "{:?} at step {step}", bound.lookup);
        }
    }
}
