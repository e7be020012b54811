// The crate's documentation is README.md, so that its handler example is compiled
// as a doctest and README and rustdoc cannot drift. That example adapts a provider with
// reqwest, which the default `emulator` feature brings.
#![cfg_attr(feature = "emulator", doc = include_str!("../README.md"))]
//!
//! # Layout
//!
//! The crate root holds what a handler uses (29 names): [`Journal`] and its
//! [`Connection`], [`Target`], [`Concurrency`], [`RetryPolicy`] and [`Stats`]; the
//! command's inputs ([`CommandInput`], [`CommandRequest`], [`LeaseId`], [`FenceEpoch`],
//! [`TerminalReferenceFingerprint`], [`ResultEnvelope`]) and outputs
//! ([`RegistrationOutput`], [`StartOutput`], [`LeaseOutput`], [`TerminalOutput`],
//! [`StatusOutput`]); the one-call protocol ([`Provider`], [`SendRequest`],
//! [`SendResult`], [`LookupResult`], [`Execution`], [`ProviderPlan`]); [`JournalError`];
//! [`Clock`] and [`Timestamp`]; and [`verify()`]. The rest is in public modules:
//! [`identity`] (each validated input and its limits), [`sends`] (the send layer's
//! step-by-step calls), [`ledger`], [`verify`](mod@verify) (the report and its finding
//! codes), [`error`], [`time`] (`SystemClock`, `ManualClock`), [`connection`] and
//! [`metrics`]. Every operation is a pure `decide` over validated inputs, one
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
//! [`verify()`]; its point reads go through the runner's Firestore calls), and
//! `emulator` (the test harness, feature `emulator`). [`Journal`] (with
//! `ledger::operations` for the ledger calls) joins a pure operation to the runner, and
//! [`verify()`] feeds the scan to the pure checks; `time` holds the trusted clock;
//! `metrics` counts every operation, RPC and retry through the `metrics` facade
//! (`docs/metrics.md`; the application installs the exporter).
//!
//! The contract the code implements is written down in `docs/`: `identity.md` (input
//! rules, framing and derived values), `documents.md` (every document and its
//! invariants), `leases.md` (the lease, fence and terminal tables), `providers.md` (the
//! provider send layer: plan, permits, cutoff, outcomes, reconciliation) and `ledger.md`
//! (fingerprint serializers, transfers, replay, lineage and linking).
//!
//! # Features
//!
//! `cli` (the binary's dependencies), `emulator` (the harness) and `rules-testing` (the
//! rules harness and the CLI's `rules check`) are on by default; `testcontainers` runs
//! the harness's emulator in a container; `fuzzing` exposes the
//! entry points of `fuzz/` and the internals the benchmarks drive, neither of which is
//! a supported API.

#![deny(missing_docs)]

/// The `command-journal` binary's implementation (argument parsing, subcommands, the
/// demo); `src/main.rs` only calls it. Not a supported API.
#[cfg(all(feature = "cli", feature = "emulator"))]
#[doc(hidden)]
pub mod cli;
pub mod connection;
mod credentials;
mod digest;
mod document;
#[cfg(feature = "emulator")]
pub mod emulator;
mod envelope;
pub mod error;
mod execute;
mod expected;
mod fence;
/// Fuzzing entry points (cargo feature `fuzzing`): harness code with oracle
/// assertions, kept out of the library proper.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod identity;
mod journal;
mod lease;
pub mod ledger;
pub mod metrics;
#[cfg(test)]
mod production_indexes;
mod registration;
#[cfg(feature = "rules-testing")]
pub mod rules_testing;
mod runner;
pub mod sends;
mod start;
pub mod strict_json;
#[cfg(test)]
mod surface;
/// The in-memory store the unit tests and fuzz targets share (tests and the
/// `fuzzing` feature only); not a supported API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod testing;
pub mod time;
mod transaction;
pub mod verify;

pub use connection::{Connection, Target};
pub use envelope::ResultEnvelope;
pub use error::JournalError;
pub use execute::{Execution, LookupResult, Provider, SendRequest, SendResult};
pub use fence::FenceEpoch;
pub use identity::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
pub use journal::Journal;
pub use lease::{LeaseOutput, StatusOutput, TerminalOutput};
pub use registration::{RegistrationOutcome, RegistrationOutput};
pub use runner::{Concurrency, RetryPolicy, Stats};
pub use sends::{ProviderPlan, ProviderPlanRequest};
pub use start::StartOutput;
pub use time::{Clock, Timestamp};
pub use verify::verify;

/// The pure transition contract and the prepared operations, for the benchmarks and
/// fuzz targets (cargo feature `fuzzing`). Not a supported API: it changes freely.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod internals {
    pub use crate::lease::{Acquire, LeaseCall, Terminal, TerminalRequest};
    pub use crate::registration::Registration;
    pub use crate::runner::wire::fields_to_wire;
    pub use crate::start::Start;
    pub use crate::transaction::{
        Decision, MAX_FOLLOW_UP_READS, OperationName, Snapshot, Transition, Write,
    };

    /// Runs any `op` through `journal`'s runner, as its own operations are run.
    pub async fn run<T: Transition>(
        journal: &crate::Journal,
        op: &T,
    ) -> Result<T::Output, crate::JournalError> {
        journal.run_unrecorded(op).await
    }
}
