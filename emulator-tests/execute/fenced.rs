//! No write under a superseded fence, on any path: a holder whose lease another
//! holder took over (with a clock that runs ahead, so the takeover comes while the
//! first holder still thinks its lease runs) writes nothing when its provider
//! answers, whether its outcome was planned from what it knew or read and decided;
//! and a refused blind or planned commit never spends the retry budget.

use super::floor::documents;
use super::{Scripted, charge, plan, start};
use crate::support::{self, command};
use command_journal::identity::generate_lease_id;
use command_journal::sends::LookupRequest;
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, Concurrency, Connection, Execution, Journal, LeaseOutput, Provider,
    ProviderAnswer, RetryPolicy, SendRequest,
};
use serde_json::json;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

const MODES: [Concurrency; 2] = [Concurrency::Preconditions, Concurrency::Transaction];

fn one_attempt() -> RetryPolicy {
    RetryPolicy {
        attempts: NonZeroU32::MIN,
        ..RetryPolicy::default()
    }
}

/// A provider that, while the first holder's send is on the wire, lets a second
/// holder whose clock runs 61 s ahead take the lease over with a plain `start`
/// (touching no send document), then answers the first holder ambiguously.
struct TakenOverMidSend {
    taker: Journal,
    connection: Connection,
    command: CommandInput,
    after_takeover: tokio::sync::Mutex<Option<Vec<(String, String)>>>,
    sends: Mutex<u32>,
}

impl Provider for TakenOverMidSend {
    async fn send(&self, _request: SendRequest) -> ProviderAnswer {
        *self.sends.lock().expect("sends") += 1;
        let taken = self
            .taker
            .start(&self.command, &generate_lease_id())
            .await
            .expect("the takeover");
        assert!(
            matches!(taken.lease, LeaseOutput::Acquired { fence_epoch, .. } if fence_epoch.get() == 2),
            "{taken:?}"
        );
        *self.after_takeover.lock().await = Some(documents(&self.connection, &self.command).await);
        ProviderAnswer::Unknown
    }

    async fn lookup(&self, _request: LookupRequest) -> ProviderAnswer {
        ProviderAnswer::Unknown
    }
}

#[tokio::test]
async fn a_stale_holders_ambiguous_outcome_writes_nothing_after_a_skewed_takeover() {
    for (n, mode) in MODES.into_iter().enumerate() {
        for (m, policy) in [RetryPolicy::default(), one_attempt()]
            .into_iter()
            .enumerate()
        {
            let connection = support::fresh_connection().await;
            let cmd = command(880 + 2 * n as u64 + m as u64, json!({"order": "stale"}));
            let ahead = start() + chrono::TimeDelta::seconds(61);
            let provider = TakenOverMidSend {
                taker: Journal::new(connection.clone())
                    .with_clock(Arc::new(ManualClock::new(ahead)))
                    .with_concurrency(mode),
                connection: connection.clone(),
                command: cmd.clone(),
                after_takeover: Default::default(),
                sends: Mutex::new(0),
            };
            // The first holder's clock stays at its start: to it, its lease still runs.
            let first = Journal::new(connection.clone())
                .with_clock(Arc::new(ManualClock::new(start())))
                .with_concurrency(mode)
                .with_retry_policy(policy);
            let answer = first
                .execute(&cmd, &plan(), &provider)
                .await
                .expect("execute");
            assert_eq!(answer, Execution::InProgress, "{mode:?} {policy:?}");
            assert_eq!(*provider.sends.lock().expect("sends"), 1);
            let after = provider.after_takeover.lock().await.clone().expect("taken");
            assert_eq!(
                documents(&connection, &cmd).await,
                after,
                "{mode:?} {policy:?}: the stale holder wrote after the takeover"
            );
            super::assert_verified(&connection).await;
        }
    }
}

#[tokio::test]
async fn a_replay_with_one_attempt_answers_the_stored_result_in_both_modes() {
    for (n, mode) in MODES.into_iter().enumerate() {
        let connection = support::fresh_connection().await;
        let journal = Journal::new(connection.clone())
            .with_clock(Arc::new(ManualClock::new(start())))
            .with_concurrency(mode);
        let cmd = command(890 + n as u64, json!({"order": "one attempt"}));
        let provider = Scripted::new(
            vec![super::OnSend::Answer(ProviderAnswer::Succeeded(charge(
                "ch_1",
            )))],
            vec![],
        );
        let first = journal.execute(&cmd, &plan(), &provider).await;
        assert_eq!(first, Ok(Execution::Succeeded(charge("ch_1"))), "{mode:?}");
        let once = journal.clone().with_retry_policy(one_attempt());
        for _ in 0..2 {
            let replay = once.execute(&cmd, &plan(), &provider).await;
            assert_eq!(replay, Ok(Execution::Succeeded(charge("ch_1"))), "{mode:?}");
        }
        assert_eq!(provider.calls().len(), 1, "{mode:?}: no second send");
        // Registration and the lease event, each once: a lone start replaying the
        // command's creation with one attempt answers from the read too.
        let started = once.start(&cmd, &generate_lease_id()).await;
        assert_eq!(
            started.map(|s| s.lease),
            Ok(LeaseOutput::Succeeded),
            "{mode:?}"
        );
    }
}
