//! The `command-journal` binary against the emulator: exact output lines, exit codes
//! and stored documents.

use super::support::{self, list};
use command_journal::JournalError;
use serde_json::{Value, json};
use std::io::Write as _;
use std::process::{Command, Stdio};

const CLI: &str = env!("CARGO_BIN_EXE_command-journal");
const COMMAND_ID: &str = "3f2504e0-4f89-41d3-9a0c-0305e82c3301";
const LEASE_ID: &str = "9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2d";

/// Runs the CLI with `args`, feeding `stdin`; returns (exit code, stdout, stderr).
fn cli_raw(args: &[&str], stdin: &Value) -> (i32, String, String) {
    let mut child = Command::new(CLI)
        .args(args)
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .env_remove("GOOGLE_CLOUD_PROJECT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.to_string().as_bytes())
        .expect("write stdin");
    let output = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    // `example` prints a stdin object in its schema's order; every other JSON line
    // has its keys sorted.
    if args.first() != Some(&"example") {
        assert_sorted(args, &stdout);
    }
    (output.status.code().unwrap_or(-1), stdout, stderr)
}

/// Asserts that every JSON line of `stdout` prints its object keys sorted, at every
/// depth: it is exactly its `serde_json` value printed again, which orders keys.
fn assert_sorted(args: &[&str], stdout: &str) {
    for line in stdout.lines().filter(|line| line.starts_with('{')) {
        let value: Value = serde_json::from_str(line).expect("a JSON line");
        assert_eq!(value.to_string(), line, "{args:?}: keys not sorted");
    }
}

/// Runs the CLI with `args`, feeding `stdin`; returns (exit code, stdout line, stderr).
fn cli(args: &[&str], stdin: &Value) -> (i32, Value, String) {
    let (code, stdout, stderr) = cli_raw(args, stdin);
    assert_eq!(stdout.lines().count(), 1, "exactly one line: {stdout:?}");
    let line = serde_json::from_str(stdout.trim()).expect("JSON line");
    (code, line, stderr)
}

/// What the CLI answers a refusal: exit 3, the code and its fixed message.
fn refused(error: JournalError) -> (i32, Value) {
    (
        3,
        json!({"error": error.code(), "message": error.to_string()}),
    )
}

/// What the CLI answers an invalid key: its name, the problem, the rule, the message.
fn invalid(field: &str, problem: &str) -> Value {
    let message = match problem {
        "missing" => "a required key is missing",
        "invalid" => "the value given for this key or option is not valid",
        other => panic!("no message for {other}"),
    };
    json!({"error": "invalid_input", "field": field, "problem": problem,
           "expected": command_journal::expected::expected_for(field), "message": message})
}

/// `journal_corrupt` (exit 3) with its fixed message.
fn assert_corrupt(code: i32, out: &Value) {
    assert_eq!(
        (code, &out["error"]),
        (3, &json!("journal_corrupt")),
        "{out}"
    );
    assert!(
        out["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("journal corrupt: ")),
        "{out}"
    );
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn input(extra: Value) -> Value {
    let mut base = json!({
        "environment": "emulator",
        "callerScopeKind": "member",
        "callerId": "CANARYcaller_cli",
        "commandId": COMMAND_ID,
        "commandType": "checkout",
        "endpointSchemaVersion": 1,
        "payload": {"sku": "CANARYpayload_cli"},
    });
    if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
        base.extend(extra);
    }
    base
}

#[tokio::test]
async fn register_acquire_complete_and_status_through_the_cli() {
    let connection = support::fresh_connection().await;
    let host = support::emulator().host().to_owned();
    let project = connection.project().to_owned();
    let at = |t: &'static str| -> Vec<String> {
        ["--project", &project, "--emulator-host", &host, "--at", t]
            .map(String::from)
            .to_vec()
    };
    let t0 = at("2030-01-01T00:00:00.5Z");
    let (code, out, _) = cli(
        &[args(&t0).as_slice(), &["register"]].concat(),
        &input(json!({})),
    );
    assert_eq!(code, 0);
    assert_eq!(
        out,
        json!({"journalSchemaVersion":1,"outcome":"registered_new","state":"registered"})
    );
    assert_eq!(list(&connection, "", "checkoutRequests").await.len(), 1);
    assert_eq!(list(&connection, "", "auditEvents").await.len(), 1);

    let lease = input(json!({"leaseId": LEASE_ID}));
    let (code, out, _) = cli(&[args(&t0).as_slice(), &["acquire"]].concat(), &lease);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        json!({"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"lease_acquired",
               "state":"leased","fenceEpoch":1,
               "leaseExpiresAt":{"seconds":1_893_456_060_i64,"nanoseconds":500_000_000}})
    );
    let done = input(json!({"leaseId": LEASE_ID, "expectedFenceEpoch": 1,
                            "terminalReferenceFingerprint": "ab".repeat(32)}));
    let t1 = at("2030-01-01T00:00:30Z");
    let (code, out, _) = cli(&[args(&t1).as_slice(), &["complete"]].concat(), &done);
    assert_eq!(
        (code, out["outcome"].clone()),
        (0, json!("terminal_succeeded"))
    );
    let (code, out, _) = cli(
        &[args(&t1).as_slice(), &["status"]].concat(),
        &input(json!({})),
    );
    assert_eq!(code, 0);
    assert_eq!(
        out,
        json!({"journalSchemaVersion":1,"state":"succeeded","commandRevision":3,"fenceEpoch":1,"leaseActive":false})
    );
    let failed = input(json!({"leaseId": LEASE_ID, "expectedFenceEpoch": 1}));
    let (code, out, _) = cli(&[args(&t1).as_slice(), &["fail"]].concat(), &failed);
    assert_eq!((code, out), refused(JournalError::TerminalConflict));

    // Nothing raw was stored.
    let mut text = String::new();
    for collection in ["checkoutRequests", "auditEvents"] {
        text += &format!("{:?}", list(&connection, "", collection).await);
    }
    text += &format!(
        "{:?}",
        list(
            &connection,
            &format!("checkoutRequests/{}", out_hash(&project, &host)),
            "lifecycle"
        )
        .await
    );
    for canary in ["CANARY", COMMAND_ID, LEASE_ID, &"ab".repeat(32)] {
        assert!(!text.contains(canary), "stored documents contain {canary}");
    }
}

