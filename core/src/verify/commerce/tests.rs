use super::*;
use crate::document::fields;
use crate::document::value::Value;
use crate::fence::FenceEpoch;
use crate::identity::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
use crate::lease::{Acquire, LeaseCall, Terminal, TerminalRequest};
use crate::registration::Registration;
use crate::testing::Store;
use crate::time::Timestamp;
use crate::verify::stored::WriteTime;
use proptest::prelude::*;

fn command() -> CommandInput {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: "m1",
        command_id: "3f2504e0-4f89-41d3-9a0c-0305e82c3301",
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &serde_json::json!({"a": 1}),
    })
    .expect("valid")
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_micros(seconds * 1_000_000).expect("time")
}

/// The document at `path` with its write times (logical times as seconds).
fn stored(store: &Store, path: &str) -> Option<StoredDoc> {
    let (created, updated) = store.written(path)?;
    let time = |t: u64| WriteTime {
        seconds: i64::try_from(t).expect("time"),
        nanos: 0,
    };
    Some(StoredDoc {
        path: path.to_owned(),
        fields: store.get(path)?.clone(),
        created: time(created),
        updated: time(updated),
    })
}

/// The documents of command `hash` in `store`, as the verifier's scan groups them.
fn command_docs(store: &Store, hash: &Digest) -> CommandDocs {
    let get = |path: String| stored(store, &path);
    let mut audits: Vec<(i64, StoredDoc)> = store
        .iter()
        .filter_map(|(path, _)| {
            let id = path.strip_prefix("auditEvents/")?;
            let (h, revision) = audit::parse_id(id)?;
            (&h == hash).then(|| (revision, stored(store, path).expect("stored")))
        })
        .collect();
    audits.sort_by_key(|(r, _)| *r);
    CommandDocs {
        root: get(format!("checkoutRequests/{hash}")),
        lifecycles: get(lifecycle::path(hash)).into_iter().collect(),
        audits,
        ..CommandDocs::default()
    }
}

/// A command registered, leased, taken over and completed: revisions 1 to 4.
fn history() -> (Store, Digest) {
    let cmd = command();
    let identity = cmd.identity();
    let hash = identity.command_key_hash().clone();
    let owner = |n: &str| {
        cmd.lease_owner(&identity, &LeaseId::parse(n).expect("lease"))
            .expect("owner")
    };
    let a = owner("9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2d");
    let b = owner("9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2e");
    let mut store = Store::new();
    store
        .answer(&Registration::new(identity.clone(), at(100)))
        .expect("registered");
    store
        .answer(&Acquire::new(LeaseCall::new(identity.clone(), a, at(110))))
        .expect("leased");
    store
        .answer(&Acquire::new(LeaseCall::new(
            identity.clone(),
            b.clone(),
            at(200),
        )))
        .expect("taken over");
    let reference = TerminalReferenceFingerprint::parse(&"ab".repeat(32)).expect("reference");
    let commitment = identity.terminal_commitment(&reference);
    store
        .answer(&Terminal::new(
            LeaseCall::new(identity, b, at(210)),
            FenceEpoch::stored(2),
            TerminalRequest::Succeed(commitment),
        ))
        .expect("completed");
    (store, hash)
}

fn codes(found: &[Finding]) -> Vec<FindingCode> {
    found.iter().map(|f| f.code).collect()
}

#[test]
fn a_full_history_is_clean() {
    let (store, hash) = history();
    let docs = command_docs(&store, &hash);
    assert_eq!(docs.audits.len(), 4);
    assert_eq!(check_command(&hash, &docs), vec![]);
}

#[test]
fn a_registration_alone_is_clean() {
    let cmd = command();
    let mut store = Store::new();
    store
        .answer(&Registration::new(cmd.identity(), at(1)))
        .expect("registered");
    let hash = cmd.identity().command_key_hash().clone();
    assert_eq!(check_command(&hash, &command_docs(&store, &hash)), vec![]);
}

#[test]
fn gaps_are_one_finding_per_missing_range() {
    let (store, hash) = history();
    let mut docs = command_docs(&store, &hash);
    docs.audits.retain(|(r, _)| *r == 1 || *r == 4);
    let found = check_command(&hash, &docs);
    assert_eq!(
        found,
        vec![Finding {
            code: FindingCode::AuditGap,
            path: audit::path(&hash, 2)
        }]
    );
}

