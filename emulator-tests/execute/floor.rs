//! `execute` at the floor of Firestore round trips: a new command is one blind commit
//! (registration, lease, permit) and one commit of the outcome planned from what the
//! first left, a replay the refused blind commit and one read. Counted twice: by the
//! crate's counters and on the wire by the proxy. The planned path writes exactly what
//! the read-and-decide path writes (transaction mode, same inputs, same times), and
//! every commit's lost response falls back to reading and converges on the same
//! documents with one send.

use super::{OnSend, Scripted, charge, plan, start, succeeded};
use crate::proxy::{Fault, Proxy, Rpc};
use crate::support::{self, command};
use command_journal::sends::AttemptNumber;
use command_journal::sends::LookupRequest;
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, Concurrency, Connection, Execution, Journal, Provider, ProviderAnswer,
    SendRequest, Stats, Target,
};
use gcloud_sdk::google::firestore::v1::Document;
use serde_json::json;
use std::sync::Arc;

/// A journal whose every RPC goes through a proxy, on a fresh project.
struct Wire {
    proxy: Proxy,
    direct: Connection,
    journal: Journal,
}

async fn wire(mode: Concurrency) -> Wire {
    let direct = support::fresh_connection().await;
    let proxy = Proxy::start(support::emulator().host()).await;
    let through = Connection::connect(direct.project(), Target::Emulator(proxy.host()))
        .await
        .expect("connect through the proxy");
    let journal = Journal::new(through)
        .with_clock(Arc::new(ManualClock::new(start())))
        .with_concurrency(mode);
    Wire {
        proxy,
        direct,
        journal,
    }
}

impl Wire {
    /// Journal RPCs the proxy saw.
    fn rpcs_on_the_wire(&self) -> usize {
        self.proxy
            .exchanges()
            .iter()
            .filter(|e| e.rpc.is_some())
            .count()
    }

    async fn execute(&self, command: &CommandInput, provider: &impl Provider) -> Execution {
        self.journal
            .execute(command, &plan(), provider)
            .await
            .expect("execute")
    }
}

/// `(rpcs, commits, batch gets, blind commits, planned commits, conflicts)`.
fn shape(stats: Stats) -> (u64, u64, u64, u64, u64, u64) {
    (
        stats.rpcs(),
        stats.commits,
        stats.batch_gets,
        stats.blind_commits,
        stats.planned_commits,
        stats.conflicts,
    )
}

/// The billed documents of `stats`: reads (found + absent) / writes / deletes.
fn billed(stats: Stats) -> String {
    format!(
        "{} ({} + {}) / {} / {}",
        stats.billed_reads(),
        stats.documents_found,
        stats.documents_missing,
        stats.documents_written,
        stats.absence_guards
    )
}

