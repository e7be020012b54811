//! No secret leaves the journal: after a workload that touches every document type
//! and every outcome with canary values, no stored document, output, error or trace
//! line contains a raw lease id, command id, caller id, payload value or terminal
//! reference.

use super::support::{self, list};
use chrono::{DateTime, TimeDelta};
use command_journal::Journal;
use command_journal::sends::AttemptNumber;
use command_journal::time::ManualClock;
use command_journal::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
use serde_json::json;
use std::sync::{Arc, Mutex};

const CALLER: &str = "CANARYcallerZq81";
const COMMAND_ID: &str = "c0ffee00-ca4a-4e11-8a5e-5ecre7000000";
const COMMAND_ID_VALID: &str = "c0ffee00-ca4a-4e11-8a5e-0000deadbeef";
const LEASE_A: &str = "1ea5e000-aaaa-4aaa-8aaa-00000000000a";
const LEASE_B: &str = "1ea5e000-bbbb-4bbb-8bbb-00000000000b";
const PAYLOAD: &str = "CANARYpayloadVx42";
const REFERENCE: &str = "ca11ab1eca11ab1eca11ab1eca11ab1eca11ab1eca11ab1eca11ab1eca11ab1e";
const ACCOUNT: &str = "acct_CANARYaccountQ7";
const PARAMETER: &str = "CANARYparameterW3";

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn command(payload_value: &str) -> CommandInput {
    let payload = json!({"note": payload_value, "nested": {"deep": [payload_value]}});
    CommandInput::new(CommandRequest {
        environment: "emulator",
        caller_scope_kind: "guest",
        caller_id: CALLER,
        command_id: COMMAND_ID_VALID,
        command_type: "checkout",
        endpoint_schema_version: 7,
        payload: &payload,
    })
    .expect("valid")
}