#[test]
fn a_missing_tail_is_reported_once() {
    let (store, hash) = history();
    let mut docs = command_docs(&store, &hash);
    docs.audits.retain(|(r, _)| *r <= 2);
    let found = codes(&check_command(&hash, &docs));
    assert_eq!(
        found,
        vec![
            FindingCode::AuditGap,
            FindingCode::LifecycleWithoutCurrentEvent
        ]
    );
}

#[test]
fn a_huge_claimed_revision_is_checked_in_linear_time() {
    let (store, hash) = history();
    let mut docs = command_docs(&store, &hash);
    // A well-formed lifecycle that claims the maximum revision: the missing events
    // are one range, found without walking ten billion revisions.
    if let Some(doc) = docs.lifecycles.first_mut() {
        doc.fields
            .insert("commandRevision".into(), fields::int(MAX_REVISION));
        doc.fields
            .insert("fenceEpoch".into(), fields::int(MAX_REVISION - 2));
    }
    let found = check_command(&hash, &docs);
    assert_eq!(
        codes(&found),
        vec![
            FindingCode::AuditGap,
            FindingCode::LifecycleWithoutCurrentEvent
        ]
    );
    assert_eq!(found[0].path, audit::path(&hash, 5));
}

#[test]
fn an_orphan_history_reports_every_document() {
    let (store, hash) = history();
    let mut docs = command_docs(&store, &hash);
    docs.root = None;
    let found = codes(&check_command(&hash, &docs));
    assert_eq!(
        found,
        vec![
            FindingCode::OrphanLifecycle,
            FindingCode::OrphanAuditEvent,
            FindingCode::OrphanAuditEvent,
            FindingCode::OrphanAuditEvent,
            FindingCode::OrphanAuditEvent
        ]
    );
}

fn arbitrary_value() -> impl Strategy<Value = crate::document::value::Value> {
    prop_oneof![
        any::<i64>().prop_map(fields::int),
        "[a-z_]{0,12}".prop_map(fields::string),
        Just(fields::null()),
        (0_i64..4_000_000_000).prop_map(|s| fields::timestamp(at(s))),
    ]
}

proptest! {
    /// Whatever a damaged journal holds, the checker answers without panicking.
    #[test]
    fn damaged_histories_never_panic(
        drop_mask in 0_u8..32,
        edits in proptest::collection::vec((0_usize..6, 0_usize..14, arbitrary_value()), 0..6),
        extra_revision in proptest::option::of(0_i64..MAX_REVISION),
    ) {
        let (store, hash) = history();
        let mut docs = command_docs(&store, &hash);
        if drop_mask & 1 != 0 { docs.root = None; }
        if drop_mask & 2 != 0 { docs.lifecycles.clear(); }
        docs.audits.retain(|(r, _)| drop_mask & (1 << (2 + (*r as u8 % 3))) == 0);
        for (target, field, value) in edits {
            let doc = match target {
                0 => docs.root.as_mut(),
                1 => docs.lifecycles.first_mut(),
                n => docs.audits.get_mut(n - 2).map(|(_, d)| d),
            };
            if let Some(doc) = doc {
                let mut names: Vec<String> = doc.fields.keys().cloned().collect();
                names.sort();
                if let Some(name) = names.get(field % names.len().max(1)) {
                    doc.fields.insert(name.clone(), value);
                }
            }
        }
        if let Some(revision) = extra_revision {
            let copy = docs.audits.last().map(|(_, d)| d.clone());
            if let Some(doc) = copy {
                docs.audits.push((revision, doc));
            }
        }
        let _ = check_command(&hash, &docs);
    }
}

/// A document of the command in a table case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Doc {
    Lifecycle,
    Event(i64),
}

fn path_of(hash: &Digest, doc: Doc) -> String {
    match doc {
        Doc::Lifecycle => lifecycle::path(hash),
        Doc::Event(revision) => audit::path(hash, revision),
    }
}

