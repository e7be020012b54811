//! What a request may carry and what its answer and log lines say: shape errors
//! answered before the journal is touched, `GET /healthz`, and the canary scan over
//! every log line and body.

use super::stub_provider::Action;
use super::{COMMAND_ID, Options, UID, command_id, payload, start_service};
use chrono::TimeDelta;
use serde_json::{Value, json};

#[tokio::test]
async fn checkout_request_shape_errors_and_healthz() {
    let service = start_service(Options::default()).await;
    let token = service.token(UID);
    let url = format!("{}/v1/checkouts", service.url);

    let text = service
        .send(
            service
                .http
                .post(&url)
                .bearer_auth(&token)
                .header("content-type", "text/plain")
                .body("{}"),
        )
        .await;
    assert_eq!(text.status, 415);

    let big = json!({"commandId": command_id(7), "payload": {"blob": "x".repeat(70 * 1024)}});
    let too_large = service.send(service.post(Some(&token), &big)).await;
    assert_eq!(
        (too_large.status, too_large.body),
        (413, json!({"error": "payload_too_large"}))
    );

    let cases = [
        (
            json!({"commandId": "not-a-uuid", "payload": payload()}),
            "commandId",
        ),
        (json!({"commandId": 7, "payload": payload()}), "commandId"),
        (json!({"commandId": command_id(7)}), "payload"),
        (
            json!({"commandId": command_id(7), "payload": ["CANARYarray"]}),
            "payload",
        ),
        (
            json!({"commandId": command_id(7), "payload": payload(), "extra": 1}),
            "body",
        ),
        (json!(["CANARYnotAnObject"]), "body"),
    ];
    for (body, field) in cases {
        let answer = service.send(service.post(Some(&token), &body)).await;
        assert_eq!(
            (answer.status, answer.body),
            (400, json!({"error": "invalid_input", "field": field}))
        );
    }
    let broken = service
        .send(
            service
                .http
                .post(&url)
                .bearer_auth(&token)
                .header("content-type", "application/json; charset=utf-8")
                .body("{\"commandId\": \"CANARYbroken"),
        )
        .await;
    assert_eq!(broken.status, 400);
    assert!(service.documents().await.is_empty());
    assert!(service.stub.posts().is_empty());

    let health = service
        .send(service.http.get(format!("{}/healthz", service.url)))
        .await;
    assert_eq!((health.status, health.body), (200, json!({"status": "ok"})));
    service.assert_no_leak(&[&token]).await;
}

#[tokio::test]
async fn checkout_canary_scan_over_every_log_line_and_body() {
    let service = start_service(Options {
        script: vec![Action::Status(503), Action::Decline],
        ..Options::default()
    })
    .await;
    let trace_id = "0af7651916cd43dd8448eb211c80319c";
    let token = service.token(UID);
    let traced = |body: &Value| {
        service
            .post(Some(&token), body)
            .header("x-cloud-trace-context", format!("{trace_id}/12345;o=1"))
    };
    let body = json!({"commandId": COMMAND_ID, "payload": payload()});
    // 503 (provider down), 503 (its request may still be in flight: no re-send
    // yet), then once it cannot be, 402 (declined), then 402.
    assert_eq!(service.send(traced(&body)).await.status, 503);
    assert_eq!(service.send(traced(&body)).await.status, 503);
    service.clock.advance(TimeDelta::seconds(61));
    assert_eq!(service.send(traced(&body)).await.status, 402);
    assert_eq!(service.send(traced(&body)).await.status, 402);
    let other = json!({"commandId": command_id(8), "payload": payload()});
    assert_eq!(service.send(traced(&other)).await.status, 200);
    let changed = json!({"commandId": COMMAND_ID, "payload": {"sku": "CANARYchanged"}});
    assert_eq!(service.send(traced(&changed)).await.status, 422);
    let _ = service.send(service.post(None, &body)).await;

    let lines = service.lines();
    let checkout_lines: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
        .filter(|l| l["message"] == "checkout")
        .collect();
    assert_eq!(checkout_lines.len(), 7, "one line per request");
    let resource = format!("projects/{}/traces/{trace_id}", service.project);
    for line in &checkout_lines[..6] {
        assert_eq!(line["logging.googleapis.com/trace"], json!(resource));
        assert_eq!(line["logging.googleapis.com/spanId"], json!("12345"));
        assert!(line["httpRequest"]["status"].is_u64());
    }
    assert!(
        checkout_lines[6]
            .get("logging.googleapis.com/trace")
            .is_none()
    );
    assert_eq!(
        checkout_lines
            .iter()
            .map(|l| l["severity"].as_str().unwrap_or(""))
            .collect::<Vec<_>>(),
        ["WARNING", "WARNING", "INFO", "INFO", "INFO", "INFO", "INFO"]
    );
    service.assert_no_leak(&["CANARYchanged", &token]).await;
}