#[tokio::test]
async fn no_raw_secret_reaches_documents_outputs_errors_or_traces() {
    assert!(
        COMMAND_ID.len() == 36,
        "the invalid canary id has the UUID shape"
    );
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_950_000_000, 0).expect("time"),
    ));
    let journal = Journal::new(support::fresh_connection().await).with_clock(clock.clone());
    let cmd = command(PAYLOAD);
    let a = LeaseId::parse(LEASE_A).expect("lease");
    let b = LeaseId::parse(LEASE_B).expect("lease");
    let reference = TerminalReferenceFingerprint::parse(REFERENCE).expect("reference");
    let mut seen = String::new();
    let mut record = |text: String| seen.push_str(&text);

    record(format!("{:?}", journal.register_command(&cmd).await));
    record(format!(
        "{:?}",
        journal.register_command(&command("CANARYother")).await
    ));
    record(format!("{:?}", journal.acquire_lease(&cmd, &a).await));
    record(format!("{:?}", journal.acquire_lease(&cmd, &b).await));
    record(format!(
        "{:?}",
        journal
            .complete_command(&cmd, &b, crate::support::fence_at(1), &reference)
            .await
    ));
    clock.advance(TimeDelta::seconds(60));
    record(format!(
        "{:?}",
        journal
            .complete_command(&cmd, &a, crate::support::fence_at(1), &reference)
            .await
    ));
    record(format!("{:?}", journal.acquire_lease(&cmd, &b).await));
    record(format!(
        "{:?}",
        journal
            .complete_command(&cmd, &b, crate::support::fence_at(2), &reference)
            .await
    ));
    record(format!(
        "{:?}",
        journal
            .fail_command(&cmd, &b, crate::support::fence_at(2))
            .await
    ));
    record(format!("{:?}", journal.status(&cmd).await));
    let output = journal.acquire_lease(&cmd, &a).await.expect("terminal");
    record(serde_json::to_string(&output).expect("json"));
    // start: on a new command (its own project), a conflicting payload, a finished one.
    let fresh = Journal::new(support::fresh_connection().await).with_clock(clock.clone());
    let started = fresh.start(&cmd, &a).await.expect("start");
    record(format!("{started:?}"));
    record(serde_json::to_string(&started).expect("json"));
    record(format!(
        "{:?}",
        journal.start(&command("CANARYother"), &a).await
    ));
    let output = journal.start(&cmd, &b).await.expect("terminal");
    record(format!("{output:?}"));
    record(serde_json::to_string(&output).expect("json"));
    // The send layer on the fresh command: a permit, an ambiguous outcome, the success,
    // their retries, a conflicting plan, and the status with its send state.
    let plan_of = |account: &str| {
        command_journal::ProviderPlan::new(command_journal::ProviderPlanRequest {
            provider: "stripe",
            account,
            mode: "test",
            api_version: "2024-06-20",
            operation: "charge",
            endpoint: "POST /v1/charges",
            parameters: &json!({"note": PARAMETER}),
            key_retention_seconds: 86_400,
        })
    };
    record(format!("{:?}", plan_of(ACCOUNT)));
    let plan = plan_of(ACCOUNT).expect("plan");
    let permit = fresh
        .begin_send(&cmd, &a, crate::support::fence_at(1), &plan)
        .await;
    record(format!("{permit:?}"));
    if let Ok(permit) = &permit {
        record(serde_json::to_string(permit).expect("json"));
    }
    use command_journal::ProviderAnswer;
    for outcome in [
        ProviderAnswer::Unknown,
        ProviderAnswer::SucceededWithReference(reference.clone()),
        ProviderAnswer::SucceededWithReference(reference.clone()),
    ] {
        let answer = fresh
            .record_send_outcome(
                &cmd,
                &a,
                crate::support::fence_at(1),
                &plan,
                AttemptNumber::FIRST,
                &outcome,
            )
            .await;
        record(format!("{outcome:?} {answer:?}"));
    }
    let other = plan_of("acct_CANARYother").expect("plan");
    record(format!(
        "{:?}",
        fresh
            .begin_send(&cmd, &a, crate::support::fence_at(1), &other)
            .await
    ));
    record(format!("{:?}", fresh.send_status(&cmd).await));
    let invalid = CommandInput::new(CommandRequest {
        environment: "emulator",
        caller_scope_kind: "guest",
        caller_id: CALLER,
        command_id: COMMAND_ID,
        command_type: "checkout",
        endpoint_schema_version: 7,
        payload: &json!({}),
    });
    record(format!("{invalid:?}"));
    if let Err(error) = &invalid {
        record(error.to_string());
    }

    // In transaction mode, a status dropped once its transactional read answered:
    // the reaper's hand-off and rollback are logged too.
    let locked = journal
        .clone()
        .with_concurrency(command_journal::Concurrency::Transaction);
    let dropped = super::dropped::drop_once_woken(locked.status(&cmd), 1).await;
    assert!(dropped.is_none(), "dropped");
    locked.reaped().await;

    let connection = journal.connection();
    let mut stored = String::new();
    for collection in ["checkoutRequests", "auditEvents"] {
        stored += &format!("{:?}", list(connection, "", collection).await);
    }
    let hash = cmd.identity().command_key_hash().to_string();
    let lifecycles = list(connection, &format!("checkoutRequests/{hash}"), "lifecycle").await;
    assert_eq!(lifecycles.len(), 1, "the sweep must see the lifecycle");
    stored += &format!("{lifecycles:?}");
    let sent = fresh.connection();
    for collection in ["checkoutRequests", "auditEvents"] {
        stored += &format!("{:?}", list(sent, "", collection).await);
    }
    let sends = list(sent, &format!("checkoutRequests/{hash}"), "providerSends").await;
    assert_eq!(
        sends.len(),
        2,
        "the sweep must see the plan and the send record"
    );
    stored += &format!("{sends:?}");
    let traces =
        String::from_utf8_lossy(&capture.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
    assert!(
        !traces.is_empty(),
        "the trace capture must have seen the workload"
    );
    for reaped in [
        "transaction handed to the reaper",
        "the reaper released a transaction",
    ] {
        assert!(traces.contains(reaped), "the traces must show: {reaped}");
    }

    for (what, text) in [
        ("stored documents", &stored),
        ("outputs and errors", &seen),
        ("traces", &traces),
    ] {
        for canary in [
            CALLER,
            COMMAND_ID,
            COMMAND_ID_VALID,
            LEASE_A,
            LEASE_B,
            PAYLOAD,
            "CANARYother",
            REFERENCE,
            ACCOUNT,
            PARAMETER,
        ] {
            assert!(!text.contains(canary), "{what} contain {canary}");
        }
    }
}
