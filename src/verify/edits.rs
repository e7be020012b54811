//! Single-field edits of a clean journal, checked by the whole verifier over the
//! in-memory store ([`verify_documents`](super::verify_documents)): any edit an
//! outside writer makes is reported (the write times show it), and an edit that keeps
//! the write times, as a forger who could set Firestore's commit times would make, is
//! still reported for every field but the few that no other document relates to.

use super::{FindingCode, VerifyReport, verify_documents};
use crate::identity::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
use crate::time::Timestamp;
use command_journal_core::testing::Store;
use command_journal_core::tools::document::fields::{self, FieldMap};
use command_journal_core::tools::document::value::Value;
use command_journal_core::tools::document::value::ValueType;
use command_journal_core::tools::envelope::record::WithResult;
use command_journal_core::tools::lease::{Acquire, LeaseCall, Terminal, TerminalRequest};
use command_journal_core::tools::ledger::fixtures;
use command_journal_core::tools::registration::Registration;
use command_journal_core::tools::sends::guard::Guarded;
use command_journal_core::{FenceEpoch, ResultEnvelope};
use proptest::prelude::*;

const DOCUMENTS: &str = "projects/p/databases/(default)/documents";

/// The fields whose value no other stored document or relation determines: an edit
/// that keeps the write times cannot be told from the original. `(collection marker,
/// field)`: the root's payload fingerprint and endpoint schema version, the
/// lifecycle's lease owner and terminal commitment.
const FREE: [(&str, &str); 4] = [
    ("root", "payloadFingerprint"),
    ("root", "endpointSchemaVersion"),
    ("lifecycle", "leaseOwnerFingerprint"),
    ("lifecycle", "terminalCommitmentHash"),
];

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_micros(seconds * 1_000_000).expect("time")
}

fn command(n: u8) -> CommandInput {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: "m1",
        command_id: &format!("3f2504e0-4f89-41d3-9a0c-0305e82c33{n:02}"),
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &serde_json::json!({"n": n}),
    })
    .expect("valid")
}

/// The result envelope command 4 succeeds with.
fn envelope() -> ResultEnvelope {
    ResultEnvelope::new(&serde_json::json!({"id": "ch_4", "amount": 1250, "currency": "eur"}))
        .expect("envelope")
}

/// A journal of every document kind: a command taken over and completed, one taken
/// over and failed, one still leased, one completed with a result envelope, and a
/// charge, a transfer, an effect plan, a reversal of the charge (with its bound and
/// log entry) and an imported row a migration linked.
fn journal() -> Store {
    let mut store = Store::new();
    let lease = |n: char| LeaseId::parse(&format!("9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2{n}"));
    for (n, ending) in [
        (1, Some(true)),
        (2, Some(false)),
        (3, None),
        (4, Some(true)),
    ] {
        let cmd = command(n);
        let identity = cmd.identity();
        let owner = |l: char| {
            cmd.lease_owner(&identity, &lease(l).expect("lease"))
                .expect("owner")
        };
        store
            .answer(&Registration::new(identity.clone(), at(100)))
            .expect("registered");
        store
            .answer(&Acquire::new(LeaseCall::new(
                identity.clone(),
                owner('a'),
                at(110),
            )))
            .expect("leased");
        let Some(success) = ending else { continue };
        store
            .answer(&Acquire::new(LeaseCall::new(
                identity.clone(),
                owner('b'),
                at(200),
            )))
            .expect("taken over");
        let request = if success {
            let reference = if n == 4 {
                envelope().reference()
            } else {
                TerminalReferenceFingerprint::parse(&"ab".repeat(32)).expect("ref")
            };
            TerminalRequest::Succeed(identity.terminal_commitment(&reference))
        } else {
            TerminalRequest::Fail
        };
        let terminal = Terminal::new(
            LeaseCall::new(identity.clone(), owner('b'), at(210)),
            FenceEpoch::stored(2),
            request,
        );
        let hash = identity.command_key_hash();
        if n == 4 {
            let op = WithResult::new(Guarded::new(terminal, hash), hash, at(210), &envelope());
            store.answer(&op).expect("ended with a result");
        } else {
            store.answer(&terminal).expect("ended");
        }
    }
    fixtures::accept_into(&mut store, 1, &fixtures::store(5, "12.50"));
    fixtures::accept_into(&mut store, 2, &fixtures::transfer("10.00"));
    fixtures::accept_into(&mut store, 3, &fixtures::debit_plan());
    // A reversal of key 1's charge, with the bound it writes below the charge's row.
    let charge = format!("{}_0000", fixtures::rid(1));
    let reversal = fixtures::plan(fixtures::reversal_json(
        5,
        &charge,
        Some("DUPLICATE_CHARGE"),
    ));
    fixtures::accept_into(&mut store, 4, &reversal);
    // An imported row a migration linked (and sealed): its edits are found too.
    let command = fixtures::historical(&fixtures::store(5, "7.00"), 5);
    fixtures::import_and_link(&mut store, 5, &command);
    store
}

