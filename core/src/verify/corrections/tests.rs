use super::*;
use crate::document::fields;
use crate::ledger::accept::Accept;
use crate::ledger::fingerprint::FingerprintInput;
use crate::ledger::fixtures::{
    accept_into, edit, key, now, plan, rid, scope, store, strip_digest, unlinked,
};
use crate::testing::Store;
use crate::verify::cross_checks::CrossChecks;
use crate::verify::keys::{Keyed, Part, classify_effect, classify_reservation};
use crate::verify::ledger::{check_reservation, check_standalone_effect};
use crate::verify::stored::StoredDoc;
use serde_json::json;

/// One reservation's documents as the scan hands them over: the reservation, its rows
/// and their correction bounds.
type Group = (Option<StoredDoc>, Vec<StoredDoc>, Vec<StoredDoc>);

/// An edit of a store of [`reversed`] whose original effect is the second argument.
type Tamper = Box<dyn Fn(&mut Store, &str)>;

/// The ledger checks over every ledger document of `memory`, grouped as the scan
/// merges them, and the cross-document findings once all were read.
fn scan(memory: &Store) -> Vec<Finding> {
    scanned(memory).0
}

/// [`scan`]'s findings and what its cross-document checks learnt.
fn scanned(memory: &Store) -> (Vec<Finding>, CrossChecks) {
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

fn reversal(original: &str, amount: &str) -> FingerprintInput {
    plan(
        json!({"family": "reversal", "fingerprintVersion": 5, "effects": [
        {"seat_id": "seat-A", "actor_seat_id": "officer-1", "mechanism": "REVERSAL",
         "amount": amount, "type": "REVERSAL", "original_transaction_id": original}]}),
    )
}

/// Key 1 charged 12.50; key 2 reversed 5.00 of it and key 3 the remaining 7.50.
fn reversed() -> (Store, String) {
    let mut memory = Store::default();
    accept_into(&mut memory, 1, &store(5, "-12.5"));
    let original = effect::effect_id(&rid(1), 0);
    accept_into(&mut memory, 2, &reversal(&original, "5.00"));
    accept_into(&mut memory, 3, &reversal(&original, "7.50"));
    (memory, original)
}

fn at(code: FindingCode, path: String) -> Finding {
    Finding { code, path }
}

#[test]
fn reversals_within_their_bound_are_clean() {
    let (memory, _) = reversed();
    assert_eq!(scan(&memory), vec![]);
}

#[test]
fn an_over_reversal_planted_by_hand_is_found() {
    // The bound was deleted, then another full reversal landed: it counted only
    // itself, but the three reversals return 25.00 of 12.50.
    let (mut memory, original) = reversed();
    memory.remove(&correction::path(&original));
    accept_into(&mut memory, 4, &reversal(&original, "12.50"));
    assert_eq!(
        scan(&memory),
        vec![
            at(FindingCode::OverReversal, effect::path(&original)),
            at(
                FindingCode::CorrectionBoundMismatch,
                correction::path(&original)
            ),
        ]
    );
}

#[test]
fn a_bound_that_disagrees_with_its_reversals_is_found() {
    let cases: Vec<(&str, Tamper, Vec<FindingCode>)> = vec![
        (
            "total lowered",
            Box::new(|m, o| {
                edit(
                    m,
                    &correction::path(o),
                    "reversedAmount",
                    fields::string("5.00"),
                )
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
        (
            "total raised past the original",
            Box::new(|m, o| {
                edit(
                    m,
                    &correction::path(o),
                    "reversedAmount",
                    fields::string("20.00"),
                )
            }),
            vec![
                FindingCode::OverReversal,
                FindingCode::CorrectionBoundMismatch,
            ],
        ),
        (
            "count changed",
            Box::new(|m, o| {
                edit(
                    m,
                    &correction::path(o),
                    "reversalEffectCount",
                    fields::int(3),
                )
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
        (
            "bound deleted",
            Box::new(|m, o| {
                m.remove(&correction::path(o));
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
        (
            "original row deleted",
            Box::new(|m, o| {
                m.remove(&effect::path(o));
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
    ];
    for (case, tamper, expected) in cases {
        let (mut memory, original) = reversed();
        tamper(&mut memory, &original);
        let codes: Vec<FindingCode> = scan(&memory)
            .into_iter()
            .filter(|f| {
                matches!(
                    f.code,
                    FindingCode::OverReversal | FindingCode::CorrectionBoundMismatch
                )
            })
            .map(|f| f.code)
            .collect();
        assert_eq!(codes, expected, "{case}");
    }
}

#[test]
fn reversals_accepted_before_bounds_count_where_the_original_has_one() {
    // Key 2's reversal is as an earlier release left it (schema version 1, no bound
    // entry); key 3 reverses the rest under the bound, which does not count key 2.
    let mut memory = Store::default();
    accept_into(&mut memory, 1, &store(5, "-12.5"));
    let original = effect::effect_id(&rid(1), 0);
    accept_into(&mut memory, 2, &reversal(&original, "12.50"));
    strip_digest(&mut memory, 2);
    memory.remove(&correction::path(&original));
    assert_eq!(scan(&memory), vec![], "unguarded, and no bound: not known");
    accept_into(&mut memory, 3, &reversal(&original, "12.50"));
    assert_eq!(
        scan(&memory),
        vec![at(FindingCode::OverReversal, effect::path(&original))]
    );
}

#[test]
fn an_imported_originals_bound_is_read_after_its_row() {
    let mut memory = Store::default();
    let item = crate::ledger::fingerprint::EffectPlanItem {
        amount: crate::ledger::fingerprint::Amount::parse("-8.00"),
        ..Default::default()
    };
    memory.insert(
        effect::path("legacy-1"),
        unlinked("legacy-1", &item).encode(),
    );
    memory
        .answer(&Accept::new(&key(2), &reversal("legacy-1", "8.00"), &scope(), now()).expect("op"))
        .expect("accepted");
    assert_eq!(scan(&memory), vec![]);
    edit(
        &mut memory,
        &correction::path("legacy-1"),
        "reversedAmount",
        fields::string("9.00"),
    );
    assert_eq!(
        scan(&memory),
        vec![
            at(FindingCode::OverReversal, effect::path("legacy-1")),
            at(
                FindingCode::CorrectionBoundMismatch,
                correction::path("legacy-1")
            ),
        ]
    );
}

#[test]
fn a_finding_involves_the_original_its_bound_and_every_reversal_naming_it() {
    let (mut memory, original) = reversed();
    edit(
        &mut memory,
        &correction::path(&original),
        "reversedAmount",
        fields::string("5.00"),
    );
    let (_, cross) = scanned(&memory);
    let found = cross.finish();
    assert_eq!(
        found,
        vec![at(
            FindingCode::CorrectionBoundMismatch,
            correction::path(&original)
        )]
    );
    let expected: BTreeSet<String> = [
        effect::path(&original),
        correction::path(&original),
        reservation::path(&rid(2)),
        effect::path(&effect::effect_id(&rid(2), 0)),
        reservation::path(&rid(3)),
        effect::path(&effect::effect_id(&rid(3), 0)),
    ]
    .into_iter()
    .collect();
    assert_eq!(cross.involved(&found), expected);
}
