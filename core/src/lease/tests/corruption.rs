//! Malformed, orphan, future and preseeded states fail closed.

use super::*;
use crate::fence::FenceEpoch;

/// One corruption case per line, `name, base [reason]: field = value, …;`, built as
/// `(name, &base, set(&base, vec![(field, value), …]), reason)`; the reason is the
/// default given first unless the case names its own.
macro_rules! cases {
    ($set:ident, $default:expr; $($name:literal, $life:ident $([$reason:expr])?: $($field:literal = $v:expr),+;)+) => {
        vec![$(($name, &$life, $set(&$life, vec![$(($field, $v)),+]), cases!(@reason $default $(, $reason)?))),+]
    };
    (@reason $default:expr) => { $default };
    (@reason $default:expr, $reason:expr) => { $reason };
}

/// Base states the corruption matrices start from; every one is valid as stored.
fn base_lives() -> Vec<(&'static str, Life)> {
    let first = Life::first(0, T0);
    let second = first.taken_over(1, T0 + LEASE + SEC);
    vec![
        ("first lease", first.clone()),
        ("taken over", second.clone()),
        ("succeeded", second.succeeded(T0 + LEASE + 2 * SEC, 0)),
        ("failed", first.failed(T0 + SEC)),
    ]
}

#[test]
fn base_states_of_the_corruption_matrices_are_valid() {
    for (name, life) in base_lives() {
        let mut store = store_with(&life);
        let ran = run(&status(T0 + 1_000 * SEC), &mut store);
        assert!(ran.result.is_ok(), "{name}: {:?}", ran.result);
    }
}

fn value(v: ValueType) -> Value {
    Value {
        value_type: Some(v),
    }
}

/// Values of every type; each field is tried with every type it does not have.
fn every_type() -> Vec<Value> {
    vec![
        value(ValueType::DoubleValue(1.0)),
        value(ValueType::IntegerValue(1)),
        value(ValueType::StringValue("leased".into())),
        value(ValueType::BooleanValue(true)),
        value(ValueType::NullValue(0)),
        value(ValueType::TimestampValue(at(T0).to_value_time())),
        value(ValueType::BytesValue(vec![1])),
        Value { value_type: None },
    ]
}

fn same_type(a: &Value, b: &Value) -> bool {
    match (&a.value_type, &b.value_type) {
        (Some(x), Some(y)) => std::mem::discriminant(x) == std::mem::discriminant(y),
        (x, y) => x.is_none() && y.is_none(),
    }
}

/// Missing, extra and wrongly typed lifecycle fields, in every base state.
#[test]
fn lifecycle_structure_matrix_is_corrupt() {
    let mut cases = 0;
    for (name, life) in base_lives() {
        let base = life.fields();
        let mut docs = Vec::new();
        for field in base.keys() {
            let mut missing = base.clone();
            missing.remove(field);
            docs.push((format!("{name}: missing {field}"), missing));
            for v in every_type() {
                if !same_type(&v, &base[field]) {
                    let mut changed = base.clone();
                    changed.insert(field.clone(), v.clone());
                    docs.push((format!("{name}: {field} as {v:?}"), changed));
                }
            }
        }
        let mut extra = base.clone();
        extra.insert("note".into(), fields::string("x"));
        docs.push((format!("{name}: extra field"), extra));
        for (case, doc) in docs {
            cases += 1;
            let mut store = store_with(&life);
            store.insert(lifecycle_path(), doc);
            every_op_rejects(&mut store, corrupt(MALFORMED_LIFECYCLE), &case);
        }
    }
    assert!(cases > 300, "matrix too small: {cases}");
}

