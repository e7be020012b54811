//! Follow-up reads and the revision/fence maximum.

use super::*;

#[test]
fn follow_up_reads_fetch_partner_and_next_audit_beyond_the_speculative_window() {
    let mut store = registered_store();
    let mut life = Life::first(0, T0);
    let ran = run(&acquire(0, T0), &mut store);
    assert!(ran.follow_ups.is_empty());
    mutated(ran, life.held(), create_writes(&life));
    // Takeovers to revisions 3 and 4: partner and next are within 2..=4.
    for holder in [1, 2] {
        let now = life.expires;
        let next = life.taken_over(holder, now);
        let ran = run(&acquire(holder, now), &mut store);
        assert!(ran.follow_ups.is_empty(), "revision {}", next.revision);
        mutated(ran, next.held(), replace_writes(&next));
        life = next;
    }
    // At revision 4 the next event (5) is outside the window: one follow-up read.
    let now = life.expires;
    let next = life.taken_over(0, now);
    let ran = run(&acquire(0, now), &mut store);
    assert_eq!(ran.follow_ups, vec![vec![audit_path(5)]]);
    mutated(ran, next.held(), replace_writes(&next));
    life = next;
    assert_eq!((life.revision, life.fence), (5, 4));
    // At revision 5 both the partner and the next event are read as a follow-up.
    let ran = run(&acquire(1, life.expires - 1), &mut store);
    assert_eq!(ran.follow_ups, vec![vec![audit_path(5), audit_path(6)]]);
    observed(ran, LeaseOutput::Busy);
    let done = life.succeeded(life.acquired + SEC, 1);
    let ran = run(&complete(0, 4, 1, life.acquired + SEC), &mut store);
    assert_eq!(ran.follow_ups, vec![vec![audit_path(5), audit_path(6)]]);
    mutated(ran, TerminalOutput::Succeeded, replace_writes(&done));
    assert_eq!(audit_revisions(&store), [1, 2, 3, 4, 5, 6]);
    // Revision 6: observations also read partner and next.
    let ran = run(&acquire(2, done.expires + SEC), &mut store);
    assert_eq!(ran.follow_ups, vec![vec![audit_path(6), audit_path(7)]]);
    observed(ran, LeaseOutput::Succeeded);
    let ran = run(&complete(0, 4, 1, done.expires + SEC), &mut store);
    assert_eq!(ran.follow_ups.len(), 1);
    observed(ran, TerminalOutput::Succeeded);
    // The follow-up is validated like the speculative read.
    let mut preseeded = store.clone();
    preseeded.insert(audit_path(7), done.event());
    every_op_rejects(&mut preseeded, corrupt(NEXT_EXISTS), "preseeded revision 7");
    let mut missing = store.clone();
    missing.remove(&audit_path(6));
    every_op_rejects(&mut missing, corrupt(PARTNER_MISSING), "missing revision 6");
}

#[test]
fn a_decision_asks_for_a_read_before_judging_an_unread_partner() {
    let life = Life::leased_at(0, 6, T0 + LEASE, T0);
    let store = store_with(&life);
    let op = acquire(1, T0);
    let snapshot = Snapshot::new(op.paths().into_iter().map(|p| {
        let doc = store.get(&p).cloned();
        (p, doc)
    }));
    assert_eq!(
        op.decide(&snapshot),
        Decision::Read(vec![audit_path(7), audit_path(8)])
    );
    // The same for a terminal and a status call.
    assert_eq!(
        complete(0, 6, 0, T0 + LEASE + 1).decide(&snapshot),
        Decision::Read(vec![audit_path(7), audit_path(8)])
    );
    assert_eq!(
        status(T0).decide(&snapshot),
        Decision::Read(vec![audit_path(7), audit_path(8)])
    );
}

