use super::*;
use crate::document::fields;
use crate::ledger::accept::Accept;
use crate::ledger::effect::{self, Lineage};
use crate::ledger::fingerprint::Amount;
use crate::ledger::fixtures::{Memory, historical, key, now, rid, scope, store, transfer};

fn link(n: u32, command: &HistoricalCommand) -> Result<Link, JournalError> {
    Link::new(&key(n), &scope(), command, now())
}

fn v3() -> HistoricalCommand {
    historical(&store(5, "12.5"), 3)
}

#[test]
fn linking_creates_a_historical_reservation_and_effects_exactly_as_given() {
    let command = v3();
    let mut memory = Memory::default();
    let outcome = memory.run(&link(1, &command).expect("op")).expect("linked");
    assert_eq!(outcome.outcome, Outcome::Linked);
    assert_eq!(outcome.fingerprint, command.fingerprint, "stored as given");
    assert_eq!(outcome.fingerprint_version, 3);
    assert_eq!(outcome.accepted_at, command.accepted_at);
    assert_eq!(outcome.migration_id.as_deref(), Some("mig-2026-10"));
    assert_eq!(memory.count(reservation::COLLECTION), 1);
    assert_eq!(memory.count(effect::COLLECTION), 1);
    let e = &outcome.effects[0];
    assert_eq!(e.lineage, Lineage::HistoricalLinked);
    assert_eq!(e.migration_id.as_deref(), Some("mig-2026-10"));
    assert_eq!(e.effect_id, effect::effect_id(&rid(1), 0));
    let stored = &memory.docs[&reservation::path(&rid(1))];
    assert_eq!(stored["migrationId"], fields::string("mig-2026-10"));
    assert_eq!(stored["fingerprintVersion"], fields::int(3));
}

#[test]
fn relinking_is_idempotent_and_anything_else_under_the_key_is_refused() {
    let mut memory = Memory::default();
    memory.run(&link(1, &v3()).expect("op")).expect("linked");
    let before = memory.clone();
    assert_eq!(
        memory.run(&link(1, &v3()).expect("op")).map(|o| o.outcome),
        Ok(Outcome::AlreadyLinked)
    );
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
    for command in [other_fingerprint, other_migration, other_version] {
        assert_eq!(
            memory.run(&link(1, &command).expect("op")),
            Err(JournalError::ReplayMismatch)
        );
    }
    let elsewhere = LedgerScope::new("seat-Z", "seat-Z").expect("scope");
    let op = Link::new(&key(1), &elsewhere, &v3(), now()).expect("op");
    assert_eq!(memory.run(&op), Err(JournalError::ScopeMismatch));
    assert_eq!(memory, before);
}

#[test]
fn a_canonical_reservation_is_never_relabelled_historical() {
    let mut memory = Memory::default();
    let accept = Accept::new(&key(1), &store(5, "12.5"), &scope(), now()).expect("op");
    let accepted = memory.run(&accept).expect("accepted");
    let command = HistoricalCommand {
        fingerprint: accepted.fingerprint.clone(),
        fingerprint_version: 5,
        accepted_at: now(),
        ..v3()
    };
    let before = memory.clone();
    assert_eq!(
        memory.run(&link(1, &command).expect("op")),
        Err(JournalError::ReplayMismatch)
    );
    assert_eq!(memory, before);
}

#[test]
fn an_orphan_effect_in_the_slots_is_corrupt() {
    let mut memory = Memory::default();
    memory.docs.insert(
        effect::path(&effect::effect_id(&rid(1), 1)),
        fields::map([("x", fields::int(1))]),
    );
    assert!(matches!(
        memory.run(&link(1, &v3()).expect("op")),
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(memory.count(reservation::COLLECTION), 0);
}

#[test]
fn a_historical_transfer_must_be_its_derived_debit_and_credit() {
    let legs = crate::ledger::stored::transfer_legs(transfer("7").transfer().expect("transfer"))
        .expect("legs");
    let command = HistoricalCommand {
        family: CommandFamily::InternalTransfer,
        effects: legs.to_vec(),
        ..v3()
    };
    let mut memory = Memory::default();
    let outcome = memory.run(&link(1, &command).expect("op")).expect("linked");
    assert_eq!(outcome.effects.len(), 2);
    let mut swapped = legs.to_vec();
    swapped.reverse();
    let mut uneven = legs.to_vec();
    uneven[0].amount = Amount::parse("-6.00");
    for effects in [
        swapped,
        uneven,
        vec![legs[0].clone()],
        [legs.to_vec(), legs.to_vec()].concat(),
    ] {
        let command = HistoricalCommand {
            family: CommandFamily::InternalTransfer,
            effects,
            ..v3()
        };
        assert_eq!(
            link(2, &command).map(|_| ()),
            Err(JournalError::invalid("effects"))
        );
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
