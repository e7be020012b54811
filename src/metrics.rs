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

use command_journal_core::error::GrpcCode;
use command_journal_core::tools::transaction::OperationName;
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
/// Gauge: the late charges at the last listing (charges their commands ended
/// without, for a person to refund).
pub(crate) const LATE_CHARGES: &str = "command_journal_late_charges";

/// Counter: read-write transactions the background reaper finished with, by
/// `outcome`: [`STRANDED_RELEASED`], [`STRANDED_GONE`] or [`STRANDED_ABANDONED`].
pub(crate) const STRANDED_TRANSACTIONS_TOTAL: &str = "command_journal_stranded_transactions_total";
/// The reaper's rollback released the transaction.
pub(crate) const STRANDED_RELEASED: &str = "released";
/// The server no longer knew the transaction (expired, or committed): nothing held.
pub(crate) const STRANDED_GONE: &str = "gone";
/// The reaper spent its attempts, had no runtime, was stopped with its runtime or
/// was full: the server releases the transaction when it expires.
pub(crate) const STRANDED_ABANDONED: &str = "abandoned";

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
    ::metrics::describe_gauge!(
        LATE_CHARGES,
        "Charges their commands ended without at the last listing, for a person to refund."
    );
    ::metrics::describe_counter!(
        RPC_RETRIES_TOTAL,
        "Journal attempts retried, by the gRPC status code that caused the retry."
    );
    ::metrics::describe_counter!(
        STRANDED_TRANSACTIONS_TOTAL,
        "Transactions a call could not end, as the background reaper finished with them, by outcome."
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

/// One RPC answered (or timed out, counted as `DEADLINE_EXCEEDED`).
pub(crate) fn rpc(rpc: &'static str, code: GrpcCode) {
    ::metrics::counter!(RPCS_TOTAL, "rpc" => rpc, "code" => code.as_str()).increment(1);
}

/// The reaper finished with one transaction, with `outcome`.
pub(crate) fn stranded(outcome: &'static str) {
    ::metrics::counter!(STRANDED_TRANSACTIONS_TOTAL, "outcome" => outcome).increment(1);
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

/// The listing's count of late charges.
pub(crate) fn late_charges(count: usize) {
    #[allow(clippy::cast_precision_loss)]
    ::metrics::gauge!(LATE_CHARGES).set(count as f64);
}

/// One command's recovery ended with `outcome` (a [`Recovered`] label or an error
/// code).
///
/// [`Recovered`]: command_journal_core::recovery::Recovered
pub(crate) fn recovery(outcome: &'static str) {
    ::metrics::counter!(RECOVERIES_TOTAL, "outcome" => outcome).increment(1);
}

#[cfg(test)]
mod tests;
