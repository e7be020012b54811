//! Transaction mode's opening of an `execute` call (`execute::opening`): `start` and
//! the `begin_send` its lease lets it take, decided over one read and committed as
//! one, store exactly what the two store one after the other, and answer what each
//! answers.

use super::*;
use crate::execute::opening::Opening;
use crate::start::Start;

fn opening(holder: usize, now: i64, which: u8) -> Opening {
    let call = call(holder, now);
    let start = Start::new(identity(), owner(holder), at(now));
    Opening::new(start, call, plan(which))
}

/// The same calls one after the other: `start`, then `begin_send` under the fence it
/// acquired (when it did).
fn one_after_the_other(store: &mut Store, holder: usize, now: i64, which: u8) -> String {
    let started = store
        .run(&Start::new(identity(), owner(holder), at(now)))
        .result
        .expect("start answers");
    match started.lease {
        LeaseOutput::Acquired { fence_epoch, .. } => {
            let op = BeginSend::new(call(holder, now), fence_epoch, plan(which));
            let began = store.run(&op).result;
            format!(
                "{} {}",
                lease_summary(&started.lease),
                summary(began, begin_summary)
            )
        }
        other => lease_summary(&other),
    }
}

fn together(store: &mut Store, holder: usize, now: i64, which: u8) -> (String, usize) {
    let ran = store.run(&opening(holder, now, which));
    let writes = ran.writes.iter().filter(|w| w.fields().is_some()).count();
    let text = match ran.result.expect("the opening answers") {
        (started, Some(began)) => {
            format!(
                "{} {}",
                lease_summary(&started.lease),
                summary(began, begin_summary)
            )
        }
        (started, None) => lease_summary(&started.lease),
    };
    (text, writes)
}

/// Both ways from `before`: the same answer and the same documents, field by field.
fn same_both_ways(before: &Store, holder: usize, now: i64, which: u8) -> (String, usize) {
    let (mut apart, mut joined) = (before.clone(), before.clone());
    let expected = one_after_the_other(&mut apart, holder, now, which);
    let (answer, writes) = together(&mut joined, holder, now, which);
    assert_eq!(answer, expected);
    let docs =
        |store: &Store| -> std::collections::BTreeMap<String, crate::document::fields::FieldMap> {
            store
                .iter()
                .map(|(path, fields)| (path.clone(), fields.clone()))
                .collect()
        };
    assert!(
        docs(&joined) == docs(&apart),
        "{answer}: the documents differ"
    );
    (answer, writes)
}

#[test]
fn a_new_command_opens_its_lease_and_permit_in_one_commit() {
    let (answer, writes) = same_both_ways(&Store::new(), 0, T0, 0);
    assert_eq!(answer, "acquired 1 permit 1 false");
    // The root, its two events, the lifecycle; the plan, the send record, its event,
    // the key's index.
    assert_eq!(writes, 8);
}

#[test]
fn a_takeover_re_sends_in_the_same_commit() {
    let mut store = leased();
    apply(&mut store, &Op::Begin(0, 1, T0));
    let (answer, _) = same_both_ways(&store, 1, T0 + 61 * SEC, 0);
    assert_eq!(answer, "acquired 2 permit 1 true");
}

#[test]
fn a_busy_or_finished_command_opens_nothing() {
    let mut store = leased();
    apply(&mut store, &Op::Begin(0, 1, T0));
    let (busy, writes) = same_both_ways(&store, 1, T0 + SEC, 0);
    assert_eq!((busy.as_str(), writes), ("lease_busy", 0));
    apply(
        &mut store,
        &Op::Outcome(0, 1, 1, succeeded(0), T0 + 2 * SEC),
    );
    let (done, writes) = same_both_ways(&store, 1, T0 + 3 * SEC, 0);
    assert_eq!((done.as_str(), writes), ("terminal_succeeded", 0));
}

#[test]
fn a_refused_permit_still_commits_the_lease_it_followed() {
    // Another plan: the takeover lands, the permit is `plan_conflict`.
    let mut store = leased();
    apply(&mut store, &Op::Begin(0, 1, T0));
    let (answer, writes) = same_both_ways(&store, 1, T0 + 61 * SEC, 1);
    assert_eq!(answer, "acquired 2 plan_conflict");
    assert_eq!(writes, 2, "the lifecycle and its event");
    // Past the cutoff: the takeover lands, the permit is `send_cutoff_passed`.
    let (answer, _) = same_both_ways(&store, 1, CUTOFF, 0);
    assert_eq!(answer, "acquired 2 send_cutoff_passed");
}
