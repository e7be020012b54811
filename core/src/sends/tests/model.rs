//! A model of the send protocol, checked exhaustively by the `stateright` model
//! checker at small bounds (issue 34, deliverable 5).
//!
//! Nothing in the model restates a rule of the journal or of `execute` (only, with a
//! rule reverted, what the driver before issue 34 did differently). The journal is
//! the in-memory [`Store`](crate::testing::Store) running the real operations
//! (`start`, `begin_send`, `record_send_outcome`, `reconcile_send`, `status`,
//! `result`); each worker is the real [`Protocol`](crate::execute::protocol::Protocol)
//! of `Journal::execute`, replayed from the answers it was given (it is neither
//! `Clone` nor `Hash`, so a call keeps its answers; `worker`). Around them the
//! model adds what no test of one call can: a global clock that jumps between a few
//! instants that matter (a lease's end, the cutoff, the settle window, the key
//! retention), workers that crash or lose an answer, one worker that may be deployed
//! with another plan, and a provider that processes a request late, answers lookups
//! from an index that lags and forgets keys after the retention (`provider`).
//!
//! The oracle is the provider's ledger: at most one charge for the command's keys, in
//! every reachable state. Beside it, a success or decline presented while its sender's
//! lease runs is always recorded, and no operation fails closed. Each proven-safety
//! rule can be reverted
//! ([`with_reverted`](crate::sends::reverted::with_reverted), set around every
//! transition so that the checker's own thread sees it), and the checker then finds
//! the counterexample the rule prevents (`tests`).
//!
//! | action | what happens |
//! |---|---|
//! | `Call(w, plan)` | worker `w` starts an `execute` call (a fresh lease id) with that plan, and performs its `start` |
//! | `Step(w)` | worker `w` performs its protocol's next step: a journal operation at the clock's instant, or a lookup; a permitted send is put on the wire at once |
//! | `Answer(w)` | the provider's success reaches worker `w`, before its send deadline |
//! | `Timeout(w)` | worker `w`'s send ends without an answer (timeout, lost response) |
//! | `Yield(w)` | worker `w`, holding an answer or a lookup's evidence, pauses until the clock moves |
//! | `Crash(w)` | worker `w` dies holding an answer or a lookup's evidence: its call is gone, its request stays on the wire |
//! | `Process(i)` | the provider processes request `i` on the wire: a charge, or the replay of a retained key |
//! | `Drop(i)` | request `i` never reaches the provider |
//! | `CatchUp(key)` | the provider's lookup index catches up with `key`'s charge |
//! | `Tick` | the clock moves to the next instant, once every request and charge whose settle window ends by then is settled |
//!
//! One worker runs at a time within an instant, until it waits for the provider, ends
//! or yields (`worker::Turn`): journal operations are serialized by the lease and the
//! provider's actions commute with them, so this drops only orderings that change
//! nothing.

mod journal;
mod provider;
mod system;
mod tests;
mod worker;
mod world;