fn edit(docs: &mut CommandDocs, doc: Doc, field: &str, value: Value) {
    let target = match doc {
        Doc::Lifecycle => docs.lifecycles.first_mut(),
        Doc::Event(revision) => docs
            .audits
            .iter_mut()
            .find(|(r, _)| *r == revision)
            .map(|(_, d)| d),
    };
    target.expect("document").fields.insert(field.into(), value);
}

fn time(seconds: i64) -> Value {
    micros(seconds * 1_000_000)
}

fn micros(micros: i64) -> Value {
    fields::timestamp(Timestamp::from_micros(micros).expect("time"))
}

/// The takeover moved to `start` (microseconds), with its lease, the terminal event
/// 10 s later and the lifecycle.
fn takeover_at(start: i64) -> Vec<(Doc, &'static str, Value)> {
    let expiry = start + 60_000_000;
    vec![
        (Doc::Event(3), "occurredAt", micros(start)),
        (Doc::Event(3), "leaseExpiresAt", micros(expiry)),
        (Doc::Event(4), "occurredAt", micros(start + 10_000_000)),
        (Doc::Event(4), "leaseExpiresAt", micros(expiry)),
        (Doc::Lifecycle, "leaseAcquiredAt", micros(start)),
        (Doc::Lifecycle, "leaseExpiresAt", micros(expiry)),
        (Doc::Lifecycle, "updatedAt", micros(start + 10_000_000)),
    ]
}

/// Each case edits the clean history (registered at 100, acquired at 110 until 170,
/// taken over at 200 until 260, succeeded at 210) and names every finding expected.
#[test]
fn each_broken_lease_rule_is_found_at_its_cause() {
    use Doc::*;
    use FindingCode as F;
    let s = fields::string;
    type Case = (&'static str, Vec<(Doc, &'static str, Value)>, Vec<(F, Doc)>);
    let cases: Vec<Case> = vec![
        (
            "takeover 10 s into the running lease, forged consistently",
            vec![
                (Event(3), "occurredAt", time(120)),
                (Event(3), "leaseExpiresAt", time(180)),
                (Event(4), "occurredAt", time(130)),
                (Event(4), "leaseExpiresAt", time(180)),
                (Lifecycle, "leaseAcquiredAt", time(120)),
                (Lifecycle, "leaseExpiresAt", time(180)),
                (Lifecycle, "updatedAt", time(130)),
            ],
            vec![(F::OverlappingLease, Event(3))],
        ),
        (
            "takeover at the expiry, exactly",
            takeover_at(170_000_000),
            vec![],
        ),
        (
            "takeover 1 µs before the expiry",
            takeover_at(169_999_999),
            vec![(F::OverlappingLease, Event(3))],
        ),
        (
            "event in another environment",
            vec![(Event(2), "environment", s("staging"))],
            vec![(F::EventRootMismatch, Event(2))],
        ),
        (
            "event of another scope kind",
            vec![(Event(3), "callerScopeKind", s("guest"))],
            vec![(F::EventRootMismatch, Event(3))],
        ),
        (
            "event of another command type",
            vec![(Event(2), "commandType", s("refund"))],
            vec![(F::EventRootMismatch, Event(2))],
        ),
        (
            "first transition before the registration",
            vec![
                (Event(2), "occurredAt", time(50)),
                (Event(2), "leaseExpiresAt", time(110)),
                (Lifecycle, "createdAt", time(50)),
            ],
            vec![
                (F::TimestampRegression, Event(2)),
                (F::TimestampRegression, Lifecycle),
            ],
        ),
        (
            "acquisition with a 2-hour lease",
            vec![(Event(2), "leaseExpiresAt", time(110 + 7200))],
            vec![(F::LeaseDurationMismatch, Event(2))],
        ),
        (
            "takeover with a 61 s lease, forged consistently",
            vec![
                (Event(3), "leaseExpiresAt", time(261)),
                (Event(4), "leaseExpiresAt", time(261)),
            ],
            vec![
                (F::LeaseDurationMismatch, Event(3)),
                (F::LifecycleEventMismatch, Event(4)),
                (F::LifecycleHistoryMismatch, Lifecycle),
            ],
        ),
        (
            "terminal event carrying another expiry",
            vec![(Event(4), "leaseExpiresAt", time(300))],
            vec![
                (F::LifecycleEventMismatch, Event(4)),
                (F::TerminalLeaseMismatch, Event(4)),
            ],
        ),
        (
            "terminal event at the expiry",
            vec![(Event(4), "occurredAt", time(260))],
            vec![
                (F::LifecycleEventMismatch, Event(4)),
                (F::TerminalLeaseMismatch, Event(4)),
            ],
        ),
        (
            "lifecycle created at another time",
            vec![(Lifecycle, "createdAt", time(105))],
            vec![(F::LifecycleHistoryMismatch, Lifecycle)],
        ),
        (
            "lifecycle's lease acquired at another time",
            vec![
                (Lifecycle, "leaseAcquiredAt", time(205)),
                (Lifecycle, "leaseExpiresAt", time(265)),
                (Event(4), "leaseExpiresAt", time(265)),
            ],
            vec![
                (F::TerminalLeaseMismatch, Event(4)),
                (F::LifecycleHistoryMismatch, Lifecycle),
            ],
        ),
    ];
    for (name, edits, expected) in cases {
        let (store, hash) = history();
        let mut docs = command_docs(&store, &hash);
        for (doc, field, value) in edits {
            edit(&mut docs, doc, field, value);
        }
        let mut found = check_command(&hash, &docs);
        found.sort();
        let mut expected: Vec<Finding> = expected
            .into_iter()
            .map(|(code, doc)| Finding {
                code,
                path: path_of(&hash, doc),
            })
            .collect();
        expected.sort();
        assert_eq!(found, expected, "{name}");
    }
}

