//! command-journal: payment and ledger commands that happen at most once in effect on
//! Google Cloud Firestore.
//!
//! A Cloud Run handler registers the command (immutable, exactly once), acquires a
//! fenced 60 s lease for this worker attempt, calls its provider with the command's
//! provider idempotency key, and records the terminal outcome under the fence it
//! holds. Racing, retrying, crashed and stale workers cannot double-act: a second
//! holder is `Busy`, an expired lease is taken over with the fence plus one, and a
//! stale fence can never finish.
//!
//! ```no_run
//! use command_journal::{
//!     CommandInput, CommandRequest, Connection, Journal, JournalError, LeaseId, LeaseOutput,
//!     OperationSlug, Target, TerminalReferenceFingerprint,
//! };
//!
//! async fn checkout(
//!     journal: &Journal,
//!     uid: &str,
//!     command_id: &str,
//!     payload: &serde_json::Value,
//! ) -> Result<&'static str, JournalError> {
//!     let command = CommandInput::new(CommandRequest {
//!         environment: "production",
//!         caller_scope_kind: "member",
//!         caller_id: uid,
//!         command_id,
//!         command_type: "checkout",
//!         endpoint_schema_version: 1,
//!         payload,
//!     })?;
//!     journal.register_command(&command).await?;
//!     let lease = LeaseId::generate(); // one per worker attempt
//!     match journal.acquire_lease(&command, &lease).await? {
//!         LeaseOutput::Acquired { fence_epoch, .. } => {
//!             let key = command
//!                 .identity()
//!                 .provider_idempotency_key(&OperationSlug::parse("charge")?);
//!             let receipt_sha256 = call_provider(&key).await; // your provider call
//!             let reference = TerminalReferenceFingerprint::parse(&receipt_sha256)?;
//!             journal
//!                 .complete_command(&command, &lease, fence_epoch, &reference)
//!                 .await?;
//!             Ok("charged")
//!         }
//!         LeaseOutput::Busy => Ok("in progress elsewhere, retry later"),
//!         LeaseOutput::Succeeded => Ok("already charged"),
//!         LeaseOutput::FailedFinal => Ok("failed earlier"),
//!     }
//! }
//! # async fn call_provider(_key: &str) -> String { "ab".repeat(32) }
//!
//! # async fn run() -> Result<(), JournalError> {
//! let journal = Journal::new(Connection::connect("my-project", Target::Production).await?);
//! let outcome = checkout(&journal, "member_42", "3f2504e0-4f89-41d3-9a0c-0305e82c3301",
//!     &serde_json::json!({"sku": "tee"})).await?;
//! # let _ = outcome;
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! Every item a caller uses is re-exported here, at the crate root; the modules
//! themselves are private. Every operation is a pure `decide` over validated inputs, one
//! captured timestamp and strictly parsed documents, run by one transaction runner.
//!
//! Pure (no I/O, no clock): `identity` and `digest` (validated inputs and derived
//! values), `document` and `ledger`'s codecs (strict document parsing), `envelope`
//! (result envelopes: the codec of `results/current`, storing one with a success,
//! reading it back), `transaction`
//! (the transition contract: `paths`, `decide`, `Decision`), `registration`, `lease`,
//! `start` and `ledger::{accept, replay, migration}` (the decisions), `verify::commerce`,
//! `verify::ledger` and `verify::historical_links` (the verifier's checks),
//! `strict_json`, `expected`, `runner::attempt` (the attempt machine: what to read,
//! commit or answer next); and `testing` (tests and the `fuzzing` feature only), the
//! one in-memory store, which runs a `decide` through that same attempt machine for
//! the unit tests and fuzz targets.
//!
//! I/O: `runner` (drives the attempt machine over gRPC, retries), `connection` and
//! `credentials` (gRPC channel, project discovery), `verify::scan` (streaming reads for
//! [`verify`]; its point reads go through the runner's Firestore calls), and
//! `emulator` (the test harness, feature `emulator`). [`Journal`] (with
//! `ledger::operations` for the ledger calls) joins a pure operation to the runner, and
//! [`verify`] feeds the scan to the pure checks; `time` holds the trusted clock.
//!
//! The contract the code implements is written down in `docs/`: `identity.md` (input
//! rules, framing and derived values), `documents.md` (every document and its
//! invariants), `leases.md` (the lease, fence and terminal tables), `providers.md` (the
//! provider send layer: plan, permits, cutoff, outcomes, reconciliation) and `ledger.md`
//! (fingerprint serializers, transfers, replay, lineage and linking).
//!
//! # Features
//!
//! `cli` (the binary's dependencies) and `emulator` (the harness) are on by default;
//! `testcontainers` runs the harness's emulator in a container; `fuzzing` exposes the
//! entry points of `fuzz/` and the internals the benchmarks drive, neither of which is
//! a supported API.

