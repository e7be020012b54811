//! A security-rules test harness for the Firestore emulator: what `@firebase/rules-unit-testing` offers, in Rust.
//!
//! A [`TestEnvironment`] loads one ruleset into a project of its own on an emulator
//! started (or reused) by [`crate::emulator`]. It hands out client contexts:
//! unauthenticated, or authenticated as a uid with any claims through an unsigned
//! mock ID token built exactly as the JavaScript library builds it, and a context
//! that bypasses the rules for seeding. Every [`Context`] operation (get, list,
//! query, collection-group query, count, batch get, create, update, upsert, delete,
//! commit, over REST, and get, batch get and commit over gRPC) answers an
//! [`Outcome`] read from the status the emulator gave: `PERMISSION_DENIED` is
//! [`Outcome::Denied`], never a bare HTTP 403. [`assert_denied`] and
//! [`assert_allowed`] check one.
//!
//! [`journal_denial_matrix`] tries every journal path with every operation from every
//! [`ClientContext`] and reports each result; `command-journal rules check` prints it.
//!
//! ```no_run
//! use command_journal_emulator::rules_testing::{TestEnvironment, assert_allowed, assert_denied};
//! use serde_json::json;
//!
//! # async fn example() -> Result<(), command_journal_emulator::rules_testing::RulesTestError> {
//! let rules = std::fs::read_to_string("firestore.rules").unwrap_or_default();
//! let env = TestEnvironment::new(&rules).await?;
//! env.seed("profiles/alice", &json!({"name": "Alice"})).await?;
//!
//! let alice = env.authenticated_context("alice", json!({"email_verified": true}))?;
//! assert_allowed(alice.get("profiles/alice").await)?;
//! assert_denied(env.unauthenticated_context().get("profiles/alice").await)?;
//!
//! let report = command_journal_emulator::rules_testing::journal_denial_matrix(&env).await?;
//! assert!(report.all_denied(), "{:?}", report.not_denied());
//! # Ok(())
//! # }
//! ```

mod context;
mod coverage;
mod environment;
mod matrix;
mod outcome;
mod ruleset;
pub mod token;

pub use context::{CommitWrite, Context};
pub use coverage::{Coverage, JOURNAL_GUARD, guard_coverage};
pub use environment::TestEnvironment;
pub use matrix::{
    Cell, ClientContext, MatrixReport, Operation, SEEDED_KEY, TARGETS, Target, cells,
    changed_documents, journal_denial_matrix, seed_journal,
};
pub use outcome::{
    Outcome, RulesTestError, assert_allowed, assert_denied, classify_grpc, classify_rest,
};
pub use ruleset::{BEGIN_MARKER, END_MARKER, journal_blocks, merged_into_app};