/// Every document of `command`, by path below the documents root, fields only: the
/// commit times differ between runs, and so does the lease owner's fingerprint (each
/// call of `execute` holds a lease id of its own, drawn at random), which is left out.
pub(super) async fn documents(
    connection: &Connection,
    command: &CommandInput,
) -> Vec<(String, String)> {
    let hash = command.identity().command_key_hash().to_string();
    let root = format!("checkoutRequests/{hash}");
    let mut docs: Vec<Document> = support::list(connection, "", "checkoutRequests").await;
    for sub in ["lifecycle", "providerSends", "results"] {
        docs.extend(support::list(connection, &root, sub).await);
    }
    docs.extend(support::list(connection, "", "auditEvents").await);
    let prefix = format!("{}/", connection.documents_path());
    let mut out: Vec<(String, String)> = docs
        .into_iter()
        .filter(|d| d.name.contains(&hash))
        .map(|d| {
            let path = d.name.strip_prefix(&prefix).unwrap_or(&d.name).to_owned();
            let fields: std::collections::BTreeMap<_, _> = d
                .fields
                .into_iter()
                .filter(|(name, _)| name != "leaseOwnerFingerprint")
                .collect();
            (path, format!("{fields:?}"))
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn execute_a_new_command_is_two_rpcs_and_a_replay_two_on_the_wire() {
    // (mode, new command, replay): preconditions plans both commits of a new command
    // and answers a replay from its start's read; transaction mode opens the command
    // (start and begin_send) in one transaction and records the outcome in another
    // (2 RPCs each), and answers a replay's result from the opening's transactional
    // read.
    // Billed documents: reads (found + absent) / writes / deletes (absence guards).
    let cases = [
        (
            Concurrency::Preconditions,
            ((2, 2, 0, 1, 1, 0), "0 (0 + 0) / 13 / 5"),
            ((2, 1, 1, 1, 0, 1), "13 (11 + 2) / 0 / 0"),
        ),
        (
            Concurrency::Transaction,
            ((4, 2, 2, 0, 0, 0), "25 (7 + 18) / 13 / 0"),
            ((2, 0, 1, 0, 0, 0), "13 (11 + 2) / 0 / 0"),
        ),
    ];
    for (n, (mode, (new, new_billed), (replay, replay_billed))) in cases.into_iter().enumerate() {
        let w = wire(mode).await;
        let cmd = command(700 + n as u64, json!({"order": "floor"}));
        let provider = Scripted::new(
            vec![OnSend::Answer(ProviderAnswer::Succeeded(charge(
                "ch_floor",
            )))],
            vec![],
        );
        let before = w.journal.stats();
        let first = w.execute(&cmd, &provider).await;
        let used = w.journal.stats().since(&before);
        assert_eq!(shape(used), new, "{mode:?}: a new command");
        assert_eq!(billed(used), new_billed, "{mode:?}: a new command");
        assert_eq!(w.rpcs_on_the_wire() as u64, used.rpcs(), "{mode:?}");
        assert_eq!(
            succeeded(&first).canonical(),
            charge("ch_floor").canonical()
        );

        let before = w.journal.stats();
        let seen = w.rpcs_on_the_wire();
        let again = w.execute(&cmd, &provider).await;
        let used = w.journal.stats().since(&before);
        assert_eq!(shape(used), replay, "{mode:?}: a replay");
        assert_eq!(billed(used), replay_billed, "{mode:?}: a replay");
        assert_eq!(
            (w.rpcs_on_the_wire() - seen) as u64,
            used.rpcs(),
            "{mode:?}"
        );
        assert_eq!(again, first);
        assert_eq!(provider.calls().len(), 1, "one send");
    }
}

#[tokio::test]
async fn execute_planned_commits_write_what_reading_and_deciding_writes() {
    // The same command, inputs and times in both modes: the planned path
    // (preconditions) and the read-and-decide path (transaction mode) store the same
    // documents, field for field, and answer the same, for every provider answer.
    let answers = [
        ProviderAnswer::Succeeded(charge("ch_same")),
        ProviderAnswer::Declined,
        ProviderAnswer::Unknown,
    ];
    for (n, answer) in answers.into_iter().enumerate() {
        let cmd = command(720 + n as u64, json!({"order": "same"}));
        let mut seen = Vec::new();
        for mode in [Concurrency::Preconditions, Concurrency::Transaction] {
            let w = wire(mode).await;
            let provider = Scripted::new(vec![OnSend::Answer(answer.clone())], vec![]);
            let execution = w.execute(&cmd, &provider).await;
            seen.push((execution, documents(&w.direct, &cmd).await));
        }
        assert_eq!(seen[0], seen[1], "{answer:?}");
        assert!(seen[0].1.len() >= 6, "{:?}", seen[0].1);
    }
}

/// A provider that charges, and arms the proxy to lose the next commit's response
/// once the charge is made (so that the outcome's commit is the one lost).
struct LosesTheOutcome<'a> {
    proxy: &'a Proxy,
    sends: std::sync::Mutex<u32>,
}

impl Provider for LosesTheOutcome<'_> {
    async fn send(&self, _request: SendRequest) -> ProviderAnswer {
        *self.sends.lock().expect("sends") += 1;
        self.proxy.arm(Rpc::Commit, Fault::LoseResponse);
        ProviderAnswer::Succeeded(charge("ch_lost"))
    }

    async fn lookup(&self, _request: LookupRequest) -> command_journal::ProviderAnswer {
        command_journal::ProviderAnswer::Unknown
    }
}

#[tokio::test]
async fn execute_with_the_first_or_the_outcome_commit_response_lost_converges_with_one_send() {
    // Per mode: (commits, batch gets) of the call whose outcome commit's response is
    // lost: preconditions sends the blind commit and the planned outcome, then one
    // read finds the outcome recorded; transaction mode commits the opening (start and
    // permit) and the outcome after a read each, then one more read finds it.
    for (n, (mode, lost_outcome)) in [
        (Concurrency::Preconditions, (2, 1)),
        (Concurrency::Transaction, (2, 3)),
    ]
    .into_iter()
    .enumerate()
    {
        // The reference: no fault.
        let cmd = command(740 + n as u64, json!({"order": "lost"}));
        let clean = wire(mode).await;
        let provider = Scripted::new(
            vec![OnSend::Answer(ProviderAnswer::Succeeded(charge("ch_lost")))],
            vec![],
        );
        let reference = clean.execute(&cmd, &provider).await;
        assert_eq!(clean.proxy.fired(), 0);
        let reference_docs = documents(&clean.direct, &cmd).await;

        // The first commit's response lost (the blind commit of lease and permit, or
        // the start's): the retry reads its own lease, the permit is the same
        // attempt's, and the outcome is recorded once.
        let w = wire(mode).await;
        w.proxy.arm(Rpc::Commit, Fault::LoseResponse);
        let provider = Scripted::new(
            vec![OnSend::Answer(ProviderAnswer::Succeeded(charge("ch_lost")))],
            vec![],
        );
        let answer = w.execute(&cmd, &provider).await;
        assert_eq!(w.proxy.fired(), 1, "{mode:?}");
        assert_eq!(answer, reference, "{mode:?}");
        assert_eq!(provider.calls().len(), 1, "{mode:?}");
        assert_eq!(documents(&w.direct, &cmd).await, reference_docs, "{mode:?}");

        // The outcome commit's response lost: the fallback reads the outcome it
        // recorded and answers it.
        let w = wire(mode).await;
        let provider = LosesTheOutcome {
            proxy: &w.proxy,
            sends: Default::default(),
        };
        let before = w.journal.stats();
        let answer = w.execute(&cmd, &provider).await;
        let used = w.journal.stats().since(&before);
        assert_eq!(w.proxy.fired(), 1, "{mode:?}");
        assert_eq!(*provider.sends.lock().expect("sends"), 1, "{mode:?}");
        assert_eq!(answer, reference, "{mode:?}");
        assert_eq!(documents(&w.direct, &cmd).await, reference_docs, "{mode:?}");
        assert_eq!(
            (used.commits, used.batch_gets),
            lost_outcome,
            "{mode:?}: {used:?}"
        );
        super::assert_verified(&w.direct).await;
    }
}

/// `(commerce events, send events, result documents)` of `command`.
async fn counts(connection: &Connection, command: &CommandInput) -> (usize, usize, usize) {
    let docs = documents(connection, command).await;
    let count = |prefix: &str| docs.iter().filter(|(p, _)| p.starts_with(prefix)).count();
    (
        count("auditEvents/commerce_command_"),
        count("auditEvents/provider_send_"),
        docs.iter()
            .filter(|(p, _)| p.ends_with("/results/current"))
            .count(),
    )
}

#[tokio::test]
async fn execute_24_way_race_on_a_new_command_sends_once_in_both_modes() {
    for (n, mode) in [Concurrency::Preconditions, Concurrency::Transaction]
        .into_iter()
        .enumerate()
    {
        let w = wire(mode).await;
        let cmd = command(760 + n as u64, json!({"order": "race"}));
        let provider = Arc::new(Scripted::new(
            vec![OnSend::Answer(ProviderAnswer::Succeeded(charge("ch_race")))],
            vec![],
        ));
        let journal = w.journal.clone();
        let answers = support::race(24, |_| {
            let (journal, cmd, provider) = (journal.clone(), cmd.clone(), provider.clone());
            async move { journal.execute(&cmd, &plan(), &*provider).await }
        })
        .await;
        let mut succeeded_ = 0;
        for answer in &answers {
            match answer {
                Ok(Execution::Succeeded(envelope)) => {
                    assert_eq!(envelope.canonical(), charge("ch_race").canonical());
                    succeeded_ += 1;
                }
                Ok(Execution::InProgress) => {}
                other => panic!("{mode:?}: {other:?}"),
            }
        }
        assert!(succeeded_ >= 1, "{mode:?}");
        assert_eq!(provider.calls().len(), 1, "{mode:?}: exactly one send");
        // registered, leased, succeeded; opened, succeeded; one result.
        assert_eq!(counts(&w.direct, &cmd).await, (3, 2, 1), "{mode:?}");
        super::assert_verified(&w.direct).await;
    }
}

/// A provider whose send outlives its lease: while it is in flight the clock passes
/// the lease and a second call (with its own provider, `taker`) takes the command
/// over and re-sends the same attempt with the same key; then the first answers too.
struct Overtaken {
    journal: Journal,
    clock: Arc<ManualClock>,
    command: CommandInput,
    sends: std::sync::Mutex<Vec<(String, AttemptNumber, bool)>>,
    /// The second call's provider.
    taker: Scripted,
    second: tokio::sync::Mutex<Option<Execution>>,
}

impl Provider for Overtaken {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        self.sends.lock().expect("sends").push((
            request.key.to_owned(),
            request.attempt,
            request.resend,
        ));
        self.clock.advance(chrono::TimeDelta::seconds(61));
        let second = self
            .journal
            .execute(&self.command, &plan(), &self.taker)
            .await
            .expect("the takeover");
        *self.second.lock().await = Some(second);
        ProviderAnswer::Succeeded(charge("ch_taken"))
    }

    async fn lookup(&self, _request: LookupRequest) -> command_journal::ProviderAnswer {
        command_journal::ProviderAnswer::Unknown
    }
}