/// Right-typed lifecycle values that break an exact value or a relation.
#[test]
fn lifecycle_semantic_matrix_is_corrupt() {
    let first = Life::first(0, T0);
    let second = first.taken_over(1, T0 + LEASE + SEC);
    let succeeded = second.succeeded(T0 + LEASE + 2 * SEC, 0);
    let failed = first.failed(T0 + SEC);
    let other_hash = "f".repeat(64);
    let sub_micro = value(ValueType::TimestampValue(
        crate::document::value::ValueTime {
            seconds: T0.div_euclid(SEC),
            nanos: 623_456_789,
        },
    ));
    let set = |life: &Life, pairs: Vec<(&str, Value)>| {
        let mut doc = life.fields();
        for (field, v) in pairs {
            doc.insert(field.into(), v);
        }
        doc
    };
    let commitment_hash = fields::string(commitment(0).as_str());
    let kind = fields::string("business_record_digest");
    let cases = cases!(set, MALFORMED_LIFECYCLE;
        "future lifecycleSchemaVersion 2", first: "lifecycleSchemaVersion" = fields::int(2);
        "lifecycleSchemaVersion 0", first: "lifecycleSchemaVersion" = fields::int(0);
        "double fenceEpoch", first: "fenceEpoch" = value(ValueType::DoubleValue(1.0));
        "double commandRevision", first: "commandRevision" = value(ValueType::DoubleValue(2.0));
        "string fenceEpoch", first: "fenceEpoch" = fields::string("1");
        "unknown state", first: "state" = fields::string("expired");
        "state registered", first: "state" = fields::string("registered");
        "uppercase state", first: "state" = fields::string("LEASED");
        "other commandKeyHash", first: "commandKeyHash" = fields::string(other_hash.clone());
        "uppercase commandKeyHash", first: "commandKeyHash" = fields::string(hash().as_str().to_uppercase());
        "short owner fingerprint", first: "leaseOwnerFingerprint" = fields::string("abc");
        "raw lease id as owner", first: "leaseOwnerFingerprint" = fields::string(LEASE_IDS[0]);
        "expiry 59 s after acquisition", first: "leaseExpiresAt" = ts(T0 + LEASE - SEC);
        "expiry 61 s after acquisition", first: "leaseExpiresAt" = ts(T0 + LEASE + SEC);
        "expiry 60 s + 1 µs after acquisition", first: "leaseExpiresAt" = ts(T0 + LEASE + 1);
        "expiry equal to acquisition", first: "leaseExpiresAt" = ts(T0);
        "revision != fence + 1 while leased", first: "commandRevision" = fields::int(3);
        "revision 1", first: "commandRevision" = fields::int(1);
        "fence 0", first: "fenceEpoch" = fields::int(0), "commandRevision" = fields::int(1);
        "revision above the maximum", first: "commandRevision" = fields::int(MAX_REV + 1), "fenceEpoch" = fields::int(MAX_REV);
        "negative fence", first: "fenceEpoch" = fields::int(-1);
        "first lease created != acquired", first: "createdAt" = ts(T0 - 1);
        "updated != acquired while leased", first: "updatedAt" = ts(T0 + 1);
        "sub-microsecond acquisition", first: "leaseAcquiredAt" = sub_micro;
        "terminal hash without kind", first: "terminalCommitmentHash" = commitment_hash.clone();
        "terminal kind without hash", first: "terminalCommitmentKind" = kind.clone();
        "terminal commitment while leased", first: "terminalCommitmentKind" = kind.clone(), "terminalCommitmentHash" = commitment_hash.clone();
        "takeover created after acquired", second: "createdAt" = ts(second.acquired + 1);
        "succeeded without commitment", succeeded: "terminalCommitmentKind" = fields::null(), "terminalCommitmentHash" = fields::null();
        "succeeded hash without kind", succeeded: "terminalCommitmentKind" = fields::null();
        "succeeded unknown kind", succeeded: "terminalCommitmentKind" = fields::string("provider_id");
        "succeeded uppercase hash", succeeded: "terminalCommitmentHash" = fields::string(commitment(0).as_str().to_uppercase());
        "succeeded raw reference length hash", succeeded: "terminalCommitmentHash" = fields::string("feedface");
        "succeeded at expiry", succeeded: "updatedAt" = ts(succeeded.expires);
        "succeeded before acquisition", succeeded: "updatedAt" = ts(succeeded.acquired - 1);
        "succeeded revision fence + 1", succeeded: "commandRevision" = fields::int(succeeded.fence + 1);
        "failed with commitment", failed: "terminalCommitmentKind" = kind, "terminalCommitmentHash" = commitment_hash;
        "failed revision fence + 3", failed: "commandRevision" = fields::int(failed.fence + 3);
    );
    for (case, life, doc, reason) in cases {
        let mut store = store_with(life);
        store.insert(lifecycle_path(), doc);
        every_op_rejects(&mut store, corrupt(reason), case);
    }
}

