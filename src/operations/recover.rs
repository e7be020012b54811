//! `recover`: the driver of the core's recovery protocol
//! (`command_journal_core::recovery`) over every pending command of one key range
//! whose send outcome is unknown, in the circular order that starts after the
//! cursor or the range's checkpoint (`command_journal_core::recovery::schedule`). It
//! performs the step each decision names and nothing else: a journal operation on
//! the command known by its key hash, a provider lookup bounded by its deadline, the
//! checkpoint's read and record. It never calls `Provider::send`.

use super::Engine;
use super::pending::listing;
use crate::ProviderAnswer;
use crate::engine::Memory;
use crate::error::JournalError;
use crate::execute::Provider;
use crate::identity::CommandIdentity;
use crate::identity::LeaseId;
use crate::known::Planned;
use crate::lease::{Acquire, LeaseCall, LeaseOutput};
use crate::recovery::{Lookups, Progress, RecoverOptions, RecoveredCommand, Recovery, Stop};
use crate::sends::ProviderAccount;
use crate::sends::load::first_read;
use crate::sends::record::{Mode, RecordAnswer};
use crate::transaction::OperationName;
use command_journal_core::digest::Digest;
use command_journal_core::recovery::checkpoint::{CheckpointRead, CheckpointRecord};
use command_journal_core::recovery::schedule::circular;
use command_journal_core::recovery::{
    Recovered, RecoveryEvent as Event, RecoveryProtocol, RecoveryStep as Step, RegisteredIdentity,
    recovery_owner,
};
use futures::StreamExt as _;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;
use tracing::Instrument as _;

/// Lists the pending commands of the options' range and recovers each whose send
/// outcome is unknown, from after the cursor (or the checkpoint) around the range,
/// `concurrency` at a time, at most `per_second` started each second, none started
/// past the deadline but the first; reports each in that order and records where it
/// stopped in the checkpoint when asked to.
pub(crate) async fn recover<P: Provider>(
    engine: &Engine,
    provider: &P,
    options: &RecoverOptions,
    mut on_progress: impl FnMut(Progress<'_>),
) -> Result<Recovery, JournalError> {
    let started = Instant::now();
    let concurrency = options.checked_concurrency()?;
    let pace = options.pace()?;
    let limit = options.checked_limit()?;
    let deadline = options.checked_deadline()?.map(|d| started + d);
    let range = options.range;
    let read = match options.checkpoint {
        true => engine
            .run_unrecorded(&CheckpointRead::new(range))
            .await?
            .map(|checkpoint| checkpoint.after),
        false => None,
    };
    let from = options.after.clone().or_else(|| read.clone());
    let (_, found) = listing(engine, range).await?;
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
    // The whole range's listing, wherever this run starts in it.
    crate::metrics::pending(&pending);
    let mut candidates = circular(candidates, from.as_ref(), |(hash, _)| hash);
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
    let (pace, lookups, past) = (&pace, &Tally::default(), &AtomicBool::new(false));
    // Past the deadline (or once a command was not started for it), no command but
    // the first starts.
    let passed = move |first: bool| {
        let over = past.load(Ordering::SeqCst) || deadline.is_some_and(|d| Instant::now() >= d);
        past.fetch_or(over && !first, Ordering::SeqCst);
        over && !first
    };
    let mut results = futures::stream::iter(candidates.into_iter().enumerate())
        .map(|(i, (hash, broken))| async move {
            if passed(i == 0) {
                return None;
            }
            let outcome = match broken {
                Some(error) => {
                    crate::metrics::recovery(error.code());
                    Err(error)
                }
                None => {
                    if let Some(pace) = pace {
                        pace.lock().await.tick().await;
                    }
                    if passed(i == 0) {
                        return None;
                    }
                    let account = options.account.as_ref();
                    recover_one(engine, provider, account, &hash, lookups).await
                }
            };
            Some(RecoveredCommand {
                command_key_hash: hash,
                outcome,
            })
        })
        .buffered(concurrency);
    let mut commands = Vec::with_capacity(total);
    // The last command of the run's unbroken handled prefix: where the next goes on.
    let (mut stopped_at, mut skipped) = (None, false);
    while let Some(handled) = results.next().await {
        let Some(command) = handled else {
            skipped = true;
            continue;
        };
        if !skipped {
            stopped_at = Some(command.command_key_hash.clone());
        }
        commands.push(command);
        if let Some(command) = commands.last() {
            on_progress(Progress {
                done: commands.len(),
                total,
                command,
            });
        }
    }
    drop(results);
    let stop = match (skipped, more) {
        (true, _) => Stop::Deadline,
        (false, true) => Stop::Limit,
        (false, false) => Stop::Finished,
    };
    let checkpoint = match (&stopped_at, options.checkpoint) {
        (Some(stopped), true) => {
            let record = engine
                .now()
                .map(|now| CheckpointRecord::new(range, read, from.clone(), stopped.clone(), now));
            Some(match record {
                Ok(record) => engine.run_unrecorded(&record).await,
                Err(error) => Err(error),
            })
        }
        _ => None,
    };
    Ok(Recovery {
        range,
        pending,
        started_after: from,
        commands,
        stop,
        cursor: stopped_at.filter(|_| stop != Stop::Finished),
        checkpoint,
        lookups: lookups.total(),
    })
}

/// The lookups of a run, counted as they answer.
#[derive(Default)]
struct Tally {
    answered: AtomicUsize,
    unavailable: AtomicUsize,
}

impl Tally {
    /// As the core classes it: a replayed unknown from a lookup is no answer either.
    fn count(&self, result: &ProviderAnswer) {
        let counter = match Lookups::is_answer(result) {
            true => &self.answered,
            false => &self.unavailable,
        };
        counter.fetch_add(1, Ordering::SeqCst);
    }

    fn total(&self) -> Lookups {
        Lookups {
            answered: self.answered.load(Ordering::SeqCst),
            unavailable: self.unavailable.load(Ordering::SeqCst),
        }
    }
}

/// One command's recovery, traced and counted as the `recover` operation and in
/// the recoveries counter.
async fn recover_one<P: Provider>(
    engine: &Engine,
    provider: &P,
    account: Option<&ProviderAccount>,
    hash: &Digest,
    lookups: &Tally,
) -> Result<Recovered, JournalError> {
    let started = Instant::now();
    let span = crate::runner::operation_span(OperationName::Recover, engine.options.concurrency);
    let result = drive(engine, provider, account, hash, lookups)
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
    lookups: &Tally,
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
                let found = found.unwrap_or(ProviderAnswer::Unknown);
                lookups.count(&found);
                Event::LookedUp(found)
            }
            Step::Acquire => {
                let call = LeaseCall::new(held(&identity)?, owner.clone(), engine.now()?);
                let paths = first_read(call.command());
                let started = Instant::now();
                // Recovery acquires only an expired lease: a takeover, which needs the
                // lock in transaction mode.
                let op = Acquire::new(call).expecting_takeover();
                let ran = engine
                    .run_with(&op, paths, None::<Planned<LeaseOutput, _>>)
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
