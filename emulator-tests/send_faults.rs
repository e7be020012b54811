//! The send layer through the fault proxy (every send operation's commit applied but
//! its response lost, converging on the retry with no extra document or event), and
//! through the `command-journal` binary with the clock moved past the cutoff.

use super::proxy::{Fault, Proxy, Rpc};
use super::send_randomized::assert_verified;
use super::support::{self, command, list};
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::ProviderAnswer;
use command_journal::sends::{AttemptNumber, BeginSendOutput};
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, Concurrency, Connection, Journal, JournalError, LeaseId, LeaseOutput,
    ProviderPlan, ProviderPlanRequest, Target, TerminalOutput, TerminalReferenceFingerprint,
};
use gcloud_sdk::google::firestore::v1::Document;
use serde_json::{Value, json};
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::sync::Arc;

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(7, n)).expect("lease id")
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stripe",
        account: "acct_fault",
        mode: "live",
        api_version: "2024-06-20",
        operation: "charge",
        endpoint: "POST /v1/payment_intents",
        parameters: &json!({"amount": 990}),
        key_retention_seconds: 3_600,
    })
    .expect("valid plan")
}

fn start() -> DateTime<Utc> {
    DateTime::from_timestamp(1_970_000_000, 500_000_000).expect("time")
}

/// Every document of the command: its send documents, lifecycle and audit events,
/// sorted by name, update times included.
async fn documents(direct: &Connection, cmd: &CommandInput) -> Vec<Document> {
    let h = cmd.identity().command_key_hash().to_string();
    let root = format!("checkoutRequests/{h}");
    let mut docs = list(direct, &root, "providerSends").await;
    docs.extend(list(direct, &root, "lifecycle").await);
    docs.extend(
        list(direct, "", "auditEvents")
            .await
            .into_iter()
            .filter(|d| d.name.contains(&h)),
    );
    docs.sort_by(|a, b| a.name.cmp(&b.name));
    docs
}

/// One step of the send history, run through the proxy.
#[derive(Debug, Clone, Copy)]
enum Step {
    Open,
    Ambiguous,
    Resend,
    Absent,
    OpenSecond,
    Succeed,
}