fn report(store: &Store) -> VerifyReport {
    verify_documents(DOCUMENTS, store.documents()).expect("verify")
}

/// Another 64-hex digest: one digit changed.
fn other_digest(text: &str, seed: u64) -> Option<String> {
    let is_digest = text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit());
    is_digest.then(|| {
        let i = (seed % 64) as usize;
        let mut bytes = text.as_bytes().to_vec();
        bytes[i] = if bytes[i] == b'0' { b'1' } else { b'0' };
        String::from_utf8(bytes).unwrap_or_default()
    })
}

/// Texts the journal stores in its enum fields, so an edit can be a valid one.
const TEXTS: [&str; 12] = [
    "test",
    "staging",
    "member",
    "guest",
    "checkout",
    "refund",
    "leased",
    "succeeded",
    "failed_final",
    "command_lease_taken_over",
    "canonical_linked",
    "-1.00",
];

/// A value other than `value`, from `seed`: most often of the same type and plausible
/// (a near time, a neighbouring integer, another digest or enum text), sometimes of
/// another type.
fn mutate(value: &Value, seed: u64) -> Value {
    let kind = value.value_type.as_ref();
    if seed.is_multiple_of(7) {
        return match kind {
            Some(ValueType::StringValue(_)) => fields::int(1),
            _ => fields::string("1"),
        };
    }
    match kind {
        Some(ValueType::IntegerValue(n)) => fields::int(n + 1 + (seed % 3) as i64),
        Some(ValueType::StringValue(text)) => {
            let next = other_digest(text, seed).unwrap_or_else(|| {
                let pick = TEXTS[(seed % TEXTS.len() as u64) as usize];
                if pick == text {
                    format!("{text}x")
                } else {
                    pick.to_owned()
                }
            });
            fields::string(next)
        }
        Some(ValueType::TimestampValue(t)) => {
            let steps = [1_000, 1_000_000_000, 60_000_000_000, 3_600_000_000_000];
            let delta = steps[(seed % 4) as usize];
            let nanos = i128::from(t.seconds) * 1_000_000_000 + i128::from(t.nanos);
            let moved = if seed.is_multiple_of(2) {
                nanos + delta
            } else {
                nanos - delta
            };
            Value {
                value_type: Some(ValueType::TimestampValue(
                    command_journal_core::tools::document::value::ValueTime {
                        seconds: (moved.div_euclid(1_000_000_000)) as i64,
                        nanos: (moved.rem_euclid(1_000_000_000)) as i32,
                    },
                )),
            }
        }
        Some(ValueType::NullValue(_)) => match seed % 3 {
            0 => fields::string("ab".repeat(32)),
            1 => fields::int(0),
            _ => fields::string("x"),
        },
        Some(ValueType::ArrayValue(array)) => {
            let mut values = array.values.clone();
            match values.first_mut() {
                Some(first) if seed.is_multiple_of(2) => *first = mutate(first, seed / 2),
                Some(_) => {
                    values.pop();
                }
                None => values.push(fields::string("x")),
            }
            Value {
                value_type: Some(ValueType::ArrayValue(
                    command_journal_core::tools::document::value::ArrayValue { values },
                )),
            }
        }
        _ => fields::null(),
    }
}

/// The `n`-th document of `store` (in path order) and its `f`-th field (by name).
fn pick(store: &Store, n: usize, f: usize) -> (String, String) {
    let paths: Vec<String> = store.keys().cloned().collect();
    let path = paths[n % paths.len()].clone();
    let mut names: Vec<String> = store[path.as_str()].keys().cloned().collect();
    names.sort();
    (path.clone(), names[f % names.len()].clone())
}

/// Whether `field` of the document at `path` is one of the [`FREE`] fields.
fn free(path: &str, field: &str) -> bool {
    let kind = if path.ends_with("/lifecycle/current") {
        "lifecycle"
    } else if path.starts_with("checkoutRequests/") {
        "root"
    } else {
        "other"
    };
    FREE.contains(&(kind, field))
}

