use super::*;
use crate::document::fields;
use crate::identity::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
use crate::lease::{Acquire, LeaseCall, Terminal, TerminalRequest};
use crate::registration::Registration;
use crate::testing::Store;
use crate::time::Timestamp;
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

/// The documents of command `hash` in `store`, as the verifier's scan groups them.
fn command_docs(store: &Store, hash: &Digest) -> CommandDocs {
    let get = |path: String| {
        store.get(&path).map(|fields| StoredDoc {
            path,
            fields: fields.clone(),
        })
    };
    let mut audits: Vec<(i64, StoredDoc)> = store
        .iter()
        .filter_map(|(path, fields)| {
            let id = path.strip_prefix("auditEvents/")?;
            let (h, revision) = audit::parse_id(id)?;
            (&h == hash).then(|| {
                (
                    revision,
                    StoredDoc {
                        path: path.clone(),
                        fields: fields.clone(),
                    },
                )
            })
        })
        .collect();
    audits.sort_by_key(|(r, _)| *r);
    CommandDocs {
        root: get(format!("checkoutRequests/{hash}")),
        lifecycles: get(lifecycle::path(hash)).into_iter().collect(),
        audits,
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
            2,
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

fn arbitrary_value() -> impl Strategy<Value = gcloud_sdk::google::firestore::v1::Value> {
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