#[tokio::test]
async fn execute_overtaken_mid_send_records_one_outcome_and_both_calls_answer_it() {
    // The first call's planned outcome commit finds the lifecycle and send record
    // changed by the takeover: refused, it reads, and answers the outcome the second
    // call recorded. One attempt, one key, sent twice (the resend the key dedupes).
    for (n, mode) in [Concurrency::Preconditions, Concurrency::Transaction]
        .into_iter()
        .enumerate()
    {
        let direct = support::fresh_connection().await;
        let clock = Arc::new(ManualClock::new(start()));
        let journal = Journal::new(direct.clone())
            .with_clock(clock.clone())
            .with_concurrency(mode);
        let cmd = command(780 + n as u64, json!({"order": "overtaken"}));
        let provider = Overtaken {
            journal: journal.clone(),
            clock,
            command: cmd.clone(),
            sends: Default::default(),
            taker: Scripted::new(
                vec![OnSend::Answer(ProviderAnswer::Succeeded(charge(
                    "ch_taken",
                )))],
                vec![],
            ),
            second: Default::default(),
        };
        let first = journal
            .execute(&cmd, &plan(), &provider)
            .await
            .expect("first");
        let second = provider.second.lock().await.clone().expect("second ran");
        assert_eq!(second, Execution::Succeeded(charge("ch_taken")), "{mode:?}");
        assert_eq!(first, second, "{mode:?}");
        let sends = provider.sends.lock().expect("sends").clone();
        assert_eq!(sends.len(), 1, "{mode:?}");
        assert_eq!(
            (sends[0].1, sends[0].2),
            (AttemptNumber::FIRST, false),
            "{mode:?}"
        );
        assert_eq!(
            provider.taker.calls(),
            vec![super::send(&sends[0].0, 1, true)],
            "{mode:?}: the same attempt and key, re-sent"
        );
        // registered, leased, taken over, succeeded; opened, resent, succeeded.
        assert_eq!(counts(&direct, &cmd).await, (4, 3, 1), "{mode:?}");
        super::assert_verified(&direct).await;
    }
}
