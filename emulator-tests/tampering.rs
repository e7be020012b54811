//! Tampering as an adversary with the owner's credentials would do it, over the
//! emulator's API: a clean journal built in this binary's concurrency mode, then one
//! command or reservation edited per case, each edit on its own line with the finding
//! code it must produce at the path named. The untampered journal is clean, every case
//! is found, no finding lands outside the case's own documents, and a split scan
//! (7 ranges) gives the same report as one read time. Commands whose cases tamper the
//! send layer end through a provider send (a permit, then the success); those whose
//! cases tamper the result envelope end with one (`complete_with_result`).

use super::support::{self, command, delete, get, put};
use chrono::{DateTime, TimeDelta};
use command_journal::ProviderAnswer;
use command_journal::ledger::{FingerprintInput, LedgerKey, LedgerScope};
use command_journal::sends::{AttemptNumber, BeginSendOutput};
use command_journal::time::ManualClock;
use command_journal::verify::{
    FindingCode, ScanRanges, VerifyReport, count_documents, verify_in_ranges,
};
use command_journal::{
    CommandInput, Journal, LeaseId, LeaseOutput, TerminalReferenceFingerprint, verify,
};
use command_journal::{ProviderPlan, ProviderPlanRequest, ResultEnvelope};
use gcloud_sdk::google::firestore::v1::Value;
use gcloud_sdk::google::firestore::v1::value::ValueType;
use gcloud_sdk::prost_types::Timestamp;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

/// Registration time of every command; acquisition is 10 s later, the takeover 61 s
/// after that, success 5 s after the takeover.
const T0: i64 = 1_970_000_000;

/// A document of a command (`Cmd`) or a ledger reservation (`Led`), as a case names it.
#[derive(Debug, Clone, Copy)]
enum At {
    Root,
    Lifecycle,
    Event(i64),
    Reservation,
    Effect(usize),
    Plan,
    SendRecord,
    SendEvent(i64),
    Result,
}

