use super::*;
use crate::document::fields::{self, FieldMap};
use crate::ledger::accept::Accept;
use crate::ledger::effect::{self, Lineage};
use crate::ledger::fingerprint::Amount;
use crate::ledger::fixtures::{
    historical, historical_tagged, import, import_and_link, key, now, plan, rid, scope, store,
    transfer, unlinked,
};
use crate::testing::Store;
use serde_json::json;

fn link(n: u32, command: &HistoricalCommand) -> Result<Link, JournalError> {
    Link::new(&key(n), &scope(), command, now())
}

fn v3() -> HistoricalCommand {
    historical(&store(5, "12.5"), 3)
}

/// A two-effect plan, proven under `version`, naming rows `{tag}-0` and `{tag}-1`.
fn two_effects(version: u32, tag: &str) -> HistoricalCommand {
    let two = plan(json!({
        "family": "effect_plan", "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "amount": "-3.00"}, {"seat_id": "seat-B", "amount": "3.00"}],
    }));
    historical_tagged(&two, version, tag)
}

/// The fields a link may set on an imported row.
const LINK_FIELDS: [&str; 5] = [
    "lineage",
    "reservationId",
    "effectIndex",
    "migrationId",
    "transferLeg",
];

fn without_link_fields(row: &FieldMap) -> FieldMap {
    row.iter()
        .filter(|(name, _)| !LINK_FIELDS.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

#[test]
fn linking_relabels_the_named_rows_and_creates_the_reservation_that_owns_them() {
    let command = two_effects(3, "legacy");
    let mut memory = Store::default();
    import(&mut memory, &command);
    let imported = memory.clone();
    let outcome = memory
        .answer(&link(1, &command).expect("op"))
        .expect("linked");
    assert_eq!(outcome.outcome, Outcome::Linked);
    assert_eq!(outcome.fingerprint, command.fingerprint, "stored as given");
    assert_eq!(outcome.fingerprint_version, 3);
    assert_eq!(outcome.accepted_at, command.accepted_at);
    assert_eq!(outcome.migration_id.as_deref(), Some("mig-2026-10"));
    assert_eq!(outcome.effect_ids(), ["legacy-0", "legacy-1"]);
    // Exactly one row per monetary effect: the imported ones, relabelled in place.
    assert_eq!(memory.count(reservation::COLLECTION), 1);
    assert_eq!(memory.count(effect::COLLECTION), 2);
    for (i, id) in command.effect_ids.iter().enumerate() {
        let path = effect::path(id);
        let before = &imported[&path];
        let after = &memory[&path];
        assert_eq!(
            without_link_fields(after),
            without_link_fields(before),
            "no monetary field (nor the recorded time) changes"
        );
        assert_eq!(after["lineage"], fields::string("historical_linked"));
        assert_eq!(after["reservationId"], fields::string(rid(1).as_str()));
        assert_eq!(
            after["effectIndex"],
            fields::int(i64::try_from(i).expect("i"))
        );
        assert_eq!(after["migrationId"], fields::string("mig-2026-10"));
        assert_eq!(after["transferLeg"], fields::null());
        let e = &outcome.effects[i];
        assert_eq!(e.lineage, Lineage::HistoricalLinked);
        assert_eq!(e.item, command.effects[i]);
    }
    let stored = &memory[&reservation::path(&rid(1))];
    assert_eq!(stored["migrationId"], fields::string("mig-2026-10"));
    assert_eq!(stored["fingerprintVersion"], fields::int(3));
    let parsed = ReservationDocument::parse(rid(1).as_str(), stored).expect("strict");
    assert_eq!(parsed.effect_ids, ["legacy-0", "legacy-1"]);
}

#[test]
fn the_link_is_one_atomic_commit_guarded_by_preconditions() {
    let command = two_effects(3, "legacy");
    let mut memory = Store::default();
    import(&mut memory, &command);
    let op = link(1, &command).expect("op");
    let Decision::Mutate(writes, _) = op.decide(&memory.snapshot(&op.paths())) else {
        panic!("expected one mutation");
    };
    let shapes: Vec<(bool, String)> = writes
        .iter()
        .map(|w| match w {
            Write::Create { path, .. } => (true, path.clone()),
            Write::Replace { path, .. } => (false, path.clone()),
            Write::AssertAbsent { .. } | Write::AssertUnchanged { .. } => {
                panic!("a link only creates and replaces")
            }
        })
        .collect();
    assert_eq!(
        shapes,
        [
            (true, reservation::path(&rid(1))),
            (false, effect::path("legacy-0")),
            (false, effect::path("legacy-1")),
        ]
    );
}

#[test]
fn a_second_link_of_the_same_rows_is_refused_and_the_exact_retry_writes_nothing() {
    let mut memory = Store::default();
    let command = v3();
    import_and_link(&mut memory, 1, &command);
    let before = memory.clone();
    // The exact same link (a retry): already linked, nothing written.
    assert_eq!(
        memory
            .answer(&link(1, &command).expect("op"))
            .map(|o| o.outcome),
        Ok(Outcome::AlreadyLinked)
    );
    // The same rows under another key, or by another migration under another key.
    for command in [
        command.clone(),
        HistoricalCommand {
            migration_id: "mig-2027-01".into(),
            ..command.clone()
        },
    ] {
        assert_eq!(
            memory.answer(&link(2, &command).expect("op")),
            Err(JournalError::invalid("effectIds"))
        );
    }
    // Anything else under the linked key.
    let other_fingerprint = HistoricalCommand {
        fingerprint: Digest::parse(&"4".repeat(64)).expect("digest"),
        ..v3()
    };
    let other_migration = HistoricalCommand {
        migration_id: "mig-2027-01".into(),
        ..v3()
    };
    let other_version = HistoricalCommand {
        fingerprint_version: 2,
        ..v3()
    };
    let other_rows = historical_tagged(&store(5, "12.5"), 3, "other");
    for command in [
        other_fingerprint,
        other_migration,
        other_version,
        other_rows,
    ] {
        assert_eq!(
            memory.answer(&link(1, &command).expect("op")),
            Err(JournalError::ReplayMismatch)
        );
    }
    let elsewhere = LedgerScope::new("seat-Z", "seat-Z").expect("scope");
    let op = Link::new(&key(1), &elsewhere, &v3(), now()).expect("op");
    assert_eq!(memory.answer(&op), Err(JournalError::ScopeMismatch));
    assert_eq!(memory, before);
}

#[test]
fn missing_canonical_differing_or_malformed_rows_are_refused_writing_nothing() {
    let mut memory = Store::default();
    let accepted = memory
        .answer(&Accept::new(&key(9), &store(5, "12.5"), &scope(), now()).expect("op"))
        .expect("accepted");
    let command = two_effects(3, "legacy");
    import(&mut memory, &command);
    memory.remove(&effect::path("legacy-1"));
    let before = memory.clone();
    // legacy-1 does not exist.
    assert_eq!(
        memory.answer(&link(1, &command).expect("op")),
        Err(JournalError::invalid("effectIds"))
    );
    assert_eq!(memory, before);
    // A canonical row never has a legacy id: refused before reading.
    let canonical = HistoricalCommand {
        effect_ids: vec!["legacy-0".into(), accepted.effects[0].effect_id.clone()],
        ..command.clone()
    };
    assert_eq!(
        link(1, &canonical).map(|_| ()),
        Err(JournalError::invalid("effectIds"))
    );
    // legacy-1 exists but holds another amount.
    let mut other = command.effects[1].clone();
    other.amount = Amount::parse("3.01");
    memory.insert(
        effect::path("legacy-1"),
        unlinked("legacy-1", &other).encode(),
    );
    let differing = memory.clone();
    assert_eq!(
        memory.answer(&link(1, &command).expect("op")),
        Err(JournalError::invalid("effects"))
    );
    assert_eq!(memory, differing);
    // legacy-1 is malformed.
    memory.insert(
        effect::path("legacy-1"),
        fields::map([("lineage", fields::string("historical_unlinked"))]),
    );
    assert!(matches!(
        memory.answer(&link(1, &command).expect("op")),
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(memory.count(reservation::COLLECTION), 1, "only key 9's");
    assert_eq!(
        memory[&effect::path("legacy-0")],
        before[&effect::path("legacy-0")],
        "the good row stays unlinked"
    );
}

#[test]
fn a_canonical_reservation_is_never_relabelled_historical() {
    let mut memory = Store::default();
    let accept = Accept::new(&key(1), &store(5, "12.5"), &scope(), now()).expect("op");
    let accepted = memory.answer(&accept).expect("accepted");
    let command = HistoricalCommand {
        fingerprint: accepted.fingerprint.clone(),
        fingerprint_version: 5,
        accepted_at: now(),
        ..v3()
    };
    import(&mut memory, &command);
    let before = memory.clone();
    assert_eq!(
        memory.answer(&link(1, &command).expect("op")),
        Err(JournalError::ReplayMismatch)
    );
    assert_eq!(memory, before);
}

#[test]
fn an_orphan_effect_in_the_first_derived_slot_is_corrupt() {
    let mut memory = Store::default();
    import(&mut memory, &v3());
    memory.insert(
        effect::path(&effect::effect_id(&rid(1), 0)),
        fields::map([("x", fields::int(1))]),
    );
    assert!(matches!(
        memory.answer(&link(1, &v3()).expect("op")),
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(memory.count(reservation::COLLECTION), 0);
}

#[test]
fn a_historical_transfer_links_its_debit_and_credit_rows_as_legs() {
    let command = historical(&transfer("7"), 4);
    let legs = command.effects.clone();
    let mut memory = Store::default();
    let outcome = import_and_link(&mut memory, 1, &command);
    assert_eq!(outcome.effects.len(), 2);
    assert_eq!(
        memory[&effect::path("legacy-0")]["transferLeg"],
        fields::string("debit")
    );
    assert_eq!(
        memory[&effect::path("legacy-1")]["transferLeg"],
        fields::string("credit")
    );
    let mut swapped = legs.clone();
    swapped.reverse();
    let mut uneven = legs.clone();
    uneven[0].amount = Amount::parse("-6.00");
    for effects in [swapped, uneven, vec![legs[0].clone()]] {
        let command = HistoricalCommand {
            effect_ids: (0..effects.len()).map(|i| format!("t-{i}")).collect(),
            effects,
            ..command.clone()
        };
        assert_eq!(
            link(2, &command).map(|_| ()),
            Err(JournalError::invalid("effects"))
        );
    }
}

#[test]
fn versions_one_and_two_with_more_than_one_effect_are_refused_distinctly() {
    for version in [1, 2] {
        assert_eq!(
            link(1, &two_effects(version, "legacy")).map(|_| ()),
            Err(JournalError::ObsoleteMultiEffectFingerprint),
            "version {version}"
        );
        assert_eq!(
            JournalError::ObsoleteMultiEffectFingerprint.code(),
            "obsolete_multi_effect_fingerprint"
        );
        // One effect, or an internal transfer (whose serializer never changed), is
        // linkable.
        assert!(link(1, &historical(&store(5, "1"), version)).is_ok());
        assert!(link(1, &historical(&transfer("7"), version)).is_ok());
    }
    for version in 3..=5 {
        assert!(link(1, &two_effects(version, "legacy")).is_ok());
    }
}

#[test]
fn input_rules() {
    let cases: Vec<(HistoricalCommand, &str)> = vec![
        (
            HistoricalCommand {
                fingerprint_version: 0,
                ..v3()
            },
            "fingerprintVersion",
        ),
        (
            HistoricalCommand {
                fingerprint_version: 6,
                ..v3()
            },
            "fingerprintVersion",
        ),
        (
            HistoricalCommand {
                migration_id: String::new(),
                ..v3()
            },
            "migrationId",
        ),
        (
            HistoricalCommand {
                migration_id: "mig/1".into(),
                ..v3()
            },
            "migrationId",
        ),
        (
            HistoricalCommand {
                accepted_at: Timestamp::from_micros(now().micros() + 1).expect("time"),
                ..v3()
            },
            "acceptedAt",
        ),
        (
            HistoricalCommand {
                effects: Vec::new(),
                effect_ids: Vec::new(),
                ..v3()
            },
            "effects",
        ),
        (
            HistoricalCommand {
                effects: vec![EffectPlanItem {
                    seat_id: Some(String::new()),
                    ..EffectPlanItem::default()
                }],
                ..v3()
            },
            "effects",
        ),
        (
            HistoricalCommand {
                effects: vec![EffectPlanItem::default(); MAX_EFFECTS + 1],
                ..v3()
            },
            "effects",
        ),
        (
            HistoricalCommand {
                effect_ids: Vec::new(),
                ..v3()
            },
            "effectIds",
        ),
        (
            HistoricalCommand {
                effect_ids: vec!["a b".into()],
                ..v3()
            },
            "effectIds",
        ),
        (
            HistoricalCommand {
                effect_ids: vec![effect::effect_id(&rid(1), 0)],
                ..v3()
            },
            "effectIds",
        ),
        (
            HistoricalCommand {
                effect_ids: vec!["dup".into(), "dup".into()],
                ..two_effects(3, "x")
            },
            "effectIds",
        ),
    ];
    for (command, field) in cases {
        assert_eq!(
            link(1, &command).map(|_| ()),
            Err(JournalError::invalid(field)),
            "{field}"
        );
    }
    for version in 1..=5 {
        let command = HistoricalCommand {
            fingerprint_version: version,
            ..v3()
        };
        assert!(link(1, &command).is_ok(), "version {version}");
    }
}

#[test]
fn a_link_seals_the_rows_it_relabels_and_an_earlier_releases_link_still_replays_as_linked() {
    use crate::ledger::fixtures::{edit, stored_of, strip_digest};
    use crate::ledger::integrity;
    use crate::ledger::stored::contradictions;
    let command = historical(&store(5, "12.5"), 5);
    let mut memory = Store::default();
    let linked = import_and_link(&mut memory, 1, &command);
    assert_eq!(linked.outcome, Outcome::Linked);
    let path = reservation::path(&rid(1));
    assert_eq!(memory[&path]["reservationSchemaVersion"], fields::int(3));
    let stored = stored_of(&memory, 1);
    assert_eq!(
        stored.reservation.migration_id.as_deref(),
        Some("mig-2026-10")
    );
    assert_eq!(
        stored.reservation.integrity_digest,
        integrity::integrity_digest(&stored.reservation, &stored.effects),
        "the digest is over the rows as relabelled"
    );
    assert!(contradictions(&stored).is_empty());
    // The exact retry, now and after an earlier release made the link (schema 1).
    let before = memory.clone();
    let again = memory.answer(&link(1, &command).expect("op"));
    assert_eq!(again.map(|o| o.outcome), Ok(Outcome::AlreadyLinked));
    strip_digest(&mut memory, 1);
    let earlier = memory.clone();
    let again = memory.answer(&link(1, &command).expect("op"));
    assert_eq!(again.map(|o| o.outcome), Ok(Outcome::AlreadyLinked));
    assert_eq!(memory, earlier, "nothing written");
    // An edit of a linked row after the link is corrupt for every operation now.
    let mut edited = before.clone();
    edit(
        &mut edited,
        &effect::path("legacy-0"),
        "amount",
        fields::string("1.00"),
    );
    assert!(matches!(
        edited.answer(&link(1, &command).expect("op")),
        Err(JournalError::JournalCorrupt { .. })
    ));
    let accept = Accept::new(&key(1), &store(5, "12.5"), &scope(), now()).expect("op");
    assert!(matches!(
        edited.answer(&accept),
        Err(JournalError::JournalCorrupt { .. })
    ));
}
