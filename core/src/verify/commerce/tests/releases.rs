//! `verify` over lease releases (`verify::releases`): the clean histories a release
//! makes, and each finding on a planted or broken record.

use super::*;
use crate::document::release;
use crate::lease::Release;

fn owner(n: &str) -> Digest {
    let cmd = command();
    cmd.lease_owner(&cmd.identity(), &LeaseId::parse(n).expect("lease"))
        .expect("owner")
}

const A: &str = "9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2d";
const B: &str = "9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2e";

fn call(lease: &str, seconds: i64) -> LeaseCall {
    LeaseCall::new(command().identity(), owner(lease), at(seconds))
}

/// Registered at 100, leased by A at 110, released at 115; with `takeover`, B takes
/// it over at once (115) and completes at 120.
fn released(takeover: bool) -> (Store, Digest) {
    let identity = command().identity();
    let hash = identity.command_key_hash().clone();
    let mut store = Store::new();
    store
        .answer(&Registration::new(identity.clone(), at(100)))
        .expect("registered");
    store.answer(&Acquire::new(call(A, 110))).expect("leased");
    store
        .answer(&Release::new(call(A, 115), FenceEpoch::FIRST))
        .expect("released");
    if takeover {
        store
            .answer(&Acquire::new(call(B, 115)))
            .expect("taken over at once");
        let reference = TerminalReferenceFingerprint::parse(&"ab".repeat(32)).expect("reference");
        store
            .answer(&Terminal::new(
                call(B, 120),
                FenceEpoch::stored(2),
                TerminalRequest::Succeed(identity.terminal_commitment(&reference)),
            ))
            .expect("completed");
    }
    (store, hash)
}

fn docs_of(store: &Store, hash: &Digest) -> CommandDocs {
    let mut docs = command_docs(store, hash);
    for fence in (1..=5).map(FenceEpoch::stored) {
        if let Some(doc) = stored(store, &release::path(hash, fence)) {
            docs.releases.push((fence, doc));
        }
    }
    docs
}

fn record(hash: &Digest, fence: i64, seconds: i64) -> crate::document::fields::FieldMap {
    release::LeaseRelease {
        command_key_hash: hash.clone(),
        fence_epoch: FenceEpoch::stored(fence),
        released_at: at(seconds),
    }
    .encode()
}

#[test]
fn a_released_lease_and_a_takeover_at_once_are_clean() {
    for takeover in [false, true] {
        let (store, hash) = released(takeover);
        let docs = docs_of(&store, &hash);
        assert_eq!(docs.releases.len(), 1);
        assert_eq!(check_command(&hash, &docs), vec![], "takeover {takeover}");
    }
}

#[test]
fn a_takeover_before_the_lease_ran_out_without_its_release_overlaps() {
    let (store, hash) = released(true);
    let mut docs = docs_of(&store, &hash);
    docs.releases.clear();
    assert!(codes(&check_command(&hash, &docs)).contains(&FindingCode::OverlappingLease));
    // A release recorded after the takeover does not excuse it either.
    let mut store = store;
    let path = release::path(&hash, FenceEpoch::FIRST);
    store.insert(path.clone(), record(&hash, 1, 116));
    let found = check_command(&hash, &docs_of(&store, &hash));
    assert!(
        codes(&found).contains(&FindingCode::OverlappingLease),
        "{found:?}"
    );
}

#[test]
fn a_released_lifecycle_needs_its_record_at_its_time() {
    let (mut store, hash) = released(false);
    let path = release::path(&hash, FenceEpoch::FIRST);
    let lifecycle_path = lifecycle::path(&hash);
    // No record.
    let mut docs = docs_of(&store, &hash);
    docs.releases.clear();
    assert_eq!(
        check_command(&hash, &docs),
        vec![Finding {
            code: FindingCode::ReleaseMismatch,
            path: lifecycle_path.clone(),
        }]
    );
    // A record at another time (rewritten too).
    store.insert(path.clone(), record(&hash, 1, 116));
    let found = check_command(&hash, &docs_of(&store, &hash));
    assert!(found.contains(&Finding {
        code: FindingCode::ReleaseMismatch,
        path: lifecycle_path,
    }));
    assert!(found.contains(&Finding {
        code: FindingCode::ReleaseMismatch,
        path,
    }));
}

#[test]
fn a_planted_record_is_a_finding_wherever_it_does_not_fit() {
    // A record of the fence the lifecycle still holds (version 1).
    let (mut store, hash) = history();
    store.insert(
        release::path(&hash, FenceEpoch::FIRST),
        record(&hash, 1, 300),
    );
    let found = check_command(&hash, &docs_of(&store, &hash));
    // Fence 1 (acquired at 110) cannot release at 300, after its lease.
    assert!(found.contains(&Finding {
        code: FindingCode::ReleaseMismatch,
        path: release::path(&hash, FenceEpoch::FIRST),
    }));
    // A record of a fence never acquired, and a malformed one.
    let (mut store, hash) = released(false);
    store.insert(
        release::path(&hash, FenceEpoch::stored(2)),
        record(&hash, 2, 115),
    );
    let found = check_command(&hash, &docs_of(&store, &hash));
    assert!(found.contains(&Finding {
        code: FindingCode::ReleaseMismatch,
        path: release::path(&hash, FenceEpoch::stored(2)),
    }));
    let (mut store, hash) = released(false);
    let mut broken = record(&hash, 1, 115);
    broken.insert("fenceEpoch".into(), fields::int(2));
    store.insert(release::path(&hash, FenceEpoch::FIRST), broken);
    let found = check_command(&hash, &docs_of(&store, &hash));
    assert!(found.contains(&Finding {
        code: FindingCode::ReleaseMismatch,
        path: release::path(&hash, FenceEpoch::FIRST),
    }));
    // A lifecycle still holding (version 1) a fence that was released.
    let identity = command().identity();
    let hash = identity.command_key_hash().clone();
    let mut store = Store::new();
    store
        .answer(&Registration::new(identity, at(100)))
        .expect("registered");
    store.answer(&Acquire::new(call(A, 110))).expect("leased");
    store.insert(
        release::path(&hash, FenceEpoch::FIRST),
        record(&hash, 1, 112),
    );
    assert!(
        check_command(&hash, &docs_of(&store, &hash)).contains(&Finding {
            code: FindingCode::ReleaseMismatch,
            path: lifecycle::path(&hash),
        })
    );
}

#[test]
fn a_terminal_event_by_a_released_fence_is_a_write_after_release() {
    // Fence 2 (acquired at 200) completed at 210; a release of it planted at 205.
    let (mut store, hash) = history();
    store.insert(
        release::path(&hash, FenceEpoch::stored(2)),
        record(&hash, 2, 205),
    );
    let found = check_command(&hash, &docs_of(&store, &hash));
    assert!(
        found.contains(&Finding {
            code: FindingCode::WriteAfterRelease,
            path: audit::path(&hash, 4),
        }),
        "{found:?}"
    );
}
