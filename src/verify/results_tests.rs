//! The results document's checks, through the whole verifier over the in-memory store.

use super::{FindingCode, verify_documents};
use crate::identity::{CommandInput, CommandRequest, LeaseId};
use crate::time::Timestamp;
use command_journal_core::testing::Store;
use command_journal_core::tools::document::fields::{self, FieldMap};
use command_journal_core::tools::document::lifecycle;
use command_journal_core::tools::envelope::record::WithResult;
use command_journal_core::tools::envelope::stored::{self, StoredResult};
use command_journal_core::tools::lease::{Acquire, LeaseCall, Terminal, TerminalRequest};
use command_journal_core::tools::registration::Registration;
use command_journal_core::tools::sends::guard::Guarded;
use command_journal_core::{FenceEpoch, ResultEnvelope};

const DOCUMENTS: &str = "projects/p/databases/(default)/documents";

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_micros(seconds * 1_000_000).expect("time")
}

fn command() -> CommandInput {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: "m1",
        command_id: "3f2504e0-4f89-41d3-9a0c-0305e82c3311",
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &serde_json::json!({"a": 1}),
    })
    .expect("valid")
}

fn envelope(n: i64) -> ResultEnvelope {
    ResultEnvelope::new(&serde_json::json!({"id": "ch_1", "amount": n})).expect("envelope")
}

fn call(now: i64) -> LeaseCall {
    let cmd = command();
    let identity = cmd.identity();
    let lease = LeaseId::parse("9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2d").expect("lease");
    let owner = cmd.lease_owner(&identity, &lease).expect("owner");
    LeaseCall::new(identity, owner, at(now))
}

/// A registered and leased command; completed with envelope 500 when `complete`.
fn journal(complete: bool) -> Store {
    let identity = command().identity();
    let mut store = Store::new();
    store
        .answer(&Registration::new(identity.clone(), at(100)))
        .expect("registered");
    store.answer(&Acquire::new(call(110))).expect("leased");
    if complete {
        let hash = identity.command_key_hash();
        let commitment = identity.terminal_commitment(&envelope(500).reference());
        let terminal = Terminal::new(
            call(120),
            FenceEpoch::stored(1),
            TerminalRequest::Succeed(commitment),
        );
        let op = WithResult::new(Guarded::new(terminal, hash), hash, at(120), &envelope(500));
        store.answer(&op).expect("completed");
    }
    store
}

fn path() -> String {
    stored::path(command().identity().command_key_hash())
}

fn codes(store: &Store) -> Vec<(FindingCode, String)> {
    let report = verify_documents(DOCUMENTS, store.documents()).expect("verify");
    report
        .findings
        .into_iter()
        .map(|f| (f.code, f.path))
        .collect()
}

fn at_result(code: FindingCode) -> Vec<(FindingCode, String)> {
    vec![(code, path())]
}

#[test]
fn a_success_with_its_envelope_is_clean() {
    let store = journal(true);
    assert!(store.contains_key(&path()));
    assert_eq!(codes(&store), []);
}

fn with_field(
    store: &mut Store,
    forge: bool,
    field: &str,
    value: command_journal_core::tools::document::value::Value,
) {
    let doc: &mut FieldMap = if forge {
        store.forge(&path()).expect("doc")
    } else {
        store.get_mut(&path()).expect("doc")
    };
    doc.insert(field.to_owned(), value);
}

