//! The real binary on SIGTERM: the in-flight request finishes, no new connection is
//! accepted, and the process exits 0.

use super::stub_provider::{Action, Stub};
use super::{
    CHARGE_PREFIX, COMMAND_ID, PLAN_ENV, UID, assert_no_secrets, charge_envelope, claims,
    envelope_reference, payload, service_command, start_stub, support, unsigned,
};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, BufReader};

#[tokio::test]
async fn checkout_sigterm_lets_the_in_flight_request_finish_and_exits_0() {
    let emulator = support::emulator();
    let project = emulator.new_project_id();
    let (stub, stub_url) = start_stub(Stub::new(Action::Charge, CHARGE_PREFIX).gated()).await;
    let mut child = service_command(&[
        PLAN_ENV[0],
        PLAN_ENV[1],
        PLAN_ENV[2],
        PLAN_ENV[3],
        ("PORT", "0"),
        ("GOOGLE_CLOUD_PROJECT", &project),
        ("FIRESTORE_EMULATOR_HOST", emulator.host()),
        ("JOURNAL_ENVIRONMENT", "emulator"),
        ("PROVIDER_URL", &stub_url),
        ("FIREBASE_AUTH_EMULATOR_HOST", "127.0.0.1:9099"),
    ])
    .spawn()
    .expect("start the service");
    let pid = child.id().expect("pid");
    let (line_tx, mut line_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let stdout = child.stdout.take().expect("stdout");
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = line_tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let mut next_line = async || {
        let line = tokio::time::timeout(Duration::from_secs(60), line_rx.recv())
            .await
            .expect("a log line in time")
            .expect("the service is still writing");
        seen.push(line.clone());
        serde_json::from_str::<Value>(&line).expect("JSON line")
    };
    let port = loop {
        let line = next_line().await;
        if line["message"] == "listening" {
            break line["port"].as_u64().expect("port");
        }
    };
    let base = format!("http://127.0.0.1:{port}");
    let token = unsigned(&claims(&project, UID));
    let http = reqwest::Client::new();
    let request = http
        .post(format!("{base}/v1/checkouts"))
        .bearer_auth(&token)
        .json(&json!({"commandId": COMMAND_ID, "payload": payload()}));
    let in_flight = tokio::spawn(async move {
        let response = request.send().await.expect("in-flight request answered");
        (
            response.status().as_u16(),
            response.text().await.expect("body"),
        )
    });
    tokio::time::timeout(Duration::from_secs(60), stub.arrived.notified())
        .await
        .expect("the provider call arrives");

    let signalled = std::time::Instant::now();
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    let sent = unsafe { libc::kill(i32::try_from(pid).expect("pid fits"), libc::SIGTERM) };
    assert_eq!(sent, 0);
    loop {
        let line = next_line().await;
        if line["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("shutdown started"))
        {
            assert_eq!(line["signal"], "SIGTERM");
            break;
        }
    }
    // No new connections once shutdown started (the listener closes right after).
    let refused = async {
        loop {
            match tokio::net::TcpStream::connect(("127.0.0.1", u16::try_from(port).expect("port")))
                .await
            {
                Err(_) => return,
                Ok(stream) => drop(stream),
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), refused)
        .await
        .expect("the listener closes on SIGTERM");
    assert!(
        !in_flight.is_finished(),
        "the in-flight request is still held by the provider"
    );

    stub.release(1);
    let (status, body) = in_flight.await.expect("request task");
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            r#"{"status":"succeeded","charge":{"id":"ch_CANARYreceipt1","status":"succeeded"}}"#
        ),
        "the body is the status, then the charge's canonical envelope"
    );
    let exit = tokio::time::timeout(Duration::from_secs(15), child.wait())
        .await
        .expect("the service exits after draining")
        .expect("wait");
    assert_eq!(exit.code(), Some(0));
    assert!(
        signalled.elapsed() < Duration::from_secs(10),
        "drained within 10 s"
    );
    while let Ok(line) = line_rx.try_recv() {
        seen.push(line);
    }
    while let Some(line) = line_rx.recv().await {
        seen.push(line);
    }
    assert!(
        seen.iter().any(|l| l.contains("shutdown complete")),
        "{seen:?}"
    );
    assert_eq!(stub.posts().len(), 1);
    let references: Vec<String> = stub
        .charges()
        .iter()
        .map(|charge| envelope_reference(&charge_envelope(&charge.object)))
        .collect();
    assert_no_secrets(&seen, &[body], &[&token], &references);
}
