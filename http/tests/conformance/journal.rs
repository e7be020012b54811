//! The journal's own cases through the layer: a crashed handler taken over, a lost
//! response, a replay long after the lease expired, an answer the layer never stores,
//! and a response too large to store.

use super::support::{Act, Counts, leaping_service, note_call, service};
use http::StatusCode;

const KEY: &str = "\"order-2026-0001\"";
const BODY: &str = r#"{"text": "pay rent"}"#;

/// A note command's root and lifecycle, its registration and lease events: leased, not
/// ended.
const LEASED: Counts = Counts {
    roots: 1,
    lifecycles: 1,
    results: 0,
    sends: 0,
    events: 2,
};

/// After a takeover, one more lease event.
const TAKEN_OVER: Counts = Counts {
    events: 3,
    ..LEASED
};

#[tokio::test]
async fn a_crashed_handler_is_taken_over_once_its_lease_expires() {
    let service = service(false).await;
    service.script.acts([Act::Crash]);
    let crashed = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(crashed.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(crashed.problem().as_deref(), Some("internal"));
    assert_eq!(service.counts().await, LEASED);
    // Within the crashed request's lease: in progress, nothing runs.
    let busy = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(busy.problem().as_deref(), Some("in_progress"));
    assert_eq!(service.script.runs(), 1);
    // Past it: the retry takes the command over and runs the handler; its answer is a
    // first answer, stored, and replayed after.
    service.advance(61);
    let taken = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(taken.status, StatusCode::CREATED);
    assert!(!taken.replayed());
    assert_eq!(service.script.runs(), 2);
    let replay = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(replay.unmarked(), taken.unmarked());
    assert!(replay.replayed());
    assert_eq!(
        service.counts().await,
        Counts {
            results: 1,
            events: 4,
            ..LEASED
        }
    );
    service.assert_verified().await;
}

#[tokio::test]
async fn a_lost_response_is_answered_again_from_the_journal() {
    let service = service(false).await;
    // The first answer never reaches the client.
    let lost = service.send(&note_call("alice", KEY, BODY)).await;
    let retry = service.send(&note_call("alice", KEY, BODY)).await;
    assert!(retry.replayed());
    assert_eq!(retry.unmarked(), lost.unmarked());
    assert_eq!(service.script.runs(), 1);
}

#[tokio::test]
async fn a_replay_after_the_handlers_lease_expired_is_the_stored_answer() {
    let service = service(false).await;
    let first = service.send(&note_call("alice", KEY, BODY)).await;
    // A day later, far past the lease: still the stored answer, and nothing runs.
    service.advance(86_400);
    let replay = service.send(&note_call("alice", KEY, BODY)).await;
    assert!(replay.replayed());
    assert_eq!(replay.unmarked(), first.unmarked());
    assert_eq!(service.script.runs(), 1);
    assert_eq!(service.counts().await.results, 1);
}

#[tokio::test]
async fn a_server_error_is_never_stored_and_runs_again_after_the_lease() {
    // The draft's open issue #41: a 5xx says the handler's outcome is unknown; it is
    // answered as given, with the time after which a retry runs it again.
    let service = service(false).await;
    service.script.acts([Act::Status(503), Act::Status(429)]);
    let failed = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(failed.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(!failed.replayed());
    assert_eq!(failed.headers["retry-after"], "60");
    assert_eq!(service.counts().await, LEASED);
    let busy = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(busy.problem().as_deref(), Some("in_progress"));
    service.advance(61);
    // A 429 asks the client to come back: not stored either.
    let limited = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(service.counts().await, TAKEN_OVER);
    service.advance(61);
    let created = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert!(!created.replayed());
    assert_eq!(service.script.runs(), 3);
}

#[tokio::test]
async fn a_response_too_large_to_store_is_refused_with_nothing_written() {
    let service = service(false).await;
    service.script.acts([Act::Huge]);
    let answer = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(answer.problem().as_deref(), Some("response_unstorable"));
    // The lease only: no result, no success.
    assert_eq!(service.counts().await, LEASED);
    service.assert_verified().await;
}

#[tokio::test]
async fn a_handler_past_its_deadline_is_cut_and_nothing_is_stored() {
    // The journal's clock reads 55 s later after the start: 5 s of lease are left,
    // less than the 10 s margin, so the handler (held at its gate) is cut at once.
    let service = leaping_service(55).await;
    service.script.acts([Act::Gated]);
    let answer = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.problem().as_deref(), Some("handler_timeout"));
    assert_eq!(answer.headers["retry-after"], "5");
    assert_eq!(service.counts().await, LEASED);
}

#[tokio::test]
async fn a_response_body_still_streaming_at_the_deadline_is_cut_and_nothing_is_stored() {
    // The handler answered its head at once, but its body stalls: the deadline covers
    // the body too, or the request would wait for ever and keep its work running.
    let service = leaping_service(55).await;
    service.script.acts([Act::StalledBody]);
    let call = note_call("alice", KEY, BODY);
    // A guard against a hang, not a synchronisation: the cut comes at once.
    let answer = tokio::time::timeout(std::time::Duration::from_secs(30), service.send(&call))
        .await
        .expect("the layer never waits past the handler's deadline");
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.problem().as_deref(), Some("handler_timeout"));
    assert_eq!(answer.headers["retry-after"], "5");
    assert_eq!(service.counts().await, LEASED);
}