#[test]
fn lifecycle_without_its_current_audit_partner_is_corrupt() {
    for (name, life) in base_lives() {
        let mut store = store_with(&life);
        store.remove(&audit_path(life.revision));
        every_op_rejects(&mut store, corrupt(PARTNER_MISSING), name);
        // A partner stored under the previous revision does not count.
        if life.revision > 2 {
            let mut store = store_with(&life);
            let event = store.remove(&audit_path(life.revision)).expect("partner");
            store.insert(audit_path(life.revision - 1), event);
            every_op_rejects(&mut store, corrupt(PARTNER_MISSING), name);
        }
    }
}

/// Missing, extra and wrongly typed partner fields.
#[test]
fn partner_audit_structure_matrix_is_corrupt() {
    let mut cases = 0;
    for (name, life) in base_lives() {
        let base = life.event();
        let mut docs = Vec::new();
        for field in base.keys() {
            let mut missing = base.clone();
            missing.remove(field);
            docs.push((format!("{name}: partner missing {field}"), missing));
            for v in every_type() {
                if !same_type(&v, &base[field]) {
                    let mut changed = base.clone();
                    changed.insert(field.clone(), v.clone());
                    docs.push((format!("{name}: partner {field} as {v:?}"), changed));
                }
            }
        }
        let mut extra = base.clone();
        extra.insert(
            "leaseOwnerFingerprint".into(),
            fields::string(owner(0).as_str()),
        );
        docs.push((format!("{name}: partner with an extra field"), extra));
        for (case, doc) in docs {
            cases += 1;
            let mut store = store_with(&life);
            store.insert(audit_path(life.revision), doc);
            every_op_rejects(&mut store, corrupt(MALFORMED_EVENT), &case);
        }
    }
    assert!(cases > 300, "matrix too small: {cases}");
}

/// Right-typed partner values: malformed on their own, or disagreeing with the
/// lifecycle or root.
#[test]
fn partner_audit_semantic_matrix_is_corrupt() {
    let first = Life::first(0, T0);
    let second = first.taken_over(1, T0 + LEASE + SEC);
    let succeeded = second.succeeded(T0 + LEASE + 2 * SEC, 0);
    let failed = first.failed(T0 + SEC);
    let set = |life: &Life, pairs: Vec<(&str, Value)>| {
        let mut doc = life.event();
        for (field, v) in pairs {
            doc.insert(field.into(), v);
        }
        doc
    };
    let cases = cases!(set, MALFORMED_EVENT;
        // Malformed as an event.
        "future auditSchemaVersion 3", first: "auditSchemaVersion" = fields::int(3);
        "registration auditSchemaVersion 1", first: "auditSchemaVersion" = fields::int(1);
        "other aggregateType", first: "aggregateType" = fields::string("ledger");
        "other commandKeyHash", first: "commandKeyHash" = fields::string("f".repeat(64));
        "revision not matching its id", second: "commandRevision" = fields::int(4), "fenceEpoch" = fields::int(3);
        "mismatching fence (acquired, fence 2)", first: "fenceEpoch" = fields::int(2);
        "mismatching fence (takeover, fence 1)", second: "fenceEpoch" = fields::int(1);
        "mismatching fence (succeeded, fence 1)", succeeded: "fenceEpoch" = fields::int(1);
        "unknown event type", first: "eventType" = fields::string("command_lease_renewed");
        "registration event type", first: "eventType" = fields::string("command_registered");
        "takeover type at revision 2", first: "eventType" = fields::string("command_lease_taken_over"), "fromState" = fields::string("leased");
        "wrong fromState", first: "fromState" = fields::string("leased");
        "null fromState", first: "fromState" = fields::null();
        "wrong toState", succeeded: "toState" = fields::string("failed_final");
        "unknown environment", first: "environment" = fields::string("prod");
        "sub-microsecond occurredAt", first: "occurredAt" = value(ValueType::TimestampValue(crate::document::value::ValueTime { seconds: 1, nanos: 1 }));
        // Well formed, but not this lifecycle's partner.
        "mismatching expiry", first [PARTNER_DISAGREES]: "leaseExpiresAt" = ts(T0 + LEASE + 1);
        "mismatching expiry after takeover", second [PARTNER_DISAGREES]: "leaseExpiresAt" = ts(first.expires);
        "mismatching occurredAt", first [PARTNER_DISAGREES]: "occurredAt" = ts(T0 + 1);
        "mismatching occurredAt after success", succeeded [PARTNER_DISAGREES]: "occurredAt" = ts(second.acquired);
        "event type failed for a succeeded lifecycle", succeeded [PARTNER_DISAGREES]: "eventType" = fields::string("command_failed_final"), "toState" = fields::string("failed_final");
        "event type succeeded for a failed lifecycle", failed [PARTNER_DISAGREES]: "eventType" = fields::string("command_succeeded"), "toState" = fields::string("succeeded");
        "succeeded event for a leased lifecycle", second [PARTNER_DISAGREES]: "eventType" = fields::string("command_succeeded"), "toState" = fields::string("succeeded"), "fenceEpoch" = fields::int(1);
        "other environment than the root", first [PARTNER_DISAGREES]: "environment" = fields::string("staging");
        "other caller scope than the root", first [PARTNER_DISAGREES]: "callerScopeKind" = fields::string("guest");
        "other command type than the root", first [PARTNER_DISAGREES]: "commandType" = fields::string("refund");
    );
    for (case, life, doc, reason) in cases {
        let mut store = store_with(life);
        store.insert(audit_path(life.revision), doc);
        every_op_rejects(&mut store, corrupt(reason), case);
    }
}