#[test]
fn takeover_at_the_revision_maximum_overflows() {
    // Fence 9_999_999_998 at revision 9_999_999_999, expired at `expires`.
    let life = Life::leased_at(0, MAX_REV - 1, T0 + 100 * SEC, T0);
    assert_eq!(life.revision, MAX_REV);
    let mut store = store_with(&life);
    let h = hash();
    assert!(store.contains_key(&format!("auditEvents/commerce_command_{h}_9999999999")));
    let before = store.clone();
    // Active: read-only answers are still given.
    observed(run(&acquire(0, life.acquired + 1), &mut store), life.held());
    observed(
        run(&acquire(1, life.acquired + 1), &mut store),
        LeaseOutput::Busy,
    );
    // Expired: no takeover can be numbered.
    for holder in [0, 1] {
        for now in [life.expires, life.expires + 1_000 * SEC] {
            let ran = run(&acquire(holder, now), &mut store);
            assert_eq!(
                ran.follow_ups,
                vec![vec![
                    format!("auditEvents/commerce_command_{h}_9999999999"),
                    format!("auditEvents/commerce_command_{h}_10000000000"),
                ]]
            );
            rejected(ran, JournalError::RevisionOverflow, "takeover at maximum");
        }
    }
    assert_eq!(store, before);
}

#[test]
fn terminal_at_the_revision_maximum_overflows() {
    let life = Life::leased_at(2, MAX_REV - 1, T0 + 100 * SEC, T0);
    let mut store = store_with(&life);
    let before = store.clone();
    let now = life.acquired + SEC;
    rejected(
        run(&complete(2, MAX_REV - 1, 0, now), &mut store),
        JournalError::RevisionOverflow,
        "complete at maximum",
    );
    rejected(
        run(&fail(2, MAX_REV - 1, now), &mut store),
        JournalError::RevisionOverflow,
        "fail at maximum",
    );
    // Holder and fence are still checked first.
    rejected(
        run(&fail(1, MAX_REV - 1, now), &mut store),
        JournalError::LeaseNotHeld,
        "other holder",
    );
    rejected(
        run(&fail(2, MAX_REV, now), &mut store),
        JournalError::StaleFence,
        "fence above",
    );
    assert_eq!(store, before);
}

#[test]
fn the_last_revision_is_written_with_a_ten_digit_id_and_then_only_observed() {
    // One below the maximum: the takeover reaches revision 9_999_999_999 exactly.
    let life = Life::leased_at(0, MAX_REV - 2, T0 + 100 * SEC, T0);
    let mut store = store_with(&life);
    let now = life.expires + 3 * SEC;
    let next = life.taken_over(1, now);
    assert_eq!((next.fence, next.revision), (MAX_REV - 1, MAX_REV));
    let h = hash();
    mutated(
        run(&acquire(1, now), &mut store),
        held(MAX_REV - 1, now + LEASE),
        vec![
            Write::Replace {
                path: lifecycle_path(),
                fields: next.fields(),
            },
            Write::Create {
                path: format!("auditEvents/commerce_command_{h}_9999999999"),
                fields: next.event(),
            },
        ],
    );
    rejected(
        run(&complete(1, MAX_REV - 1, 0, now + SEC), &mut store),
        JournalError::RevisionOverflow,
        "complete after reaching the maximum",
    );
    // A terminal transition that reaches the maximum, then read-only answers.
    let life = Life::leased_at(0, MAX_REV - 2, T0 + 100 * SEC, T0);
    let mut store = store_with(&life);
    let done = life.succeeded(life.acquired + SEC, 0);
    assert_eq!(done.revision, MAX_REV);
    mutated(
        run(
            &complete(0, MAX_REV - 2, 0, life.acquired + SEC),
            &mut store,
        ),
        TerminalOutput::Succeeded,
        replace_writes(&done),
    );
    let before = store.clone();
    observed(
        run(&complete(0, MAX_REV - 2, 0, life.expires + SEC), &mut store),
        TerminalOutput::Succeeded,
    );
    observed(
        run(&acquire(1, life.expires + SEC), &mut store),
        LeaseOutput::Succeeded,
    );
    assert_eq!(store, before);
}
