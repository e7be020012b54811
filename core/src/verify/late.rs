//! The late charges of one command (`lateCharges/{attempt:04}`, `sends::late`): each
//! parsed strictly, never rewritten, and consistent with the send record it was
//! decided from: an attempt no later than the current one, recorded absent if earlier
//! or if the reason says so, declined if the reason says so. Each one is also listed
//! for a person (`attention`).

use super::report::{Finding, FindingCode};
use super::stored::CommandDocs;
use crate::digest::Digest;
use crate::sends::LateReason;
use crate::sends::attempt::{self, AttemptState, SendAttempt};
use crate::sends::late::LateCharge;

/// The findings of `docs`' late charges (none when it has none).
pub(crate) fn check_late_charges(hash: &Digest, docs: &CommandDocs) -> Vec<Finding> {
    let path = attempt::path(hash);
    let current = docs
        .sends
        .iter()
        .find(|doc| doc.path == path)
        .and_then(|doc| SendAttempt::parse(hash, &doc.fields).ok());
    let mut out = Vec::new();
    for (attempt, doc) in &docs.late_charges {
        let parsed = LateCharge::parse(hash, *attempt, &doc.fields).ok();
        let fits = match (&parsed, &current) {
            (Some(late), Some(current)) => {
                let earlier = late.attempt < current.attempt;
                let same = late.attempt == current.attempt;
                match late.reason {
                    LateReason::AttemptAbsent => {
                        earlier || (same && current.state == AttemptState::Absent)
                    }
                    LateReason::AttemptDeclined => same && current.state == AttemptState::Declined,
                }
            }
            // A late charge of a command with no readable send record: nothing it
            // could have been decided from (an unreadable record is reported itself).
            _ => false,
        };
        if !fits || doc.rewritten() || docs.root.is_none() {
            out.push(Finding {
                code: FindingCode::LateChargeMismatch,
                path: doc.path.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::fields;
    use crate::sends::late::path as late_path;
    use crate::sends::tests::{self as send_tests, Absent, Declined, Op, PROVABLE, SEC, T0};
    use crate::testing::Store;
    use crate::verify::stored::{StoredDoc, WriteTime};

    fn stored(store: &Store, path: &str) -> StoredDoc {
        let time = WriteTime {
            seconds: i64::try_from(store.update_time(path).expect("stored")).expect("small"),
            nanos: 0,
        };
        StoredDoc {
            path: path.to_owned(),
            fields: store.get(path).expect("stored").clone(),
            created: time,
            updated: time,
        }
    }

    fn docs(store: &Store) -> CommandDocs {
        let h = send_tests::hash();
        let late = (1..=2)
            .filter_map(|n| {
                let n = crate::sends::AttemptNumber::new(n).ok()?;
                let path = late_path(&h, n);
                store.get(&path).map(|_| (n, stored(store, &path)))
            })
            .collect();
        CommandDocs {
            root: Some(stored(store, &format!("checkoutRequests/{h}"))),
            sends: vec![stored(store, &attempt::path(&h))],
            late_charges: late,
            ..CommandDocs::default()
        }
    }

    fn run(ops: &[Op]) -> Store {
        let mut store = send_tests::leased();
        for op in ops {
            send_tests::apply(&mut store, op);
        }
        store
    }

    #[test]
    fn late_charges_the_journal_wrote_are_consistent_and_listed_for_a_person() {
        let h = send_tests::hash();
        for ops in [
            vec![
                Op::Begin(0, 1, T0),
                Op::Outcome(0, 1, 1, Declined, T0 + SEC),
                Op::LateCharge(1, 0, T0 + 2 * SEC),
            ],
            vec![
                Op::Begin(0, 1, T0),
                Op::Acquire(1, PROVABLE),
                Op::Reconcile(1, 2, 1, Absent, PROVABLE),
                Op::LateCharge(1, 0, PROVABLE + 1),
                Op::Begin(1, 2, PROVABLE + 2),
            ],
        ] {
            let docs = docs(&run(&ops));
            assert_eq!(docs.late_charges.len(), 1);
            assert_eq!(check_late_charges(&h, &docs), vec![]);
            let listed = crate::verify::attention::attention(&h, &docs);
            assert_eq!(
                listed.iter().map(|a| a.code.as_str()).collect::<Vec<_>>(),
                ["late_charge"]
            );
        }
    }

    #[test]
    fn a_late_charge_its_send_record_contradicts_is_found() {
        let h = send_tests::hash();
        let declined = run(&[
            Op::Begin(0, 1, T0),
            Op::Outcome(0, 1, 1, Declined, T0 + SEC),
            Op::LateCharge(1, 0, T0 + 2 * SEC),
        ]);
        let mismatch = |docs: &CommandDocs| {
            check_late_charges(&h, docs)
                .iter()
                .any(|f| f.code == FindingCode::LateChargeMismatch)
        };
        // The reason edited to one the declined attempt contradicts.
        let mut docs = docs(&declined);
        docs.late_charges[0]
            .1
            .fields
            .insert("reason".to_owned(), fields::string("attempt_absent"));
        assert!(mismatch(&docs));
        // Rewritten after it was created.
        let mut docs = self::docs(&declined);
        docs.late_charges[0].1.updated.seconds += 1;
        assert!(mismatch(&docs));
        // No root.
        let mut docs = self::docs(&declined);
        docs.root = None;
        assert!(mismatch(&docs));
        // An attempt still open beside a late charge of it.
        let mut docs = self::docs(&declined);
        let open = run(&[Op::Begin(0, 1, T0)]);
        docs.sends = vec![stored(&open, &attempt::path(&h))];
        assert!(mismatch(&docs));
    }
}
