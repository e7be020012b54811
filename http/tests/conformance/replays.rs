//! The replay counter, by handler kind, through the metrics facade.

use super::support::{charged, note_call, service};
use command_journal::ProviderAnswer;
use command_journal_http::replay::REPLAYS_TOTAL;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

/// The replays counted so far, by `handler` label.
fn replays(snapshotter: &metrics_util::debugging::Snapshotter) -> Vec<(String, u64)> {
    let mut counted: Vec<(String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == REPLAYS_TOTAL)
        .filter_map(|(key, _, _, value)| {
            let handler = key.key().labels().find(|l| l.key() == "handler")?;
            match value {
                DebugValue::Counter(n) => Some((handler.value().to_owned(), n)),
                _ => None,
            }
        })
        .collect();
    counted.sort();
    counted
}

#[tokio::test]
async fn every_replay_and_only_a_replay_is_counted() {
    // A current-thread runtime: the layer's tasks record on this thread's recorder.
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let service = service(false).await;
    let key = "\"replay-counted\"";
    service.send(&note_call("alice", key, "{}")).await;
    assert_eq!(replays(&snapshotter), []);
    service.send(&note_call("alice", key, "{}")).await;
    service.send(&note_call("alice", key, "{}")).await;
    service
        .script
        .answers([ProviderAnswer::Succeeded(charged("ch_9"))]);
    let charge = super::support::Call {
        path: "/v1/charges",
        ..note_call("alice", key, r#"{"amount": 500, "currency": "eur"}"#)
    };
    service.send(&charge).await;
    service.send(&charge).await;
    assert_eq!(
        replays(&snapshotter),
        [
            ("provider".to_owned(), 1),
            ("stored_response".to_owned(), 2)
        ]
    );
}
