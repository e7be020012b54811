//! `execute`: the driver of the core's pure protocol (`command_journal_core::execute`).
//! It performs the step each decision names and nothing else: a journal operation, a
//! provider call bounded by its deadline.

use super::{Engine, lease, results, sends};
use crate::ProviderAnswer;
use crate::engine::Memory;
use crate::error::JournalError;
use crate::execute::opening::Opening;
use crate::execute::protocol::{Event, Protocol, Step};
use crate::execute::{Execution, Provider, SendRequest};
use crate::identity::{CommandInput, LeaseId};
use crate::known;
use crate::lease::{LeaseCall, LeaseOutput};
use crate::runner::Answer;
use crate::runner::Concurrency;
use crate::sends::begin::BeginSend;
use crate::sends::load::first_read;
use crate::sends::{BeginSendOutput, ProviderPlan};
use crate::start::{Start, StartOutput};
use crate::transaction::OperationName;
use serde_json::Value;
use std::time::Instant;
use tracing::Instrument as _;

/// The whole call, traced and counted as the `execute` operation.
pub(crate) async fn execute<P: Provider>(
    engine: &Engine,
    command: &CommandInput,
    plan: &ProviderPlan,
    provider: &P,
) -> Result<Execution, JournalError> {
    let started = std::time::Instant::now();
    let span = crate::runner::operation_span(OperationName::Execute, engine.options.concurrency);
    let result = drive(engine, command, plan, provider)
        .instrument(span)
        .await;
    crate::metrics::record(OperationName::Execute, &result, started.elapsed());
    result
}

/// The protocol's steps, one after the other, until it answers. What each journal
/// operation leaves known goes to the next (`Memory`): in preconditions mode a new
/// command's lease and permit are one blind commit, its outcome one commit planned
/// from the state that commit left, and a replay's result is answered from the read
/// its start made.
async fn drive<P: Provider>(
    engine: &Engine,
    command: &CommandInput,
    plan: &ProviderPlan,
    provider: &P,
) -> Result<Execution, JournalError> {
    let lease = crate::identity::generate_lease_id();
    let parameters: Value = serde_json::from_str(plan.canonical_parameters())
        .map_err(|_| JournalError::internal("execute: plan parameters"))?;
    let mut memory = Memory::planning(engine);
    let mut opened = false;
    let (mut protocol, mut step) = Protocol::new();
    loop {
        let event = match step {
            Step::Done(execution) => return Ok(execution),
            Step::Start if !opened => {
                opened = true;
                match open(engine, command, &lease, plan, &protocol, &mut memory).await? {
                    Opened::Started(started) => Event::Started(started),
                    Opened::Permitted { started, began, at } => {
                        // The permit was committed with the lease, as the protocol
                        // asks for it after this lease (`open` asked it first).
                        step = protocol.step(Event::Started(started), at)?;
                        if !matches!(step, Step::BeginSend { .. }) {
                            return Err(JournalError::internal(
                                "execute: a permit the protocol did not ask for",
                            ));
                        }
                        Event::BeganSend(began)
                    }
                }
            }
            // A second lease, taken to record the answer this call holds.
            Step::Start => {
                memory.known = None;
                Event::Started(lease::start(engine, command, &lease).await?.lease)
            }
            Step::BeginSend { fence } => Event::BeganSend(
                sends::begin(engine, command, &lease, fence, plan, &mut memory).await,
            ),
            Step::Send {
                attempt,
                resend,
                key,
                deadline,
            } => {
                let request = SendRequest {
                    key: &key,
                    parameters: &parameters,
                    deadline,
                    attempt,
                    resend,
                };
                let sent = tokio::time::timeout(deadline, provider.send(request)).await;
                Event::Sent(sent.unwrap_or(ProviderAnswer::Unknown))
            }
            Step::Record {
                fence,
                attempt,
                outcome,
            } => Event::Recorded(
                sends::record_outcome(
                    engine,
                    sends::Holder {
                        command,
                        lease: &lease,
                        fence,
                    },
                    plan,
                    attempt,
                    &outcome,
                    &mut memory,
                )
                .await,
            ),
            Step::Status => Event::Status(sends::status(engine, command, Some(plan)).await?.send),
            Step::Lookup { key, deadline, .. } => {
                // The key comes from the stored plan, after the plan check.
                let found = tokio::time::timeout(deadline, provider.lookup(&key)).await;
                Event::LookedUp(found.unwrap_or(ProviderAnswer::Unknown))
            }
            Step::Reconcile {
                fence,
                attempt,
                evidence,
            } => Event::Reconciled(
                sends::reconcile(
                    engine,
                    sends::Holder {
                        command,
                        lease: &lease,
                        fence,
                    },
                    plan,
                    attempt,
                    &evidence,
                    &mut memory,
                )
                .await,
            ),
            Step::FetchResult => Event::Fetched(results::read(engine, command, &mut memory).await?),
        };
        step = protocol.step(event, engine.now()?)?;
    }
}

