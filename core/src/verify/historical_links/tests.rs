use super::*;
use crate::ledger::fingerprint::{Amount, EffectPlanItem};
use crate::time::Timestamp;

fn rid(n: u8) -> Digest {
    Digest::parse(&format!("{n:02x}").repeat(32)).expect("digest")
}

fn item(amount: &str) -> EffectPlanItem {
    EffectPlanItem {
        seat_id: Some("seat-A".into()),
        amount: Amount::parse(amount),
        ..EffectPlanItem::default()
    }
}

fn row(id: &str, amount: &str, link: Option<(u8, usize, &str)>) -> LedgerEffect {
    LedgerEffect {
        effect_id: id.into(),
        lineage: if link.is_some() {
            Lineage::HistoricalLinked
        } else {
            Lineage::HistoricalUnlinked
        },
        reservation_id: link.map(|(r, _, _)| rid(r)),
        effect_index: link.map(|(_, i, _)| i),
        migration_id: link.map(|(_, _, m)| m.to_owned()),
        transfer_leg: None,
        item: item(amount),
        accepted_at: Timestamp::from_micros(1_500_000_000_000_000).expect("time"),
    }
}

fn found(code: FindingCode, id: &str) -> Finding {
    Finding {
        code,
        path: effect::path(id),
    }
}

#[test]
fn agreeing_links_and_unlinked_rows_are_clean() {
    let mut links = HistoricalLinks::default();
    links.imported_row(&row("legacy-0", "1.00", Some((1, 0, "m"))));
    links.imported_row(&row("legacy-1", "2.00", Some((1, 1, "m"))));
    links.imported_row(&row("legacy-2", "1.00", None));
    links.listed(&rid(1), 0, Some("m"), "legacy-0");
    links.listed(&rid(1), 1, Some("m"), "legacy-1");
    assert_eq!(links.finish(), Vec::new());
}

#[test]
fn every_disagreement_is_one_finding_at_the_row() {
    let mut links = HistoricalLinks::default();
    // Listed but missing.
    links.listed(&rid(1), 0, Some("m"), "gone");
    // Listed but still unlinked.
    links.imported_row(&row("unlinked", "1.00", None));
    links.listed(&rid(1), 1, Some("m"), "unlinked");
    // Linked at another index, by another migration, to another reservation.
    links.imported_row(&row("index", "1.00", Some((1, 3, "m"))));
    links.listed(&rid(1), 2, Some("m"), "index");
    links.imported_row(&row("migration", "1.00", Some((1, 3, "other"))));
    links.listed(&rid(1), 3, Some("m"), "migration");
    links.imported_row(&row("elsewhere", "1.00", Some((2, 0, "m"))));
    links.listed(&rid(1), 4, Some("m"), "elsewhere");
    // Listed by two reservations (it states the first).
    links.imported_row(&row("twice", "1.00", Some((1, 6, "m"))));
    links.listed(&rid(1), 6, Some("m"), "twice");
    links.listed(&rid(4), 0, Some("m"), "twice");
    // Claims a reservation that does not list it.
    links.imported_row(&row("stray", "1.00", Some((3, 0, "m"))));
    // Malformed: reported by its codec already.
    links.malformed_row("bad");
    links.listed(&rid(1), 5, Some("m"), "bad");
    let mut expected = vec![
        found(FindingCode::ReservationMissingEffects, "gone"),
        found(FindingCode::BrokenHistoricalLink, "unlinked"),
        found(FindingCode::BrokenHistoricalLink, "index"),
        found(FindingCode::BrokenHistoricalLink, "migration"),
        found(FindingCode::BrokenHistoricalLink, "elsewhere"),
        found(FindingCode::BrokenHistoricalLink, "stray"),
        found(FindingCode::BrokenHistoricalLink, "twice"),
    ];
    expected.sort();
    let mut actual = links.finish();
    actual.sort();
    assert_eq!(actual, expected);
}

#[test]
fn a_migration_created_row_duplicating_an_imported_one_is_reported_at_the_created_row() {
    let mut links = HistoricalLinks::default();
    let created = effect::path(&effect::effect_id(&rid(1), 0));
    let duplicate = row(&effect::effect_id(&rid(1), 0), "1.00", Some((1, 0, "m")));
    links.derived_row(&created, &duplicate);
    // Unique content: a created row with no imported twin is not a duplicate.
    let unique_path = effect::path(&effect::effect_id(&rid(1), 1));
    links.derived_row(
        &unique_path,
        &row(&effect::effect_id(&rid(1), 1), "9.00", Some((1, 1, "m"))),
    );
    // Canonical rows are never compared.
    let mut canonical = row(&effect::effect_id(&rid(2), 0), "1.00", None);
    canonical.lineage = Lineage::CanonicalLinked;
    links.derived_row("ledgerTransactions/canonical", &canonical);
    links.imported_row(&row("legacy-0", "1.00", None));
    assert_eq!(
        links.finish(),
        vec![Finding {
            code: FindingCode::DuplicateMonetaryEffect,
            path: created,
        }]
    );
}

