// The crate's documentation is README.md, so that its handler example is compiled as
// a doctest and README and rustdoc cannot drift.
#![doc = include_str!("../README.md")]
//!
//! # Layout
//!
//! The crate root holds what a handler uses: [`Journal`] and its [`Connection`],
//! [`Target`], [`Concurrency`], [`RetryPolicy`] and [`Stats`]; the command's inputs
//! ([`CommandInput`], [`CommandRequest`], [`LeaseId`], [`FenceEpoch`],
//! [`TerminalReferenceFingerprint`], [`ResultEnvelope`]) and outputs
//! ([`RegistrationOutput`], [`StartOutput`], [`LeaseOutput`], [`TerminalOutput`],
//! [`StatusOutput`] and its [`CommandState`]); the one-call protocol ([`Provider`],
//! [`SendRequest`], [`ProviderAnswer`], [`Execution`], [`ProviderPlan`], the
//! lookup's [`sends::LookupRequest`], the retrieve's [`sends::RetrieveRequest`], and the
//! customer's [`sends::CustomerAction`] with its [`sends::ActionName`] and
//! [`sends::Handoff`]); [`JournalError`];
//! [`Clock`] and [`Timestamp`]; and [`verify()`]. The rest is in public modules:
//! [`evidence`] (evidence given from outside, such as a provider's event, and what
//! recording it did), [`identity`] (each validated input and its limits, and
//! [`generate_lease_id`](identity::generate_lease_id)), [`sends`] (the send layer's
//! step-by-step calls and their [`AttemptNumber`](sends::AttemptNumber)), [`ledger`],
//! [`verify`](mod@verify) (the report and its finding codes), [`error`] and
//! [`expected`], [`time`] ([`SystemClock`](time::SystemClock),
//! [`ManualClock`](time::ManualClock)), [`connection`] and [`metrics`].
//!
//! # Packages
//!
//! This library joins two things: the pure core, `command-journal-core` (every
//! operation as a pure `decide` over validated inputs, one captured timestamp and
//! strictly parsed documents; no I/O, no async runtime, no system clock and no system
//! randomness in its dependency tree), and the shell that runs it: `runner` (the one
//! driver of the core's call machine, which every operation runs through: its RPCs
//! over gRPC, its waits, spans and metrics), [`connection`] (the channel and project
//! discovery), `verify`'s scan (streaming reads fed to the core's checks),
//! [`metrics`] (every operation, RPC and retry through the `metrics` facade; the
//! application installs the exporter), and the system clock and lease ids ([`time`],
//! [`identity`]). [`Journal`] has one `impl` (`src/journal.rs`) whose methods each
//! prepare their transition and run it.
//!
//! Beside it: `command-journal-cli` (the `command-journal` binary) and
//! `command-journal-emulator` (the emulator and security-rules test harness, a
//! `[dev-dependencies]` line of a service's tests). docs/architecture.md draws the
//! packages and their arrows.
//!
//! The contract the code implements is written down in `docs/`: `identity.md` (input
//! rules, framing and derived values), `documents.md` (every document and its
//! invariants), `leases.md` (the lease, fence and terminal tables), `providers.md` (the
//! provider send layer: plan, permits, cutoff, outcomes, reconciliation) and `ledger.md`
//! (fingerprint serializers, transfers, replay, lineage and linking).

#![deny(missing_docs)]

pub mod connection;
mod credentials;
pub mod evidence;
mod grpc;
pub mod identity;
mod journal;
pub mod ledger;
pub mod metrics;
pub mod pending;
#[cfg(test)]
mod production_indexes;
pub mod recovery;
mod runner;
pub mod sends;
#[cfg(test)]
mod surface;
pub mod time;
pub mod verify;
// For the workspace's benchmarks, which write documents over raw gRPC: its types are
// the core's `tools`, not a service's API, so it is left out of the documentation.
#[doc(hidden)]
pub mod wire;

/// The one closed error type, [`JournalError`], with stable codes and the classes
/// callers act on (the core's, `command_journal_core::error`).
pub mod error {
    pub use command_journal_core::error::*;
}

/// The fixed rule each field of an `invalid_input` error must follow (the core's,
/// `command_journal_core::expected`).
pub mod expected {
    pub use command_journal_core::expected::*;
}

/// JSON parsing that refuses duplicate keys, unsafe integers and over-deep nesting
/// (the core's, `command_journal_core::strict_json`).
pub mod strict_json {
    pub use command_journal_core::strict_json::*;
}

/// Planted defects of the journal, for the soak's plant suite (the core's,
/// `command_journal_core::plants`): only in a build with the test-only feature
/// `plants`, which no deployed build enables.
#[cfg(feature = "plants")]
pub mod plants {
    pub use command_journal_core::plants::*;
}

pub use command_journal_core::{
    CommandState, Execution, FenceEpoch, LeaseOutput, Provider, ProviderAnswer,
    RegistrationOutcome, RegistrationOutput, ResultEnvelope, SendRequest, StartOutput,
    StatusOutput, TerminalOutput,
};
pub use connection::{Connection, Target};
pub use error::JournalError;
pub use identity::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
pub use journal::Journal;
pub use runner::{Concurrency, RetryPolicy, Stats};
pub use sends::{ProviderAccount, ProviderPlan, ProviderPlanRequest};
pub use time::{Clock, Timestamp};
pub use verify::verify;