async fn run(journal: &Journal, cmd: &CommandInput, step: Step) -> Result<String, JournalError> {
    let reference = TerminalReferenceFingerprint::parse(&"cd".repeat(32)).expect("reference");
    let text = |v: Value| v.to_string();
    Ok(match step {
        Step::Open => text(json!(
            journal
                .begin_send(cmd, &lease(0), crate::support::fence_at(1), &plan())
                .await?
        )),
        Step::Ambiguous => text(json!(
            journal
                .record_send_outcome(
                    cmd,
                    &lease(0),
                    crate::support::fence_at(1),
                    &plan(),
                    AttemptNumber::FIRST,
                    &ProviderAnswer::Unknown
                )
                .await?
        )),
        Step::Resend => text(json!(
            journal
                .begin_send(cmd, &lease(1), crate::support::fence_at(2), &plan())
                .await?
        )),
        Step::Absent => text(json!(
            journal
                .reconcile_send(
                    cmd,
                    &lease(1),
                    crate::support::fence_at(3),
                    &plan(),
                    AttemptNumber::FIRST,
                    &ProviderAnswer::NotFound
                )
                .await?
        )),
        Step::OpenSecond => text(json!(
            journal
                .begin_send(cmd, &lease(1), crate::support::fence_at(3), &plan())
                .await?
        )),
        Step::Succeed => text(json!(
            journal
                .record_send_outcome(
                    cmd,
                    &lease(1),
                    crate::support::fence_at(3),
                    &plan(),
                    crate::support::attempt_at(2),
                    &ProviderAnswer::SucceededWithReference(reference)
                )
                .await?
        )),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_commit_response_of_every_send_operation_converges_on_retry() {
    for (round, mode) in [Concurrency::Preconditions, Concurrency::Transaction]
        .into_iter()
        .enumerate()
    {
        let direct = support::fresh_connection().await;
        let mut proxy = Proxy::start(support::emulator().host()).await;
        let through = Connection::connect(direct.project(), Target::Emulator(proxy.host()))
            .await
            .expect("connect through the proxy");
        let clock = Arc::new(ManualClock::new(start()));
        let journal = Journal::new(through)
            .with_clock(clock.clone())
            .with_concurrency(mode);
        let plain = Journal::new(direct.clone())
            .with_clock(clock.clone())
            .with_concurrency(mode);
        let cmd = command(7000 + round as u64, json!({"mode": round}));
        plain.register_command(&cmd).await.expect("register");
        plain.acquire_lease(&cmd, &lease(0)).await.expect("acquire");
        for step in [
            Step::Open,
            Step::Ambiguous,
            Step::Resend,
            Step::Absent,
            Step::OpenSecond,
            Step::Succeed,
        ] {
            if matches!(step, Step::Absent) {
                // Provable: the re-send's lease and the settle window (300 s) are over.
                clock.advance(TimeDelta::seconds(361));
                let taken = plain
                    .acquire_lease(&cmd, &lease(1))
                    .await
                    .expect("takeover");
                assert!(
                    matches!(taken, LeaseOutput::Acquired { fence_epoch: f, .. } if f.get() == 3)
                );
            }
            if matches!(step, Step::Resend) {
                clock.advance(TimeDelta::seconds(61));
                let taken = plain
                    .acquire_lease(&cmd, &lease(1))
                    .await
                    .expect("takeover");
                assert!(
                    matches!(taken, LeaseOutput::Acquired { fence_epoch: f, .. } if f.get() == 2)
                );
            }
            clock.advance(TimeDelta::milliseconds(1));
            let before = documents(&direct, &cmd).await;
            proxy.arm(Rpc::Commit, Fault::LoseResponse);
            let answer = run(&journal, &cmd, step).await;
            assert!(proxy.fired() >= 1, "{mode:?} {step:?}: the fault fired");
            let after = documents(&direct, &cmd).await;
            let added = after.len() - before.len();
            // The retry again, at the same clock: the same answer, nothing written.
            let again = run(&journal, &cmd, step).await;
            assert_eq!(answer, again, "{mode:?} {step:?}");
            assert_eq!(documents(&direct, &cmd).await, after, "{mode:?} {step:?}");
            let expected_added = match step {
                // plan + current + opened event (the lifecycle is rewritten in place)
                Step::Open => 3,
                // lifecycle + command_succeeded replaced/created: one B2B event, one send event
                Step::Succeed => 2,
                _ => 1,
            };
            assert_eq!(added, expected_added, "{mode:?} {step:?}: {answer:?}");
            let answer = answer.expect("answered");
            match step {
                Step::Open | Step::Resend | Step::OpenSecond => {
                    assert!(answer.contains("send_permitted"), "{answer}");
                }
                Step::Ambiguous => assert!(answer.contains("send_ambiguous"), "{answer}"),
                Step::Absent => assert!(answer.contains("send_absent"), "{answer}"),
                Step::Succeed => assert!(answer.contains("terminal_succeeded"), "{answer}"),
            }
        }
        assert_eq!(
            plain
                .begin_send(&cmd, &lease(1), crate::support::fence_at(3), &plan())
                .await,
            Ok(BeginSendOutput::Terminal(TerminalOutput::Succeeded))
        );
        assert_eq!(
            plain
                .reconcile_send(
                    &cmd,
                    &lease(1),
                    crate::support::fence_at(3),
                    &plan(),
                    crate::support::attempt_at(2),
                    &ProviderAnswer::Declined
                )
                .await,
            Err(JournalError::TerminalConflict)
        );
        assert_eq!(
            plain
                .record_send_outcome(
                    &cmd,
                    &lease(1),
                    crate::support::fence_at(3),
                    &plan(),
                    AttemptNumber::FIRST,
                    &ProviderAnswer::Unknown
                )
                .await,
            Err(JournalError::AttemptMismatch)
        );
        assert_verified(&direct).await;
        proxy.close().await;
    }
}

const CLI: &str = env!("CARGO_BIN_EXE_command-journal");

/// What the CLI answers a refusal: exit 3, the code and its fixed message.
fn refused(error: JournalError) -> (i32, Value) {
    (
        3,
        json!({"error": error.code(), "message": error.to_string()}),
    )
}

fn cli(args: &[&str], stdin: &Value) -> (i32, Value) {
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
    assert_eq!(stdout.lines().count(), 1, "exactly one line: {stdout:?}");
    let line = serde_json::from_str(stdout.trim()).expect("JSON line");
    (output.status.code().unwrap_or(-1), line)
}

#[tokio::test]
async fn through_the_cli_the_cutoff_stops_every_resend_until_reconciliation() {
    let connection = support::fresh_connection().await;
    let host = support::emulator().host().to_owned();
    let project = connection.project().to_owned();
    let command = json!({
        "environment": "emulator", "callerScopeKind": "member", "callerId": "CANARYcli_send",
        "commandId": "3f2504e0-4f89-41d3-9a0c-0305e82c3301", "commandType": "checkout",
        "endpointSchemaVersion": 1, "payload": {"sku": "CANARYsku_cli"},
    });
    let with = |extra: Value| {
        let mut v = command.clone();
        if let (Some(base), Value::Object(extra)) = (v.as_object_mut(), extra) {
            base.extend(extra);
        }
        v
    };
    let lease0 = "9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2d";
    let lease1 = "9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2e";
    let run = |at: &str, words: &[&str], stdin: Value| {
        let mut args = vec!["--project", &project, "--emulator-host", &host, "--at", at];
        args.extend_from_slice(words);
        cli(&args, &stdin)
    };
    let plan = json!({"provider":"stripe","account":"acct_CANARYcli","mode":"test",
        "apiVersion":"2024-06-20","operation":"charge","endpoint":"POST /v1/payment_intents",
        "parameters":{"amount":1250},"keyRetentionSeconds":86400});
    let t0 = "2030-01-01T00:00:00Z";
    assert_eq!(run(t0, &["start"], with(json!({"leaseId": lease0}))).0, 0);
    let held = json!({"leaseId": lease0, "expectedFenceEpoch": 1});
    let begin =
        |l: &str, f: i64| with(json!({"leaseId": l, "expectedFenceEpoch": f, "plan": plan}));
    let (code, out) = run(t0, &["send", "begin"], begin(lease0, 1));
    assert_eq!(code, 0, "{out}");
    let key = out["providerIdempotencyKey"]
        .as_str()
        .expect("key")
        .to_owned();
    // 2030-01-01T00:00:00Z is 1893456000; the cutoff is 18 h later.
    assert_eq!(
        out,
        json!({"journalSchemaVersion":1,"outcome":"send_permitted","attempt":1,"resend":false,
            "providerIdempotencyKey": key,"sendCutoffAt":{"seconds":1_893_456_000_i64 + 64_800,"nanoseconds":0},
            "leaseExpiresAt":{"seconds":1_893_456_060_i64,"nanoseconds":0}})
    );
    let mut ambiguous = with(held.clone());
    ambiguous["plan"] = plan.clone();
    ambiguous["attempt"] = json!(1);
    ambiguous["outcome"] = json!("ambiguous");
    assert_eq!(
        run(t0, &["send", "outcome"], ambiguous),
        (
            0,
            json!({"journalSchemaVersion":1,"outcome":"send_ambiguous","attempt":1})
        )
    );
    let mut complete = with(held.clone());
    complete["terminalReferenceFingerprint"] = json!("ab".repeat(32));
    assert_eq!(
        run(t0, &["complete"], complete),
        refused(JournalError::SendOutcomeRequired)
    );
    // Just before the cutoff a new holder re-sends the same attempt with the same key.
    let before = "2030-01-01T17:59:00Z";
    let (code, out) = run(before, &["acquire"], with(json!({"leaseId": lease1})));
    assert_eq!((code, &out["fenceEpoch"]), (0, &json!(2)));
    let (code, out) = run(
        "2030-01-01T17:59:59.999999Z",
        &["send", "begin"],
        begin(lease1, 2),
    );
    assert_eq!(
        (code, &out["resend"], &out["providerIdempotencyKey"]),
        (0, &json!(true), &json!(key))
    );
    // At the cutoff: nobody may send; status says reconciliation is needed.
    let at_cutoff = "2030-01-01T18:00:00Z";
    assert_eq!(
        run(at_cutoff, &["send", "begin"], begin(lease1, 2)),
        refused(JournalError::SendCutoffPassed)
    );
    let (code, status) = run(at_cutoff, &["status"], command.clone());
    assert_eq!(code, 0);
    // The re-send at 17:59:59.999999 may be in flight until its lease ends, and the
    // lookup may lag by the settle window (300 s): an absence is provable from 18:06.
    let provable = 1_893_456_000_i64 + 64_800 + 359;
    assert_eq!(
        status["send"],
        json!({"planFingerprint": status["send"]["planFingerprint"],"attempt":1,"state":"sending",
            "sendCutoffAt":{"seconds":1_893_456_000_i64 + 64_800,"nanoseconds":0},"needsReconciliation":true,
            "absenceProvableFrom":{"seconds":provable,"nanoseconds":999_999_000}})
    );
    assert_eq!(
        status["send"]["planFingerprint"].as_str().map(str::len),
        Some(64)
    );
    // A reconciler (the holder after a takeover) records absence once it is provable;
    // only then attempt 2.
    let lease2 = "9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2f";
    let early = "2030-01-01T18:01:00Z";
    assert_eq!(
        run(early, &["acquire"], with(json!({"leaseId": lease2}))).0,
        0
    );
    let not_found = |fence: i64| {
        let mut reconcile =
            with(json!({"leaseId": lease2, "expectedFenceEpoch": fence, "attempt": 1}));
        reconcile["plan"] = plan.clone();
        reconcile["evidence"] = json!("not_found");
        reconcile
    };
    let (code, out) = run(early, &["send", "reconcile"], not_found(3));
    assert_eq!(code, 3, "{out}");
    assert_eq!(out["error"], json!("absence_not_provable"));
    assert_eq!(
        out["provableFrom"],
        json!({"seconds":provable,"nanoseconds":999_999_000})
    );
    let later = "2030-01-01T23:00:00Z";
    assert_eq!(
        run(later, &["acquire"], with(json!({"leaseId": lease2}))).0,
        0
    );
    assert_eq!(
        run(later, &["send", "reconcile"], not_found(4)),
        (
            0,
            json!({"journalSchemaVersion":1,"outcome":"send_absent","attempt":1})
        )
    );
    let (code, out) = run(later, &["send", "begin"], begin(lease2, 4));
    assert_eq!(
        (code, &out["attempt"], &out["resend"]),
        (0, &json!(2), &json!(false))
    );
    assert_ne!(out["providerIdempotencyKey"], json!(key));
    let mut other = begin(lease2, 4);
    other["plan"]["parameters"] = json!({"amount": 1251});
    assert_eq!(
        run(later, &["send", "begin"], other),
        refused(JournalError::PlanConflict)
    );
    let mut wrong = with(json!({"leaseId": lease2, "expectedFenceEpoch": 4, "attempt": 1}));
    wrong["plan"] = plan.clone();
    wrong["outcome"] = json!("declined");
    assert_eq!(
        run(later, &["send", "outcome"], wrong),
        refused(JournalError::AttemptMismatch)
    );
    let mut done = with(json!({"leaseId": lease2, "expectedFenceEpoch": 4, "attempt": 2}));
    done["plan"] = plan.clone();
    done["outcome"] = json!("succeeded");
    done["terminalReferenceFingerprint"] = json!("ef".repeat(32));
    let (code, out) = run(later, &["send", "outcome"], done.clone());
    assert_eq!(
        (code, out),
        (
            0,
            json!({"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"terminal_succeeded","state":"succeeded"})
        )
    );
    assert_eq!(
        run(later, &["send", "outcome"], done).0,
        0,
        "an exact retry"
    );
    // Invalid input names the field, never the value.
    let mut bad = begin(lease2, 4);
    bad["plan"]["endpoint"] = json!("POST /v1/CANARY?x=1");
    let (code, out) = run(later, &["send", "begin"], bad);
    assert_eq!((code, &out["field"]), (2, &json!("endpoint")));
    assert!(!out.to_string().contains("CANARY"));
    for doc in list(&connection, "", "auditEvents").await {
        assert!(!format!("{doc:?}").contains("CANARY"));
    }
    assert_verified(&connection).await;
}