#[test]
fn a_finding_involves_its_row_and_every_reservation_on_either_side_of_the_link() {
    let mut links = HistoricalLinks::default();
    links.imported_row(&row("elsewhere", "1.00", Some((2, 0, "m"))));
    links.listed(&rid(1), 4, Some("m"), "elsewhere");
    links.listed(&rid(3), 0, Some("m"), "elsewhere");
    links.listed(&rid(1), 0, Some("m"), "gone");
    links.imported_row(&row("fine", "1.00", Some((5, 0, "m"))));
    links.listed(&rid(5), 0, Some("m"), "fine");
    let found = links.finish();
    let reservation = |n| reservation::path(&rid(n));
    assert_eq!(
        links.involved(&found),
        BTreeSet::from([
            effect::path("elsewhere"),
            effect::path("gone"),
            reservation(1),
            reservation(2),
            reservation(3),
        ]),
        "a row without a finding brings nothing"
    );
}

#[test]
fn a_duplicate_involves_the_imported_rows_of_the_same_content_only() {
    let mut links = HistoricalLinks::default();
    let created = effect::path(&effect::effect_id(&rid(1), 0));
    links.derived_row(
        &created,
        &row(&effect::effect_id(&rid(1), 0), "1.00", Some((1, 0, "m"))),
    );
    links.imported_row(&row("same-0", "1.00", None));
    links.imported_row(&row("same-1", "1.00", None));
    links.imported_row(&row("other", "2.00", None));
    let found = links.finish();
    assert_eq!(found.len(), 1);
    assert_eq!(
        links.involved(&found),
        BTreeSet::from([created, effect::path("same-0"), effect::path("same-1")])
    );
}

/// Every field of a sealed linked reservation and of its imported row, edited to a
/// well-formed other value: `verify` reports it and the link's exact retry (the one
/// operation reading it) is `journal_corrupt`, nothing written.
#[test]
fn any_edit_of_a_sealed_link_is_found_and_fails_closed() {
    use crate::document::fields;
    use crate::document::value::Value;
    use crate::error::JournalError;
    use crate::ledger::fixtures::{edit, historical, import_and_link, key, now, scope, store};
    use crate::ledger::migration::Link;
    use crate::testing::Store;
    use crate::verify::ledger_scan::scan;
    let command = historical(&store(5, "12.5"), 5);
    let mut linked = Store::default();
    import_and_link(&mut linked, 1, &command);
    assert_eq!(scan(&linked), vec![]);
    let reservation_path = reservation::path(&crate::ledger::fixtures::rid(1));
    let row_path = effect::path("legacy-0");
    let other = |name: &str| -> Option<Value> {
        Some(match name {
            "reservationSchemaVersion" | "effectSchemaVersion" => fields::int(2),
            "fingerprintVersion" => fields::int(4),
            "effectIndex" => fields::int(1),
            "compensationAmountCents" => fields::int(5),
            "acceptedAt" => fields::timestamp(now()),
            "integrityDigest" | "fingerprint" => fields::string("ab".repeat(32)),
            "reservationId" => fields::string(rid(7).as_str()),
            "effectIds" => return None,
            "migrationId" => fields::string("mig-other"),
            "commandFamily" => fields::string("effect_plan"),
            "lineage" => fields::string("historical_unlinked"),
            "transferLeg" => fields::string("credit"),
            "effectId" => fields::string("legacy-9"),
            "amount" => fields::string("-1.00"),
            _ => fields::string("edited"),
        })
    };
    let mut edits = 0;
    for path in [&reservation_path, &row_path] {
        for name in linked[path.as_str()].keys() {
            let Some(value) = other(name) else { continue };
            let mut memory = linked.clone();
            edit(&mut memory, path, name, value);
            assert_ne!(scan(&memory), vec![], "{path} {name}");
            let before = memory.clone();
            let retry = Link::new(&key(1), &scope(), &command, now()).expect("link");
            assert!(
                matches!(
                    memory.answer(&retry),
                    Err(JournalError::JournalCorrupt { .. })
                ),
                "{path} {name}"
            );
            assert_eq!(memory, before, "{path} {name}: nothing written");
            edits += 1;
        }
    }
    assert_eq!(edits, 13 + 21, "every field but effectIds");
}
