use super::{is_mutable, with_proofs};
use crate::digest::Digest;
use crate::document::fields::{self, FieldMap};
use crate::document::{audit, lifecycle, root};
use crate::envelope::stored;
use crate::ledger::{effect, reservation};
use crate::sends::{attempt, bound_plan, event};
use crate::transaction::{Snapshot, Write};

fn hash() -> Digest {
    Digest::parse(&"ab".repeat(32)).expect("64 hex")
}

#[test]
fn the_mutable_documents_are_the_lifecycle_the_send_record_effect_rows_and_checkpoints() {
    let h = hash();
    let range = crate::key_range::KeyRange::new(0, 1).expect("the whole range");
    for path in [
        lifecycle::path(&h),
        attempt::path(&h),
        effect::path("row_1"),
        crate::recovery::checkpoint::path(range),
    ] {
        assert!(is_mutable(&path), "{path}");
    }
    for path in [
        root::path(&h),
        audit::path(&h, 2),
        bound_plan::path(&h),
        event::path(&h, 1),
        stored::path(&h),
        reservation::path(&h),
        format!("checkoutRequests/{h}/lifecycle/other"),
        "rentals/r1/lifecycle/current".to_owned(),
    ] {
        assert!(!is_mutable(&path), "{path}");
    }
}

fn doc(marker: i64) -> FieldMap {
    FieldMap::from([("n".to_owned(), fields::int(marker))])
}

#[test]
fn a_mutable_document_read_present_and_not_written_is_proven_unchanged() {
    let h = hash();
    let (life, send, plan) = (lifecycle::path(&h), attempt::path(&h), bound_plan::path(&h));
    let read = [
        root::path(&h),
        life.clone(),
        send.clone(),
        plan.clone(),
        stored::path(&h),
    ];
    let snapshot = Snapshot::new([
        (read[0].clone(), Some(doc(1))),
        (life.clone(), Some(doc(2))),
        (send.clone(), Some(doc(3))),
        (plan.clone(), Some(doc(4))),
        (read[4].clone(), None),
    ]);
    let event = Write::Create {
        path: event::path(&h, 2),
        fields: doc(5),
    };
    let replaced = Write::Replace {
        path: send.clone(),
        fields: doc(6),
    };
    let writes = with_proofs(
        read.iter().map(String::as_str),
        &snapshot,
        vec![event.clone(), replaced.clone()],
    );
    assert_eq!(
        writes,
        vec![
            event,
            replaced,
            Write::AssertUnchanged {
                path: life.clone(),
                fields: doc(2),
            },
        ]
    );
    // Only what the decision read is proven, even where the snapshot holds more.
    assert!(with_proofs([plan.as_str()], &snapshot, Vec::new()).is_empty());
    // Written by the decision itself: its own precondition proves it.
    let rewrite = Write::Replace {
        path: life.clone(),
        fields: doc(7),
    };
    assert_eq!(
        with_proofs([life.as_str()], &snapshot, vec![rewrite.clone()]),
        vec![rewrite]
    );
}
