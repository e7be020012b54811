//! The checkout service's one charge per command: 24 concurrent identical requests
//! make one POST, a 503 is re-sent with the same key once the lease expired, a holder
//! whose lease was taken over during its POST records nothing and answers
//! `lease_lost`, a decline is final, and a changed payload is refused without a write.

use super::stub_provider::Action;
use super::{
    Options, PAYLOAD_NOTE, PAYLOAD_SKU, command_id, commerce_documents, payload, send_documents,
    start_service, succeeded,
};
use chrono::TimeDelta;
use command_journal::time::ManualClock;
use command_journal::{Clock as _, Journal, LeaseId, LeaseOutput};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn checkout_24_concurrent_identical_requests_call_the_provider_once() {
    // The stub holds the one POST until the other 23 have been answered, so every one
    // of them meets the held lease: exactly 1 acquired and 23 busy.
    let service = Arc::new(
        start_service(Options {
            gated: true,
            ..Options::default()
        })
        .await,
    );
    let id = command_id(1);
    let (busy_tx, mut busy_rx) = tokio::sync::mpsc::unbounded_channel();
    let tasks: Vec<_> = (0..24)
        .map(|_| {
            let service = Arc::clone(&service);
            let id = id.clone();
            let busy_tx = busy_tx.clone();
            tokio::spawn(async move {
                let answer = service.checkout(&id, &payload()).await;
                if answer.status == 409 {
                    let _ = busy_tx.send(());
                }
                answer
            })
        })
        .collect();
    for _ in 0..23 {
        tokio::time::timeout(Duration::from_secs(60), busy_rx.recv())
            .await
            .expect("23 requests answered busy while the POST is held")
            .expect("a sender is alive");
    }
    service.stub.release(1);
    let mut bodies = Vec::new();
    for task in tasks {
        let answer = task.await.expect("task");
        match answer.status {
            200 => bodies.push(answer.text),
            409 => {
                assert_eq!(answer.body, json!({"status": "in_progress"}));
                assert_eq!(answer.retry_after, Some(2));
            }
            other => panic!("unexpected {other}: {:?}", answer.body),
        }
    }
    assert_eq!(bodies.len(), 1, "the request that charged answers 200");
    let charge = service.first_charge();
    assert_eq!(
        serde_json::from_str::<Value>(&bodies[0]).expect("JSON"),
        succeeded(&charge)
    );
    assert_eq!(
        service.stub.posts().len(),
        1,
        "the provider is called exactly once"
    );
    for _ in 0..5 {
        let answer = service.checkout(&id, &payload()).await;
        assert_eq!(answer.status, 200);
        assert_eq!(
            answer.text, bodies[0],
            "a replay is the first answer, byte for byte"
        );
    }
    let calls = service.stub.posts();
    assert_eq!(calls.len(), 1, "retries never call the provider");
    assert_eq!(
        calls[0].key.as_deref(),
        Some(service.expected_key(&id, &payload()).as_str())
    );
    assert_eq!(calls[0].body, payload(), "the payload is the charge body");
    assert!(service.stub.lookups().is_empty());
    // The commerce documents (root, lifecycle, audits: registered, leased,
    // succeeded), the send layer's (plan, send record, events: opened, succeeded) and
    // the stored charge: nothing from the 23 busy requests or the 5 replays.
    let mut expected = commerce_documents(3);
    expected.extend(send_documents(2));
    expected.push("checkoutRequests/H/results/current".to_owned());
    expected.push("providerKeys/H".to_owned());
    expected.sort();
    assert_eq!(service.document_kinds().await, expected);
    let start = |outcome| [("operation", "start"), ("outcome", outcome)];
    let ops = "command_journal_operations_total";
    assert_eq!(service.sample(ops, &start("acquired")).await, 1);
    assert_eq!(service.sample(ops, &start("busy")).await, 23);
    assert_eq!(service.sample(ops, &start("replayed")).await, 5);
    assert_eq!(service.sample(ops, &start("recovered")).await, 0);
    let requests = |status, outcome| {
        [
            ("route", "/v1/checkouts"),
            ("status", status),
            ("outcome", outcome),
        ]
    };
    let served = "checkout_service_requests_total";
    assert_eq!(
        service.sample(served, &requests("409", "lease_busy")).await,
        23
    );
    let status = Journal::new(service.connection.clone())
        .status(&service.command(&id, &payload()))
        .await
        .expect("status");
    assert_eq!(
        (status.state.as_str(), status.fence_epoch),
        ("succeeded", Some(crate::support::fence_at(1)))
    );
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_provider_503_then_takeover_after_expiry_reuses_the_key() {
    let service = start_service(Options {
        script: vec![Action::Status(503)],
        ..Options::default()
    })
    .await;
    let id = command_id(2);
    let first = service.checkout(&id, &payload()).await;
    assert_eq!(
        (first.status, &first.body),
        (503, &json!({"status": "retry"}))
    );
    assert_eq!(
        first.retry_after,
        Some(60),
        "retry once the lease has expired"
    );

    // The first call released its lease (an event or the job may settle the key at
    // once). Before the first request can no longer be in flight (its send + 60 s),
    // another attempt takes the lease over but is refused the re-send: retry, with
    // the time left, and no call to the provider.
    let early = service.checkout(&id, &payload()).await;
    assert_eq!(
        (early.status, &early.body, early.retry_after),
        (503, &json!({"status": "retry"}), Some(60))
    );
    assert_eq!(service.stub.posts().len(), 1);

    service.clock.advance(TimeDelta::seconds(61));
    let second = service.checkout(&id, &payload()).await;
    assert_eq!(
        (second.status, second.body),
        (200, succeeded(&service.first_charge()))
    );

    let calls = service.stub.posts();
    let expected = service.expected_key(&id, &payload());
    assert_eq!(calls.len(), 2, "the provider is called twice");
    assert!(
        calls
            .iter()
            .all(|c| c.key.as_deref() == Some(expected.as_str())),
        "same key"
    );
    let status = Journal::new(service.connection.clone())
        .status(&service.command(&id, &payload()))
        .await
        .expect("status");
    assert_eq!(
        (status.state.as_str(), status.fence_epoch),
        ("succeeded", Some(crate::support::fence_at(3)))
    );
    // The commerce documents (root, lifecycle, audits: registered, leased, taken
    // over twice, succeeded; the releases of fences 1 and 2), the send layer's (plan,
    // send record, events: opened, ambiguous, re-sent, succeeded) and the stored
    // charge.
    let mut expected = commerce_documents(5);
    expected
        .extend([1, 2].map(|fence: u32| format!("checkoutRequests/H/leaseReleases/{fence:010}")));
    expected.extend(send_documents(4));
    expected.push("checkoutRequests/H/results/current".to_owned());
    expected.push("providerKeys/H".to_owned());
    expected.sort();
    assert_eq!(service.document_kinds().await, expected);
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_holder_whose_lease_was_taken_over_during_its_post_records_nothing() {
    // The stub holds the POST; meanwhile another holder, on a clock 61 s ahead (past
    // the held request's lease), takes the lease over; then the charge is answered.
    let service = Arc::new(
        start_service(Options {
            gated: true,
            ..Options::default()
        })
        .await,
    );
    let id = command_id(5);
    let arrived = service.stub.arrived.notified();
    let held = {
        let service = Arc::clone(&service);
        let id = id.clone();
        tokio::spawn(async move { service.checkout(&id, &payload()).await })
    };
    tokio::time::timeout(Duration::from_secs(60), arrived)
        .await
        .expect("the checkout reaches the provider");
    let ahead = ManualClock::new(service.clock.now() + TimeDelta::seconds(61));
    let other = Journal::new(service.connection.clone()).with_clock(Arc::new(ahead));
    let lease = LeaseId::parse(&crate::support::uuid(0x51, 5)).expect("lease id");
    let command = service.command(&id, &payload());
    let taken = other
        .acquire_lease(&command, &lease)
        .await
        .expect("takeover");
    assert!(
        matches!(taken, LeaseOutput::Acquired { fence_epoch, .. } if fence_epoch == crate::support::fence_at(2)),
        "{taken:?}"
    );
    let before = service.documents().await;
    service.stub.release(1);
    let answer = held.await.expect("the held checkout");
    assert_eq!(
        (answer.status, answer.body),
        (409, json!({"status": "in_progress"}))
    );
    assert_eq!(service.stub.charges().len(), 1, "the provider charged once");
    // Nothing is recorded under the superseded fence: the journal is as the takeover
    // left it, the lease the other holder's.
    assert_eq!(service.documents().await, before);
    let status = other.status(&command).await.expect("status");
    assert_eq!(
        (status.state.as_str(), status.fence_epoch),
        ("leased", Some(crate::support::fence_at(2)))
    );
    // Its log line and metrics say why: the lease was lost after the provider was
    // called.
    let line = service
        .lines()
        .into_iter()
        .filter_map(|line| serde_json::from_str::<Value>(&line).ok())
        .find(|line| line["message"] == "checkout")
        .expect("the checkout's line");
    assert_eq!(
        (&line["outcome"], &line["providerCalled"]),
        (&json!("lease_lost"), &json!(true))
    );
    let served = [
        ("route", "/v1/checkouts"),
        ("status", "409"),
        ("outcome", "lease_lost"),
    ];
    assert_eq!(
        service
            .sample("checkout_service_requests_total", &served)
            .await,
        1
    );
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_decline_is_final_and_never_recharged() {
    let service = start_service(Options {
        default: Action::Decline,
        ..Options::default()
    })
    .await;
    let id = command_id(3);
    for _ in 0..3 {
        let answer = service.checkout(&id, &payload()).await;
        assert_eq!(
            (answer.status, answer.body),
            (402, json!({"status": "failed"}))
        );
    }
    assert_eq!(service.stub.posts().len(), 1, "a decline is never retried");
    let status = Journal::new(service.connection.clone())
        .status(&service.command(&id, &payload()))
        .await
        .expect("status");
    assert_eq!(status.state.as_str(), "failed_final");
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_changed_payload_is_422_and_writes_nothing() {
    let service = start_service(Options::default()).await;
    let id = command_id(4);
    assert_eq!(service.checkout(&id, &payload()).await.status, 200);
    let before = service.documents().await;
    let changed = json!({"sku": PAYLOAD_SKU, "note": PAYLOAD_NOTE, "amountCents": 9999});
    let answer = service.checkout(&id, &changed).await;
    assert_eq!(
        (answer.status, answer.body),
        (422, json!({"error": "command_conflict"}))
    );
    assert_eq!(service.documents().await, before, "nothing written");
    assert_eq!(service.stub.posts().len(), 1);
    service.assert_no_leak(&[]).await;
}
