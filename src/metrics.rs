//! Operator metrics, recorded through the `metrics` facade crate.
//!
//! The library installs no recorder and links no exporter: an application that
//! installs one (the checkout service's Prometheus recorder, say) sees every
//! operation, RPC and retry; without one every call here is a no-op. `docs/metrics.md`
//! lists every name, label and value.
//!
//! Every label value is a fixed string from this crate's code: an operation name, an
//! outcome, an error code or a gRPC code. No label ever carries an input, an id, a
//! hash, a key or a count, so the series are bounded and nothing secret leaves.

use crate::envelope::ResultEnvelope;
use crate::error::{GrpcCode, JournalError};
use crate::execute::Execution;
use crate::lease::{LeaseOutput, StatusOutput, TerminalOutput};
use crate::ledger::{LedgerOutcome, LedgerReplay};
use crate::registration::{RegistrationOutcome, RegistrationOutput};
use crate::sends::{BeginSendOutput, CommandStatus, SendOutcomeOutput};
use crate::start::StartOutput;
use crate::transaction::OperationName;
use std::time::Duration;

/// Counter: operations by `operation` and `outcome`.
pub(crate) const OPERATIONS_TOTAL: &str = "command_journal_operations_total";
/// Histogram (seconds): the whole operation, retries included, by `operation`.
pub(crate) const OPERATION_DURATION_SECONDS: &str = "command_journal_operation_duration_seconds";
/// Counter: Firestore RPCs by `rpc` and the gRPC `code` they ended with.
pub(crate) const RPCS_TOTAL: &str = "command_journal_rpcs_total";
/// Counter: attempts the runner retried, by the gRPC `code` that caused the retry.
pub(crate) const RPC_RETRIES_TOTAL: &str = "command_journal_rpc_retries_total";

/// Gauge: commands `Journal::pending` (or a recovery's listing) found waiting, by
/// `reason` (what would unblock them), set at each listing.
pub(crate) const PENDING_COMMANDS: &str = "command_journal_pending_commands";
/// Counter: commands a recovery job handled, by `outcome` (how it ended, or an error
/// code).
pub(crate) const RECOVERIES_TOTAL: &str = "command_journal_recoveries_total";

/// The `rpc` label of a `BatchGetDocuments`.
pub(crate) const RPC_BATCH_GET: &str = "batch_get_documents";
/// The `rpc` label of a `Commit`.
pub(crate) const RPC_COMMIT: &str = "commit";
/// The `rpc` label of a `Rollback`.
pub(crate) const RPC_ROLLBACK: &str = "rollback";

/// Registers the unit and help text of every metric above with the recorder
/// installed now (call it once after installing one, so an exporter can print
/// `# HELP` lines). Records nothing.
pub fn describe_metrics() {
    ::metrics::describe_counter!(
        OPERATIONS_TOTAL,
        "Journal operations by operation and outcome (an outcome or an error code)."
    );
    ::metrics::describe_histogram!(
        OPERATION_DURATION_SECONDS,
        ::metrics::Unit::Seconds,
        "Duration of one journal operation, retries included."
    );
    ::metrics::describe_counter!(
        RPCS_TOTAL,
        "Firestore RPCs sent by the journal, by RPC and gRPC status code."
    );
    ::metrics::describe_gauge!(
        PENDING_COMMANDS,
        "Commands waiting at the last listing, by what would unblock them."
    );
    ::metrics::describe_counter!(
        RECOVERIES_TOTAL,
        "Commands a recovery job handled, by outcome (or error code)."
    );
    ::metrics::describe_counter!(
        RPC_RETRIES_TOTAL,
        "Journal attempts retried, by the gRPC status code that caused the retry."
    );
}

/// Records one finished operation: `command_journal_operations_total{operation,
/// outcome}` plus one and its duration in `command_journal_operation_duration_seconds
/// {operation}`. The entry point for operations that are not a single transition
/// (`execute`, for instance).
pub(crate) fn operation(operation: &'static str, outcome: &'static str, elapsed: Duration) {
    ::metrics::counter!(OPERATIONS_TOTAL, "operation" => operation, "outcome" => outcome)
        .increment(1);
    ::metrics::histogram!(OPERATION_DURATION_SECONDS, "operation" => operation)
        .record(elapsed.as_secs_f64());
}

/// The `operation` label of an operation: its span name without `journal.`.
pub(crate) fn operation_label(name: OperationName) -> &'static str {
    name.label()
}

/// The `outcome` label of an error: its stable code.
pub(crate) fn error_outcome(error: &JournalError) -> &'static str {
    error.code()
}

/// Records the result of a call that is not one transition under `operation`.
pub(crate) fn record_call<O: MetricOutcome>(
    operation: &'static str,
    result: &Result<O, JournalError>,
    elapsed: Duration,
) {
    let outcome = match result {
        Ok(output) => output.metric_outcome(),
        Err(error) => error_outcome(error),
    };
    self::operation(operation, outcome, elapsed);
}

/// Records a transition's result under its name.
pub(crate) fn record<O: MetricOutcome>(
    name: OperationName,
    result: &Result<O, JournalError>,
    elapsed: Duration,
) {
    record_call(operation_label(name), result, elapsed);
}

/// One RPC answered (or timed out, counted as `DEADLINE_EXCEEDED`).
pub(crate) fn rpc(rpc: &'static str, code: GrpcCode) {
    ::metrics::counter!(RPCS_TOTAL, "rpc" => rpc, "code" => code.as_str()).increment(1);
}

/// One attempt retried after `code`.
pub(crate) fn retry(code: GrpcCode) {
    ::metrics::counter!(RPC_RETRIES_TOTAL, "code" => code.as_str()).increment(1);
}

