//! `recover`: the driver of the core's recovery protocol
//! (`command_journal_core::recovery`) over every pending command whose send outcome
//! is unknown. It performs the step each decision names and nothing else: a journal
//! operation on the command known by its key hash, a provider lookup bounded by its
//! deadline. It never calls `Provider::send`.

use super::Engine;
use super::pending::pending_after;
use crate::envelope::record::WithResult;
use crate::error::JournalError;
use crate::execute::{LookupResult, Provider};
use crate::identity::LeaseId;
use crate::lease::{Acquire, CommandCall, LeaseCall};
use crate::recovery::{Progress, RecoverOptions, RecoveredCommand, Recovery};
use crate::sends::reconcile::Reconcile;
use crate::sends::status::SendStatusRead;
use crate::transaction::OperationName;
use command_journal_core::digest::Digest;
use command_journal_core::recovery::{
    Recovered, RecoveryEvent as Event, RecoveryProtocol, RecoveryStep as Step, RegisteredIdentity,
    recovery_owner,
};
use futures::StreamExt as _;
use std::time::Instant;
use tracing::Instrument as _;

/// Lists the pending commands after the options' cursor and recovers each whose
/// send outcome is unknown, `concurrency` at a time and at most `per_second` started
/// each second, reporting each in key-hash order.
pub(crate) async fn recover<P: Provider>(
    engine: &Engine,
    provider: &P,
    options: &RecoverOptions,
    mut on_progress: impl FnMut(Progress<'_>),
) -> Result<Recovery, JournalError> {
    let concurrency = options.checked_concurrency()?;
    let pace = options.pace()?;
    let limit = options.checked_limit()?;
    let (_, found) = pending_after(engine, options.after.as_ref()).await?;
    let mut pending = Vec::with_capacity(found.len());
    // Each command whose send outcome is unknown is recovered; one the listing could
    // not read is reported with its error, in its place.
    let mut candidates: Vec<(Digest, Option<JournalError>)> = Vec::new();
    for (hash, waiting) in found {
        match waiting {
            Ok(waiting) => {
                if waiting
                    .send
                    .as_ref()
                    .is_some_and(|s| s.state.outcome_unknown())
                {
                    candidates.push((hash, None));
                }
                pending.push(waiting);
            }
            Err(error) => candidates.push((hash, Some(error))),
        }
    }
    crate::metrics::pending(&pending);
    let more = limit.is_some_and(|limit| candidates.len() > limit);
    if let Some(limit) = limit {
        candidates.truncate(limit);
    }
    let total = candidates.len();
    let pace = pace.map(|period| {
        let mut interval = tokio::time::interval(period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::sync::Mutex::new(interval)
    });
    let pace = &pace;
    let mut results = futures::stream::iter(candidates)
        .map(|(hash, broken)| async move {
            let outcome = match broken {
                Some(error) => {
                    crate::metrics::recovery(error.code());
                    Err(error)
                }
                None => {
                    if let Some(pace) = pace {
                        pace.lock().await.tick().await;
                    }
                    recover_one(engine, provider, &hash).await
                }
            };
            RecoveredCommand {
                command_key_hash: hash,
                outcome,
            }
        })
        .buffered(concurrency);
    let mut report = Recovery {
        pending,
        commands: Vec::with_capacity(total),
        cursor: None,
    };
    while let Some(command) = results.next().await {
        report.commands.push(command);
        if let Some(command) = report.commands.last() {
            on_progress(Progress {
                done: report.commands.len(),
                total,
                command,
            });
        }
    }
    if more {
        report.cursor = report.commands.last().map(|c| c.command_key_hash.clone());
    }
    Ok(report)
}

/// One command's recovery, traced and counted as the `recover` operation and in
/// the recoveries counter.
async fn recover_one<P: Provider>(
    engine: &Engine,
    provider: &P,
    hash: &Digest,
) -> Result<Recovered, JournalError> {
    let started = Instant::now();
    let span = crate::runner::operation_span(OperationName::Recover, engine.options.concurrency);
    let result = drive(engine, provider, hash).instrument(span).await;
    crate::metrics::record(OperationName::Recover, &result, started.elapsed());
    crate::metrics::recovery(match &result {
        Ok(recovered) => recovered.as_str(),
        Err(error) => error.code(),
    });
    result
}

/// The protocol's steps, one after the other, until it answers.
async fn drive<P: Provider>(
    engine: &Engine,
    provider: &P,
    hash: &Digest,
) -> Result<Recovered, JournalError> {
    let identity = engine
        .run_unrecorded(&RegisteredIdentity::new(hash.clone()))
        .await?;
    let lease = LeaseId::generate();
    let owner = recovery_owner(hash, &lease);
    let (mut recovery, mut step) = RecoveryProtocol::new();
    loop {
        let event = match step {
            Step::Done(recovered) => return Ok(recovered),
            Step::Status => {
                let call = CommandCall::new(identity.clone(), engine.now()?);
                Event::Status(engine.run(&SendStatusRead::new(call)).await?)
            }
            Step::Lookup { key, deadline, .. } => {
                // The key comes from the stored plan.
                let found = tokio::time::timeout(deadline, provider.lookup(&key)).await;
                Event::LookedUp(found.unwrap_or(LookupResult::Unavailable))
            }
            Step::Acquire => {
                let call = LeaseCall::new(identity.clone(), owner.clone(), engine.now()?);
                Event::Acquired(engine.run(&Acquire::new(call)).await?)
            }
            Step::Reconcile {
                fence,
                attempt,
                evidence,
            } => {
                let call = LeaseCall::new(identity.clone(), owner.clone(), engine.now()?);
                let (finding, envelope) = evidence.closing(call.identity());
                let now = call.now();
                let op = Reconcile::on_bound_plan(call, fence, attempt, finding);
                Event::Reconciled(match envelope {
                    None => engine.run(&op).await,
                    Some(envelope) => engine.run(&WithResult::new(op, hash, now, envelope)).await,
                })
            }
        };
        step = recovery.step(event)?;
    }
}