#[test]
fn transition_audit_without_a_lifecycle_is_corrupt() {
    let mut store = registered_store();
    Life::first(0, T0).seed(&mut store);
    store.remove(&lifecycle_path());
    every_op_rejects(
        &mut store,
        corrupt(EVENT_WITHOUT_LIFECYCLE),
        "revision-2 audit only",
    );
    // Any document there, not just a well-formed one.
    let mut store = registered_store();
    store.insert(audit_path(2), fields::map([("x", fields::int(1))]));
    every_op_rejects(
        &mut store,
        corrupt(EVENT_WITHOUT_LIFECYCLE),
        "junk revision-2 audit",
    );
}

/// Documents the current behaviour: with no lifecycle only revision 2 (the next
/// deterministic id) is checked, so a stray later event does not stop the first
/// acquisition; the lifecycle it creates then fails closed once that stray event
/// becomes its "next" one.
#[test]
fn stray_audit_beyond_the_next_revision_fails_closed_before_any_transition() {
    let mut store = registered_store();
    let stray = Life::first(0, T0).taken_over(1, T0 + LEASE);
    store.insert(audit_path(3), stray.event());
    every_op_rejects(
        &mut store,
        corrupt(EVENT_WITHOUT_LIFECYCLE),
        "stray revision 3",
    );
}

#[test]
fn preseeded_next_audit_fails_closed_for_every_operation() {
    for (name, life) in base_lives() {
        let mut store = store_with(&life);
        // What the next transition would write, and a junk document.
        let next_event = if life.state == "leased" {
            life.taken_over(2, life.expires).event()
        } else {
            life.event()
        };
        store.insert(audit_path(life.revision + 1), next_event);
        every_op_rejects(&mut store, corrupt(NEXT_EXISTS), name);
        store.insert(audit_path(life.revision + 1), FieldMap::new());
        every_op_rejects(&mut store, corrupt(NEXT_EXISTS), name);
    }
    // The specific mutations the brief names, from a real first lease.
    let (mut store, first) = leased_store();
    store.insert(audit_path(3), first.taken_over(1, T0 + LEASE).event());
    let before = store.clone();
    let error = corrupt(NEXT_EXISTS);
    rejected(run(&acquire(1, T0 + LEASE), &mut store), error, "takeover");
    rejected(
        run(&acquire(0, T0 + LEASE), &mut store),
        error,
        "same-holder takeover",
    );
    rejected(
        run(&complete(0, 1, 0, T0 + SEC), &mut store),
        error,
        "complete",
    );
    rejected(run(&fail(0, 1, T0 + SEC), &mut store), error, "fail");
    rejected(run(&acquire(0, T0 + SEC), &mut store), error, "recovery");
    rejected(run(&acquire(1, T0 + SEC), &mut store), error, "busy");
    assert_eq!(store, before);
}