/// Registered at 100; acquired at 110, taken over at 200 and 300; succeeded at 310:
/// revisions 1 to 5.
fn two_takeovers() -> (Store, Digest) {
    let cmd = command();
    let identity = cmd.identity();
    let hash = identity.command_key_hash().clone();
    let owner = |n: char| {
        let id = format!("9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2{n}");
        cmd.lease_owner(&identity, &LeaseId::parse(&id).expect("lease"))
            .expect("owner")
    };
    let mut store = Store::new();
    store
        .answer(&Registration::new(identity.clone(), at(100)))
        .expect("registered");
    for (n, t) in [('a', 110), ('b', 200), ('c', 300)] {
        store
            .answer(&Acquire::new(LeaseCall::new(
                identity.clone(),
                owner(n),
                at(t),
            )))
            .expect("leased");
    }
    store
        .answer(&Terminal::new(
            LeaseCall::new(identity.clone(), owner('c'), at(310)),
            FenceEpoch::stored(3),
            TerminalRequest::Fail,
        ))
        .expect("failed");
    (store, hash)
}

#[test]
fn a_missing_takeover_event_is_one_gap_and_no_fence_finding() {
    let (store, hash) = two_takeovers();
    let mut docs = command_docs(&store, &hash);
    assert_eq!(docs.audits.len(), 5);
    assert_eq!(check_command(&hash, &docs), vec![]);
    docs.audits.retain(|(r, _)| *r != 3);
    assert_eq!(
        check_command(&hash, &docs),
        vec![Finding {
            code: FindingCode::AuditGap,
            path: audit::path(&hash, 3)
        }]
    );
}

#[test]
fn across_a_gap_a_takeover_still_waits_for_the_last_known_lease() {
    let (store, hash) = two_takeovers();
    let mut docs = command_docs(&store, &hash);
    docs.audits.retain(|(r, _)| *r != 3);
    // Revision 4 (fence 3) claims a takeover at 150, while revision 2's lease ran to
    // 170: whatever the missing revision was, two holders overlapped.
    edit(&mut docs, Doc::Event(4), "occurredAt", time(150));
    edit(&mut docs, Doc::Event(4), "leaseExpiresAt", time(210));
    let mut found = codes(&check_command(&hash, &docs));
    found.sort();
    assert_eq!(
        found,
        vec![
            FindingCode::AuditGap,
            FindingCode::OverlappingLease,
            FindingCode::TerminalLeaseMismatch,
            FindingCode::LifecycleHistoryMismatch
        ]
    );
}

mod releases;
