//! `pending` at scale: a journal of N settled commands (default 100,000) and 10
//! abandoned ones, what `Journal::pending` reads to list the 10, and what
//! `Journal::recover` reads and writes to settle them from a provider that holds a
//! charge for each.
//!
//! The loader does not go through the runner: for command `i` it asks the core what
//! a first start followed by its completion writes into an empty journal, chained as
//! one commit (`command_journal_core::known::chain`: root, three audit events and the
//! `succeeded` lifecycle, 5 documents), and commits those creations raw, 500 writes
//! to a `Commit`, several in flight. The 10 abandoned commands are started and
//! permitted their send through the journal, then abandoned (no outcome recorded);
//! the listing and the recovery run 61 s later on the journal's clock.
//!
//! Run: `cargo bench --bench pending_scale` (100,000 settled); another size after
//! `--`: `cargo bench --bench pending_scale -- 1000000`. A bench target: `cargo test`
//! never builds it. Starts its own emulator.

use command_journal::recovery::{RecoverOptions, Recovered};
use command_journal::time::ManualClock;
use command_journal::{CommandInput, CommandRequest, Journal, LeaseId, LeaseOutput, Timestamp};
use command_journal::{Connection, Target, TerminalReferenceFingerprint};
use command_journal::{
    Provider, ProviderAnswer, ProviderPlan, ProviderPlanRequest, ResultEnvelope, SendRequest,
};
use command_journal_core::known::{self, Chained};
use command_journal_core::lease::{LeaseCall, Terminal, TerminalRequest};
use command_journal_core::sends::guard::Guarded;
use command_journal_core::sends::load::first_read;
use command_journal_core::start::Start;
use command_journal_core::transaction::Write;
use command_journal_emulator::Emulator;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use gcloud_sdk::google::firestore::v1::precondition::ConditionType;
use gcloud_sdk::google::firestore::v1::{
    CommitRequest, Document, Precondition, Write as RawWrite, write,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

type Res<T> = Result<T, String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

const BATCH_WRITES: usize = 500;
const DOCS_PER_COMMAND: usize = 5;
const IN_FLIGHT: usize = 8;
const ABANDONED: u64 = 10;

fn command(n: u64) -> Res<CommandInput> {
    let command_id = format!("9e4d1000-0000-4000-8000-{n:012x}");
    CommandInput::new(CommandRequest {
        environment: "emulator",
        caller_scope_kind: "member",
        caller_id: "pending-scale",
        command_id: &command_id,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &json!({"n": n}),
    })
    .map_err(err)
}

/// The documents of command `n` started and completed at `now`.
fn settled_writes(n: u64, root: &str, now: Timestamp) -> Res<Vec<RawWrite>> {
    let input = command(n)?;
    let lease = LeaseId::parse(&format!("9e4d1000-0001-4000-8000-{n:012x}")).map_err(err)?;
    let identity = input.identity();
    let owner = input.lease_owner(&identity, &lease).map_err(err)?;
    let call = LeaseCall::new(identity.clone(), owner.clone(), now);
    let reference = TerminalReferenceFingerprint::parse(&"ab".repeat(32)).map_err(err)?;
    let commitment = identity.terminal_commitment(&reference);
    let hash = identity.command_key_hash().clone();
    let start = Start::new(identity, owner, now);
    let paths = first_read(call.command());
    let plan: Chained<Start, Guarded, ()> = known::chain(&start, &paths, |out| {
        let LeaseOutput::Acquired { fence_epoch, .. } = out.lease else {
            return None;
        };
        let terminal = Terminal::new(
            call.clone(),
            fence_epoch,
            TerminalRequest::Succeed(commitment.clone()),
        );
        Some(Guarded::new(terminal, &hash))
    })
    .ok_or("a start and its completion did not chain")?;
    Ok(plan
        .writes
        .into_iter()
        .filter_map(|w| match w.write {
            Write::Create { path, fields } => Some(RawWrite {
                update_mask: None,
                update_transforms: Vec::new(),
                current_document: Some(Precondition {
                    condition_type: Some(ConditionType::Exists(false)),
                }),
                operation: Some(write::Operation::Update(Document {
                    name: format!("{root}/{path}"),
                    fields: command_journal::wire::fields_to_wire(&fields),
                    create_time: None,
                    update_time: None,
                })),
            }),
            Write::Replace { .. } | Write::AssertAbsent { .. } | Write::AssertUnchanged { .. } => {
                None
            }
        })
        .collect())
}

/// Writes `commands` settled commands; returns the documents written.
async fn load(connection: &Connection, commands: u64, now: Timestamp) -> Res<u64> {
    let root = connection.documents_path();
    let database = connection.database_path();
    let per_batch = (BATCH_WRITES / DOCS_PER_COMMAND) as u64;
    let mut in_flight = FuturesUnordered::new();
    let (mut written, mut next) = (0, 0);
    while next < commands || !in_flight.is_empty() {
        while next < commands && in_flight.len() < IN_FLIGHT {
            let end = (next + per_batch).min(commands);
            let mut writes = Vec::with_capacity(BATCH_WRITES);
            for n in next..end {
                writes.extend(settled_writes(n, &root, now)?);
            }
            next = end;
            let count = writes.len() as u64;
            let request = CommitRequest {
                database: database.clone(),
                writes,
                transaction: Vec::new(),
                request_options: None,
            };
            let mut raw = connection.raw();
            in_flight.push(async move { raw.commit(request).await.map(|_| count) });
        }
        if let Some(done) = in_flight.next().await {
            written += done.map_err(|s| format!("commit: {}", s.message()))?;
        }
    }
    Ok(written)
}

#[tokio::main]
async fn main() {
    if let Err(error) = run().await {
        eprintln!("pending_scale: {error}");
        std::process::exit(1);
    }
}

async fn run() -> Res<()> {
    let settled: u64 = match std::env::args().skip(1).find(|a| a != "--bench") {
        Some(n) => n.parse().map_err(err)?,
        None => 100_000,
    };
    let emulator = tokio::task::spawn_blocking(Emulator::start)
        .await
        .map_err(err)?
        .map_err(err)?;
    let project = emulator.new_project_id();
    let connection = Connection::connect(&project, Target::Emulator(emulator.host().to_owned()))
        .await
        .map_err(err)?;
    let start = chrono::Utc::now();
    let now = Timestamp::from_datetime(start).ok_or("clock")?;
    let t0 = Instant::now();
    let documents = load(&connection, settled, now).await?;
    println!(
        "loaded {settled} settled commands ({documents} documents) in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let clock = Arc::new(ManualClock::new(start));
    let journal = Journal::new(connection).with_clock(clock.clone());
    let plan = plan()?;
    for n in 0..ABANDONED {
        let lease = LeaseId::parse(&format!("9e4d1000-0002-4000-8000-{n:012x}")).map_err(err)?;
        let cmd = command(settled + n)?;
        let LeaseOutput::Acquired { fence_epoch, .. } =
            journal.start(&cmd, &lease).await.map_err(err)?.lease
        else {
            return Err("the abandoned command's lease was not acquired".into());
        };
        journal
            .begin_send(&cmd, &lease, fence_epoch, &plan)
            .await
            .map_err(err)?;
    }
    clock.advance(chrono::TimeDelta::seconds(61));
    let before = journal.stats();
    let t0 = Instant::now();
    let listing = journal.pending().await.map_err(err)?;
    let elapsed = t0.elapsed();
    let used = journal.stats().since(&before);
    println!(
        "| journal | pending | lifecycles the query returned | documents the per-command reads asked for (found + absent) | RPCs after the query | time |\n|---|---|---|---|---|---|\n| {settled} settled commands ({documents} documents) + {ABANDONED} abandoned | {} | {} | {} ({} + {}) | {} | {:.1} ms |",
        listing.pending.len(),
        listing.listed,
        used.billed_reads(),
        used.documents_found,
        used.documents_missing,
        used.rpcs(),
        elapsed.as_secs_f64() * 1e3
    );
    if listing.pending.len() as u64 != ABANDONED {
        return Err(format!(
            "listed {} pending, not {ABANDONED}",
            listing.pending.len()
        ));
    }

    let before = journal.stats();
    let t0 = Instant::now();
    let options = RecoverOptions {
        per_second: None,
        ..RecoverOptions::default()
    };
    let report = journal
        .recover(&Charged, &options, |_| {})
        .await
        .map_err(err)?;
    let elapsed = t0.elapsed();
    let used = journal.stats().since(&before);
    println!(
        "| journal | recovered | RPCs | documents read (found + absent) | documents written | time |\n|---|---|---|---|---|---|\n| the same, concurrency {} | {} of {} | {} | {} ({} + {}) | {} | {:.1} ms |",
        options.concurrency,
        report.count(Recovered::Succeeded),
        report.commands.len(),
        used.rpcs(),
        used.billed_reads(),
        used.documents_found,
        used.documents_missing,
        used.documents_written,
        elapsed.as_secs_f64() * 1e3
    );
    if report.count(Recovered::Succeeded) as u64 != ABANDONED
        || !journal.pending().await.map_err(err)?.pending.is_empty()
    {
        return Err("the recovery did not settle every abandoned command".into());
    }
    Ok(())
}

/// The plan the abandoned commands bound.
fn plan() -> Res<ProviderPlan> {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_bench",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250, "currency": "eur"}),
        key_retention_seconds: 86_400,
    })
    .map_err(err)
}

/// A provider holding a succeeded charge for every key (the abandoned sends all
/// charged); it is never asked to send.
struct Charged;

impl Provider for Charged {
    async fn send(&self, _request: SendRequest<'_>) -> ProviderAnswer {
        ProviderAnswer::Unknown
    }

    async fn lookup(&self, _key: &str) -> ProviderAnswer {
        match ResultEnvelope::new(&json!({"id": "ch_bench", "status": "succeeded"})) {
            Ok(envelope) => ProviderAnswer::Succeeded(envelope),
            Err(_) => ProviderAnswer::Unknown,
        }
    }
}
