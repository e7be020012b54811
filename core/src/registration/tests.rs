use super::*;
use crate::document::fields;
use crate::document::value::Value;
use crate::document::value::ValueType;
use crate::identity::{CommandInput, CommandRequest};
use serde_json::json;

fn identity_with(payload: serde_json::Value) -> CommandIdentity {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: "member_1",
        command_id: "3f2504e0-4f89-41d3-9a0c-0305e82c3301",
        command_type: "checkout",
        endpoint_schema_version: 3,
        payload: &payload,
    })
    .expect("valid command")
    .identity()
}

fn identity() -> CommandIdentity {
    identity_with(json!({"sku": "tee"}))
}

fn now() -> Timestamp {
    Timestamp::from_micros(1_800_000_000_123_456).expect("time")
}

/// The documents a first registration writes, as a snapshot.
fn registered() -> (FieldMap, FieldMap) {
    let op = Registration::new(identity(), now());
    let (root, event) = op.documents();
    (root.encode(), event.encode())
}

fn snapshot(root: Option<FieldMap>, audit: Option<FieldMap>) -> Snapshot {
    let hash = identity().command_key_hash().clone();
    Snapshot::new([
        (format!("checkoutRequests/{hash}"), root),
        (
            format!("auditEvents/commerce_command_{hash}_0000000001"),
            audit,
        ),
        (format!("checkoutRequests/{hash}/lifecycle/current"), None),
    ])
}

fn decide(root: Option<FieldMap>, audit: Option<FieldMap>) -> Decision<RegistrationOutput> {
    Registration::new(identity(), now()).decide(&snapshot(root, audit))
}

fn assert_corrupt(decision: Decision<RegistrationOutput>, case: &str) {
    match decision {
        Decision::Reject(JournalError::JournalCorrupt { .. }) => {}
        other => panic!("{case}: expected journal_corrupt, got {other:?}"),
    }
}

#[test]
fn first_registration_creates_root_and_revision_one_audit() {
    let Decision::Mutate(writes, output) = decide(None, None) else {
        panic!("expected a mutation");
    };
    assert_eq!(output.outcome(), RegistrationOutcome::RegisteredNew);
    let hash = identity().command_key_hash().clone();
    let (root, event) = registered();
    assert_eq!(
        writes,
        vec![
            Write::Create {
                path: format!("checkoutRequests/{hash}"),
                fields: root,
            },
            Write::Create {
                path: format!("auditEvents/commerce_command_{hash}_0000000001"),
                fields: event,
            },
        ]
    );
}

#[test]
fn output_serializes_to_the_fixed_shape() {
    let Decision::Mutate(_, output) = decide(None, None) else {
        panic!("expected a mutation");
    };
    assert_eq!(
        serde_json::to_string(&output).expect("json"),
        r#"{"journalSchemaVersion":1,"outcome":"registered_new","state":"registered"}"#
    );
    let (root, audit) = registered();
    let Decision::Observe(output) = decide(Some(root), Some(audit)) else {
        panic!("expected an observation");
    };
    assert_eq!(
        serde_json::to_value(output).expect("json"),
        json!({"journalSchemaVersion":1,"outcome":"registered_existing","state":"registered"})
    );
}

#[test]
fn exact_existing_registration_is_observed_without_writes() {
    let (root, audit) = registered();
    // A later captured time changes nothing: the stored registration is kept.
    let later = Timestamp::from_micros(now().micros() + 5_000_000).expect("time");
    let decision = Registration::new(identity(), later).decide(&snapshot(Some(root), Some(audit)));
    assert!(matches!(
        decision,
        Decision::Observe(o) if o.outcome() == RegistrationOutcome::RegisteredExisting
    ));
}

#[test]
fn a_different_payload_is_a_command_conflict() {
    let (root, audit) = registered();
    let other = Registration::new(identity_with(json!({"sku": "mug"})), now());
    assert_eq!(
        other.decide(&snapshot(Some(root), Some(audit))),
        Decision::Reject(JournalError::CommandConflict)
    );
}

#[test]
fn a_lifecycle_without_registration_is_corrupt_not_adopted() {
    let hash = identity().command_key_hash().clone();
    let orphan = Snapshot::new([
        (format!("checkoutRequests/{hash}"), None),
        (
            format!("auditEvents/commerce_command_{hash}_0000000001"),
            None,
        ),
        (
            format!("checkoutRequests/{hash}/lifecycle/current"),
            Some(fields::map([("anything", fields::int(1))])),
        ),
    ]);
    assert_corrupt(
        Registration::new(identity(), now()).decide(&orphan),
        "orphan lifecycle",
    );
}

#[test]
fn orphans_are_corrupt() {
    let (root, audit) = registered();
    assert_corrupt(decide(Some(root), None), "root without audit");
    assert_corrupt(decide(None, Some(audit)), "audit without root");
}

fn value(v: ValueType) -> Value {
    Value {
        value_type: Some(v),
    }
}

/// Values of every type a codec might meet; each field is tried with all of the
/// types it does not have.
fn wrong_type_values() -> Vec<Value> {
    vec![
        value(ValueType::DoubleValue(1.0)),
        value(ValueType::IntegerValue(1)),
        value(ValueType::StringValue("registered".into())),
        value(ValueType::BooleanValue(true)),
        value(ValueType::NullValue(0)),
        value(ValueType::TimestampValue(now().to_value_time())),
        value(ValueType::BytesValue(vec![1])),
        Value { value_type: None },
    ]
}

fn same_type(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(&a.value_type) == std::mem::discriminant(&b.value_type)
        && match (&a.value_type, &b.value_type) {
            (Some(x), Some(y)) => std::mem::discriminant(x) == std::mem::discriminant(y),
            _ => true,
        }
}

