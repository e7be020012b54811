//! `recover`: the driver of the core's recovery protocol
//! (`command_journal_core::recovery`) over every pending command whose send outcome
//! is unknown. It performs the step each decision names and nothing else: a journal
//! operation on the command known by its key hash, a provider lookup bounded by its
//! deadline. It never calls `Provider::send`.

use super::Engine;
use super::pending::pending_after;
use crate::ProviderAnswer;
use crate::engine::Memory;
use crate::error::JournalError;
use crate::execute::Provider;
use crate::identity::CommandIdentity;
use crate::identity::LeaseId;
use crate::known::Planned;
use crate::lease::{Acquire, LeaseCall, LeaseOutput};
use crate::recovery::{Progress, RecoverOptions, RecoveredCommand, Recovery};
use crate::sends::ProviderAccount;
use crate::sends::load::first_read;
use crate::sends::record::{Mode, RecordAnswer};
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
                    recover_one(engine, provider, options.account.as_ref(), &hash).await
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
    account: Option<&ProviderAccount>,
    hash: &Digest,
) -> Result<Recovered, JournalError> {
    let started = Instant::now();
    let span = crate::runner::operation_span(OperationName::Recover, engine.options.concurrency);
    let result = drive(engine, provider, account, hash)
        .instrument(span)
        .await;
    crate::metrics::record(OperationName::Recover, &result, started.elapsed());
    crate::metrics::recovery(match &result {
        Ok(recovered) => recovered.as_str(),
        Err(error) => error.code(),
    });
    result
}

/// The protocol's steps, one after the other, until it answers. The first read
/// answers the identity and the send status in one batch get; the takeover reads what
/// the reconciliation reads too, so that in preconditions mode the reconciliation is
/// one commit planned from the state the takeover left (`engine::Memory`).
async fn drive<P: Provider>(
    engine: &Engine,
    provider: &P,
    account: Option<&ProviderAccount>,
    hash: &Digest,
) -> Result<Recovered, JournalError> {
    let lease = LeaseId::generate();
    let owner = recovery_owner(hash, &lease);
    let mut identity: Option<CommandIdentity> = None;
    let mut memory = Memory::planning(engine);
    let (mut recovery, mut step) = RecoveryProtocol::new(account.cloned());
    loop {
        let event = match step {
            Step::Done(recovered) => return Ok(recovered),
            Step::Status => {
                let read = RegisteredIdentity::new(hash.clone(), engine.now()?);
                let registered = engine.run_unrecorded(&read).await?;
                identity = Some(registered.identity.clone());
                Event::Status(Box::new(registered))
            }
            Step::Lookup { key, deadline, .. } => {
                // The key comes from the stored plan.
                let found = tokio::time::timeout(deadline, provider.lookup(&key)).await;
                Event::LookedUp(found.unwrap_or(ProviderAnswer::Unknown))
            }
            Step::Acquire => {
                let call = LeaseCall::new(held(&identity)?, owner.clone(), engine.now()?);
                let paths = first_read(call.command());
                let started = Instant::now();
                let ran = engine
                    .run_with(&Acquire::new(call), paths, None::<Planned<LeaseOutput, _>>)
                    .await
                    .map(|ran| {
                        memory.known = Some(ran.known);
                        ran.answer.into_inner()
                    });
                crate::metrics::record(OperationName::Acquire, &ran, started.elapsed());
                Event::Acquired(ran?)
            }
            Step::Reconcile {
                fence,
                attempt,
                evidence,
            } => {
                let call = LeaseCall::new(held(&identity)?, owner.clone(), engine.now()?);
                let op = RecordAnswer::prepare(
                    call,
                    fence,
                    attempt,
                    &evidence,
                    None,
                    Mode::Reconciliation,
                )?;
                Event::Reconciled(engine.run_remembering(&op, &mut memory).await)
            }
        };
        step = recovery.step(event)?;
    }
}

/// The identity the first read answered.
fn held(identity: &Option<CommandIdentity>) -> Result<CommandIdentity, JournalError> {
    identity.clone().ok_or(JournalError::internal(
        "recover: a step before the first read",
    ))
}
