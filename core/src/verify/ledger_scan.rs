//! The ledger checks over an in-memory store as `verify`'s scan runs them: documents in
//! Firestore's name order, grouped by reservation as the merge groups them, imported
//! rows and their bounds checked on their own, and the cross-document findings once
//! all were read. For the ledger checks' unit tests.

use super::cross_checks::CrossChecks;
use super::keys::{Keyed, Part, classify_effect, classify_reservation};
use super::ledger::{check_reservation, check_standalone_effect};
use super::report::Finding;
use super::stored::StoredDoc;
use crate::digest::Digest;
use crate::ledger::reservation;
use crate::testing::Store;
use std::collections::BTreeMap;

/// One reservation's documents as the scan hands them over: the reservation, its rows
/// and their correction bounds.
type Group = (Option<StoredDoc>, Vec<StoredDoc>, Vec<StoredDoc>);

/// The ledger checks over every ledger document of `memory`, grouped as the scan
/// merges them, and the cross-document findings once all were read.
pub(crate) fn scan(memory: &Store) -> Vec<Finding> {
    scanned(memory).0
}

/// [`scan`]'s findings and what its cross-document checks learnt.
pub(crate) fn scanned(memory: &Store) -> (Vec<Finding>, CrossChecks) {
    let mut paths: Vec<&String> = memory.keys().collect();
    paths.sort_by(|a, b| a.split('/').cmp(b.split('/')));
    let mut cross = CrossChecks::default();
    let mut groups: BTreeMap<Digest, Group> = BTreeMap::new();
    let mut found = Vec::new();
    for path in paths {
        let doc = StoredDoc::new(
            path.as_str(),
            memory[path.as_str()].clone(),
            Default::default(),
        );
        let keyed = if path.starts_with(reservation::COLLECTION) {
            classify_reservation(doc)
        } else {
            classify_effect(doc)
        };
        match keyed {
            Keyed::Command(rid, Part::Reservation, doc) => {
                groups.entry(rid).or_default().0 = Some(doc)
            }
            Keyed::Command(rid, Part::Correction, doc) => {
                groups.entry(rid).or_default().2.push(doc)
            }
            Keyed::Command(rid, _, doc) => groups.entry(rid).or_default().1.push(doc),
            Keyed::Standalone(doc) => found.extend(check_standalone_effect(&doc, &mut cross)),
            Keyed::Unexpected(path) => panic!("unexpected {path}"),
        }
    }
    for (rid, (reservation, effects, bounds)) in &groups {
        found.extend(check_reservation(
            rid,
            reservation.as_ref(),
            effects,
            bounds,
            &mut cross,
        ));
    }
    found.extend(cross.finish());
    (found, cross)
}
