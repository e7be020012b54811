use super::*;
use crate::document::fields;

fn links(lineage: &str, reservation: bool, migration: bool, index: bool) -> FieldMap {
    let value = |present: bool, v| if present { v } else { fields::null() };
    fields::map([
        ("lineage", fields::string(lineage)),
        ("reservationId", value(reservation, fields::string("r"))),
        ("migrationId", value(migration, fields::string("m"))),
        ("effectIndex", value(index, fields::int(0))),
    ])
}

#[test]
fn lineage_rules_on_the_raw_link_fields() {
    assert_eq!(
        lineage_holds(&links("canonical_linked", true, false, true)),
        Some(true)
    );
    assert_eq!(
        lineage_holds(&links("canonical_linked", true, true, true)),
        Some(false)
    );
    assert_eq!(
        lineage_holds(&links("canonical_linked", false, false, false)),
        Some(false)
    );
    assert_eq!(
        lineage_holds(&links("historical_linked", true, true, true)),
        Some(true)
    );
    assert_eq!(
        lineage_holds(&links("historical_linked", true, false, true)),
        Some(false)
    );
    assert_eq!(
        lineage_holds(&links("historical_unlinked", false, false, false)),
        Some(true)
    );
    assert_eq!(
        lineage_holds(&links("historical_unlinked", true, false, false)),
        Some(false)
    );
    assert_eq!(
        lineage_holds(&links("historical_unlinked", false, false, true)),
        Some(false)
    );
    assert_eq!(lineage_holds(&links("other", true, false, true)), None);
}

#[test]
fn a_standalone_row_claiming_a_reservation_is_a_lineage_violation() {
    let doc = StoredDoc::new(
        "ledgerTransactions/legacy-1",
        links("historical_unlinked", true, false, false),
        Default::default(),
    );
    assert_eq!(
        check_standalone_effect(&doc, &mut HistoricalLinks::default()),
        vec![finding(
            FindingCode::LineageViolation,
            "ledgerTransactions/legacy-1"
        )]
    );
}
