//! A model of the send protocol, checked exhaustively by the `stateright` model
//! checker at small bounds.
//!
//! Nothing in the model restates a rule of the journal or of `execute` (only, with a
//! rule reverted, what a driver without that rule did differently). The journal is
//! the in-memory [`Store`](crate::testing::Store) running the real operations
//! (`start`, `begin_send`, `record_send_outcome`, `reconcile_send`, `status`,
//! `result`); each worker's call is the real
//! [`ExecuteProgram`](crate::execute::program::ExecuteProgram) of `Journal::execute`
//! (with the settle program it runs), fed every answer as the call machine feeds it
//! and asked for its next step the same way (`worker`): the model performs what the
//! program asks for, and `binding` holds the model's steps to the machine's. Around them the
//! model adds what no test of one call can: a global clock that jumps between a few
//! instants that matter (a lease's end, the cutoff, the settle window, the key
//! retention), each worker's own clock ahead of it by a fixed skew, workers that crash
//! or lose an answer, one worker that may be deployed with another plan, and a
//! provider that processes a request late, answers lookups from an index that lags and
//! forgets keys after the retention (`provider`); in the customer's mode, one whose
//! every new key leaves an object that waits for the customer, who pays it, fails its
//! challenge or never acts, at any instant, and which the provider reads by id and
//! cancels as asked (`objects`, checked in `customer`).
//!
//! Journal operations run as production runs them in preconditions mode
//! (`system::Mode`; `driver`): a call keeps what its own last read or commit left
//! known (`memory`, built from the store's answers and its commits' write results)
//! and decides its next transition from it with the real `known::plan` (a new
//! command's opening with `known::chain`); that commit lands, under the preconditions
//! `known::plan` built, at a later action, against the journal as it then stands, and
//! a refused one reads and decides at once, as the runner does. A read path's read
//! and its commit are two actions too. The atomic mode (each operation read, decided
//! and committed in one action) is what transaction mode guarantees.
//!
//! The oracle is the provider's ledger: at most one charge for the command's keys, in
//! every reachable state. Beside it: a success or decline presented while its
//! sender's lease runs (on every clock) is always recorded; no operation fails closed;
//! every commit of the send layer under fence f lands only while the lifecycle is at
//! fence f; and every commit that lands, planned or read, is what reading and deciding
//! at that moment would commit and answer. Each proven-safety rule can be reverted
//! ([`with_reverted`](crate::sends::reverted::with_reverted), set around every
//! transition so that the checker's own thread sees it), and the checker then finds
//! the counterexample the rule prevents (`tests`); without the proof that a commit's
//! lease is still the one it decided under, it finds the stale holder's write
//! (`fences`); with clocks a lease length apart, the absences they prove early
//! (`clocks`).
//!
//! | action | what happens |
//! |---|---|
//! | `Call(w, plan)` | worker `w` starts an `execute` call (a fresh lease id) with that plan, and performs its `start` (in preconditions mode: plans the opening chain) |
//! | `Step(w)` | worker `w` performs the step its program asked for at its clock's time: a journal operation (in preconditions mode: its commit planned from what the call knows, or read and decided, is put in flight; an answer without a commit is given at once), a lookup, or a read of the attempt's object by id (replayable and cancelling as the program asks); a permitted send is put on the wire at once |
//! | `Lost(w)` | worker `w`'s read by id is made (a cancel it asks for done), and its answer lost |
//! | `Commit(w)` | worker `w`'s commit in flight reaches the journal: it lands if its preconditions hold now (checked: its fence, and a read now), or is refused and the operation reads, decides and commits at once |
//! | `Answer(w)` | the provider's success reaches worker `w`, before its send deadline |
//! | `Timeout(w)` | worker `w`'s send ends without an answer (timeout, lost response) |
//! | `Yield(w)` | worker `w`, holding an answer or a lookup's evidence, pauses until the clock moves |
//! | `Crash(w)` | worker `w` dies holding an answer or a lookup's evidence: its call is gone, its request stays on the wire |
//! | `Process(i)` | the provider processes request `i` on the wire: a charge (with a customer: an open object, the sender told the customer must act), or the replay of a retained key |
//! | `Drop(i)` | request `i` never reaches the provider |
//! | `CatchUp(key)` | the provider's lookup index catches up with `key`'s charge (or object) |
//! | `Pay(i)`, `Fail(i)` | the customer pays object `i`, or fails its challenge, while it is open (a second tab's act on an object no longer open changes nothing) |
//! | `Tick` | the clock moves to the next instant, once every request and charge whose settle window ends by then is settled |
//!
//! One worker runs at a time within an instant, until it waits for the provider or
//! for a commit, ends or yields (`worker::Turn`): the provider's actions commute with
//! journal operations, and a commit in flight lets every other action in before it
//! lands, so this drops only orderings that change nothing.

mod binding;
mod canon;
mod clocks;
mod customer;
mod driver;
mod fences;
mod journal;
mod memory;
mod objects;
mod ops;
mod provider;
mod replays;
mod steps;
mod system;
mod tests;
mod worker;
mod world;
