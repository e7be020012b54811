//! The verifier against the emulator: a large clean journal verifies clean, every
//! seeded corruption is reported with its code and path, and nothing is written.

use super::support::{self, command, delete, get, list, put};
use chrono::{DateTime, TimeDelta};
use command_journal::Journal;
use command_journal::time::ManualClock;
use command_journal::verify;
use command_journal::verify::{FindingCode, ScanRanges, VerifyReport, verify_in_ranges};
use command_journal::{CommandInput, LeaseId, TerminalReferenceFingerprint};
use gcloud_sdk::google::firestore::v1::value::ValueType;
use gcloud_sdk::google::firestore::v1::{Document, Value};
use serde_json::json;
use std::sync::Arc;

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(3, n)).expect("lease")
}

fn reference() -> TerminalReferenceFingerprint {
    TerminalReferenceFingerprint::parse(&"7e".repeat(32)).expect("reference")
}

async fn journal() -> (Journal, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_960_000_000, 0).expect("time"),
    ));
    (
        Journal::new(support::fresh_connection().await).with_clock(clock.clone()),
        clock,
    )
}

fn hash(cmd: &CommandInput) -> String {
    cmd.identity().command_key_hash().to_string()
}

fn root_path(cmd: &CommandInput) -> String {
    format!("checkoutRequests/{}", hash(cmd))
}

fn lifecycle_path(cmd: &CommandInput) -> String {
    format!("checkoutRequests/{}/lifecycle/current", hash(cmd))
}

fn audit_path(cmd: &CommandInput, revision: i64) -> String {
    format!("auditEvents/commerce_command_{}_{revision:010}", hash(cmd))
}

/// Verifies at one read time, then split into 7 and 16 consistent ranges (cut at the
/// first hex digit, and not), which must give the same report on a journal at rest.
async fn run_verify(journal: &Journal) -> VerifyReport {
    let mut calls = 0;
    let report = verify(journal.connection(), &mut |_| calls += 1)
        .await
        .expect("verify runs");
    assert!(calls >= 1, "progress is reported");
    for n in [7, 16] {
        let ranges = ScanRanges::new(n).expect("ranges");
        let mut last = 0;
        let split = verify_in_ranges(journal.connection(), ranges, &mut |read| last = read)
            .await
            .expect("verify runs in ranges");
        assert_eq!(split, report, "{n} ranges");
        assert_eq!(
            last,
            report.scanned.total(),
            "the last progress is the total"
        );
    }
    report
}

