//! `Journal::execute`: the driver of the pure protocol in `crate::execute::protocol`.
//! It performs the step each decision names and nothing else.

use super::Journal;
use crate::error::JournalError;
use crate::execute::protocol::{Event, Evidence, Protocol, Step};
use crate::execute::{Execution, LookupResult, Provider, SendRequest, SendResult};
use crate::identity::{CommandInput, LeaseId};
use crate::sends::{ProviderPlan, SendEvidence, SendOutcome};
use crate::transaction::OperationName;
use serde_json::Value;

impl Journal {
    /// Runs the whole send protocol for `command` with `plan` through `provider`:
    /// registers the command if new and takes a fresh lease; sends with a deadline
    /// that ends at least 10 s before the lease does, under a permit recorded first;
    /// records the answer under the fence; past the stored cutoff asks the provider
    /// instead of sending, records its evidence, and opens a new attempt (a new key)
    /// only after the provider has proven the old one absent. A succeeded command
    /// answers its stored result on every later call, without a send.
    ///
    /// At most one send per attempt per call, and a second attempt only once the
    /// provider has proven the first absent. A send that does not answer by its
    /// deadline (or a call dropped mid-send) leaves the attempt open: the next call
    /// re-sends it with the same key before the cutoff, or looks it up after. Errors
    /// are the journal's ([`JournalError`]); a lost lease is [`Execution::InProgress`].
    ///
    /// ```no_run
    /// # use command_journal::*;
    /// # async fn handler(journal: &Journal, command: &CommandInput, plan: &ProviderPlan,
    /// #     provider: &impl Provider) -> Result<(), JournalError> {
    /// match journal.execute(command, plan, provider).await? {
    ///     Execution::Succeeded(result) => println!("{}", result.canonical()),
    ///     Execution::Declined => println!("declined"),
    ///     Execution::InProgress | Execution::PendingReconciliation => println!("later"),
    ///     Execution::RetryLater { after } => println!("retry in {after:?}"),
    ///     Execution::SucceededWithoutResult => println!("succeeded"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn execute<P: Provider>(
        &self,
        command: &CommandInput,
        plan: &ProviderPlan,
        provider: &P,
    ) -> Result<Execution, JournalError> {
        use tracing::Instrument as _;
        let started = std::time::Instant::now();
        let span = crate::runner::operation_span(OperationName::Execute, self.concurrency());
        let result = self.drive(command, plan, provider).instrument(span).await;
        crate::metrics::record(OperationName::Execute, &result, started.elapsed());
        result
    }

    /// The protocol's steps, one after the other, until it answers.
    async fn drive<P: Provider>(
        &self,
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
                Step::Start => Event::Started(self.start(command, &lease).await?.lease),
                Step::BeginSend { fence } => {
                    Event::BeganSend(self.begin_send(command, &lease, fence, plan).await)
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
                } => {
                    let outcome = match outcome {
                        SendResult::Succeeded(envelope) => SendOutcome::SucceededWith(envelope),
                        SendResult::Declined => SendOutcome::Declined,
                        SendResult::Ambiguous => SendOutcome::Ambiguous,
                    };
                    let recorded = self
                        .record_send_outcome(command, &lease, fence, plan, attempt, &outcome)
                        .await;
                    Event::Recorded(recorded)
                }
                Step::Status => Event::Status(self.send_status_for(command, plan).await?.send),
                Step::Lookup { key, deadline, .. } => {
                    // The key comes from the stored plan, after the plan check.
                    let found = tokio::time::timeout(deadline, provider.lookup(&key)).await;
                    Event::LookedUp(found.unwrap_or(LookupResult::Unavailable))
                }
                Step::Reconcile {
                    fence,
                    attempt,
                    evidence,
                } => {
                    let evidence = match evidence {
                        Evidence::Found(envelope) => SendEvidence::SucceededWith(envelope),
                        Evidence::Declined => SendEvidence::Declined,
                        Evidence::NotFound => SendEvidence::NotFound,
                    };
                    let reconciled = self
                        .reconcile_send(command, &lease, fence, plan, attempt, &evidence)
                        .await;
                    Event::Reconciled(reconciled)
                }
                Step::FetchResult => Event::Fetched(self.result(command).await?),
            };
            step = protocol.step(event, self.now()?)?;
        }
    }
}
