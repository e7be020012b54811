//! Every collection keys its documents, and nothing else.

use super::*;
use crate::verify::stored::WriteTime;

fn doc(path: &str) -> StoredDoc {
    StoredDoc::new(path, Default::default(), WriteTime::default())
}

/// The key a classifier gives a path: `Ok(Some(..))` a command or reservation,
/// `Ok(None)` standalone, `Err(())` unexpected.
type Key = Result<Option<(String, Part)>, ()>;

fn key(classify: Classify, path: &str) -> Key {
    match classify(doc(path)) {
        Keyed::Command(hash, part, d) => {
            assert_eq!(d.path, path);
            Ok(Some((hash.as_str().to_owned(), part)))
        }
        Keyed::Standalone(d) => {
            assert_eq!(d.path, path);
            Ok(None)
        }
        Keyed::Unexpected(p) => {
            assert_eq!(p, path);
            Err(())
        }
    }
}

#[test]
fn segments_are_exact() {
    assert_eq!(segments::<2>("a/b"), Some(["a", "b"]));
    assert_eq!(segments::<2>("a/b/c"), None);
    assert_eq!(segments::<2>("a"), None);
    assert_eq!(segments::<4>("a/b/c/d"), Some(["a", "b", "c", "d"]));
    assert_eq!(segments::<2>("a/"), Some(["a", ""]));
}

#[test]
fn every_collection_keys_its_documents_and_nothing_else() {
    let h = "ab".repeat(32);
    let some = |part| Ok(Some((h.clone(), part)));
    let tree = classify_command_tree;
    let cases: [(Classify, String, Key); 35] = [
        (tree, format!("checkoutRequests/{h}"), some(Part::Root)),
        (tree, "checkoutRequests/not-a-hash".into(), Err(())),
        (tree, format!("checkoutRequests/{h}/x"), Err(())),
        (
            tree,
            format!("checkoutRequests/{h}/lifecycle/current"),
            some(Part::Lifecycle),
        ),
        (
            tree,
            format!("checkoutRequests/{h}/lifecycle/other"),
            some(Part::Lifecycle),
        ),
        (
            tree,
            format!("checkoutRequests/{h}/lifecycles/current"),
            Err(()),
        ),
        (
            tree,
            format!("checkoutRequests/{h}/lifecycle/current/history/x"),
            Err(()),
        ),
        (
            tree,
            format!("checkoutRequests/{h}/a/b/lifecycle/current"),
            Err(()),
        ),
        (tree, "checkoutRequests/x/lifecycle/current".into(), Err(())),
        (
            classify_stray,
            format!("elsewhere/{h}/lifecycle/current"),
            Err(()),
        ),
        (
            classify_audit,
            format!("auditEvents/commerce_command_{h}_0000000002"),
            some(Part::Audit(2)),
        ),
        (
            classify_audit,
            format!("auditEvents/commerce_command_{h}_2"),
            Err(()),
        ),
        (classify_audit, "auditEvents/aaaa".into(), Err(())),
        (
            classify_audit,
            format!("auditEvents/commerce_command_{h}_0000000002/sub/x"),
            Err(()),
        ),
        (
            classify_reservation,
            format!("ledgerReservations/{h}"),
            some(Part::Reservation),
        ),
        (classify_reservation, "ledgerReservations/0".into(), Err(())),
        (
            classify_reservation,
            format!("ledgerReservations/{h}/a/b"),
            Err(()),
        ),
        (
            classify_effect,
            format!("ledgerTransactions/{h}_0001"),
            some(Part::Effect),
        ),
        (
            classify_effect,
            format!("ledgerTransactions/{h}_1"),
            Ok(None),
        ),
        (
            classify_effect,
            "ledgerTransactions/legacy-0".into(),
            Ok(None),
        ),
        (classify_effect, "ledgerTransactions/a/b/c".into(), Err(())),
        (
            classify_effect,
            format!("ledgerTransactions/{h}_0001/x/y"),
            Err(()),
        ),
        (
            classify_effect,
            "ledgerTransactions/legacy-0/x/y".into(),
            Err(()),
        ),
        (
            tree,
            format!("checkoutRequests/{h}/providerSends/x"),
            Err(()),
        ),
        (tree, "checkoutRequests".into(), Err(())),
        (
            tree,
            format!("checkoutRequests/{h}/providerSends/plan"),
            some(Part::Send),
        ),
        (
            tree,
            format!("checkoutRequests/{h}/providerSends/current"),
            some(Part::Send),
        ),
        (
            tree,
            format!("checkoutRequests/{h}/providerSends/plan/x/y"),
            Err(()),
        ),
        (
            classify_send_audit,
            format!("auditEvents/provider_send_{h}_0000000001"),
            some(Part::SendEvent(1)),
        ),
        (
            classify_send_audit,
            format!("auditEvents/provider_send_{h}_1"),
            Err(()),
        ),
        (classify_send_audit, "auditEvents/~last".into(), Err(())),
        (
            tree,
            format!("checkoutRequests/{h}/results/current"),
            some(Part::Result),
        ),
        (tree, format!("checkoutRequests/{h}/results/other"), Err(())),
        (
            tree,
            format!("checkoutRequests/{h}/results/current/x/y"),
            Err(()),
        ),
        (tree, "checkoutRequests/x/results/current".into(), Err(())),
    ];
    for (classify, path, expected) in cases {
        assert_eq!(key(classify, &path), expected, "{path}");
    }
}