/// What a case does to its documents.
enum Edit {
    /// Sets fields of one document.
    Set(At, Vec<(&'static str, ValueType)>),
    /// Deletes one document.
    Delete(At),
    /// Deletes one document and writes it again, unchanged.
    Recreate(At),
    /// Writes a copy of one document at a path below or beside it (`{path}` is the
    /// document's own path).
    CopyTo(At, &'static str),
    /// Writes a copy of the event at the first revision as the second.
    CopyEvent(i64, i64),
}

/// One tampering: a name, the edits, and the finding it must produce, at the path of
/// the document `At` (with an optional suffix, for documents the edit created).
type Case = (&'static str, Edit, FindingCode, At, &'static str);

fn s(text: &str) -> ValueType {
    ValueType::StringValue(text.to_owned())
}

fn t(seconds: i64) -> ValueType {
    ValueType::TimestampValue(Timestamp { seconds, nanos: 0 })
}

fn cases() -> Vec<Case> {
    use At::*;
    use Edit::*;
    use FindingCode as F;
    let other = "5a".repeat(32);
    let other = Box::leak(other.into_boxed_str());
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("root payload fingerprint", Set(Root, vec![("payloadFingerprint", s(other))]), F::RewrittenDocument, Root, ""),
        ("root schema version", Set(Root, vec![("endpointSchemaVersion", ValueType::IntegerValue(2))]), F::RewrittenDocument, Root, ""),
        ("root environment", Set(Root, vec![("environment", s("staging"))]), F::RegistrationMismatch, Event(1), ""),
        ("root deleted and written again", Recreate(Root), F::CommitTimeMismatch, Event(1), ""),
        ("root deleted", Delete(Root), F::OrphanLifecycle, Lifecycle, ""),
        ("registration event deleted", Delete(Event(1)), F::MissingRegistrationEvent, Event(1), ""),
        ("acquisition in another environment", Set(Event(2), vec![("environment", s("staging"))]), F::EventRootMismatch, Event(2), ""),
        ("acquisition of another scope kind", Set(Event(2), vec![("callerScopeKind", s("guest"))]), F::EventRootMismatch, Event(2), ""),
        ("acquisition of another command type", Set(Event(2), vec![("commandType", s("refund"))]), F::EventRootMismatch, Event(2), ""),
        ("acquisition an hour before registration",
            Set(Event(2), vec![("occurredAt", t(T0 - 3600)), ("leaseExpiresAt", t(T0 - 3540))]), F::TimestampRegression, Event(2), ""),
        ("acquisition with a 2-hour lease", Set(Event(2), vec![("leaseExpiresAt", t(T0 + 10 + 7200))]), F::LeaseDurationMismatch, Event(2), ""),
        ("takeover 10 s into the lease",
            Set(Event(3), vec![("occurredAt", t(T0 + 20)), ("leaseExpiresAt", t(T0 + 80))]), F::OverlappingLease, Event(3), ""),
        ("takeover's fence", Set(Event(3), vec![("fenceEpoch", ValueType::IntegerValue(3))]), F::MalformedDocument, Event(3), ""),
        ("takeover event deleted", Delete(Event(3)), F::AuditGap, Event(3), ""),
        ("takeover event deleted and written again", Recreate(Event(3)), F::CommitTimeMismatch, Event(3), ""),
        ("success carrying another expiry", Set(Event(4), vec![("leaseExpiresAt", t(T0 + 200))]), F::TerminalLeaseMismatch, Event(4), ""),
        ("success after the lease expired", Set(Event(4), vec![("occurredAt", t(T0 + 140))]), F::TerminalLeaseMismatch, Event(4), ""),
        ("success event deleted", Delete(Event(4)), F::LifecycleWithoutCurrentEvent, Lifecycle, ""),
        ("an event after success", CopyEvent(3, 5), F::ChangedAfterTerminal, Event(5), ""),
        ("lifecycle owner", Set(Lifecycle, vec![("leaseOwnerFingerprint", s(other))]), F::CommitTimeMismatch, Lifecycle, ""),
        ("lifecycle commitment", Set(Lifecycle, vec![("terminalCommitmentHash", s(other))]), F::CommitTimeMismatch, Lifecycle, ""),
        ("lifecycle creation time", Set(Lifecycle, vec![("createdAt", t(T0 + 11))]), F::LifecycleHistoryMismatch, Lifecycle, ""),
        ("lifecycle state", Set(Lifecycle, vec![("state", s("paused"))]), F::MalformedDocument, Lifecycle, ""),
        ("lifecycle deleted and written again", Recreate(Lifecycle), F::CommitTimeMismatch, Lifecycle, ""),
        ("a second lifecycle collection", CopyTo(Lifecycle, "{root}/lifecycles/current"), F::UnexpectedDocument, Root, "/lifecycles/current"),
        ("a document below the lifecycle", CopyTo(Lifecycle, "{path}/history/x"), F::UnexpectedDocument, Lifecycle, "/history/x"),
        ("a document below an event", CopyTo(Event(2), "{path}/sub/x"), F::UnexpectedDocument, Event(2), "/sub/x"),
        ("effect plan amount", Set(Effect(0), vec![("amount", s("-1000000.00"))]), F::EffectFingerprintMismatch, Reservation, ""),
        ("transfer legs, both", Set(Effect(0), vec![("amount", s("-9999.00"))]), F::EffectIntegrityMismatch, Reservation, ""),
        ("charge amount", Set(Effect(1), vec![("amount", s("0.01"))]), F::EffectIntegrityMismatch, Reservation, ""),
        ("reservation fingerprint", Set(Reservation, vec![("fingerprint", s(other))]), F::EffectIntegrityMismatch, Reservation, ""),
        ("reservation scope", Set(Reservation, vec![("scopeSeatId", s("seat-Z"))]), F::EffectIntegrityMismatch, Reservation, ""),
        ("effect deleted", Delete(Effect(1)), F::ReservationMissingEffects, Effect(1), ""),
        ("effect deleted and written again", Recreate(Effect(0)), F::CommitTimeMismatch, Effect(0), ""),
        ("effect lineage", Set(Effect(0), vec![("lineage", s("historical_unlinked"))]), F::LineageViolation, Effect(0), ""),
        ("a document below a reservation", CopyTo(Reservation, "{path}/x/y"), F::UnexpectedDocument, Reservation, "/x/y"),
        ("reservation deleted", Delete(Reservation), F::CanonicalEffectWithoutReservation, Effect(0), ""),
        ("plan's provider", Set(Plan, vec![("provider", s("adyen"))]), F::PlanNotImmutable, Plan, ""),
        ("plan's key retention", Set(Plan, vec![("keyRetentionSeconds", ValueType::IntegerValue(3600))]), F::PlanNotImmutable, Plan, ""),
        ("plan deleted", Delete(Plan), F::UnpairedSendRecord, SendRecord, ""),
        ("send record's cutoff", Set(SendRecord, vec![("sendCutoffAt", t(T0 + 90_000))]), F::SendCommitTimeMismatch, SendRecord, ""),
        ("send opening deleted", Delete(SendEvent(1)), F::SendAuditGap, SendEvent(1), ""),
        ("send outcome deleted and written again", Recreate(SendEvent(2)), F::SendCommitTimeMismatch, SendRecord, ""),
        ("a document beside the plan", CopyTo(Plan, "{root}/providerSends/other"), F::UnexpectedDocument, Root, "/providerSends/other"),
        ("send result deleted", Delete(Result), F::SendResultMismatch, SendRecord, ""),
        ("result envelope replaced", Set(Result, vec![("envelope", s(r#"{"amount":1251,"id":"ch_tamper"}"#))]), F::ResultCommitmentMismatch, Result, ""),
        ("result envelope re-spaced", Set(Result, vec![("envelope", s(r#"{"amount": 1250,"id":"ch_tamper"}"#))]), F::MalformedResult, Result, ""),
        ("result schema version", Set(Result, vec![("resultSchemaVersion", ValueType::IntegerValue(2))]), F::MalformedResult, Result, ""),
        ("result created later", Set(Result, vec![("createdAt", t(T0 + 77))]), F::ResultCommitmentMismatch, Result, ""),
        ("result deleted and written again", Recreate(Result), F::CommitTimeMismatch, Result, ""),
        ("a document beside the result", CopyTo(Result, "{root}/results/other"), F::UnexpectedDocument, Root, "/results/other"),
    ];
    cases
}

/// The ledger command of a ledger case, by the case's name.
fn ledger_command(name: &str, n: usize) -> FingerprintInput {
    let value = if name.starts_with("transfer") {
        json!({"family": "internal_transfer", "fingerprintVersion": 5,
            "transfer": {"account_direction": "checking_to_savings", "target_seat_id": "seat-A",
                         "actor_seat_id": "seat-A", "amount": "10.00", "type": "INTERNAL_TRANSFER"}})
    } else if name.starts_with("effect plan") {
        json!({"family": "effect_plan", "fingerprintVersion": 5,
            "effects": [{"seat_id": "seat-A", "amount": "-10.00", "type": "DEBIT"},
                        {"seat_id": "seat-B", "amount": "10.00", "type": "CREDIT"}]})
    } else {
        json!({"family": "store_purchase", "fingerprintVersion": 5,
            "effects": [
                {"seat_id": "seat-A", "actor_seat_id": "seat-A", "mechanism": "WALLET",
                 "amount": "-12.50", "account_type": "checking", "type": "PURCHASE"},
                {"seat_id": "seat-A", "actor_seat_id": "seat-A", "mechanism": "WALLET",
                 "amount": "-0.25", "account_type": "checking", "type": "FEE"}],
            "intent": {"policyUuid": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", "quantity": n}})
    };
    FingerprintInput::from_json(&value).expect("ledger command")
}

fn is_ledger(at: At) -> bool {
    matches!(at, At::Reservation | At::Effect(_))
}

/// Whether a case tampers the result envelope: its command ends with one.
fn is_result(name: &str, at: At) -> bool {
    matches!(at, At::Result) || name.contains("result")
}

/// The envelope the result cases' commands succeed with.
fn envelope() -> ResultEnvelope {
    ResultEnvelope::new(&json!({"id": "ch_tamper", "amount": 1250})).expect("envelope")
}

/// Whether a case tampers the send layer: its command ends through a provider send.
fn is_send(name: &str, at: At) -> bool {
    matches!(at, At::Plan | At::SendRecord | At::SendEvent(_))
        || name.contains("plan")
        || name.starts_with("send ")
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stripe",
        account: "acct_tamper",
        mode: "test",
        api_version: "2024-06-20",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250}),
        key_retention_seconds: 86_400,
    })
    .expect("plan")
}

/// The documents a case owns: a command's or a reservation's.
enum Owner {
    Command(CommandInput),
    Ledger(LedgerKey),
}

impl Owner {
    fn path(&self, at: At) -> String {
        match (self, at) {
            (Self::Command(cmd), At::Root) => {
                format!("checkoutRequests/{}", cmd.identity().command_key_hash())
            }
            (Self::Command(cmd), At::Lifecycle) => format!(
                "checkoutRequests/{}/lifecycle/current",
                cmd.identity().command_key_hash()
            ),
            (Self::Command(cmd), At::Event(r)) => format!(
                "auditEvents/commerce_command_{}_{r:010}",
                cmd.identity().command_key_hash()
            ),
            (Self::Ledger(key), At::Reservation) => {
                format!("ledgerReservations/{}", key.reservation_id())
            }
            (Self::Ledger(key), At::Effect(i)) => {
                format!("ledgerTransactions/{}_{i:04}", key.reservation_id())
            }
            (Self::Command(cmd), At::Plan) => format!(
                "checkoutRequests/{}/providerSends/plan",
                cmd.identity().command_key_hash()
            ),
            (Self::Command(cmd), At::SendRecord) => format!(
                "checkoutRequests/{}/providerSends/current",
                cmd.identity().command_key_hash()
            ),
            (Self::Command(cmd), At::SendEvent(r)) => format!(
                "auditEvents/provider_send_{}_{r:010}",
                cmd.identity().command_key_hash()
            ),
            (Self::Command(cmd), At::Result) => format!(
                "checkoutRequests/{}/results/current",
                cmd.identity().command_key_hash()
            ),
            _ => panic!("{at:?} is not a document of this owner"),
        }
    }

    /// Whether `path` is one of this owner's documents (or below one): a command's
    /// own, or the index of its attempt 1's key (`providerKeys/{digest of the key}`).
    fn owns(&self, path: &str) -> bool {
        let id = match self {
            Self::Command(cmd) => {
                let key = command_journal_core::tools::sends::plan::attempt_key(
                    &cmd.identity(),
                    plan().operation(),
                    AttemptNumber::FIRST,
                );
                if path == command_journal_core::tools::sends::key_index::path(&key) {
                    return true;
                }
                cmd.identity().command_key_hash().to_string()
            }
            Self::Ledger(key) => key.reservation_id().to_string(),
        };
        path.contains(&id)
    }
}

fn fields(value: ValueType) -> Value {
    Value {
        value_type: Some(value),
    }
}

async fn apply(journal: &Journal, owner: &Owner, name: &str, edit: &Edit) {
    let connection = journal.connection();
    let read = |at: At| {
        let path = owner.path(at);
        async move {
            let doc = get(connection, &path).await.expect("document to tamper");
            (path, doc.fields)
        }
    };
    match edit {
        Edit::Set(at, changes) => {
            let (path, mut doc) = read(*at).await;
            for (field, value) in changes {
                doc.insert((*field).to_owned(), fields(value.clone()));
            }
            put(connection, &path, doc).await;
            if name.starts_with("transfer") {
                // Both legs, consistently: the credit too.
                let (path, mut doc) = read(At::Effect(1)).await;
                doc.insert("amount".into(), fields(s("9999.00")));
                put(connection, &path, doc).await;
            }
        }
        Edit::Delete(at) => delete(connection, &owner.path(*at)).await,
        Edit::Recreate(at) => {
            let (path, doc) = read(*at).await;
            delete(connection, &path).await;
            put(connection, &path, doc).await;
        }
        Edit::CopyTo(at, pattern) => {
            let (path, doc) = read(*at).await;
            let target = match pattern.strip_prefix("{root}") {
                Some(rest) => format!("{}{rest}", owner.path(At::Root)),
                None => pattern.replace("{path}", &path),
            };
            put(connection, &target, doc).await;
        }
        Edit::CopyEvent(from, to) => {
            let (_, mut doc) = read(At::Event(*from)).await;
            doc.insert(
                "commandRevision".into(),
                fields(ValueType::IntegerValue(*to)),
            );
            doc.insert(
                "fenceEpoch".into(),
                fields(ValueType::IntegerValue(*to - 1)),
            );
            put(connection, &owner.path(At::Event(*to)), doc).await;
        }
    }
}

/// One read time, and 7 consistent ranges: the same report on a journal at rest.
async fn both_ways(journal: &Journal) -> VerifyReport {
    let one = verify(journal.connection(), &mut |_| {})
        .await
        .expect("verify");
    let split = verify_in_ranges(
        journal.connection(),
        ScanRanges::new(7).expect("ranges"),
        &mut |_| {},
    )
    .await
    .expect("verify in ranges");
    assert_eq!(split, one, "7 ranges give the report of one read time");
    let counted = count_documents(journal.connection()).await.expect("count");
    assert_eq!(
        counted,
        one.scanned.total(),
        "the COUNT total is what the scan read"
    );
    one
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_tampering_of_a_clean_journal_is_found_at_its_cause() {
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(T0, 0).expect("time"),
    ));
    let journal = support::clocked_journal(support::fresh_connection().await, clock.clone());
    let cases = cases();
    assert!(cases.len() >= 25);
    let scope = LedgerScope::new("seat-A", "seat-A").expect("scope");
    let lease = |n: u64| LeaseId::parse(&support::uuid(7, n)).expect("lease");
    let reference = TerminalReferenceFingerprint::parse(&"7e".repeat(32)).expect("reference");
    let mut owners = Vec::new();
    for (n, (name, _, _, at, _)) in cases.iter().enumerate() {
        owners.push(if is_ledger(*at) {
            let key = LedgerKey::new("class-1", "TAMPER", &format!("case-{n}")).expect("key");
            journal
                .accept_ledger_command(&key, &ledger_command(name, n), &scope)
                .await
                .expect("accept");
            Owner::Ledger(key)
        } else {
            let cmd = command(40_000 + n as u64, json!({"case": n}));
            journal.register_command(&cmd).await.expect("register");
            Owner::Command(cmd)
        });
    }
    // Every command: acquired at T0 + 10, taken over at T0 + 71, succeeded at T0 + 76.
    clock.advance(TimeDelta::seconds(10));
    for owner in &owners {
        if let Owner::Command(cmd) = owner {
            journal
                .acquire_lease(cmd, &lease(1))
                .await
                .expect("acquire");
        }
    }
    clock.advance(TimeDelta::seconds(61));
    for owner in &owners {
        if let Owner::Command(cmd) = owner {
            let taken = journal
                .acquire_lease(cmd, &lease(2))
                .await
                .expect("takeover");
            assert!(matches!(taken, LeaseOutput::Acquired { fence_epoch: f, .. } if f.get() == 2));
        }
    }
    // Send cases: the new holder sends, and the success ends the command.
    for ((name, _, _, at, _), owner) in cases.iter().zip(&owners) {
        if let Owner::Command(cmd) = owner
            && is_send(name, *at)
        {
            let permit = journal
                .begin_send(cmd, &lease(2), crate::support::fence_at(2), &plan())
                .await
                .expect("begin send");
            assert!(matches!(permit, BeginSendOutput::Permitted(_)));
        }
    }
    clock.advance(TimeDelta::seconds(5));
    for ((name, _, _, at, _), owner) in cases.iter().zip(&owners) {
        if let Owner::Command(cmd) = owner {
            if is_send(name, *at) {
                // A send case about the result succeeds with an envelope.
                let outcome = if is_result(name, *at) {
                    ProviderAnswer::Succeeded(envelope())
                } else {
                    ProviderAnswer::SucceededWithReference(reference.clone())
                };
                journal
                    .record_send_outcome(
                        cmd,
                        &lease(2),
                        crate::support::fence_at(2),
                        &plan(),
                        AttemptNumber::FIRST,
                        &outcome,
                    )
                    .await
                    .expect("outcome");
            } else if is_result(name, *at) {
                journal
                    .complete_with_result(cmd, &lease(2), crate::support::fence_at(2), &envelope())
                    .await
                    .expect("complete with a result");
            } else {
                journal
                    .complete_command(cmd, &lease(2), crate::support::fence_at(2), &reference)
                    .await
                    .expect("complete");
            }
        }
    }
    let control = both_ways(&journal).await;
    assert!(
        control.clean,
        "the untampered journal: {:?}",
        control.findings
    );

    for ((name, edit, _, _, _), owner) in cases.iter().zip(&owners) {
        apply(&journal, owner, name, edit).await;
    }
    let report = both_ways(&journal).await;
    assert!(!report.clean);
    assert!(!report.truncated);
    let mut found: HashMap<usize, Vec<(FindingCode, String)>> = HashMap::new();
    for finding in &report.findings {
        let case = owners
            .iter()
            .position(|owner| owner.owns(&finding.path))
            .unwrap_or_else(|| panic!("{finding:?} belongs to no case"));
        found
            .entry(case)
            .or_default()
            .push((finding.code, finding.path.clone()));
    }
    for (n, ((name, _, code, at, suffix), owner)) in cases.iter().zip(&owners).enumerate() {
        let expected = (*code, format!("{}{suffix}", owner.path(*at)));
        let of_case = found.get(&n).cloned().unwrap_or_default();
        assert!(
            of_case.contains(&expected),
            "case {n} ({name}): expected {expected:?}, found {of_case:?}"
        );
    }
}
