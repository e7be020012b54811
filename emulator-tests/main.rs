//! Tests of the transactional shell against the real Firestore emulator.
//!
//! The harness starts one emulator for this binary (or reuses
//! `FIRESTORE_EMULATOR_HOST`); each test works in its own project.
//!
//! Every journal here runs in preconditions mode ([`MODE`]); the `emulator-transaction`
//! binary runs the race modules again in transaction mode.

/// The concurrency mode every journal built by `support` uses in this binary.
pub const MODE: command_journal::Concurrency = command_journal::Concurrency::Preconditions;

mod billing;
mod canary;
mod cancellation;
mod checkout_service;
mod cli;
mod cli_docs;
mod cli_help;
mod cli_operator;
mod customer;
mod databases;
mod differential;
mod downstream;
mod dropped;
mod errors;
mod evidence;
mod execute;
mod faults;
// Runs its own transition through `Journal::run_transition`.
mod follow_ups;
mod harness;
mod lease;
mod ledger;
mod ledger_bookkeeping;
mod local_recipe;
mod pending;
mod provider_model;
mod proxy;
mod randomized;
mod recovery;
mod registration;
mod release;
mod results;
mod send_faults;
mod send_randomized;
mod sends;
mod soak;
mod spans;
mod start;
mod status_server;
mod stranded;
mod support;
mod tampering;
mod unlocked;
mod verify;