#[tokio::test]
async fn a_stale_handler_finishing_after_a_takeover_never_overwrites_the_answer() {
    // The first request's handler outlives its lease (the journal's clock moves on
    // while it is held at its gate); a retry takes the command over and its answer is
    // stored. The stale handler's answer then comes back: its completion is refused
    // by the fence, it gets 409, and every replay is the taker's answer.
    let service = std::sync::Arc::new(service(false).await);
    service.script.acts([Act::Gated, Act::Status(202)]);
    let stale = {
        let service = service.clone();
        tokio::spawn(async move { service.send(&note_call("alice", KEY, BODY)).await })
    };
    service.script.started.notified().await;
    service.advance(61);
    let taker = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(taker.status, StatusCode::ACCEPTED);
    assert!(!taker.replayed());
    service.script.release.notify_one();
    let stale = stale.await.expect("the stale request");
    assert_eq!(stale.status, StatusCode::CONFLICT);
    assert_eq!(stale.problem().as_deref(), Some("in_progress"));
    let replay = service.send(&note_call("alice", KEY, BODY)).await;
    assert!(replay.replayed());
    assert_eq!(replay.unmarked(), taker.unmarked());
    assert_eq!(service.script.runs(), 2);
    // Registration, two leases, one success; one stored response.
    assert_eq!(
        service.counts().await,
        Counts {
            results: 1,
            events: 4,
            ..LEASED
        }
    );
    service.assert_verified().await;
}

#[tokio::test]
async fn a_client_gone_mid_handler_leaves_the_work_to_finish_and_store_its_answer() {
    // The client's future is dropped while its handler runs: the work goes on in its
    // own task, the answer is stored, and the retry gets it. Meanwhile a retry is 409.
    let service = std::sync::Arc::new(service(false).await);
    service.script.acts([Act::Gated]);
    let gone = {
        let service = service.clone();
        tokio::spawn(async move { service.send(&note_call("alice", KEY, BODY)).await })
    };
    service.script.started.notified().await;
    gone.abort();
    assert!(gone.await.is_err_and(|error| error.is_cancelled()));
    let busy = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(busy.problem().as_deref(), Some("in_progress"));
    service.script.release.notify_one();
    // The stored answer appears once the detached work commits: watched, not slept on.
    let mut reads = 0;
    while service.counts().await.results == 0 {
        reads += 1;
        assert!(reads < 1_000, "the detached work never stored its answer");
        tokio::task::yield_now().await;
    }
    let retry = service.send(&note_call("alice", KEY, BODY)).await;
    assert_eq!(retry.status, StatusCode::CREATED);
    assert!(retry.replayed());
    assert_eq!(service.script.runs(), 1);
    assert_eq!(
        service.counts().await,
        Counts {
            results: 1,
            events: 3,
            ..LEASED
        }
    );
    service.assert_verified().await;
}
