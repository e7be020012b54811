use super::*;
use crate::document::fields;
use crate::sends::AttemptNumber;
use crate::sends::tests::{self as send_tests, Absent, Op, PROVABLE, T0};
use crate::testing::Store;
use crate::verify::stored::WriteTime;

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

/// Attempt 1 opened, proven absent, attempt 2 opened: two index documents.
fn journal() -> Store {
    let mut store = send_tests::leased();
    for op in [
        Op::Begin(0, 1, T0),
        Op::Acquire(1, PROVABLE),
        Op::Reconcile(1, 2, 1, Absent, PROVABLE),
        Op::Begin(1, 2, PROVABLE + 2),
    ] {
        send_tests::apply(&mut store, &op);
    }
    store
}

fn index_paths(store: &Store) -> Vec<String> {
    let mut paths: Vec<String> = store
        .keys()
        .filter(|p| p.starts_with("providerKeys/"))
        .cloned()
        .collect();
    paths.sort();
    paths
}

/// Every finding of the index document at `path` in `store`, held to its command.
fn findings(store: &Store, doc: StoredDoc) -> Vec<FindingCode> {
    match check(&doc) {
        Ok(indexed) => check_command(&indexed, |path| store.get(path))
            .into_iter()
            .map(|f| f.code)
            .collect(),
        Err(found) => found.into_iter().map(|f| f.code).collect(),
    }
}

#[test]
fn the_indexes_the_journal_wrote_hold_to_their_command() {
    let store = journal();
    let paths = index_paths(&store);
    assert_eq!(paths.len(), 2);
    for path in &paths {
        assert_eq!(findings(&store, stored(&store, path)), [], "{path}");
    }
}

#[test]
fn an_index_its_command_does_not_derive_is_a_mismatch() {
    let store = journal();
    let path = &index_paths(&store)[0];
    let doc = stored(&store, path);
    let index = KeyIndex::parse(&doc.fields).expect("index");
    let with = |index: KeyIndex| StoredDoc {
        fields: index.encode(),
        ..doc.clone()
    };
    let other = |n| AttemptNumber::new(if index.attempt.get() == 1 { n } else { n - 1 });
    let mut extra = doc.clone();
    extra.fields.insert("key".into(), fields::string("x"));
    let mut rewritten = doc.clone();
    rewritten.updated.seconds += 1;
    let cases = [
        (
            "another attempt",
            with(KeyIndex {
                attempt: other(2).expect("attempt"),
                ..index.clone()
            }),
        ),
        (
            "an attempt not opened",
            with(KeyIndex {
                attempt: AttemptNumber::new(3).expect("attempt"),
                ..index.clone()
            }),
        ),
        (
            "no command",
            with(KeyIndex {
                command_key_hash: Digest::parse(&"d".repeat(64)).expect("hash"),
                ..index.clone()
            }),
        ),
        ("a field added", extra),
        ("rewritten", rewritten),
    ];
    for (case, doc) in cases {
        assert_eq!(
            findings(&store, doc),
            [FindingCode::ProviderKeyMismatch],
            "{case}"
        );
    }
    // Another key's digest as its id.
    let moved = StoredDoc {
        path: format!("providerKeys/{}", "e".repeat(64)),
        ..doc.clone()
    };
    assert_eq!(findings(&store, moved), [FindingCode::ProviderKeyMismatch]);
    for stray in [
        "providerKeys/cj1-key".to_owned(),
        format!("{path}/history/a"),
    ] {
        let doc = StoredDoc {
            path: stray.clone(),
            ..doc.clone()
        };
        assert_eq!(
            findings(&store, doc),
            [FindingCode::UnexpectedDocument],
            "{stray}"
        );
    }
}
