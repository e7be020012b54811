use super::*;
use crate::verify::FindingCode;
use command_journal_core::testing::Store;
use command_journal_core::tools::document::fields;
use command_journal_core::tools::ledger::effect;
use command_journal_core::tools::ledger::fixtures::{
    historical, import, key, now, rid, scope, store,
};
use command_journal_core::tools::ledger::migration::Link;
use command_journal_core::tools::ledger::reservation;
use gcloud_sdk::google::firestore::v1::Document;
use std::collections::BTreeSet;

const DOCUMENTS: &str = "projects/p/databases/(default)/documents";

/// The documents of `memory` at `paths` (all of them when `None`), as a read returns them.
fn read(memory: &Store, paths: Option<&BTreeSet<String>>) -> Vec<Document> {
    memory
        .iter()
        .filter(|(path, _)| paths.is_none_or(|p| p.contains(*path)))
        .map(|(path, fields)| Document {
            name: format!("{DOCUMENTS}/{path}"),
            fields: crate::wire::fields_to_wire(fields),
            create_time: None,
            update_time: None,
        })
        .collect()
}

/// An imported row read before a migration linked it, its reservation read after: the
/// view of two ranges read on either side of the migration.
fn imported_and_linked() -> (Store, Store) {
    let command = historical(&store(5, "12.5"), 3);
    let mut before = Store::default();
    import(&mut before, &command);
    let mut after = before.clone();
    after
        .answer(&Link::new(&key(1), &scope(), &command, now()).expect("link"))
        .expect("linked");
    (before, after)
}

/// The cross-document checks (historical links, corrections) a scan of `documents` learns.
async fn links_of(documents: Vec<Document>) -> crate::verify::cross_checks::CrossChecks {
    merge::relink(DOCUMENTS, documents).await.expect("relink")
}

/// The findings decided again from `memory`'s documents at `involved`.
async fn again_from(memory: &Store, involved: &BTreeSet<String>) -> Vec<Finding> {
    links_of(read(memory, Some(involved))).await.finish()
}

fn straddling(before: &Store, after: &Store) -> Vec<Document> {
    let mut documents = read(before, None);
    documents.retain(|d| d.name.contains(&format!("/{}/", effect::COLLECTION)));
    documents.extend(
        read(after, None)
            .into_iter()
            .filter(|d| d.name.contains(&format!("/{}/", reservation::COLLECTION))),
    );
    documents
}

#[tokio::test]
async fn a_link_made_between_two_ranges_is_not_reported() {
    let (before, after) = imported_and_linked();
    let links = links_of(straddling(&before, &after)).await;
    let found = links.finish();
    assert_eq!(
        found,
        vec![Finding {
            code: FindingCode::BrokenHistoricalLink,
            path: effect::path("legacy-0"),
        }],
        "read at two times, the listed row still looks unlinked"
    );
    let involved = links.involved(&found);
    assert_eq!(
        involved,
        BTreeSet::from([effect::path("legacy-0"), reservation::path(&rid(1))])
    );
    let fresh = again_from(&after, &involved).await;
    assert_eq!(fresh, Vec::new());
    assert_eq!(still_holding(found, &fresh), Vec::new());
}

#[tokio::test]
async fn a_broken_link_read_again_at_one_time_is_still_reported() {
    let (before, mut after) = imported_and_linked();
    // The row names another index than the reservation lists it at: corrupt at any time.
    if let Some(row) = after.get_mut(&effect::path("legacy-0")) {
        row.insert("effectIndex".into(), fields::int(7));
    }
    let links = links_of(straddling(&before, &after)).await;
    let found = links.finish();
    let involved = links.involved(&found);
    let fresh = again_from(&after, &involved).await;
    assert_eq!(
        still_holding(found, &fresh),
        vec![Finding {
            code: FindingCode::BrokenHistoricalLink,
            path: effect::path("legacy-0"),
        }]
    );
}

#[tokio::test]
async fn a_row_deleted_after_its_range_was_read_is_decided_by_the_fresh_read() {
    let (_, after) = imported_and_linked();
    let mut gone = after.clone();
    gone.remove(&effect::path("legacy-0"));
    // The reservation's range saw the row missing; read again, it is there.
    let links = links_of(read(&gone, None)).await;
    let found = links.finish();
    assert_eq!(
        found,
        vec![Finding {
            code: FindingCode::ReservationMissingEffects,
            path: effect::path("legacy-0"),
        }]
    );
    let involved = links.involved(&found);
    assert_eq!(
        still_holding(found.clone(), &again_from(&after, &involved).await),
        Vec::new()
    );
    assert_eq!(
        still_holding(found.clone(), &again_from(&gone, &involved).await),
        found
    );
}

#[test]
fn only_findings_made_again_are_kept() {
    let at = |code, id: &str| Finding {
        code,
        path: effect::path(id),
    };
    let found = vec![
        at(FindingCode::BrokenHistoricalLink, "a"),
        at(FindingCode::BrokenHistoricalLink, "b"),
        at(FindingCode::DuplicateMonetaryEffect, "c"),
    ];
    let mut fresh = vec![
        at(FindingCode::BrokenHistoricalLink, "b"),
        at(FindingCode::ReservationMissingEffects, "c"),
        at(FindingCode::BrokenHistoricalLink, "z"),
    ];
    fresh.sort();
    assert_eq!(
        still_holding(found, &fresh),
        vec![at(FindingCode::BrokenHistoricalLink, "b")],
        "another code at the same path, or a new finding, confirms nothing"
    );
}

#[tokio::test]
async fn a_reversal_made_between_two_ranges_is_not_reported_and_an_over_reversal_is() {
    use command_journal_core::tools::ledger::correction;
    use command_journal_core::tools::ledger::fixtures::{accept_into, plan, reversal_json};
    let mut before = Store::default();
    accept_into(&mut before, 1, &store(5, "12.5"));
    let charge = format!("{}_0000", rid(1));
    let mut after = before.clone();
    accept_into(&mut after, 2, &plan(reversal_json(5, &charge, None)));
    // The charge's range was read before the reversal, the reversal's after it.
    let mut documents = read(&before, None);
    documents.extend(
        read(&after, None)
            .into_iter()
            .filter(|d| d.name.contains(rid(2).as_str())),
    );
    let cross = links_of(documents).await;
    let found = cross.finish();
    assert_eq!(
        found,
        vec![Finding {
            code: FindingCode::CorrectionBoundMismatch,
            path: correction::path(&charge),
        }],
        "read at two times, the reversal looks counted by no bound"
    );
    let involved = cross.involved(&found);
    assert!(involved.contains(&correction::path(&charge)));
    assert!(involved.contains(&reservation::path(&rid(2))));
    assert_eq!(
        still_holding(found, &again_from(&after, &involved).await),
        Vec::new()
    );
    // An over-reversal holds at any read time.
    let mut over = after.clone();
    over.remove(&correction::path(&charge));
    over.remove(&correction::entry::path(&charge, 1));
    accept_into(&mut over, 3, &plan(reversal_json(5, &charge, None)));
    let cross = links_of(read(&over, None)).await;
    let found = cross.finish();
    let involved = cross.involved(&found);
    assert_eq!(
        still_holding(found.clone(), &again_from(&over, &involved).await),
        found
    );
    assert!(
        found
            .iter()
            .any(|f| f.code == FindingCode::OverReversal && f.path == effect::path(&charge))
    );
}