fn edit(fields: &mut FieldMap, field: &str, seed: u64) -> bool {
    let Some(old) = fields.get(field).cloned() else {
        return false;
    };
    let new = mutate(&old, seed);
    let changed = new != old;
    fields.insert(field.to_owned(), new);
    changed
}

#[test]
fn the_journal_is_clean_and_holds_every_document_kind() {
    let store = journal();
    let report = report(&store);
    assert!(report.clean, "{:?}", report.findings);
    // Four roots and one results document.
    assert_eq!(report.scanned.checkout_requests, 4 + 1);
    assert_eq!(report.scanned.lifecycles, 4);
    assert_eq!(report.scanned.audit_events, 3 + 3 + 2 + 4 + 2);
    assert_eq!(store.count("checkoutRequests") - 4 - 4, 1, "one envelope");
    assert_eq!(report.scanned.ledger_reservations, 5);
    // The rows, the reversal's bound and log entry below the charge's row, and the
    // linked row.
    assert_eq!(
        report.scanned.ledger_transactions,
        1 + 2 + 1 + 1 + 1 + 1 + 1
    );
}

#[test]
fn a_free_field_is_found_by_its_write_time_alone() {
    for (kind, field) in FREE {
        let mut store = journal();
        // A document holding the field with a value (the succeeded lifecycle for the
        // commitment, of the command without an envelope: the envelope binds the other).
        let with_envelope = store
            .keys()
            .find(|p| p.ends_with("/results/current"))
            .and_then(|p| p.split('/').nth(1))
            .map(str::to_owned)
            .expect("an envelope");
        let holds = |p: &String| {
            if p.contains(&with_envelope) {
                return false;
            }
            let value = store[p.as_str()]
                .get(field)
                .and_then(|v| v.value_type.as_ref());
            free(p, field)
                && (kind == "lifecycle") == p.ends_with("/current")
                && !matches!(value, None | Some(ValueType::NullValue(_)))
        };
        let path = store
            .keys()
            .find(|p| holds(p))
            .cloned()
            .expect("a document with the field");
        let mut forged = store.clone();
        assert!(edit(forged.forge(&path).expect("doc"), field, 1));
        assert!(
            report(&forged).clean,
            "{path} {field}: undetectable by content"
        );
        assert!(edit(store.get_mut(&path).expect("doc"), field, 1));
        let found = report(&store);
        let codes: Vec<FindingCode> = found.findings.iter().map(|f| f.code).collect();
        assert!(
            codes == [FindingCode::RewrittenDocument] || codes == [FindingCode::CommitTimeMismatch],
            "{path} {field}: {codes:?}"
        );
    }
}

#[test]
fn a_forged_edit_of_a_linked_imported_row_is_found_at_its_sealed_reservation() {
    let mut store = journal();
    let row = "ledgerTransactions/legacy-0";
    store
        .forge(row)
        .expect("the linked row")
        .insert("amount".into(), fields::string("-1.00"));
    let found = report(&store);
    let reservation = format!("ledgerReservations/{}", fixtures::rid(5));
    assert_eq!(
        found
            .findings
            .iter()
            .map(|f| (f.code, f.path.as_str()))
            .collect::<Vec<_>>(),
        [(FindingCode::EffectIntegrityMismatch, reservation.as_str())]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any single-field edit by an outside writer is reported.
    #[test]
    fn an_edited_field_is_never_clean(n in any::<usize>(), f in any::<usize>(), seed in any::<u64>()) {
        let mut store = journal();
        let (path, field) = pick(&store, n, f);
        let changed = edit(store.get_mut(&path).expect("doc"), &field, seed);
        prop_assume!(changed);
        let found = report(&store);
        prop_assert!(!found.clean, "{} {}: clean after the edit", path, field);
    }

    /// An edit that keeps the write times is still reported, for every field but the
    /// free ones.
    #[test]
    fn a_forged_field_is_never_clean(n in any::<usize>(), f in any::<usize>(), seed in any::<u64>()) {
        let mut store = journal();
        let (path, field) = pick(&store, n, f);
        prop_assume!(!free(&path, &field));
        let changed = edit(store.forge(&path).expect("doc"), &field, seed);
        prop_assume!(changed);
        let found = report(&store);
        prop_assert!(!found.clean, "{} {}: clean after a forged edit", path, field);
    }
}