/// The command key hash of the test command, through the CLI's identity subcommand.
fn out_hash(_project: &str, _host: &str) -> String {
    let (code, out, _) = cli(&["identity"], &input(json!({})));
    assert_eq!(code, 0);
    out["commandKeyHash"].as_str().expect("hash").to_owned()
}

#[test]
fn invalid_input_exits_2_naming_the_field_only() {
    let (code, out, _) = cli(
        &["identity"],
        &input(json!({"commandId": "CANARY-not-a-uuid"})),
    );
    assert_eq!((code, out), (2, invalid("commandId", "invalid")));
    let (code, out, _) = cli(
        &["identity"],
        &json!({"environment": "emulator", "environment2": 1}),
    );
    assert_eq!(code, 2);
    assert_eq!(out["error"], "invalid_input");
    assert_eq!(out["field"], "environment2", "the unknown key is named");
    let mut text = input(json!({})).to_string();
    text.insert_str(1, r#""callerId":"dup","#);
    let output = Command::new(CLI)
        .arg("identity")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .expect("run");
    assert_eq!(
        output.status.code(),
        Some(2),
        "duplicate keys are invalid input"
    );
}

#[test]
fn at_is_refused_unless_the_target_is_an_emulator() {
    let (code, out, _) = cli(
        &["--project", "p", "--at", "2030-01-01T00:00:00Z", "register"],
        &input(json!({})),
    );
    assert_eq!((code, out["field"].clone()), (2, json!("at")));
    assert_eq!(
        out["expected"],
        "an RFC 3339 time such as 2030-01-01T00:00:00Z, only with an emulator target"
    );
}

#[test]
fn an_unreachable_emulator_is_unavailable_exit_4_promptly() {
    // A port nothing listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let host = format!("127.0.0.1:{port}");
    let started = std::time::Instant::now();
    let (code, out, _) = cli(
        &["--project", "p", "--emulator-host", &host, "register"],
        &input(json!({})),
    );
    assert_eq!(code, 4, "{out}");
    assert_eq!(out["error"], "unavailable");
    assert_eq!(out["class"], "unavailable");
    // The connection itself failed: no attempt was made. The answer names the host and
    // the gRPC code, says retrying is safe, without counting "0 attempts", and asks
    // whether the emulator runs there.
    assert_eq!(out["attempts"], 0);
    assert_eq!(out["host"], host.as_str());
    assert_eq!(out["grpcCode"], "UNAVAILABLE");
    assert_eq!(
        out["message"],
        format!(
            "{host}: could not connect to firestore (last gRPC code UNAVAILABLE); \
             retrying the whole call later is safe; is the Firestore emulator running at \
             {host}? (`command-journal emulator --port {port}` starts one there)"
        )
    );
    // Ten attempts with at most 250 ms backoff each: bounded well under a minute.
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn identity_prints_the_golden_vector() {
    let vectors: Value =
        serde_json::from_str(include_str!("../testdata/identity_vectors.json")).expect("vectors");
    let case = &vectors["commands"][1];
    let (code, out, _) = cli(&["identity"], &case["input"]);
    assert_eq!(code, 0);
    assert_eq!(out, case["expected"]);
}

#[test]
fn ledger_fingerprint_matches_the_independent_implementation_byte_for_byte() {
    let vectors: Value =
        serde_json::from_str(include_str!("../testdata/ledger_vectors.json")).expect("vectors");
    let cases = vectors["cases"].as_array().expect("cases");
    assert!(cases.len() >= 12);
    for case in cases {
        let (code, out, _) = cli(&["ledger", "fingerprint"], &case["input"]);
        assert_eq!(code, 0, "{}", case["name"]);
        assert_eq!(
            out["canonical"], case["expected"]["canonical"],
            "{}",
            case["name"]
        );
        assert_eq!(
            out["fingerprint"], case["expected"]["fingerprint"],
            "{}",
            case["name"]
        );
        assert_eq!(
            out["fingerprintVersion"], case["expected"]["fingerprintVersion"],
            "{}",
            case["name"]
        );
    }
}

#[test]
fn ledger_accept_validates_before_connecting() {
    // Invalid input is exit 2 even with no reachable target.
    let (code, out, _) = cli(
        &[
            "--project",
            "p",
            "--emulator-host",
            "127.0.0.1:9",
            "ledger",
            "accept",
        ],
        &json!({"classId": "c"}),
    );
    assert_eq!(code, 2);
    assert_eq!(out["error"], "invalid_input");
}

#[tokio::test]
async fn ledger_accept_and_replay_through_the_cli() {
    let connection = support::fresh_connection().await;
    let host = support::emulator().host().to_owned();
    let project = connection.project().to_owned();
    let base = [
        "--project",
        project.as_str(),
        "--emulator-host",
        host.as_str(),
    ];
    let plan = json!({
        "family": "store_purchase",
        "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "target_seat_id": "seat-A", "actor_seat_id": "seat-A",
                     "mechanism": "WALLET", "amount": "12.5", "account_type": "checking",
                     "type": "DEBIT", "policy_id": "policy-7"}],
        "intent": {"policyUuid": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", "quantity": 2},
    });
    let accept = |plan: &Value| {
        json!({"classId": "class-1", "featCode": "STORE", "idempotencyKey": "key-1",
               "scope": {"seatId": "seat-A", "actorSeatId": "seat-A"}, "plan": plan})
    };
    let (code, first, _) = cli(&[&base[..], &["ledger", "accept"]].concat(), &accept(&plan));
    assert_eq!(
        (code, first["outcome"].clone()),
        (0, json!("accepted")),
        "{first}"
    );
    let (code, again, _) = cli(&[&base[..], &["ledger", "accept"]].concat(), &accept(&plan));
    assert_eq!((code, again["outcome"].clone()), (0, json!("replayed")));
    assert_eq!(again["effectIds"], first["effectIds"]);
    let mut changed = plan.clone();
    changed["intent"]["quantity"] = json!(3);
    let (code, out, _) = cli(
        &[&base[..], &["ledger", "accept"]].concat(),
        &accept(&changed),
    );
    assert_eq!((code, out), refused(JournalError::ReplayMismatch));
    let replay = json!({"classId": "class-1", "featCode": "STORE", "idempotencyKey": "key-1",
                        "scope": {"seatId": "seat-A", "actorSeatId": "seat-A"},
                        "charge": {"family": "store_purchase",
                                   "intent": {"policyUuid": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", "quantity": 2}}});
    let (code, out, _) = cli(&[&base[..], &["ledger", "replay"]].concat(), &replay);
    assert_eq!((code, out["outcome"].clone()), (0, json!("replayed")));
    // The exact plan declaring another fingerprint version than the stored one (5).
    let mut declared = plan.clone();
    declared["fingerprintVersion"] = json!(4);
    let (code, out, _) = cli(
        &[&base[..], &["ledger", "accept"]].concat(),
        &accept(&declared),
    );
    assert_eq!((code, out), refused(JournalError::ReplayMismatch));
    // The stored row's amount edited after acceptance: the record changed, so the
    // exact retry and the replay are told journal_corrupt, not replay_mismatch.
    let effect_id = first["effectIds"][0].as_str().expect("effect id");
    let path = format!("ledgerTransactions/{effect_id}");
    let mut row = support::get(&connection, &path).await.expect("row");
    row.fields.insert(
        "amount".into(),
        gcloud_sdk::google::firestore::v1::Value {
            value_type: Some(
                gcloud_sdk::google::firestore::v1::value::ValueType::StringValue(
                    "1000000.00".into(),
                ),
            ),
        },
    );
    support::put(&connection, &path, row.fields).await;
    let (code, out, _) = cli(&[&base[..], &["ledger", "accept"]].concat(), &accept(&plan));
    assert_corrupt(code, &out);
    let (code, out, _) = cli(&[&base[..], &["ledger", "replay"]].concat(), &replay);
    assert_corrupt(code, &out);
    assert_eq!(list(&connection, "", "ledgerReservations").await.len(), 1);
    assert_eq!(list(&connection, "", "ledgerTransactions").await.len(), 1);
}
#[tokio::test]
async fn ledger_fixed_fields_and_a_canary_in_a_malformed_field_through_the_cli() {
    const CANARY: &str = "CANARYledgerK9";
    let connection = support::fresh_connection().await;
    let host = support::emulator().host().to_owned();
    let project = connection.project().to_owned();
    let base = [
        "--project",
        project.as_str(),
        "--emulator-host",
        host.as_str(),
    ];
    let ledger = |action: &str, input: &Value| {
        let (code, stdout, stderr) = cli_raw(&[&base[..], &["ledger", action]].concat(), input);
        assert!(
            !stdout.contains(CANARY) && !stderr.contains(CANARY),
            "{stdout} {stderr}"
        );
        let line: Value = serde_json::from_str(stdout.trim()).expect("JSON line");
        (code, line)
    };
    let accept = |key: &str, plan: Value| {
        json!({"classId": "class-1", "featCode": "FEAT", "idempotencyKey": key,
               "scope": {"seatId": "seat-A", "actorSeatId": "seat-A"}, "plan": plan})
    };
    let store = |effect: Value| {
        json!({"family": "store_purchase", "fingerprintVersion": 5, "effects": [effect],
               "intent": {"policyUuid": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", "quantity": 1}})
    };
    let effect = |extra: Value| {
        let mut e = json!({"seat_id": "seat-A", "actor_seat_id": "seat-A",
                           "mechanism": "WALLET", "amount": "-12.50", "type": "PURCHASE"});
        for (k, v) in extra.as_object().expect("object") {
            e[k] = v.clone();
        }
        e
    };
    // The fields seed 003 fixes, broken on effects of several families: exit 2 on
    // `effects`, nothing written.
    let broken = [
        store(effect(json!({"mechanism": "wallet"}))),
        store(effect(json!({"mechanism": " WALLET"}))),
        store(effect(json!({"mechanism": "Wallet"}))),
        store(effect(json!({"mechanism": "CARD"}))),
        store(effect(json!({"compensation_amount_cents": 1}))),
        store(effect(json!({"compensation_origin_locator": "orders/o-1"}))),
        json!({"family": "overdraft_fee", "fingerprintVersion": 5,
               "effects": [effect(json!({"mechanism": "FEE", "compensation_subtype": "GOODWILL"}))],
               "intent": {"forceAuthority": false}}),
        json!({"family": "effect_plan", "fingerprintVersion": 5,
               "effects": [effect(json!({"correction_intent_locator": "corrections/c-1"}))]}),
        json!({"family": "reversal", "fingerprintVersion": 5,
               "effects": [effect(json!({"original_transaction_id": "legacy-1",
                                         "compensation_origin_locator": "orders/o-1"}))]}),
    ];
    for (n, plan) in broken.into_iter().enumerate() {
        let (code, out) = ledger("accept", &accept(&format!("fixed-{n}"), plan));
        assert_eq!((code, &out["field"]), (2, &json!("effects")), "{n}: {out}");
    }
    assert!(list(&connection, "", "ledgerReservations").await.is_empty());
    assert!(list(&connection, "", "ledgerTransactions").await.is_empty());
    // A canary in a malformed stored field: journal_corrupt naming the field, never
    // the value, in the output, the message and the logs.
    let (code, out) = ledger("accept", &accept("charge", store(effect(json!({})))));
    assert_eq!((code, &out["outcome"]), (0, &json!("accepted")), "{out}");
    let row = format!(
        "ledgerTransactions/{}",
        out["effectIds"][0].as_str().expect("id")
    );
    let original = support::get(&connection, &row).await.expect("row");
    let reversal = json!({"family": "reversal", "fingerprintVersion": 5, "effects": [
        {"seat_id": "seat-A", "actor_seat_id": "officer-1", "mechanism": "REVERSAL",
         "amount": "5.00", "type": "REVERSAL", "original_transaction_id": row.rsplit('/').next()}]});
    let (code, out) = ledger("accept", &accept("refund-1", reversal.clone()));
    assert_eq!((code, &out["outcome"]), (0, &json!("accepted")), "{out}");
    let canary = || gcloud_sdk::google::firestore::v1::Value {
        value_type: Some(
            gcloud_sdk::google::firestore::v1::value::ValueType::StringValue(format!("-1{CANARY}")),
        ),
    };
    let bound = format!("{row}/corrections/current");
    let mut doc = support::get(&connection, &bound).await.expect("bound");
    doc.fields.insert("reversedAmount".into(), canary());
    support::put(&connection, &bound, doc.fields).await;
    let (code, out) = ledger("accept", &accept("refund-2", reversal));
    assert_corrupt(code, &out);
    assert_eq!(
        out["message"],
        "journal corrupt: malformed ledger correction bound (reversedAmount)"
    );
    let mut doc = original.clone();
    doc.fields.insert("amount".into(), canary());
    support::put(&connection, &row, doc.fields).await;
    let (code, out) = ledger("accept", &accept("charge", store(effect(json!({})))));
    assert_corrupt(code, &out);
    assert_eq!(
        out["message"],
        "journal corrupt: malformed ledger effect (amount)"
    );
}

#[tokio::test]
async fn ledger_multi_effect_reversal_replay_and_link_through_the_cli() {
    let connection = support::fresh_connection().await;
    let host = support::emulator().host().to_owned();
    let project = connection.project().to_owned();
    let base = [
        "--project",
        project.as_str(),
        "--emulator-host",
        host.as_str(),
    ];
    let ledger =
        |action: &str, input: &Value| cli(&[&base[..], &["ledger", action]].concat(), input);
    let scope = json!({"seatId": "seat-A", "actorSeatId": "seat-A"});
    // Large enough for both reversals below (25.00 and 37.50): the reversals of one
    // effect never return more than it booked.
    let charge = json!({
        "family": "effect_plan", "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "amount": "-62.50", "type": "DEBIT"}],
    });
    let (code, original, _) = ledger(
        "accept",
        &json!({"classId": "class-1", "featCode": "CHARGE", "idempotencyKey": "c-1",
                "scope": scope, "plan": charge}),
    );
    assert_eq!(code, 0, "{original}");
    let original_id = original["effectIds"][0].as_str().expect("id").to_owned();

    // The two-effect reversal of the defect report, and a three-effect one.
    let effect = |cents: u64, subtype: Option<&str>| {
        json!({"seat_id": "seat-A", "actor_seat_id": "officer-9", "mechanism": "REVERSAL",
               "amount": "12.50", "type": "REVERSAL", "original_transaction_id": original_id,
               "compensation_amount_cents": cents, "compensation_subtype": subtype})
    };
    let shapes = [
        vec![effect(1250, Some("DUPLICATE_CHARGE")), effect(0, None)],
        vec![
            effect(0, None),
            effect(1250, Some("DUPLICATE_CHARGE")),
            effect(50, Some("DUPLICATE_CHARGE")),
        ],
    ];
    for (n, effects) in shapes.into_iter().enumerate() {
        let key = format!("r-{n}");
        let plan = json!({"family": "reversal", "fingerprintVersion": 5, "effects": effects});
        let (code, accepted, _) = ledger(
            "accept",
            &json!({"classId": "class-1", "featCode": "REVERSAL", "idempotencyKey": key,
                    "scope": scope, "plan": plan}),
        );
        assert_eq!(
            (code, accepted["outcome"].clone()),
            (0, json!("accepted")),
            "{accepted}"
        );
        let replay = |actor: &str, subtype: Option<&str>| {
            ledger(
                "replay",
                &json!({"classId": "class-1", "featCode": "REVERSAL", "idempotencyKey": key,
                        "scope": scope,
                        "reversal": {"actorSeatId": actor, "mechanism": "REVERSAL",
                                     "compensationSubtype": subtype}}),
            )
        };
        let (code, out, _) = replay("officer-9", Some("DUPLICATE_CHARGE"));
        assert_eq!(
            (code, out["outcome"].clone()),
            (0, json!("replayed")),
            "{out}"
        );
        assert_eq!(out["effects"], accepted["effects"]);
        for (actor, subtype) in [
            ("officer-9", Some("GOODWILL")),
            ("officer-1", Some("DUPLICATE_CHARGE")),
        ] {
            let (code, out, _) = replay(actor, subtype);
            assert_eq!((code, out), refused(JournalError::ReplayMismatch));
        }
    }

    // `ledger link` over two imported rows.
    let items = [
        json!({"seat_id": "seat-A", "amount": "-3.00", "type": "LEGACY"}),
        json!({"seat_id": "seat-B", "amount": "3.00", "type": "LEGACY"}),
    ];
    let legacy_plan = command_journal::ledger::FingerprintInput::from_json(
        &json!({"family": "effect_plan", "fingerprintVersion": 4, "effects": items}),
    )
    .expect("plan");
    for (i, item) in legacy_plan.effects().iter().enumerate() {
        let id = format!("legacy-{i}");
        super::support::put(
            &connection,
            &format!("ledgerTransactions/{id}"),
            super::ledger::unlinked_row_of(&id, item),
        )
        .await;
    }
    let fingerprint = legacy_plan.fingerprint(4).expect("v4").digest;
    let link = |key: &str, version: u32| {
        json!({"classId": "class-1", "featCode": "LEGACY", "idempotencyKey": key,
               "scope": scope,
               "historical": {"family": "effect_plan", "fingerprint": fingerprint.as_str(),
                              "fingerprintVersion": version,
                              "acceptedAt": "2020-09-13T12:26:40Z", "migrationId": "mig-1",
                              "effectIds": ["legacy-0", "legacy-1"], "effects": items}})
    };
    let (code, out, _) = ledger("link", &link("l-0", 2));
    assert_eq!(
        (code, out),
        refused(JournalError::ObsoleteMultiEffectFingerprint)
    );
    let (code, out, _) = ledger("link", &link("l-0", 4));
    assert_eq!(
        (code, out["outcome"].clone()),
        (0, json!("linked")),
        "{out}"
    );
    assert_eq!(out["effectIds"], json!(["legacy-0", "legacy-1"]));
    let (code, out, _) = ledger("link", &link("l-0", 4));
    assert_eq!((code, out["outcome"].clone()), (0, json!("already_linked")));
    let (code, out, _) = ledger("link", &link("l-1", 4));
    assert_eq!((code, out), (2, invalid("effectIds", "invalid")));
    // 1 charge + 2 + 3 reversal effects + 2 linked rows; 1 + 2 + 1 reservations.
    assert_eq!(list(&connection, "", "ledgerTransactions").await.len(), 8);
    assert_eq!(list(&connection, "", "ledgerReservations").await.len(), 4);
}

#[tokio::test]
async fn start_registers_and_acquires_in_one_call_through_the_cli() {
    let connection = support::fresh_connection().await;
    let host = support::emulator().host().to_owned();
    let project = connection.project().to_owned();
    let global = ["--project", &project, "--emulator-host", &host, "--at"];
    let at = |t: &'static str| [global.as_slice(), &[t, "start"]].concat();
    let (code, out, _) = cli(
        &at("2030-01-01T00:00:00.5Z"),
        &input(json!({"leaseId": LEASE_ID})),
    );
    assert_eq!(code, 0);
    assert_eq!(
        out,
        json!({
            "registration": {"journalSchemaVersion":1,"outcome":"registered_new","state":"registered"},
            "lease": {"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"lease_acquired",
                      "state":"leased","fenceEpoch":1,
                      "leaseExpiresAt":{"seconds":1_893_456_060_i64,"nanoseconds":500_000_000}},
        })
    );
    assert_eq!(list(&connection, "", "checkoutRequests").await.len(), 1);
    assert_eq!(list(&connection, "", "auditEvents").await.len(), 2);
    // Another worker while the lease is active: registered_existing and busy.
    let other = input(json!({"leaseId": "0b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2d"}));
    let (code, out, _) = cli(&at("2030-01-01T00:00:10Z"), &other);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        json!({
            "registration": {"journalSchemaVersion":1,"outcome":"registered_existing","state":"registered"},
            "lease": {"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"lease_busy","state":"leased"},
        })
    );
    // A different payload under the same command id conflicts (exit 3), writing nothing.
    let mut conflicting = input(json!({"leaseId": LEASE_ID}));
    conflicting["payload"] = json!({"sku": "other"});
    let (code, out, _) = cli(&at("2030-01-01T00:00:10Z"), &conflicting);
    assert_eq!((code, out), refused(JournalError::CommandConflict));
    // The lease id is required: exit 2 before any connection.
    let (code, out, _) = cli(&at("2030-01-01T00:00:10Z"), &input(json!({})));
    assert_eq!((code, out), (2, invalid("leaseId", "missing")));
    assert_eq!(list(&connection, "", "auditEvents").await.len(), 2);
}

/// Runs the CLI with `args`, feeding `stdin`; returns (exit code, the stdout line as
/// printed), for checks of the printed text itself (key order).
fn cli_text(args: &[&str], stdin: &Value) -> (i32, String) {
    let (code, stdout, _) = cli_raw(args, stdin);
    (code, stdout.trim().to_owned())
}

#[test]
fn identity_prints_plan_fingerprints_and_the_key_of_any_attempt_offline() {
    let vectors: Value =
        serde_json::from_str(include_str!("../testdata/send_vectors.json")).expect("vectors");
    let command = &vectors["command"];
    for case in vectors["plans"].as_array().expect("plans") {
        let plan = &case["plan"];
        let expected = &case["expected"];
        for (n, key) in expected["attemptKeys"].as_object().expect("keys") {
            let mut stdin = command.clone();
            stdin["operation"] = plan["operation"].clone();
            stdin["plan"] = plan.clone();
            stdin["attempt"] = json!(n.parse::<i64>().expect("attempt"));
            let (code, out, _) = cli(&["identity"], &stdin);
            assert_eq!(code, 0, "{out}");
            assert_eq!(out["planFingerprint"], expected["planFingerprint"], "{n}");
            assert_eq!(&out["providerIdempotencyKey"], key, "{n}");
            assert_eq!(out["commandKeyHash"], vectors["commandKeyHash"]);
        }
    }
    // `attempt` needs the operation whose key it names; the operation must be the plan's.
    let mut stdin = command.clone();
    stdin.as_object_mut().expect("object").remove("operation");
    stdin["attempt"] = json!(2);
    let (code, out, _) = cli(&["identity"], &stdin);
    assert_eq!((code, out), (2, invalid("attempt", "invalid")));
    stdin["attempt"] = json!(10_000);
    stdin["operation"] = json!("charge");
    let (code, out, _) = cli(&["identity"], &stdin);
    assert_eq!((code, out), (2, invalid("attempt", "invalid")));
    stdin["attempt"] = json!(2);
    stdin["plan"] = vectors["plans"][1]["plan"].clone(); // a refund plan
    let (code, out, _) = cli(&["identity"], &stdin);
    assert_eq!((code, out), (2, invalid("operation", "invalid")));
}

/// The sender's success answered after the cutoff, while its lease runs, is recorded
/// with its result envelope through `send outcome` (an `ambiguous` then is refused);
/// `status` shows the plan fingerprint `identity` prints for the plan; the CLI prints
/// every object with its keys sorted.
#[tokio::test]
async fn a_late_success_is_stored_with_its_result_through_the_cli() {
    let connection = support::fresh_connection().await;
    let host = support::emulator().host().to_owned();
    let project = connection.project().to_owned();
    let global = ["--project", &project, "--emulator-host", &host, "--at"];
    let at = |t: &'static str, words: &[&'static str]| [global.as_slice(), &[t], words].concat();
    let lease1 = "0b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2d";
    let plan = json!({"provider":"stripe","account":"acct_CANARYcli","mode":"test",
        "apiVersion":"2024-06-20","operation":"charge","endpoint":"POST /v1/payment_intents",
        "parameters":{"amount":1250,"currency":"usd"},"keyRetentionSeconds":3600,
        "lookup":"durable","lookupSettleSeconds":120});
    let held = |lease: &str, fence: i64| {
        input(json!({"leaseId": lease, "expectedFenceEpoch": fence, "plan": plan}))
    };
    let (code, _, _) = cli(
        &at("2030-01-01T00:00:00Z", &["start"]),
        &input(json!({"leaseId": LEASE_ID})),
    );
    assert_eq!(code, 0);
    let (code, permit) = cli_text(
        &at("2030-01-01T00:00:00Z", &["send", "begin"]),
        &held(LEASE_ID, 1),
    );
    assert_eq!(code, 0, "{permit}");
    let mut stdin = input(json!({"operation": "charge", "plan": plan}));
    let (_, identity, _) = cli(&["identity"], &stdin);
    let key = identity["providerIdempotencyKey"].as_str().expect("key");
    // The cutoff is 3600 − 900 = 2700 s after the first send; sorted keys, also nested.
    assert_eq!(
        permit,
        format!(
            r#"{{"attempt":1,"journalSchemaVersion":1,"leaseExpiresAt":{{"nanoseconds":0,"seconds":1893456060}},"outcome":"send_permitted","providerIdempotencyKey":"{key}","resend":false,"sendCutoffAt":{{"nanoseconds":0,"seconds":1893458700}}}}"#
        )
    );
    // Attempt 2's key, offline: not the key of attempt 1.
    stdin["attempt"] = json!(2);
    let (_, second, _) = cli(&["identity"], &stdin);
    assert_ne!(second["providerIdempotencyKey"], json!(key));
    // A takeover re-sends 10 s before the cutoff; the answer comes 10 s after it.
    let (code, out, _) = cli(
        &at("2030-01-01T00:44:50Z", &["acquire"]),
        &input(json!({"leaseId": lease1})),
    );
    assert_eq!((code, &out["fenceEpoch"]), (0, &json!(2)));
    let (code, out, _) = cli(
        &at("2030-01-01T00:44:50Z", &["send", "begin"]),
        &held(lease1, 2),
    );
    assert_eq!(
        (code, &out["resend"], &out["providerIdempotencyKey"]),
        (0, &json!(true), &json!(key))
    );
    let answer = |outcome: &str| {
        let mut answer = held(lease1, 2);
        answer["attempt"] = json!(1);
        answer["outcome"] = json!(outcome);
        answer
    };
    let (code, out, _) = cli(
        &at("2030-01-01T00:45:05Z", &["send", "outcome"]),
        &answer("ambiguous"),
    );
    assert_eq!((code, out), refused(JournalError::SendCutoffPassed));
    let mut success = answer("succeeded");
    success["result"] =
        json!({"id": "pi_CANARY", "amount": 1250, "currency": "usd", "status": "succeeded"});
    let (code, line) = cli_text(&at("2030-01-01T00:45:10Z", &["send", "outcome"]), &success);
    assert_eq!(
        (code, line.as_str()),
        (
            0,
            r#"{"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"terminal_succeeded","state":"succeeded"}"#
        )
    );
    // The exact retry observes; another envelope is a conflict.
    let (code, out, _) = cli(&at("2030-01-01T00:45:20Z", &["send", "outcome"]), &success);
    assert_eq!((code, &out["outcome"]), (0, &json!("terminal_succeeded")));
    let mut other = success.clone();
    other["result"]["amount"] = json!(1251);
    let (code, out, _) = cli(&at("2030-01-01T00:45:20Z", &["send", "outcome"]), &other);
    assert_eq!((code, out), refused(JournalError::TerminalConflict));
    let (code, status) = cli_text(&at("2030-01-01T00:45:20Z", &["status"]), &input(json!({})));
    assert_eq!(code, 0);
    let fingerprint = identity["planFingerprint"].as_str().expect("fingerprint");
    assert_eq!(
        status,
        format!(
            r#"{{"commandRevision":4,"fenceEpoch":2,"journalSchemaVersion":1,"leaseActive":false,"send":{{"absenceProvableFrom":null,"attempt":1,"needsReconciliation":false,"planFingerprint":"{fingerprint}","sendCutoffAt":{{"nanoseconds":0,"seconds":1893458700}},"state":"succeeded"}},"state":"succeeded"}}"#
        )
    );
    // The envelope is stored, and the send record says so.
    let hash = identity["commandKeyHash"].as_str().expect("hash");
    let parent = format!("checkoutRequests/{hash}");
    assert_eq!(list(&connection, &parent, "results").await.len(), 1);
    let record = support::get(&connection, &format!("{parent}/providerSends/current"))
        .await
        .expect("send record");
    assert_eq!(
        record.fields["resultStored"].value_type,
        Some(gcloud_sdk::google::firestore::v1::value::ValueType::BooleanValue(true))
    );
}

#[tokio::test]
async fn pending_prints_one_line_per_waiting_command_at_the_time_given() {
    let connection = support::fresh_connection().await;
    let host = support::emulator().host().to_owned();
    let project = connection.project().to_owned();
    let global = ["--project", &project, "--emulator-host", &host, "--at"];
    let at = |t: &'static str, rest: &[&'static str]| [global.as_slice(), &[t], rest].concat();
    let (code, _, _) = cli(
        &at("2030-01-01T00:00:00Z", &["start"]),
        &input(json!({"leaseId": LEASE_ID})),
    );
    assert_eq!(code, 0);
    // While the lease runs: nothing waits, nothing is printed.
    let (code, out, _) = cli_raw(&at("2030-01-01T00:00:30Z", &["pending"]), &json!(null));
    assert_eq!((code, out.as_str()), (0, ""));
    // Once it expired: one line, with the command's key hash and no raw value.
    let (code, out, _) = cli(&at("2030-01-01T00:01:00Z", &["pending"]), &json!(null));
    assert_eq!(code, 0);
    let hash = {
        let (_, identity, _) = cli(&["identity"], &input(json!({})));
        identity["commandKeyHash"].clone()
    };
    assert_eq!(
        out,
        json!({
            "commandKeyHash": hash,
            "state": "leased",
            "fenceEpoch": 1,
            "since": {"seconds": 1_893_456_060_i64, "nanoseconds": 0},
            "send": null,
            "unblockedBy": "retry",
        })
    );
    assert!(!out.to_string().contains(COMMAND_ID));
    // One key range of two: the command is in exactly one of them.
    let key = hash.as_str().expect("hash");
    let first_half = u8::from_str_radix(&key[..1], 16).expect("hex") < 8;
    for (range, holds) in [("0/2", first_half), ("1/2", !first_half)] {
        let (code, out, _) = cli_raw(
            &at("2030-01-01T00:01:00Z", &["pending", "--key-range", range]),
            &json!(null),
        );
        assert_eq!(code, 0, "{out}");
        assert_eq!(out.contains(key), holds, "{range}: {out}");
        assert_eq!(out.lines().count(), usize::from(holds), "{range}: {out}");
    }
    // A range that is none, refused by field before any connection.
    for (range, field) in [
        ("2/2", "keyRangeIndex"),
        ("0/0", "keyRangeCount"),
        ("half", "keyRange"),
    ] {
        let (code, out, _) = cli(
            &["--project", "p", "pending", "--key-range", range],
            &json!(null),
        );
        assert_eq!((code, out["field"].as_str()), (2, Some(field)), "{out}");
    }
    // `--at` outside an emulator is refused before any connection.
    let (code, out, _) = cli(
        &["--project", "p", "--at", "2030-01-01T00:00:00Z", "pending"],
        &json!(null),
    );
    assert_eq!(code, 2, "{out}");
}

/// Every subcommand that prints JSON, run to a success and to an error line, prints
/// sorted keys (`cli_raw` checks each line); the list below covers every subcommand of
/// `--help`.
#[tokio::test]
async fn every_subcommand_prints_its_json_keys_sorted() {
    let connection = support::fresh_connection().await;
    let host = support::emulator().host().to_owned();
    let project = connection.project().to_owned();
    let example = |words: &[&str]| -> Value {
        let (code, text, _) = cli_raw(&[&["example"], words].concat(), &json!(null));
        assert_eq!(code, 0, "{words:?}");
        serde_json::from_str(text.trim()).expect("an example object")
    };
    let ran = std::cell::RefCell::new(Vec::<String>::new());
    let done = |words: &str| ran.borrow_mut().push(words.to_owned());
    let run = |at: &str, words: &[&str], stdin: &Value| -> (i32, Value) {
        let global = ["--project", &project, "--emulator-host", &host, "--at", at];
        let (code, out, _) = cli(&[global.as_slice(), words].concat(), stdin);
        done(&words.join(" "));
        (code, out)
    };
    let t0 = "2030-01-01T00:00:00Z";
    let t1 = "2030-01-01T00:01:01Z";
    // One command's life without a plan, as docs/cli.md shows it.
    for words in [
        &["register"][..],
        &["acquire"],
        &["start"],
        &["complete"],
        &["status"],
    ] {
        let (code, out) = run(t0, words, &example(words));
        assert_eq!(code, 0, "{words:?}: {out}");
    }
    let (code, _) = run(t0, &["fail"], &example(&["fail"]));
    assert_eq!(code, 3, "terminal_conflict");
    // Another command through the send layer: permitted, ambiguous, pending once the
    // lease ran out, its absence not yet provable, then reconciled under a new lease.
    let other = |words: &[&str]| {
        let mut stdin = example(words);
        stdin["commandId"] = json!("7c9e6679-7425-40de-944b-e07fc1f90ae7");
        stdin
    };
    assert_eq!(run(t0, &["start"], &other(&["start"])).0, 0);
    assert_eq!(run(t0, &["send", "begin"], &other(&["send", "begin"])).0, 0);
    let mut ambiguous = other(&["send", "outcome"]);
    ambiguous["outcome"] = json!("ambiguous");
    ambiguous.as_object_mut().expect("object").remove("result");
    assert_eq!(run(t0, &["send", "outcome"], &ambiguous).0, 0);
    let global = ["--project", &project, "--emulator-host", &host, "--at", t1];
    let (code, listed, _) = cli_raw(&[global.as_slice(), &["pending"]].concat(), &json!(null));
    done("pending");
    assert_eq!((code, listed.lines().count()), (0, 1), "{listed}");
    let (code, out) = run(t1, &["send", "reconcile"], &other(&["send", "reconcile"]));
    assert_eq!((code, &out["error"]), (3, &json!("lease_expired")), "{out}");
    let mut taken = other(&["acquire"]);
    taken["leaseId"] = json!("0b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2d");
    assert_eq!(run(t1, &["acquire"], &taken).0, 0);
    let mut reconcile = other(&["send", "reconcile"]);
    reconcile["leaseId"] = taken["leaseId"].clone();
    reconcile["expectedFenceEpoch"] = json!(2);
    let (code, out) = run(t1, &["send", "reconcile"], &reconcile);
    assert_eq!(
        (code, &out["error"]),
        (3, &json!("absence_not_provable")),
        "{out}"
    );
    reconcile["evidence"] = json!("succeeded");
    reconcile["result"] = example(&["send", "outcome"])["result"].clone();
    assert_eq!(run(t1, &["send", "reconcile"], &reconcile).0, 0);
    // The ledger, offline and on the journal.
    let (code, _, _) = cli_raw(
        &["ledger", "fingerprint"],
        &example(&["ledger", "fingerprint"]),
    );
    assert_eq!(code, 0);
    done("ledger fingerprint");
    for words in [
        &["ledger", "accept"][..],
        &["ledger", "replay"],
        &["ledger", "link"],
    ] {
        run(t1, words, &example(words));
    }
    let (code, _, _) = cli_raw(&["identity"], &example(&["identity"]));
    assert_eq!(code, 0);
    done("identity");
    // The report, and the error lines of the other classes.
    let (code, _, _) = cli_raw(
        &["verify", "--project", &project, "--emulator-host", &host],
        &json!(null),
    );
    assert_eq!(code, 0);
    done("verify");
    let (code, _, _) = cli_raw(&["demo", "--project", "Not_A_Project"], &json!(null));
    assert_eq!(code, 2);
    done("demo");
    let (code, _, _) = cli_raw(
        &["verify", "--project", "p", "--emulator-host", "127.0.0.1:9"],
        &json!(null),
    );
    assert_eq!(code, 4);
    // Checked elsewhere: `emulator`'s ready line (harness.rs) and `rules check`'s
    // report (rules-tests/cli.rs); `dev-token`, `explain`, `example` and `completions`
    // print text.
    for words in [
        "emulator",
        "rules check",
        "dev-token",
        "explain",
        "example",
        "completions",
    ] {
        done(words);
    }
    let ran = ran.into_inner();
    let (_, help, _) = cli_raw(&["--help"], &json!(null));
    let commands = help
        .split("Commands:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("the subcommand list");
    let names = commands
        .lines()
        .filter_map(|line| line.strip_prefix("  "))
        .filter(|line| !line.starts_with(' '))
        .filter_map(|line| line.split_whitespace().next());
    for name in names {
        if name != "help" {
            assert!(
                ran.iter()
                    .any(|r| r == name || r.starts_with(&format!("{name} "))),
                "{name} is not covered"
            );
        }
    }
    for words in [
        "send begin",
        "send outcome",
        "send reconcile",
        "ledger link",
    ] {
        assert!(ran.iter().any(|r| r == words), "{words}");
    }
}

/// A fence or an attempt number out of its range (0, negative, one past the largest)
/// is `invalid_input` on its key for every operation that takes one, reported after a
/// connection error as before; the largest in range passes the parse and meets the
/// journal's own rule.
#[tokio::test]
async fn fences_and_attempts_out_of_range_are_invalid_input_on_their_keys() {
    let connection = support::fresh_connection().await;
    let host = support::emulator().host().to_owned();
    let project = connection.project().to_owned();
    let run = |words: &[&str], stdin: &Value| {
        let (code, out, _) = cli(
            &[&["--project", &project, "--emulator-host", &host], words].concat(),
            stdin,
        );
        (code, out)
    };
    let plan = json!({"provider":"stripe","account":"acct_CANARYcli","mode":"test",
        "apiVersion":"2024-06-20","operation":"charge","endpoint":"POST /v1/payment_intents",
        "parameters":{"amount":1250,"currency":"usd"},"keyRetentionSeconds":3600});
    let held =
        |fence: i64| input(json!({"leaseId": LEASE_ID, "expectedFenceEpoch": fence, "plan": plan}));
    let answer = |fence: i64, attempt: i64, key: &str, value: &str| {
        let mut stdin = held(fence);
        stdin["attempt"] = json!(attempt);
        stdin[key] = json!(value);
        stdin
    };
    let outcome = |fence, attempt| answer(fence, attempt, "outcome", "ambiguous");
    let evidence = |fence, attempt| answer(fence, attempt, "evidence", "not_found");
    let complete = |fence: i64| {
        input(json!({"leaseId": LEASE_ID, "expectedFenceEpoch": fence,
                     "terminalReferenceFingerprint": "ab".repeat(32)}))
    };
    let fail = |fence: i64| input(json!({"leaseId": LEASE_ID, "expectedFenceEpoch": fence}));
    assert_eq!(run(&["start"], &input(json!({"leaseId": LEASE_ID}))).0, 0);
    // The largest fence passes the parse: it is not the holder's (before a send, after
    // which `complete` and `fail` are refused for the send layer).
    let stale = refused(JournalError::StaleFence);
    let largest = 9_999_999_999;
    assert_eq!(run(&["complete"], &complete(largest)), stale);
    assert_eq!(run(&["fail"], &fail(largest)), stale);
    let (code, permit) = run(&["send", "begin"], &held(1));
    assert_eq!((code, &permit["attempt"]), (0, &json!(1)), "{permit}");
    let bad_attempt = (2, invalid("attempt", "invalid"));
    for attempt in [0, -1, 10_000] {
        assert_eq!(run(&["send", "outcome"], &outcome(1, attempt)), bad_attempt);
        assert_eq!(
            run(&["send", "reconcile"], &evidence(1, attempt)),
            bad_attempt
        );
    }
    let bad_fence = (2, invalid("expectedFenceEpoch", "invalid"));
    for fence in [0, -1, 10_000_000_000] {
        assert_eq!(run(&["send", "begin"], &held(fence)), bad_fence);
        assert_eq!(run(&["send", "outcome"], &outcome(fence, 1)), bad_fence);
        assert_eq!(run(&["send", "reconcile"], &evidence(fence, 1)), bad_fence);
        assert_eq!(run(&["complete"], &complete(fence)), bad_fence);
        assert_eq!(run(&["fail"], &fail(fence)), bad_fence);
        // Both out of range: the fence is named, as before.
        assert_eq!(run(&["send", "outcome"], &outcome(fence, 0)), bad_fence);
    }
    // The largest of each passes the parse: another attempt, another fence.
    let mismatch = refused(JournalError::AttemptMismatch);
    assert_eq!(run(&["send", "outcome"], &outcome(1, 9_999)), mismatch);
    assert_eq!(run(&["send", "begin"], &held(largest)), stale);
    assert_eq!(run(&["send", "outcome"], &outcome(largest, 1)), stale);
    // Out of range and no journal to reach: the connection error first, as before.
    let unreachable = ["--project", "p", "--emulator-host", "127.0.0.1:9"];
    for (words, stdin) in [
        (["send", "outcome"].as_slice(), outcome(0, 0)),
        (["fail"].as_slice(), fail(0)),
    ] {
        let (code, out, _) = cli(&[unreachable.as_slice(), words].concat(), &stdin);
        assert_eq!(code, 4, "{out}");
    }
}