#[test]
fn each_broken_rule_has_its_code() {
    use FindingCode as F;
    let other = envelope(501);
    let cases: Vec<(
        &str,
        &str,
        command_journal_core::tools::document::value::Value,
        FindingCode,
    )> = vec![
        (
            "another envelope",
            "envelope",
            fields::string(other.canonical()),
            F::ResultCommitmentMismatch,
        ),
        (
            "re-spaced",
            "envelope",
            fields::string(r#"{"amount": 500,"id":"ch_1"}"#),
            F::MalformedResult,
        ),
        (
            "re-ordered",
            "envelope",
            fields::string(r#"{"id":"ch_1","amount":500}"#),
            F::MalformedResult,
        ),
        ("a map", "envelope", fields::int(1), F::MalformedResult),
        (
            "created later",
            "createdAt",
            fields::timestamp(at(121)),
            F::ResultCommitmentMismatch,
        ),
        (
            "schema",
            "resultSchemaVersion",
            fields::int(2),
            F::MalformedResult,
        ),
        (
            "hash",
            "commandKeyHash",
            fields::string("ab".repeat(32)),
            F::MalformedResult,
        ),
        ("extra", "x", fields::string("x"), F::MalformedResult),
    ];
    for (name, field, value, code) in cases {
        // Forged (write times kept): the content alone is found.
        let mut store = journal(true);
        with_field(&mut store, true, field, value.clone());
        assert_eq!(codes(&store), at_result(code), "{name}, forged");
        // Edited: the rewrite is found as well.
        let mut store = journal(true);
        with_field(&mut store, false, field, value);
        let found = codes(&store);
        assert!(found.contains(&(code, path())), "{name}: {found:?}");
        assert!(
            found.contains(&(F::RewrittenDocument, path())),
            "{name}: {found:?}"
        );
    }
}

#[test]
fn a_results_document_outside_a_success_is_an_orphan() {
    let done = journal(true);
    let doc = done.get(&path()).expect("doc").clone();
    // Leased, registered only, and without a root.
    let mut leased = journal(false);
    leased.insert(path(), doc.clone());
    assert_eq!(codes(&leased), at_result(FindingCode::OrphanResult));
    let mut registered = journal(false);
    registered.remove(&lifecycle::path(command().identity().command_key_hash()));
    for (path, _) in journal(false).iter() {
        if path.starts_with("auditEvents/") && !path.ends_with("_0000000001") {
            registered.remove(path);
        }
    }
    registered.insert(path(), doc.clone());
    assert_eq!(codes(&registered), at_result(FindingCode::OrphanResult));
    let mut alone = Store::new();
    alone.insert(path(), doc);
    assert_eq!(codes(&alone), at_result(FindingCode::OrphanResult));
}

#[test]
fn a_results_document_written_in_another_commit_is_found() {
    let mut store = journal(true);
    let doc = store.remove(&path()).expect("doc");
    store.insert(path(), doc);
    assert_eq!(codes(&store), at_result(FindingCode::CommitTimeMismatch));
    // Written before the success, in a commit of its own, with the right content.
    let mut early = journal(false);
    let identity = command().identity();
    let hash = identity.command_key_hash();
    early.insert(
        path(),
        StoredResult {
            command_key_hash: hash.clone(),
            envelope: envelope(500),
            created_at: at(120),
        }
        .encode(),
    );
    let commitment = identity.terminal_commitment(&envelope(500).reference());
    let terminal = Terminal::new(
        call(120),
        FenceEpoch::stored(1),
        TerminalRequest::Succeed(commitment),
    );
    early
        .answer(&Guarded::new(terminal, hash))
        .expect("a bare completion does not read it");
    assert_eq!(codes(&early), at_result(FindingCode::CommitTimeMismatch));
}

#[test]
fn a_deleted_envelope_reads_as_a_bare_success() {
    let mut store = journal(true);
    store.remove(&path());
    assert_eq!(codes(&store), []);
}

#[test]
fn the_envelope_binds_the_lifecycle_commitment() {
    // Free for a bare success, the commitment is bound by an envelope: a forged one
    // (write times kept) is found at the envelope.
    let mut store = journal(true);
    let lifecycle = lifecycle::path(command().identity().command_key_hash());
    store.forge(&lifecycle).expect("lifecycle").insert(
        "terminalCommitmentHash".into(),
        fields::string("ab".repeat(32)),
    );
    assert_eq!(
        codes(&store),
        at_result(FindingCode::ResultCommitmentMismatch)
    );
}
