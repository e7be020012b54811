//! `recover`: the driver of the core's recovery program
//! (`command_journal_core::tools::recovery::program`) over every pending command of one
//! key range whose send outcome is unknown, in the circular order that starts after the
//! cursor or the range's checkpoint (`command_journal_core::tools::recovery::schedule`). It
//! performs the step each decision names and nothing else: a journal operation on
//! the command known by its key hash, a provider lookup bounded by its deadline, the
//! checkpoint's read and record. It never calls `Provider::send`.

use crate::pending::listing::listing;
use crate::recovery::{Lookups, Progress, RecoverOptions, RecoveredCommand, Recovery, Stop};
use crate::runner::{Calling, Engine, Unrecorded};
use crate::sends::ProviderAccount;
use command_journal_core::ProviderAnswer;
use command_journal_core::error::JournalError;
use command_journal_core::identity::Digest;
use command_journal_core::recovery::Recovered;
use command_journal_core::sends::{LookupRequest, RetrieveRequest};
use command_journal_core::tools::recovery::checkpoint::{CheckpointRead, CheckpointRecord};
use command_journal_core::tools::recovery::program::RecoveryProgram;
use command_journal_core::tools::recovery::recovery_owner;
use command_journal_core::tools::recovery::schedule::circular;
use command_journal_core::{Provider, SendRequest};
use futures::StreamExt as _;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

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
            .run(Unrecorded(CheckpointRead::new(range)))
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
                Ok(record) => engine.run(Unrecorded(record)).await,
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

    /// A lookup under way: counted unavailable unless its answer comes (one the
    /// driver stops waiting for, past its deadline, is dropped unanswered).
    fn asking(&self) -> Asking<'_> {
        Asking(Some(self))
    }

    fn total(&self) -> Lookups {
        Lookups {
            answered: self.answered.load(Ordering::SeqCst),
            unavailable: self.unavailable.load(Ordering::SeqCst),
        }
    }
}

/// A lookup under way, counted once: its answer, or unavailable if it is dropped.
struct Asking<'a>(Option<&'a Tally>);

impl Asking<'_> {
    fn answered(mut self, answer: &ProviderAnswer) {
        if let Some(tally) = self.0.take() {
            tally.count(answer);
        }
    }
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        if let Some(tally) = self.0.take() {
            tally.count(&ProviderAnswer::Unknown);
        }
    }
}

/// The job's provider: its lookups (and reads by id) counted in the run's tally as
/// they answer.
struct Counted<'a, P> {
    provider: &'a P,
    tally: &'a Tally,
}

impl<P: Provider> Provider for Counted<'_, P> {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        self.provider.send(request).await
    }

    async fn lookup(&self, request: LookupRequest) -> ProviderAnswer {
        let asking = self.tally.asking();
        let found = self.provider.lookup(request).await;
        asking.answered(&found);
        found
    }

    /// A read by id is the job's question to the provider too: counted as a lookup.
    async fn retrieve(&self, request: RetrieveRequest) -> ProviderAnswer {
        let asking = self.tally.asking();
        let read = self.provider.retrieve(request).await;
        asking.answered(&read);
        read
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
    let lease = engine.new_lease();
    let owner = recovery_owner(hash, &lease);
    let program = RecoveryProgram::new(hash.clone(), owner, account.cloned());
    let counted = Counted {
        provider,
        tally: lookups,
    };
    let result = engine.run(Calling::with(program, &counted)).await;
    crate::metrics::recovery(match &result {
        Ok(recovered) => recovered.as_str(),
        Err(error) => error.code(),
    });
    result
}