/// Every document of the project with its update time, to prove verify writes nothing.
async fn everything(journal: &Journal) -> Vec<Document> {
    let connection = journal.connection();
    let mut all = list(connection, "", "checkoutRequests").await;
    all.extend(list(connection, "", "auditEvents").await);
    let roots: Vec<String> = all
        .iter()
        .filter_map(|d| d.name.split("/documents/").nth(1))
        .filter(|p| p.starts_with("checkoutRequests/"))
        .map(str::to_owned)
        .collect();
    for root in roots {
        all.extend(list(connection, &root, "lifecycle").await);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_clean_journal_of_several_thousand_documents_verifies_clean() {
    let (journal, clock) = journal().await;
    let commands: Vec<CommandInput> = (0..800)
        .map(|n| command(10_000 + n, json!({"n": n})))
        .collect();
    let mut tasks = Vec::new();
    for chunk in commands.chunks(50) {
        let (journal, chunk) = (journal.clone(), chunk.to_vec());
        tasks.push(tokio::spawn(async move {
            for (i, cmd) in chunk.iter().enumerate() {
                journal.register_command(cmd).await.expect("register");
                journal
                    .acquire_lease(cmd, &lease(1))
                    .await
                    .expect("acquire");
                match i % 3 {
                    0 => {
                        journal
                            .complete_command(
                                cmd,
                                &lease(1),
                                crate::support::fence_at(1),
                                &reference(),
                            )
                            .await
                            .expect("complete");
                    }
                    1 => {
                        journal
                            .fail_command(cmd, &lease(1), crate::support::fence_at(1))
                            .await
                            .expect("fail");
                    }
                    _ => {}
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    // Some takeovers too.
    clock.advance(TimeDelta::seconds(61));
    for cmd in commands.iter().skip(2).step_by(3).take(50) {
        journal
            .acquire_lease(cmd, &lease(2))
            .await
            .expect("takeover");
    }
    let report = run_verify(&journal).await;
    assert!(report.clean, "{:?}", report.finding_counts);
    assert_eq!(report.scanned.checkout_requests, 800);
    assert_eq!(report.scanned.lifecycles, 800);
    assert!(report.scanned.total() >= 3_500, "{:?}", report.scanned);
}

fn set(doc: &mut Document, field: &str, value: ValueType) {
    doc.fields.insert(
        field.to_owned(),
        Value {
            value_type: Some(value),
        },
    );
}

/// A journal with one command per scenario, each corrupted one way.
#[tokio::test]
async fn every_seeded_corruption_is_reported_with_its_code_and_path() {
    let (journal, clock) = journal().await;
    let connection = journal.connection();
    let cmds: Vec<CommandInput> = (0..14)
        .map(|n| command(20_000 + n, json!({"n": n})))
        .collect();
    for cmd in &cmds {
        journal.register_command(cmd).await.expect("register");
        journal
            .acquire_lease(cmd, &lease(1))
            .await
            .expect("acquire");
    }
    // Commands 6 and 7 get a takeover (revision 3); 8 a success (revision 3).
    clock.advance(TimeDelta::seconds(61));
    for cmd in &cmds[6..8] {
        journal
            .acquire_lease(cmd, &lease(2))
            .await
            .expect("takeover");
    }
    journal
        .acquire_lease(&cmds[11], &lease(2))
        .await
        .expect("takeover");
    journal
        .acquire_lease(&cmds[11], &lease(2))
        .await
        .expect("same");
    journal
        .complete_command(
            &cmds[8],
            &lease(1),
            crate::support::fence_at(1),
            &reference(),
        )
        .await
        .err();
    let fresh = journal
        .acquire_lease(&cmds[8], &lease(3))
        .await
        .expect("takeover");
    let command_journal::LeaseOutput::Acquired { fence_epoch, .. } = fresh else {
        panic!("expected a lease");
    };
    journal
        .complete_command(&cmds[8], &lease(3), fence_epoch, &reference())
        .await
        .expect("complete");
    assert_eq!(
        run_verify(&journal).await.finding_counts.len(),
        0,
        "clean before damage"
    );

    let mut expected: Vec<(FindingCode, String)> = Vec::new();
    // 0: malformed root.
    let mut doc = get(connection, &root_path(&cmds[0])).await.expect("root");
    set(&mut doc, "extra", ValueType::BooleanValue(true));
    put(connection, &root_path(&cmds[0]), doc.fields).await;
    expected.push((FindingCode::MalformedDocument, root_path(&cmds[0])));
    // Every edit of a document the journal never rewrites shows in its write times.
    expected.push((FindingCode::RewrittenDocument, root_path(&cmds[0])));
    // 1: orphan lifecycle and audit events (root deleted).
    delete(connection, &root_path(&cmds[1])).await;
    expected.push((FindingCode::OrphanLifecycle, lifecycle_path(&cmds[1])));
    expected.push((FindingCode::OrphanAuditEvent, audit_path(&cmds[1], 1)));
    expected.push((FindingCode::OrphanAuditEvent, audit_path(&cmds[1], 2)));
    // 2: missing registration event.
    delete(connection, &audit_path(&cmds[2], 1)).await;
    expected.push((
        FindingCode::MissingRegistrationEvent,
        audit_path(&cmds[2], 1),
    ));
    // 3: registration event disagrees with its root.
    let mut doc = get(connection, &audit_path(&cmds[3], 1))
        .await
        .expect("audit");
    set(
        &mut doc,
        "commandType",
        ValueType::StringValue("refund".into()),
    );
    put(connection, &audit_path(&cmds[3], 1), doc.fields).await;
    expected.push((FindingCode::RegistrationMismatch, audit_path(&cmds[3], 1)));
    expected.push((FindingCode::RewrittenDocument, audit_path(&cmds[3], 1)));
    // 4: lifecycle without its current event.
    delete(connection, &audit_path(&cmds[4], 2)).await;
    expected.push((
        FindingCode::LifecycleWithoutCurrentEvent,
        lifecycle_path(&cmds[4]),
    ));
    expected.push((FindingCode::AuditGap, audit_path(&cmds[4], 2)));
    // 5: current event disagrees with the lifecycle.
    let mut doc = get(connection, &audit_path(&cmds[5], 2))
        .await
        .expect("audit");
    set(
        &mut doc,
        "occurredAt",
        ValueType::TimestampValue(gcloud_sdk::prost_types::Timestamp {
            seconds: 1_960_000_005,
            nanos: 0,
        }),
    );
    put(connection, &audit_path(&cmds[5], 2), doc.fields).await;
    expected.push((FindingCode::LifecycleEventMismatch, audit_path(&cmds[5], 2)));
    // It moved the acquisition but not its expiry: a 55 s lease.
    expected.push((FindingCode::LeaseDurationMismatch, audit_path(&cmds[5], 2)));
    expected.push((FindingCode::RewrittenDocument, audit_path(&cmds[5], 2)));
    // 6: a gap in the chain (revision 2 of 3 deleted).
    delete(connection, &audit_path(&cmds[6], 2)).await;
    expected.push((FindingCode::AuditGap, audit_path(&cmds[6], 2)));
    // 7: an extra event beyond the lifecycle's revision.
    let doc = get(connection, &audit_path(&cmds[7], 3))
        .await
        .expect("audit");
    let mut extra = doc.clone();
    set(&mut extra, "commandRevision", ValueType::IntegerValue(4));
    set(&mut extra, "fenceEpoch", ValueType::IntegerValue(3));
    put(connection, &audit_path(&cmds[7], 4), extra.fields).await;
    expected.push((FindingCode::ExtraAuditEvent, audit_path(&cmds[7], 4)));
    // A copy of the takeover at revision 3: it takes over a lease it began with.
    expected.push((FindingCode::OverlappingLease, audit_path(&cmds[7], 4)));
    // 8: an event recorded after the terminal one.
    let terminal = get(connection, &audit_path(&cmds[8], 4))
        .await
        .expect("terminal event");
    let mut after = terminal.clone();
    set(&mut after, "commandRevision", ValueType::IntegerValue(5));
    set(&mut after, "fenceEpoch", ValueType::IntegerValue(4));
    set(
        &mut after,
        "eventType",
        ValueType::StringValue("command_lease_taken_over".into()),
    );
    set(
        &mut after,
        "fromState",
        ValueType::StringValue("leased".into()),
    );
    set(
        &mut after,
        "toState",
        ValueType::StringValue("leased".into()),
    );
    put(connection, &audit_path(&cmds[8], 5), after.fields).await;
    expected.push((FindingCode::ExtraAuditEvent, audit_path(&cmds[8], 5)));
    expected.push((FindingCode::ChangedAfterTerminal, audit_path(&cmds[8], 5)));
    // A takeover's revision pins its fence, so after a terminal event (which costs a
    // revision but no fence) it cannot be the fence plus one.
    expected.push((FindingCode::FenceNotIncremented, audit_path(&cmds[8], 5)));
    // 9: unexpected documents next to the journal.
    let stray = get(connection, &root_path(&cmds[9])).await.expect("root");
    put(
        connection,
        "auditEvents/not_a_journal_event",
        stray.fields.clone(),
    )
    .await;
    put(
        connection,
        "checkoutRequests/not-a-hash",
        stray.fields.clone(),
    )
    .await;
    put(
        connection,
        &format!("{}/lifecycle/other", root_path(&cmds[9])),
        stray.fields.clone(),
    )
    .await;
    // Stray ids at either end of the name space, between the hex digits, at a range
    // cut, and a lifecycle under a parent outside the journal: split into ranges, each
    // is still read exactly once.
    let strays = [
        "checkoutRequests/0",
        "checkoutRequests/UPPER",
        "checkoutRequests/a000",
        "checkoutRequests/~last",
        "auditEvents/aaaa",
        "auditEvents/~last",
        "elsewhere/x/lifecycle/current",
        "ledgerReservations/0",
        "ledgerReservations/~last",
    ];
    for path in strays {
        put(connection, path, stray.fields.clone()).await;
        expected.push((FindingCode::UnexpectedDocument, path.to_owned()));
    }
    expected.push((
        FindingCode::UnexpectedDocument,
        "auditEvents/not_a_journal_event".into(),
    ));
    expected.push((
        FindingCode::UnexpectedDocument,
        "checkoutRequests/not-a-hash".into(),
    ));
    expected.push((
        FindingCode::UnexpectedDocument,
        format!("{}/lifecycle/other", root_path(&cmds[9])),
    ));
    // A leased lifecycle outside the journal: the pending listing's query, bound to
    // the journal's names, never returns it; the stray scan reports it.
    let leased = std::collections::HashMap::from([(
        "state".to_owned(),
        Value {
            value_type: Some(ValueType::StringValue("leased".into())),
        },
    )]);
    put(connection, "elsewhere/y/lifecycle/current", leased.clone()).await;
    expected.push((
        FindingCode::UnexpectedDocument,
        "elsewhere/y/lifecycle/current".into(),
    ));
    // One inside it that is no command's `lifecycle/current`: the query and the scan
    // both read it (the listing fails closed on it); the scan reports it.
    let inside = format!("{}/lifecycle/extra", root_path(&cmds[9]));
    put(connection, &inside, leased).await;
    expected.push((FindingCode::UnexpectedDocument, inside));
    // 10: the lifecycle predates the registration.
    let late = ValueType::TimestampValue(gcloud_sdk::prost_types::Timestamp {
        seconds: 1_960_000_030,
        nanos: 0,
    });
    let mut doc = get(connection, &root_path(&cmds[10])).await.expect("root");
    set(&mut doc, "registeredAt", late.clone());
    put(connection, &root_path(&cmds[10]), doc.fields).await;
    let mut doc = get(connection, &audit_path(&cmds[10], 1))
        .await
        .expect("audit");
    set(&mut doc, "occurredAt", late);
    put(connection, &audit_path(&cmds[10], 1), doc.fields).await;
    expected.push((FindingCode::TimestampRegression, lifecycle_path(&cmds[10])));
    expected.push((FindingCode::TimestampRegression, audit_path(&cmds[10], 2)));
    expected.push((FindingCode::RewrittenDocument, root_path(&cmds[10])));
    expected.push((FindingCode::RewrittenDocument, audit_path(&cmds[10], 1)));
    // 12: a malformed lifecycle.
    let mut doc = get(connection, &lifecycle_path(&cmds[12]))
        .await
        .expect("lifecycle");
    set(&mut doc, "state", ValueType::StringValue("paused".into()));
    put(connection, &lifecycle_path(&cmds[12]), doc.fields).await;
    expected.push((FindingCode::MalformedDocument, lifecycle_path(&cmds[12])));
    // 13: a malformed audit event.
    let mut doc = get(connection, &audit_path(&cmds[13], 2))
        .await
        .expect("audit");
    set(&mut doc, "fenceEpoch", ValueType::DoubleValue(1.0));
    put(connection, &audit_path(&cmds[13], 2), doc.fields).await;
    expected.push((FindingCode::MalformedDocument, audit_path(&cmds[13], 2)));
    expected.push((FindingCode::RewrittenDocument, audit_path(&cmds[13], 2)));

    let before = everything(&journal).await;
    let report = run_verify(&journal).await;
    assert!(!report.clean);
    let mut found: Vec<(FindingCode, String)> = report
        .findings
        .iter()
        .map(|f| (f.code, f.path.clone()))
        .collect();
    found.sort();
    expected.sort();
    assert_eq!(found, expected);
    assert_eq!(everything(&journal).await, before, "verify writes nothing");
}

#[tokio::test]
async fn the_cli_exits_5_on_findings_and_0_when_clean() {
    let (journal, _clock) = journal().await;
    let connection = journal.connection();
    let cmd = command(30_000, json!({}));
    journal.register_command(&cmd).await.expect("register");
    let cli = |journal: &Journal, extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_command-journal"))
            .args([
                "--project",
                journal.connection().project(),
                "--emulator-host",
                support::emulator().host(),
                "verify",
            ])
            .args(extra)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run verify")
    };
    let clean = cli(&journal, &[]);
    assert_eq!(clean.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&clean.stdout).expect("json");
    assert_eq!(report["clean"], true);
    assert!(String::from_utf8_lossy(&clean.stderr).contains("verify: clean"));
    delete(connection, &audit_path(&cmd, 1)).await;
    let broken = cli(&journal, &[]);
    assert_eq!(broken.status.code(), Some(5));
    let report: serde_json::Value = serde_json::from_slice(&broken.stdout).expect("json");
    assert_eq!(report["findingCounts"]["missing_registration_event"], 1);
    let split = cli(&journal, &["--ranges", "256"]);
    assert_eq!(split.status.code(), Some(5));
    let split_report: serde_json::Value = serde_json::from_slice(&split.stdout).expect("json");
    assert_eq!(
        split_report, report,
        "256 ranges report what one read time does"
    );
    assert!(
        String::from_utf8_lossy(&split.stderr).contains("256 ranges, each at its own read time")
    );
    for bad in ["0", "4097", "abc", "-1"] {
        let refused = cli(&journal, &["--ranges", bad]);
        assert_eq!(refused.status.code(), Some(2), "--ranges {bad}");
        let answer: serde_json::Value = serde_json::from_slice(&refused.stdout).expect("json");
        assert_eq!(answer["error"], "invalid_input");
        assert_eq!(answer["field"], "ranges");
    }
}

mod ledger {
    use super::*;
    use command_journal::ledger::FingerprintInput;
    use command_journal::ledger::LedgerKey;
    use command_journal::ledger::LedgerScope;

    fn plan(quantity: u64) -> FingerprintInput {
        FingerprintInput::from_json(&json!({
            "family": "store_purchase",
            "fingerprintVersion": 5,
            "effects": [
                {"seat_id": "seat-A", "target_seat_id": "seat-A", "actor_seat_id": "seat-A",
                 "mechanism": "WALLET", "amount": "12.50", "account_type": "checking",
                 "type": "DEBIT", "policy_id": "policy-7"},
                {"seat_id": "seat-A", "target_seat_id": "seat-A", "actor_seat_id": "seat-A",
                 "mechanism": "WALLET", "amount": "1.00", "account_type": "fees",
                 "type": "DEBIT", "policy_id": "policy-7"}
            ],
            "intent": {"policyUuid": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", "quantity": quantity},
        }))
        .expect("plan")
    }

    #[tokio::test]
    async fn ledger_corruptions_are_reported_and_a_clean_ledger_is_clean() {
        let (journal, _clock) = journal().await;
        let connection = journal.connection();
        let scope = LedgerScope::new("seat-A", "seat-A").expect("scope");
        let mut ids = Vec::new();
        for n in 0..5 {
            let key = LedgerKey::new("class-1", "STORE", &format!("key-{n}")).expect("key");
            let outcome = journal
                .accept_ledger_command(&key, &plan(1 + n), &scope)
                .await
                .expect("accept");
            let value = serde_json::to_value(&outcome).expect("json");
            let rid = value["reservationId"].as_str().expect("rid").to_owned();
            ids.push(rid);
        }
        // A legitimate legacy row with no reservation.
        let some_effect = get(connection, &format!("ledgerTransactions/{}_0000", ids[4]))
            .await
            .expect("effect");
        let mut legacy = some_effect.clone();
        set(
            &mut legacy,
            "lineage",
            ValueType::StringValue("historical_unlinked".into()),
        );
        set(&mut legacy, "reservationId", ValueType::NullValue(0));
        set(&mut legacy, "effectIndex", ValueType::NullValue(0));
        set(
            &mut legacy,
            "effectId",
            ValueType::StringValue("legacy-0001".into()),
        );
        put(
            connection,
            "ledgerTransactions/legacy-0001",
            legacy.fields.clone(),
        )
        .await;
        let report = run_verify(&journal).await;
        assert!(report.clean, "{:?}", report.findings);
        assert_eq!(report.scanned.ledger_reservations, 5);
        assert_eq!(report.scanned.ledger_transactions, 11);

        let mut expected = Vec::new();
        // 0: a reservation without one of its effects.
        delete(connection, &format!("ledgerTransactions/{}_0001", ids[0])).await;
        expected.push((
            FindingCode::ReservationMissingEffects,
            format!("ledgerTransactions/{}_0001", ids[0]),
        ));
        // 1: canonical effects without their reservation.
        delete(connection, &format!("ledgerReservations/{}", ids[1])).await;
        expected.push((
            FindingCode::CanonicalEffectWithoutReservation,
            format!("ledgerTransactions/{}_0000", ids[1]),
        ));
        expected.push((
            FindingCode::CanonicalEffectWithoutReservation,
            format!("ledgerTransactions/{}_0001", ids[1]),
        ));
        // 2: an effect whose lineage says unlinked but still names a reservation.
        let path = format!("ledgerTransactions/{}_0000", ids[2]);
        let mut doc = get(connection, &path).await.expect("effect");
        set(
            &mut doc,
            "lineage",
            ValueType::StringValue("historical_unlinked".into()),
        );
        put(connection, &path, doc.fields).await;
        expected.push((FindingCode::RewrittenDocument, path.clone()));
        expected.push((FindingCode::LineageViolation, path));
        // 3: a malformed reservation.
        let path = format!("ledgerReservations/{}", ids[3]);
        let mut doc = get(connection, &path).await.expect("reservation");
        set(
            &mut doc,
            "fingerprintVersion",
            ValueType::StringValue("5".into()),
        );
        put(connection, &path, doc.fields).await;
        expected.push((FindingCode::RewrittenDocument, path.clone()));
        expected.push((FindingCode::MalformedDocument, path));
        // 4: a legacy row that claims a reservation.
        let mut claim = legacy.clone();
        set(
            &mut claim,
            "reservationId",
            ValueType::StringValue(ids[4].clone()),
        );
        put(connection, "ledgerTransactions/legacy-0001", claim.fields).await;
        expected.push((
            FindingCode::LineageViolation,
            "ledgerTransactions/legacy-0001".into(),
        ));

        let report = run_verify(&journal).await;
        let mut found: Vec<(FindingCode, String)> = report
            .findings
            .iter()
            .map(|f| (f.code, f.path.clone()))
            .collect();
        found.sort();
        expected.sort();
        assert_eq!(found, expected);
    }

    #[tokio::test]
    async fn effect_rows_edited_after_acceptance_are_found_and_refused() {
        use command_journal::JournalError;
        let (journal, _clock) = journal().await;
        let connection = journal.connection();
        let scope = LedgerScope::new("seat-A", "seat-A").expect("scope");
        let parse = |v: serde_json::Value| FingerprintInput::from_json(&v).expect("plan");
        let debit = parse(json!({"family": "effect_plan", "fingerprintVersion": 5,
            "effects": [{"seat_id": "seat-A", "amount": "-10.00", "type": "DEBIT"}]}));
        let transfer = parse(
            json!({"family": "internal_transfer", "fingerprintVersion": 5,
            "transfer": {"account_direction": "checking_to_savings", "target_seat_id": "seat-A",
                         "actor_seat_id": "seat-A", "amount": "10.00", "type": "INTERNAL_TRANSFER"}}),
        );
        let string = |text: &str| ValueType::StringValue(text.into());
        // (command, edits of effect rows by index, or of the reservation, and the findings
        // at the reservation; the last command is the untampered control).
        #[rustfmt::skip]
        let cases: Vec<(FingerprintInput, Vec<Edit>, Vec<FindingCode>)> = vec![
            (debit.clone(), vec![(Some(0), "amount", string("-1000000.00"))],
             vec![FindingCode::EffectFingerprintMismatch, FindingCode::EffectIntegrityMismatch]),
            (transfer.clone(), vec![(Some(0), "amount", string("-9999.00")), (Some(1), "amount", string("9999.00"))],
             vec![FindingCode::EffectFingerprintMismatch, FindingCode::EffectIntegrityMismatch]),
            (plan(2), vec![(Some(1), "amount", string("0.01"))], vec![FindingCode::EffectIntegrityMismatch]),
            (plan(3), vec![(None, "integrityDigest", string(&"ab".repeat(32)))], vec![FindingCode::EffectIntegrityMismatch]),
            (plan(4), vec![], vec![]),
        ];
        let mut keys = Vec::new();
        for (n, (command, _, _)) in cases.iter().enumerate() {
            let key = LedgerKey::new("class-1", "TAMPER", &format!("key-{n}")).expect("key");
            journal
                .accept_ledger_command(&key, command, &scope)
                .await
                .expect("accept");
            keys.push(key);
        }
        let report = run_verify(&journal).await;
        assert!(report.clean, "{:?}", report.findings);
        let mut expected = Vec::new();
        for (key, (_, edits, codes)) in keys.iter().zip(&cases) {
            let rid = key.reservation_id().to_string();
            let reservation = format!("ledgerReservations/{rid}");
            for (index, field, value) in edits {
                let path = match index {
                    Some(i) => format!("ledgerTransactions/{rid}_{i:04}"),
                    None => reservation.clone(),
                };
                let mut doc = get(connection, &path).await.expect("document");
                set(&mut doc, field, value.clone());
                put(connection, &path, doc.fields).await;
                // Each edited document also shows the rewrite in its write times.
                expected.push((FindingCode::RewrittenDocument, path));
            }
            expected.extend(codes.iter().map(|code| (*code, reservation.clone())));
        }
        let report = run_verify(&journal).await;
        let mut found: Vec<(FindingCode, String)> = report
            .findings
            .iter()
            .map(|f| (f.code, f.path.clone()))
            .collect();
        found.sort();
        expected.sort();
        assert_eq!(found, expected);
        let before = ledger_documents(&journal).await;
        for (key, (command, edits, _)) in keys.iter().zip(&cases) {
            let retry = journal.accept_ledger_command(key, command, &scope).await;
            if edits.is_empty() {
                assert!(retry.is_ok(), "the control replays: {retry:?}");
            } else {
                assert!(
                    matches!(retry, Err(JournalError::JournalCorrupt { .. })),
                    "{retry:?}"
                );
            }
        }
        assert_eq!(ledger_documents(&journal).await, before, "nothing written");
    }

    /// A field edit of effect row `Some(index)` or of the reservation (`None`).
    type Edit = (Option<usize>, &'static str, ValueType);

    /// Both ledger collections, with their update times.
    async fn ledger_documents(journal: &Journal) -> Vec<Document> {
        let mut all = list(journal.connection(), "", "ledgerReservations").await;
        all.extend(list(journal.connection(), "", "ledgerTransactions").await);
        all
    }

    /// An imported `effect_plan` proven under fingerprint version 4.
    fn legacy_plan(effects: serde_json::Value) -> FingerprintInput {
        FingerprintInput::from_json(
            &json!({"family": "effect_plan", "fingerprintVersion": 4, "effects": effects}),
        )
        .expect("plan")
    }

    /// What migration `mig-1` proved about the imported rows `ids` holding `effects`.
    fn historical(
        legacy: &FingerprintInput,
        ids: &[&str],
        effects: &[command_journal::ledger::EffectPlanItem],
    ) -> command_journal::ledger::HistoricalCommand {
        command_journal::ledger::HistoricalCommand {
            family: legacy.family(),
            fingerprint: legacy.fingerprint(4).expect("v4").digest,
            fingerprint_version: 4,
            accepted_at: command_journal::Timestamp::from_micros(1_600_000_000_000_000)
                .expect("time"),
            migration_id: "mig-1".into(),
            effect_ids: ids.iter().map(|id| (*id).to_owned()).collect(),
            effects: effects.to_vec(),
        }
    }

    #[tokio::test]
    async fn historical_link_corruptions_are_reported_with_their_code_and_path() {
        let (journal, _clock) = journal().await;
        let connection = journal.connection();
        let scope = LedgerScope::new("seat-A", "seat-A").expect("scope");
        let legacy = legacy_plan(json!(
            [{"seat_id": "seat-A", "amount": "-3.00", "type": "LEGACY"},
             {"seat_id": "seat-B", "amount": "3.00", "type": "LEGACY"},
             {"seat_id": "seat-C", "amount": "7.00", "type": "LEGACY"}]
        ));
        let items = legacy.effects().to_vec();
        for (id, item) in ["legacy-0", "legacy-1", "legacy-free"].iter().zip(&items) {
            put(
                connection,
                &format!("ledgerTransactions/{id}"),
                crate::ledger::unlinked_row_of(id, item),
            )
            .await;
        }
        let linked_key = LedgerKey::new("class-1", "LEGACY", "linked").expect("key");
        let command = historical(&legacy, &["legacy-0", "legacy-1"], &items[..2]);
        journal
            .link_historical_effects(&linked_key, &scope, &command)
            .await
            .expect("linked");
        let report = run_verify(&journal).await;
        assert!(report.clean, "{:?}", report.findings);
        let rid = linked_key.reservation_id().to_string();

        let mut expected = Vec::new();
        // A linked row relabelled unlinked behind its reservation's back.
        let mut doc = get(connection, "ledgerTransactions/legacy-0")
            .await
            .expect("row");
        set(
            &mut doc,
            "lineage",
            ValueType::StringValue("historical_unlinked".into()),
        );
        set(&mut doc, "reservationId", ValueType::NullValue(0));
        set(&mut doc, "effectIndex", ValueType::NullValue(0));
        set(&mut doc, "migrationId", ValueType::NullValue(0));
        put(connection, "ledgerTransactions/legacy-0", doc.fields).await;
        expected.push((
            FindingCode::BrokenHistoricalLink,
            "ledgerTransactions/legacy-0".to_owned(),
        ));
        // A linked row that disappeared.
        delete(connection, "ledgerTransactions/legacy-1").await;
        expected.push((
            FindingCode::ReservationMissingEffects,
            "ledgerTransactions/legacy-1".to_owned(),
        ));
        // An unlinked row claiming the reservation, which does not list it.
        let mut doc = get(connection, "ledgerTransactions/legacy-free")
            .await
            .expect("row");
        set(
            &mut doc,
            "lineage",
            ValueType::StringValue("historical_linked".into()),
        );
        set(
            &mut doc,
            "reservationId",
            ValueType::StringValue(rid.clone()),
        );
        set(&mut doc, "effectIndex", ValueType::IntegerValue(2));
        set(
            &mut doc,
            "migrationId",
            ValueType::StringValue("mig-1".into()),
        );
        put(connection, "ledgerTransactions/legacy-free", doc.fields).await;
        expected.push((
            FindingCode::BrokenHistoricalLink,
            "ledgerTransactions/legacy-free".to_owned(),
        ));
        // A migration that created a new row for an effect already imported (the
        // earlier release's behaviour): the imported row legacy-dup and the created
        // row hold the same money.
        put(
            connection,
            "ledgerTransactions/legacy-dup",
            crate::ledger::unlinked_row_of("legacy-dup", &items[2]),
        )
        .await;
        let dup_key = LedgerKey::new("class-1", "LEGACY", "created").expect("key");
        let dup_rid = dup_key.reservation_id().to_string();
        let mut reservation = get(connection, &format!("ledgerReservations/{rid}"))
            .await
            .expect("reservation");
        let created_id = format!("{dup_rid}_0000");
        set(
            &mut reservation,
            "reservationId",
            ValueType::StringValue(dup_rid.clone()),
        );
        set(
            &mut reservation,
            "idempotencyKey",
            ValueType::StringValue("created".into()),
        );
        set(
            &mut reservation,
            "effectIds",
            ValueType::ArrayValue(gcloud_sdk::google::firestore::v1::ArrayValue {
                values: vec![crate::ledger::string(&created_id)],
            }),
        );
        // As that release wrote it: schema version 1, without an integrity digest.
        set(
            &mut reservation,
            "reservationSchemaVersion",
            ValueType::IntegerValue(1),
        );
        reservation.fields.remove("integrityDigest");
        let accepted_at = reservation.fields["acceptedAt"].clone();
        put(
            connection,
            &format!("ledgerReservations/{dup_rid}"),
            reservation.fields,
        )
        .await;
        let mut created = crate::ledger::unlinked_row_of(&created_id, &items[2]);
        created.insert("lineage".into(), crate::ledger::string("historical_linked"));
        created.insert("reservationId".into(), crate::ledger::string(&dup_rid));
        created.insert("effectIndex".into(), crate::ledger::int(0));
        created.insert("migrationId".into(), crate::ledger::string("mig-1"));
        created.insert("acceptedAt".into(), accepted_at);
        let created_path = format!("ledgerTransactions/{created_id}");
        put(connection, &created_path, created).await;
        // Written outside the reservation's commit, as no migration writes a row.
        expected.push((FindingCode::CommitTimeMismatch, created_path.clone()));
        expected.push((FindingCode::DuplicateMonetaryEffect, created_path));

        let report = run_verify(&journal).await;
        let mut found: Vec<(FindingCode, String)> = report
            .findings
            .iter()
            .map(|f| (f.code, f.path.clone()))
            .collect();
        found.sort();
        expected.sort();
        assert_eq!(found, expected);
    }

    /// Migrations link imported rows while a verify split into 64 ranges runs. The
    /// imported rows (`legacy-…`) sort into the last range and their reservations into
    /// earlier ones, so a link committed between the two reads shows a row claiming a
    /// reservation that (as read) does not list it. Read again at one time, it holds:
    /// the report stays clean.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn links_made_while_a_split_verify_runs_are_not_reported() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let (journal, _clock) = journal().await;
        let connection = journal.connection();
        let scope = LedgerScope::new("seat-A", "seat-A").expect("scope");
        let legacy =
            legacy_plan(json!([{"seat_id": "seat-A", "amount": "-3.00", "type": "LEGACY"}]));
        let items = legacy.effects().to_vec();
        const ROWS: usize = 120;
        for n in 0..ROWS {
            let id = format!("legacy-{n:04}");
            put(
                connection,
                &format!("ledgerTransactions/{id}"),
                crate::ledger::unlinked_row_of(&id, &items[0]),
            )
            .await;
        }
        let done = Arc::new(AtomicBool::new(false));
        let linked = Arc::new(AtomicUsize::new(0));
        let migrating = {
            let (journal, done, linked) = (journal.clone(), done.clone(), linked.clone());
            tokio::spawn(async move {
                for n in 0..ROWS {
                    if done.load(Ordering::SeqCst) {
                        break;
                    }
                    let key =
                        LedgerKey::new("class-1", "LEGACY", &format!("link-{n}")).expect("key");
                    let command = historical(&legacy, &[&format!("legacy-{n:04}")], &items);
                    journal
                        .link_historical_effects(&key, &scope, &command)
                        .await
                        .expect("linked");
                    linked.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        // Start once the migration has begun, so that the two overlap.
        while linked.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let before = linked.load(Ordering::SeqCst);
        let ranges = ScanRanges::new(64).expect("ranges");
        let report = verify_in_ranges(connection, ranges, &mut |_| {})
            .await
            .expect("verify");
        let during = linked.load(Ordering::SeqCst) - before;
        done.store(true, Ordering::SeqCst);
        migrating.await.expect("migration task");
        assert!(
            during >= 1,
            "no link was made while the verify ran: the test proved nothing"
        );
        assert!(
            report.clean,
            "{during} links during the scan: {:?}",
            report.findings
        );
        assert!(run_verify(&journal).await.clean);
    }
}