#![deny(missing_docs)]

mod connection;
mod credentials;
mod digest;
mod document;
#[cfg(feature = "emulator")]
pub mod emulator;
mod envelope;
mod error;
mod execute;
mod expected;
/// Fuzzing entry points (cargo feature `fuzzing`): harness code with oracle
/// assertions, kept out of the library proper.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod identity;
mod journal;
mod lease;
mod ledger;
mod metrics;
#[cfg(test)]
mod production_indexes;
mod registration;
#[cfg(feature = "rules-testing")]
pub mod rules_testing;
mod runner;
mod sends;
mod start;
pub mod strict_json;
/// The in-memory store the unit tests and fuzz targets share (tests and the
/// `fuzzing` feature only); not a supported API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod testing;
mod time;
mod transaction;
mod verify;

pub use crate::metrics::describe_metrics;
pub use connection::{Connection, DEFAULT_DATABASE, Target};
pub use credentials::resolve_project;
pub use digest::Digest;
pub use envelope::{MAX_RESULT_ENVELOPE_BYTES, ResultEnvelope};
pub use error::{ConfigCause, ErrorClass, GrpcCode, JournalError};
pub use execute::{Execution, LookupResult, Provider, SendRequest, SendResult};
pub use expected::expected_for;
pub use identity::{
    CallerId, CallerScopeKind, CommandId, CommandIdentity, CommandInput, CommandRequest,
    CommandType, EndpointSchemaVersion, Environment, LeaseId, LedgerKey,
    MAX_CANONICAL_PAYLOAD_BYTES, MAX_LEDGER_PART_BYTES, MAX_PAYLOAD_DEPTH, MAX_SAFE_INTEGER,
    OperationSlug, Payload, TerminalReferenceFingerprint,
};
pub use journal::Journal;
pub use lease::{LeaseOutput, StatusOutput, TerminalOutput};
pub use ledger::fingerprint::{
    Amount, COMPENSATION_SUBTYPE_KEY, CURRENT_FINGERPRINT_VERSION, CommandFamily, EffectPlanItem,
    Fingerprint, FingerprintInput, Intent, MAX_EFFECTS, MAX_TEXT_BYTES, TRANSFER_KEYS,
    TransferPlan, V4_EFFECT_KEYS,
};
pub use ledger::{
    HistoricalCommand, LedgerEffect, LedgerOutcome, LedgerReplay, LedgerScope, Lineage, Outcome,
    ReversalAuthority, TransferLeg,
};
pub use registration::{RegistrationOutcome, RegistrationOutput};
pub use runner::{
    BACKOFF_BASE, BACKOFF_CAP, Concurrency, MAX_ATTEMPTS, RPC_TIMEOUT, Stats,
    TRANSACTION_BACKOFF_BASE, TRANSACTION_BACKOFF_CAP,
};
pub use sends::{
    AttemptState, BeginSendOutput, CommandStatus, ProviderMode, ProviderPlan, ProviderPlanRequest,
    SendEvidence, SendOutcome, SendOutcomeOutput, SendPermit, SendStatus,
};
pub use start::StartOutput;
pub use time::{Clock, ManualClock, SystemClock, Timestamp};
pub use verify::{
    Finding, FindingCode, MAX_FINDINGS, ScanRanges, Scanned, VerifyReport, count_documents, verify,
    verify_in_ranges,
};

/// The pure transition contract and the prepared operations, for the benchmarks and
/// fuzz targets (cargo feature `fuzzing`). Not a supported API: it changes freely.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod internals {
    pub use crate::lease::{Acquire, LeaseCall, Terminal, TerminalRequest};
    pub use crate::registration::Registration;
    pub use crate::start::Start;
    pub use crate::transaction::{Decision, MAX_FOLLOW_UP_READS, Snapshot, Transition, Write};

    /// Runs any `op` through `journal`'s runner, as its own operations are run.
    pub async fn run<T: Transition>(
        journal: &crate::Journal,
        op: &T,
    ) -> Result<T::Output, crate::JournalError> {
        journal.run_unrecorded(op).await
    }
}