/// Missing, extra and wrongly typed fields of either document are corrupt.
#[test]
fn structural_malformation_matrix() {
    let (root, audit) = registered();
    let mut cases = 0;
    for target in ["root", "audit"] {
        let base = if target == "root" { &root } else { &audit };
        for name in base.keys() {
            let mut missing = base.clone();
            missing.remove(name);
            let mut wrong = vec![missing];
            for v in wrong_type_values() {
                if !same_type(&v, &base[name]) {
                    let mut changed = base.clone();
                    changed.insert(name.clone(), v);
                    wrong.push(changed);
                }
            }
            for doc in wrong {
                cases += 1;
                let decision = if target == "root" {
                    decide(Some(doc), Some(audit.clone()))
                } else {
                    decide(Some(root.clone()), Some(doc))
                };
                assert_corrupt(decision, &format!("{target}.{name}"));
            }
        }
        let mut extra = base.clone();
        extra.insert("note".into(), fields::string("x"));
        let decision = if target == "root" {
            decide(Some(extra), Some(audit.clone()))
        } else {
            decide(Some(root.clone()), Some(extra))
        };
        assert_corrupt(decision, &format!("{target} with an extra field"));
    }
    assert!(cases > 100, "matrix too small: {cases}");
}

/// Values of the right type that break an exact value or a relation.
#[test]
fn semantic_malformation_matrix() {
    let (root, audit) = registered();
    let other_hash = "f".repeat(64);
    let later = Timestamp::from_micros(now().micros() + 1).expect("time");
    let sub_micro = value(ValueType::TimestampValue(
        crate::document::value::ValueTime {
            seconds: 1_800_000_000,
            nanos: 123_456_789,
        },
    ));
    let root_cases: Vec<(&str, Value)> = vec![
        ("journalSchemaVersion", fields::int(2)),
        ("state", fields::string("leased")),
        ("commandRevision", fields::int(2)),
        ("commandKeyHash", fields::string(other_hash.clone())),
        ("commandKeyHash", fields::string(other_hash.to_uppercase())),
        ("environment", fields::string("production")),
        ("environment", fields::string("prod")),
        ("callerScopeKind", fields::string("guest")),
        ("commandType", fields::string("refund")),
        ("commandType", fields::string("Bad Type")),
        ("endpointSchemaVersion", fields::int(4)),
        ("endpointSchemaVersion", fields::int(0)),
        ("payloadFingerprint", fields::string("abc")),
        ("registeredAt", fields::timestamp(later)),
        ("registeredAt", sub_micro.clone()),
    ];
    for (name, v) in root_cases {
        let mut doc = root.clone();
        doc.insert(name.into(), v);
        assert_corrupt(
            decide(Some(doc), Some(audit.clone())),
            &format!("root.{name}"),
        );
    }
    let audit_cases: Vec<(&str, Value)> = vec![
        ("auditSchemaVersion", fields::int(2)),
        ("aggregateType", fields::string("ledger")),
        ("commandKeyHash", fields::string(other_hash)),
        ("commandRevision", fields::int(2)),
        ("eventType", fields::string("command_lease_acquired")),
        ("fromState", fields::string("registered")),
        ("toState", fields::string("leased")),
        ("environment", fields::string("staging")),
        ("callerScopeKind", fields::string("officer")),
        ("commandType", fields::string("refund")),
        ("occurredAt", fields::timestamp(later)),
        ("occurredAt", sub_micro),
    ];
    for (name, v) in audit_cases {
        let mut doc = audit.clone();
        doc.insert(name.into(), v);
        assert_corrupt(
            decide(Some(root.clone()), Some(doc)),
            &format!("audit.{name}"),
        );
    }
}

#[test]
fn codecs_round_trip() {
    let op = Registration::new(identity(), now());
    let (root, event) = op.documents();
    let hash = identity().command_key_hash().clone();
    assert_eq!(
        RootDocument::parse(hash.as_str(), &root.encode()).expect("root"),
        root
    );
    assert_eq!(
        RegistrationEvent::parse(&audit::id(&hash, 1), &event.encode()).expect("event"),
        event
    );
}

#[test]
fn decide_is_deterministic_across_attempts() {
    // The runner calls decide once per attempt with the same prepared value.
    let op = Registration::new(identity(), now());
    let first = op.decide(&snapshot(None, None));
    for _ in 0..10 {
        assert_eq!(op.decide(&snapshot(None, None)), first);
    }
}

#[test]
fn a_new_registration_is_one_blind_commit_and_a_stray_lifecycle_still_refuses_it() {
    use crate::testing::Store;
    let hash = identity().command_key_hash().clone();
    let mut store = Store::new();
    let ran = store.run(&Registration::new(identity(), now()));
    assert!(ran.blind && ran.reads() == 0, "a new command reads nothing");
    assert_eq!(
        ran.result.map(|o| o.outcome()),
        Ok(RegistrationOutcome::RegisteredNew)
    );
    assert_eq!(store.len(), 2);
    // The lifecycle is read, not created: its absence guard refuses the blind commit,
    // and the read path answers as it always did.
    let lifecycle = format!("checkoutRequests/{hash}/lifecycle/current");
    let mut stray = Store::new();
    stray.insert(
        lifecycle.clone(),
        fields::map([("anything", fields::int(1))]),
    );
    let ran = stray.run(&Registration::new(identity(), now()));
    assert!(!ran.blind && ran.reads() == 1);
    assert_corrupt(
        match ran.result {
            Err(error) => Decision::Reject(error),
            Ok(output) => Decision::Observe(output),
        },
        "stray lifecycle",
    );
    assert_eq!(stray.len(), 1, "nothing written");
}