/// How the call's first start answered.
enum Opened {
    /// The start alone: the protocol decides what follows.
    Started(LeaseOutput),
    /// Its lease and the `begin_send` the protocol asks for after it, decided at the
    /// one captured time `at` and committed together: a new command's blind commit
    /// in preconditions mode, one transaction in transaction mode (where the permit
    /// may also be refused, beside the lease it followed).
    Permitted {
        started: LeaseOutput,
        began: Result<BeginSendOutput, JournalError>,
        at: crate::time::Timestamp,
    },
}

/// The call's first start. In preconditions mode it is tried first as one blind
/// commit of the new command's start and of the `begin_send` the protocol asks for
/// after that lease, both decided at one captured time over the state where every
/// document they read is absent (`known::chain`); refused, the start reads (the
/// documents `begin_send` and `result` read too, so that a replay's result needs no
/// second read) and decides as usual. In transaction mode the start and that
/// `begin_send` are one transaction over the same read (`execute::opening`), for any
/// command. Counted in the metrics as the operations it stands for.
async fn open(
    engine: &Engine,
    command: &CommandInput,
    lease: &LeaseId,
    plan: &ProviderPlan,
    protocol: &Protocol,
    memory: &mut Memory,
) -> Result<Opened, JournalError> {
    let started_at = Instant::now();
    let identity = command.identity();
    let owner = command.lease_owner(&identity, lease)?;
    let now = engine.now()?;
    let call = LeaseCall::new(identity.clone(), owner.clone(), now);
    let start = Start::new(identity, owner, now);
    let paths = first_read(call.command());
    let planned = if memory.plans() {
        known::chain(&start, &paths, |out: &StartOutput| {
            let mut probe = protocol.clone();
            match probe.step(Event::Started(out.lease), now) {
                Ok(Step::BeginSend { fence }) => {
                    Some(BeginSend::new(call.clone(), fence, plan.clone()))
                }
                _ => None,
            }
        })
    } else {
        None
    };
    if engine.options.concurrency == Concurrency::Transaction && !engine.options.reads_only {
        // One transaction for the lease and the permit after it.
        let opening = Opening::new(start, call, plan.clone(), protocol);
        let ran = engine.run_with::<_, ()>(&opening, paths, None).await;
        let elapsed = started_at.elapsed();
        let ran = match ran {
            Ok(ran) => ran,
            Err(error) => {
                crate::metrics::record::<StartOutput>(OperationName::Start, &Err(error), elapsed);
                return Err(error);
            }
        };
        memory.known = Some(ran.known);
        let Answer::Decided((started, began)) = ran.answer else {
            return Err(JournalError::internal(
                "execute: a planned opening in transaction mode",
            ));
        };
        crate::metrics::record(OperationName::Start, &Ok(started), elapsed);
        return Ok(match began {
            Some(began) => {
                crate::metrics::record(OperationName::BeginSend, &began, elapsed);
                Opened::Permitted {
                    started: started.lease,
                    began,
                    at: now,
                }
            }
            None => Opened::Started(started.lease),
        });
    }
    let ran = engine.run_with(&start, paths, planned).await;
    let elapsed = started_at.elapsed();
    let ran = match ran {
        Ok(ran) => ran,
        Err(error) => {
            crate::metrics::record::<StartOutput>(OperationName::Start, &Err(error), elapsed);
            return Err(error);
        }
    };
    memory.known = Some(ran.known);
    Ok(match ran.answer {
        Answer::Planned((started, began)) => {
            crate::metrics::record(OperationName::Start, &Ok(started), elapsed);
            crate::metrics::record(OperationName::BeginSend, &Ok(began.clone()), elapsed);
            Opened::Permitted {
                started: started.lease,
                began: Ok(began),
                at: now,
            }
        }
        Answer::Decided(started) => {
            crate::metrics::record(OperationName::Start, &Ok(started), elapsed);
            Opened::Started(started.lease)
        }
    })
}
