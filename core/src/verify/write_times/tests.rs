use super::*;
use crate::digest::Digest;
use crate::document::lifecycle;
use crate::time::Timestamp;
use crate::verify::stored::WriteTime;

fn at(seconds: i64) -> WriteTime {
    WriteTime { seconds, nanos: 0 }
}

fn doc(path: &str, created: i64, updated: i64) -> StoredDoc {
    StoredDoc {
        updated: at(updated),
        ..StoredDoc::new(path, Default::default(), at(created))
    }
}

/// Registered at 1, leased at 2, taken over at 3, succeeded at 4: each write time as
/// the journal leaves it, then `edit` applied.
fn codes(edit: fn(&mut CommandDocs)) -> Vec<(FindingCode, String)> {
    let hash = Digest::parse(&"ab".repeat(32)).expect("hash");
    let mut docs = CommandDocs {
        root: Some(doc("root", 1, 1)),
        lifecycles: vec![doc("lifecycle", 2, 4)],
        audits: (1..=4).map(|r| (r, doc(&format!("e{r}"), r, r))).collect(),
        ..CommandDocs::default()
    };
    let zero = Timestamp::from_micros(0).expect("time");
    let parsed = Lifecycle {
        command_key_hash: hash.clone(),
        state: lifecycle::LifecycleState::Succeeded,
        command_revision: 4,
        fence_epoch: crate::fence::FenceEpoch::new(2).unwrap(),
        lease_owner_fingerprint: hash,
        lease_acquired_at: zero,
        lease_expires_at: zero,
        created_at: zero,
        updated_at: zero,
        terminal_commitment: None,
        released: false,
    };
    edit(&mut docs);
    let current = docs.lifecycles.first().cloned();
    check_command(&docs, current.as_ref().map(|d| (d, &parsed)))
        .into_iter()
        .map(|f| (f.code, f.path))
        .collect()
}

#[test]
fn each_write_time_relation_is_checked() {
    use FindingCode::{CommitTimeMismatch as Commit, RewrittenDocument as Rewritten};
    let s = |p: &str| p.to_owned();
    type Case = (
        &'static str,
        fn(&mut CommandDocs),
        Vec<(FindingCode, String)>,
    );
    let cases: [Case; 9] = [
        ("as the journal writes them", |_| {}, vec![]),
        (
            "root rewritten",
            |d| d.root = Some(doc("root", 1, 9)),
            vec![(Rewritten, s("root"))],
        ),
        (
            "event rewritten",
            |d| d.audits[2].1.updated = at(9),
            vec![(Rewritten, s("e3"))],
        ),
        (
            "root deleted and written again",
            |d| d.root = Some(doc("root", 9, 9)),
            vec![(Commit, s("e1"))],
        ),
        (
            "an event deleted and written again",
            |d| d.audits[1].1 = doc("e2", 9, 9),
            vec![(Commit, s("e2")), (Commit, s("lifecycle"))],
        ),
        (
            "the last event written again",
            |d| d.audits[3].1 = doc("e4", 9, 9),
            vec![(Commit, s("lifecycle"))],
        ),
        (
            "lifecycle edited after its last transition",
            |d| d.lifecycles[0].updated = at(9),
            vec![(Commit, s("lifecycle"))],
        ),
        (
            "start: registration and acquisition in one commit",
            |d| {
                d.audits[1].1 = doc("e2", 1, 1);
                d.lifecycles[0].created = at(1);
            },
            vec![],
        ),
        (
            "two transitions in one commit",
            |d| d.audits[2].1 = doc("e3", 2, 2),
            vec![(Commit, s("e2"))],
        ),
    ];
    for (name, edit, expected) in cases {
        assert_eq!(codes(edit), expected, "{name}");
    }
}

#[test]
fn a_reservation_and_its_effects_are_one_commit_never_rewritten() {
    use FindingCode::{CommitTimeMismatch as Commit, RewrittenDocument as Rewritten};
    let found =
        |reservation: Option<StoredDoc>, effects: &[StoredDoc]| -> Vec<(FindingCode, String)> {
            check_reservation(reservation.as_ref(), effects)
                .into_iter()
                .map(|f| (f.code, f.path))
                .collect()
        };
    let r = doc("r", 5, 5);
    assert_eq!(
        found(Some(r.clone()), &[doc("e0", 5, 5), doc("e1", 5, 5)]),
        vec![]
    );
    assert_eq!(
        found(Some(r.clone()), &[doc("e0", 5, 6), doc("e1", 7, 7)]),
        vec![(Rewritten, "e0".into()), (Commit, "e1".into())]
    );
    assert_eq!(
        found(Some(doc("r", 5, 8)), &[]),
        vec![(Rewritten, "r".into())]
    );
    // Without the reservation, only rewrites: the missing reservation is reported
    // by the ledger checks.
    assert_eq!(
        found(None, &[doc("e0", 1, 1), doc("e1", 2, 3)]),
        vec![(Rewritten, "e1".into())]
    );
}
