//! `execute`: the driver of the core's pure protocol (`command_journal_core::execute`).
//! It performs the step each decision names and nothing else: a journal operation, a
//! provider call bounded by its deadline.

use super::{Engine, lease, results, sends};
use crate::error::JournalError;
use crate::execute::protocol::{Event, Protocol, Step};
use crate::execute::{Execution, LookupResult, Provider, SendRequest, SendResult};
use crate::identity::{CommandInput, LeaseId};
use crate::sends::ProviderPlan;
use crate::transaction::OperationName;
use serde_json::Value;
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

/// The protocol's steps, one after the other, until it answers.
async fn drive<P: Provider>(
    engine: &Engine,
    command: &CommandInput,
    plan: &ProviderPlan,
    provider: &P,
) -> Result<Execution, JournalError> {
    let lease = LeaseId::generate();
    let parameters: Value = serde_json::from_str(plan.canonical_parameters())
        .map_err(|_| JournalError::internal("execute: plan parameters"))?;
    let (mut protocol, mut step) = Protocol::new();
    loop {
        let event = match step {
            Step::Done(execution) => return Ok(execution),
            Step::Start => Event::Started(lease::start(engine, command, &lease).await?.lease),
            Step::BeginSend { fence } => {
                Event::BeganSend(sends::begin(engine, command, &lease, fence, plan).await)
            }
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
                Event::Sent(sent.unwrap_or(SendResult::Ambiguous))
            }
            Step::Record {
                fence,
                attempt,
                outcome,
            } => Event::Recorded(
                sends::record_outcome(engine, command, &lease, fence, plan, attempt, &outcome)
                    .await,
            ),
            Step::Status => Event::Status(sends::status(engine, command, Some(plan)).await?.send),
            Step::Lookup { key, deadline, .. } => {
                // The key comes from the stored plan, after the plan check.
                let found = tokio::time::timeout(deadline, provider.lookup(&key)).await;
                Event::LookedUp(found.unwrap_or(LookupResult::Unavailable))
            }
            Step::Reconcile {
                fence,
                attempt,
                evidence,
            } => Event::Reconciled(
                sends::reconcile(engine, command, &lease, fence, plan, attempt, &evidence).await,
            ),
            Step::FetchResult => Event::Fetched(results::read(engine, command).await?),
        };
        step = protocol.step(event, engine.now()?)?;
    }
}