/// The listing's count of waiting commands for every reason (zeros included, so a
/// settled reason drops to 0 rather than keeping its last value).
pub(crate) fn pending(listing: &[command_journal_core::pending::PendingCommand]) {
    for reason in command_journal_core::pending::Unblock::ALL {
        let count = listing.iter().filter(|p| p.unblocked_by == reason).count();
        #[allow(clippy::cast_precision_loss)]
        ::metrics::gauge!(PENDING_COMMANDS, "reason" => reason.as_str()).set(count as f64);
    }
}

/// One command's recovery ended with `outcome` (a [`Recovered`] label or an error
/// code).
///
/// [`Recovered`]: command_journal_core::recovery::Recovered
pub(crate) fn recovery(outcome: &'static str) {
    ::metrics::counter!(RECOVERIES_TOTAL, "outcome" => outcome).increment(1);
}

/// The `outcome` label an operation's answer records.
pub(crate) trait MetricOutcome {
    /// A fixed snake_case word.
    fn metric_outcome(&self) -> &'static str;
}

impl MetricOutcome for RegistrationOutput {
    fn metric_outcome(&self) -> &'static str {
        match self.outcome() {
            RegistrationOutcome::RegisteredNew => "registered_new",
            RegistrationOutcome::RegisteredExisting => "registered_existing",
        }
    }
}

/// `acquired` (fence 1), `recovered` (a takeover: any fence above 1), `busy`, or
/// `replayed` (the command is already terminal).
impl MetricOutcome for LeaseOutput {
    fn metric_outcome(&self) -> &'static str {
        match self {
            Self::Acquired { fence_epoch, .. } if fence_epoch.get() > 1 => "recovered",
            Self::Acquired { .. } => "acquired",
            Self::Busy => "busy",
            Self::Succeeded | Self::FailedFinal => "replayed",
        }
    }
}

/// The lease part's outcome: a start is counted by what its acquisition answered.
impl MetricOutcome for StartOutput {
    fn metric_outcome(&self) -> &'static str {
        self.lease.metric_outcome()
    }
}

impl MetricOutcome for TerminalOutput {
    fn metric_outcome(&self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::FailedFinal => "failed_final",
        }
    }
}

/// The state read.
impl MetricOutcome for StatusOutput {
    fn metric_outcome(&self) -> &'static str {
        self.state.as_str()
    }
}

/// The command's state read.
impl MetricOutcome for CommandStatus {
    fn metric_outcome(&self) -> &'static str {
        self.command.state.as_str()
    }
}

/// `permitted` (a first send of the attempt), `resent` (the same attempt and key
/// after a takeover) or `replayed` (terminal: nothing to send).
impl MetricOutcome for BeginSendOutput {
    fn metric_outcome(&self) -> &'static str {
        match self {
            Self::Permitted(permit) if permit.resend => "resent",
            Self::Permitted(_) => "permitted",
            Self::Terminal(_) => "replayed",
        }
    }
}

/// `succeeded`, `failed_final`, `ambiguous` or `absent`.
impl MetricOutcome for SendOutcomeOutput {
    fn metric_outcome(&self) -> &'static str {
        match self {
            Self::Terminal(terminal) => terminal.metric_outcome(),
            Self::Ambiguous { .. } => "ambiguous",
            Self::Absent { .. } => "absent",
        }
    }
}

/// `found` (a succeeded command's stored envelope) or `none`.
impl MetricOutcome for Option<ResultEnvelope> {
    fn metric_outcome(&self) -> &'static str {
        match self {
            Some(_) => "found",
            None => "none",
        }
    }
}

/// One listed command read: what would unblock it (`retry`, `resend_or_evidence`,
/// `evidence`, `evidence_or_person`), or `not_pending` (its lease still runs, or it
/// settled since the listing).
impl MetricOutcome for Option<command_journal_core::pending::PendingCommand> {
    fn metric_outcome(&self) -> &'static str {
        match self.as_ref().map(|p| p.unblocked_by) {
            None => "not_pending",
            Some(reason) => reason.as_str(),
        }
    }
}

/// How one command's recovery ended: [`Recovered::as_str`].
///
/// [`Recovered::as_str`]: command_journal_core::recovery::Recovered::as_str
impl MetricOutcome for command_journal_core::recovery::Recovered {
    fn metric_outcome(&self) -> &'static str {
        self.as_str()
    }
}

/// What one `execute` answered: `succeeded`, `succeeded_without_result`,
/// `declined`, `in_progress`, `retry_later` or `pending_reconciliation`.
impl MetricOutcome for Execution {
    fn metric_outcome(&self) -> &'static str {
        match self {
            Self::Succeeded(_) => "succeeded",
            Self::SucceededWithoutResult => "succeeded_without_result",
            Self::Declined => "declined",
            Self::InProgress => "in_progress",
            Self::RetryLater { .. } => "retry_later",
            Self::PendingReconciliation => "pending_reconciliation",
        }
    }
}

/// `accepted`, `replayed`, `linked` or `already_linked`.
impl MetricOutcome for LedgerOutcome {
    fn metric_outcome(&self) -> &'static str {
        self.outcome.as_str()
    }
}

/// The replayed outcome's word, or `not_reserved`.
impl MetricOutcome for LedgerReplay {
    fn metric_outcome(&self) -> &'static str {
        match self {
            Self::Replayed(outcome) => outcome.metric_outcome(),
            Self::NotReserved { .. } => "not_reserved",
        }
    }
}

#[cfg(test)]
mod tests;
