//! `firestore.indexes.json`, the index configuration production needs, checked against
//! the codecs: every field any journal codec writes has its single-field indexes
//! turned off (reads are by path, and `verify` ranges over `__name__` only) except
//! the lifecycle's `state`, which keeps exactly one collection-group ascending index
//! for `pending`'s equality query (a handful of values, never sequential); and the
//! stray-lifecycle scan's collection-group query over `__name__` has its
//! collection-group index. The field
//! lists are the codecs' own strict field sets, so a field added to a codec cannot be
//! left indexed; a new codec adds its collection and field set to `CODECS`.

use command_journal_core::tools::document::{audit, lifecycle, root};
use command_journal_core::tools::ledger::{correction, effect, reservation};
use serde_json::Value;
use std::collections::{BTreeSet, HashSet};

/// The shipped file.
const FILE: &str = include_str!("../firestore.indexes.json");

/// Every codec: the collection id (a collection group) and each of its field sets.
const CODECS: [(&str, &[&[&str]]); 9] = [
    (root::COLLECTION, &[&root::FIELDS]),
    (lifecycle::COLLECTION, &[&lifecycle::FIELDS]),
    (audit::COLLECTION, &[&audit::FIELDS_V1, &audit::FIELDS_V2]),
    (
        reservation::COLLECTION,
        &[&reservation::FIELDS_V1, &reservation::FIELDS_V2],
    ),
    (effect::COLLECTION, &[&effect::FIELDS]),
    // The bound on what the reversals of one effect return, below its row, and the
    // log entries beside it.
    (
        correction::COLLECTION,
        &[&correction::FIELDS, &correction::entry::FIELDS],
    ),
    // The send layer: `providerSends/plan` and `providerSends/current`, and the send
    // events beside the commerce events.
    (
        "providerSends",
        &[
            &command_journal_core::tools::sends::bound_plan::FIELDS,
            &command_journal_core::tools::sends::attempt::FIELDS,
        ],
    ),
    (
        audit::COLLECTION,
        &[&command_journal_core::tools::sends::event::FIELDS],
    ),
    // The result envelope, `results/current` (its `envelope` text runs to 16 KiB, past
    // the 1,500 bytes an indexed string keeps).
    (
        command_journal_core::tools::envelope::stored::COLLECTION,
        &[&command_journal_core::tools::envelope::stored::FIELDS],
    ),
];

fn overrides() -> Vec<Value> {
    let file: Value = match serde_json::from_str(FILE) {
        Ok(value) => value,
        Err(error) => panic!("firestore.indexes.json is not JSON: {error}"),
    };
    assert_eq!(
        file["indexes"],
        Value::Array(Vec::new()),
        "no composite index"
    );
    match &file["fieldOverrides"] {
        Value::Array(overrides) => overrides.clone(),
        other => panic!("fieldOverrides is not an array: {other}"),
    }
}

/// `(collection group, field)` of every override that turns every index off.
fn exempted() -> HashSet<(String, String)> {
    overrides()
        .iter()
        .filter(|o| o["indexes"] == Value::Array(Vec::new()))
        .map(|o| {
            let text = |key: &str| o[key].as_str().unwrap_or_default().to_owned();
            (text("collectionGroup"), text("fieldPath"))
        })
        .collect()
}

#[test]
fn every_field_a_codec_writes_is_exempt_from_single_field_indexing() {
    let exempted = exempted();
    let mut expected = BTreeSet::new();
    for (collection, sets) in CODECS {
        for field in sets.iter().flat_map(|set| set.iter()) {
            expected.insert((collection.to_owned(), (*field).to_owned()));
        }
    }
    // `pending`'s one indexed field, checked below.
    expected.remove(&(lifecycle::COLLECTION.to_owned(), "state".to_owned()));
    let missing: Vec<_> = expected
        .iter()
        .filter(|pair| !exempted.contains(*pair))
        .collect();
    assert!(missing.is_empty(), "left indexed: {missing:?}");
    // Nothing exempted that no codec writes (a renamed field would leave a stale one).
    let stale: Vec<_> = exempted
        .iter()
        .filter(|pair| !expected.contains(*pair))
        .collect();
    assert!(stale.is_empty(), "exempted but never written: {stale:?}");
    // Firestore allows at most 200 single-field index exemptions per database.
    assert!(overrides().len() <= 200);
}

#[test]
fn the_stray_lifecycle_scan_has_its_collection_group_name_index() {
    let name: Vec<Value> = overrides()
        .into_iter()
        .filter(|o| o["collectionGroup"] == lifecycle::COLLECTION && o["fieldPath"] == "__name__")
        .collect();
    assert_eq!(name.len(), 1, "one __name__ override on lifecycle");
    let scopes: Vec<(&str, &str)> = name[0]["indexes"]
        .as_array()
        .map(|indexes| {
            indexes
                .iter()
                .map(|i| {
                    (
                        i["order"].as_str().unwrap_or_default(),
                        i["queryScope"].as_str().unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert!(
        scopes.contains(&("ASCENDING", "COLLECTION_GROUP")),
        "{scopes:?}"
    );
    // The collection-scope defaults stay, as an override replaces them.
    assert!(scopes.contains(&("ASCENDING", "COLLECTION")), "{scopes:?}");
    assert!(scopes.contains(&("DESCENDING", "COLLECTION")), "{scopes:?}");
}

#[test]
fn pendings_query_has_exactly_its_collection_group_state_index() {
    let state: Vec<Value> = overrides()
        .into_iter()
        .filter(|o| o["collectionGroup"] == lifecycle::COLLECTION && o["fieldPath"] == "state")
        .collect();
    assert_eq!(state.len(), 1, "one state override on lifecycle");
    assert_eq!(
        state[0]["indexes"],
        serde_json::json!([{"order": "ASCENDING", "queryScope": "COLLECTION_GROUP"}]),
        "only the collection-group equality index: no collection-scope index, no \
         descending or array index"
    );
}
