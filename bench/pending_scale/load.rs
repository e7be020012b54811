//! The journal the bench runs on: settled commands committed raw, and abandoned ones
//! made through the journal.
//!
//! For settled command `i` the loader asks the core what a first start followed by its
//! completion writes into an empty journal, chained as one commit
//! (`command_journal_core::tools::known::chain`: root, three audit events and the
//! `succeeded` lifecycle, 5 documents), and commits those creations raw, 500 writes to a
//! `Commit`, several in flight, watching the emulator's resident memory as it goes. An
//! abandoned command is started and permitted its send through the journal, then left
//! with no outcome, as a service killed after the provider charged leaves it.

use super::{Res, err};
use command_journal::{
    CommandInput, CommandRequest, Connection, Journal, LeaseId, LeaseOutput, ProviderPlan,
    ProviderPlanRequest, TerminalReferenceFingerprint, Timestamp,
};
use command_journal_core::tools::known::{self, Chained};
use command_journal_core::tools::lease::{LeaseCall, Terminal, TerminalRequest};
use command_journal_core::tools::sends::guard::Guarded;
use command_journal_core::tools::sends::load::first_read;
use command_journal_core::tools::start::Start;
use command_journal_core::tools::transaction::Write;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use gcloud_sdk::google::firestore::v1::precondition::ConditionType;
use gcloud_sdk::google::firestore::v1::{
    CommitRequest, Document, Precondition, Write as RawWrite, write,
};
use serde_json::json;
use std::time::Instant;

const BATCH_WRITES: usize = 500;
const DOCS_PER_COMMAND: usize = 5;
const IN_FLIGHT: usize = 8;
/// Abandoned commands made through the journal at once.
const ABANDONING: usize = 32;

/// Command `n` of the bench.
pub fn command(n: u64) -> Res<CommandInput> {
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

/// What loading the settled commands did.
pub struct Loaded {
    /// Settled commands written.
    pub commands: u64,
    /// Documents written.
    pub documents: u64,
    /// How long it took.
    pub seconds: f64,
    /// The emulator's resident memory at the end, KiB.
    pub emulator_rss_kib: u64,
}

/// Writes `commands` settled commands (numbered from 0) at `now`, logging the
/// emulator's (`jvm`) resident memory every 100,000 commands; stops early, at a batch
/// boundary, once that memory passes `rss_cap_kib`.
pub async fn settled(
    connection: &Connection,
    commands: u64,
    now: Timestamp,
    jvm: Option<u32>,
    rss_cap_kib: u64,
) -> Res<Loaded> {
    let root = connection.documents_path();
    let database = connection.database_path();
    let per_batch = (BATCH_WRITES / DOCS_PER_COMMAND) as u64;
    let started = Instant::now();
    let mut in_flight = FuturesUnordered::new();
    let (mut written, mut next, mut logged, mut capped) = (0, 0, 0, false);
    while (next < commands && !capped) || !in_flight.is_empty() {
        while next < commands && !capped && in_flight.len() < IN_FLIGHT {
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
        if next / 100_000 > logged {
            logged = next / 100_000;
            let rss = super::rss_kib(jvm, "VmRSS");
            eprintln!(
                "loaded {next} settled commands in {:.0} s; emulator RSS {:.2} GiB",
                started.elapsed().as_secs_f64(),
                rss as f64 / 1_048_576.0
            );
            if rss > rss_cap_kib {
                eprintln!("the emulator passed the memory cap: loading stops here");
                capped = true;
            }
        }
    }
    Ok(Loaded {
        commands: written / DOCS_PER_COMMAND as u64,
        documents: written,
        seconds: started.elapsed().as_secs_f64(),
        emulator_rss_kib: super::rss_kib(jvm, "VmRSS"),
    })
}

/// The plan the abandoned commands bound.
pub fn plan() -> Res<ProviderPlan> {
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

/// Starts commands `first..first + n` through `journal` and permits each its send
/// under the plan, then leaves them: `n` commands whose charge outcome is unknown.
pub async fn abandoned(journal: &Journal, first: u64, n: u64) -> Res<()> {
    let plan = plan()?;
    let abandon = |i: u64| {
        let plan = plan.clone();
        async move {
            let lease =
                LeaseId::parse(&format!("9e4d1000-0002-4000-8000-{i:012x}")).map_err(err)?;
            let cmd = command(i)?;
            let LeaseOutput::Acquired { fence_epoch, .. } =
                journal.start(&cmd, &lease).await.map_err(err)?.lease
            else {
                return Err("the abandoned command's lease was not acquired".to_owned());
            };
            journal
                .begin_send(&cmd, &lease, fence_epoch, &plan)
                .await
                .map_err(err)?;
            Ok::<(), String>(())
        }
    };
    let mut done = futures::stream::iter(first..first + n)
        .map(abandon)
        .buffer_unordered(ABANDONING);
    while let Some(result) = done.next().await {
        result?;
    }
    Ok(())
}
