//! The one driver every call of the journal goes through: it performs the I/O the
//! core's sans-I/O call machine (`command_journal_core::tools::call`) asks for, and
//! nothing else: reads, commits, rollbacks, the backoff's wait, the provider's send and
//! lookup. The machine owns every decision (the planned, blind or read first attempt,
//! the fallback, the retry budget); the driver owns the clock, randomness, timeouts,
//! deadlines, spans and metrics. This module and [`crate::connection`] are the only
//! ones of the journal's operations that do I/O.
//!
//! Two concurrency modes share everything but how an attempt is fenced
//! ([`Concurrency`]):
//!
//! - **preconditions**: one consistent `BatchGetDocuments` with no transaction, and,
//!   for a mutation only, one atomic `Commit` whose every write carries a precondition
//!   on the state read: `exists: false` for a document created, `updateTime` equal to
//!   the read one for a document replaced. Documents read but never written (roots,
//!   audit events, reservations) are immutable by contract, so a decision can only be
//!   invalidated by a write that also breaks one of those preconditions. 2 RPCs per
//!   committed mutation, 1 per observation, no lock held on the server.
//! - **transaction**: the first `BatchGetDocuments` opens a read-write transaction
//!   (`new_transaction`; on a retry `retry_transaction` names the previous one, so
//!   production Firestore keeps its priority), follow-up reads run inside it, the
//!   `Commit` carries its id (writes keep their preconditions), and `Rollback` is sent
//!   whenever the attempt ends without a commit (retried within a bound). The
//!   transaction is owned from the moment its id arrives, so that one its call cannot
//!   end (the caller dropped the future, the rollback was not delivered) is rolled back
//!   by a background reaper. No `BeginTransaction`: 2 RPCs per committed mutation, 2
//!   per observation.
//!   A creation needs no read lock, so two fast paths before it take none, in this
//!   order: an opting-in operation's blind creation (`core/src/transaction/blind.rs`),
//!   as in preconditions mode; then, for an operation that opts in with
//!   `Transition::first_read_unlocked` (register, acquire, start, a ledger accept
//!   without originals), a first read-and-decide attempt without a transaction. Its
//!   observation or rejection is the answer (1 RPC); its mutation is committed without
//!   a transaction when, every document decided on and read absent given an absence
//!   guard, each write is under `exists: false`: no mutable document was read
//!   present, the present ones are immutable, so the commit proves the whole snapshot
//!   decided on, as the transaction's locks would. Any other decision ends that
//!   attempt unsent, and a commit it loses to a document that appeared writes
//!   nothing: either way the read-write transaction follows at once, unbudgeted.
//!
//! Retries: a lost precondition race (ALREADY_EXISTS, FAILED_PRECONDITION or NOT_FOUND
//! on a commit), ABORTED, UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED,
//! CANCELLED and UNKNOWN (a connection lost mid-RPC) are retried with full-jitter
//! exponential backoff, up to [`RetryPolicy`]'s attempts (a refused blind, planned or
//! unlocked commit wrote nothing and spends none of them: a read always follows it);
//! RESOURCE_EXHAUSTED waits at least the
//! largest backoff. In transaction mode ABORTED backs off for about a second and more
//! (the policy's contention backoff): its conflicts are held
//! locks, not lost preconditions. Every operation is idempotent, so a retry after an
//! unknown commit outcome re-reads and converges. Configuration refusals (credentials,
//! PERMISSION_DENIED, UNAUTHENTICATED, NOT_FOUND or FAILED_PRECONDITION on a read,
//! INVALID_ARGUMENT) end the operation after one attempt with their own error. The
//! trusted time is captured by the caller once and lives in the prepared operation, so
//! every attempt reuses it. An optional deadline bounds the whole call, on the
//! monotonic clock, the provider's calls of an `execute` included. Every RPC's answer
//! and every retry is counted in the operator metrics ([`crate::metrics`]).
//!
//! Layout, one concern per file, no file importing one that imports it back:
//!
//! - `firestore.rs`: the Firestore calls (`BatchGetDocuments`, `Commit`) and the raw
//!   writes; the verifier reads through it too;
//! - `reaper.rs`: the transaction a read opened, owned from its id's arrival, the
//!   call's bounded `Rollback`, and the background reaper of the ones a call cannot
//!   end;
//! - `retry.rs`: which failure is retried, the backoff, the tuning constants;
//! - `counters.rs`: [`Counters`] and [`Stats`]; `concurrency.rs`: [`Concurrency`];
//! - `engine.rs`: what a journal and its clones share (connection, clock, counters,
//!   options), the captured time and the calls prepared from a caller's input;
//! - `driver.rs`: the driver's loop, its clocks, spans and metrics.

mod concurrency;
mod counters;
mod driver;
mod engine;
pub(crate) mod firestore;
mod policy;
mod reaper;
pub(crate) mod retry;

pub use concurrency::Concurrency;

pub use counters::Stats;

pub(crate) use engine::{Calling, Engine, Unrecorded};
pub use policy::RetryPolicy;