#[test]
fn registration_pair_is_validated_with_a_lifecycle_present() {
    let life = Life::first(0, T0);
    let mut store = store_with(&life);
    store.remove(&root_path());
    every_op_rejects(
        &mut store,
        corrupt("registration audit event without its root"),
        "root missing",
    );
    let mut store = store_with(&life);
    store.remove(&audit_path(1));
    every_op_rejects(
        &mut store,
        corrupt("registration root without its audit event"),
        "revision-1 audit missing",
    );
    let mut store = store_with(&life);
    store
        .get_mut(&root_path())
        .expect("root")
        .insert("state".into(), fields::string("leased"));
    every_op_rejects(
        &mut store,
        corrupt("malformed registration root"),
        "mutated root",
    );
    let mut store = store_with(&life);
    store
        .get_mut(&root_path())
        .expect("root")
        .insert("lifecycle".into(), fields::string("leased"));
    every_op_rejects(
        &mut store,
        corrupt("malformed registration root"),
        "root extra field",
    );
    let mut store = store_with(&life);
    store
        .get_mut(&audit_path(1))
        .expect("audit 1")
        .insert("auditSchemaVersion".into(), fields::int(2));
    every_op_rejects(
        &mut store,
        corrupt("malformed registration audit event"),
        "revision-1 audit as version 2",
    );
    // The same command id with another payload: a conflict, before the lifecycle.
    let mut store = store_with(&life);
    let other = input_with(json!({"sku": "mug"}));
    let other_call = |now: i64| LeaseCall::new(other.identity(), owner(0), at(now));
    let error = JournalError::CommandConflict;
    rejected(
        run(&Acquire::new(other_call(T0)), &mut store),
        error,
        "acquire",
    );
    rejected(
        run(
            &Terminal::new(other_call(T0), FenceEpoch::stored(1), TerminalRequest::Fail),
            &mut store,
        ),
        error,
        "fail",
    );
    rejected(
        run(
            &StatusRead::new(other_call(T0).command().clone()),
            &mut store,
        ),
        error,
        "status",
    );
}

const ORPHAN: &str = "lifecycle records without a registration";

/// An orphan lifecycle (with or without its partner) or orphan transition event within
/// the first read, with no root and revision-1 audit, fails closed as corrupt for every
/// operation and is never repaired.
#[test]
fn orphan_lifecycle_records_without_registration_are_corrupt() {
    for (name, life) in base_lives() {
        let mut store = Store::new();
        life.seed(&mut store);
        every_op_rejects(&mut store, corrupt(ORPHAN), name);
        store.remove(&audit_path(life.revision));
        every_op_rejects(&mut store, corrupt(ORPHAN), name);
    }
    for revision in 2..=4 {
        let mut store = Store::new();
        store.insert(audit_path(revision), Life::first(0, T0).event());
        every_op_rejects(&mut store, corrupt(ORPHAN), "orphan transition event");
    }
}

/// Documents the current boundary: an orphan transition event beyond the first read
/// (revision 5+), with neither registration nor lifecycle, is not looked for; the
/// operations answer `not_registered` and write nothing.
#[test]
fn orphan_transition_event_beyond_the_first_read_is_not_registered() {
    let mut store = Store::new();
    let life = Life::leased_at(0, 4, T0, REGISTERED);
    store.insert(audit_path(5), life.event());
    every_op_rejects(&mut store, JournalError::NotRegistered, "orphan revision 5");
}

const PREDATES: &str = "lifecycle predates its registration";

#[test]
fn lifecycle_created_before_registration_is_corrupt() {
    // A well-formed first lease (and partner) dated before the root's registeredAt.
    let early = Life::first(0, REGISTERED - 1);
    let mut store = store_with(&early);
    every_op_rejects(
        &mut store,
        corrupt(PREDATES),
        "first lease before registration",
    );
    // A takeover whose creation predates registration.
    let taken = Life::leased_at(1, 2, T0, REGISTERED - SEC);
    let mut store = store_with(&taken);
    every_op_rejects(
        &mut store,
        corrupt(PREDATES),
        "takeover created before registration",
    );
    // Exactly at registration is fine.
    let mut store = store_with(&Life::first(0, REGISTERED));
    observed(
        run(&acquire(0, REGISTERED + SEC), &mut store),
        held(1, REGISTERED + LEASE),
    );
}
