//! The guard composed around B2B's `complete_command` and `fail_command` at the
//! journal: once a command has a bound provider plan it ends only through the send
//! layer, so no code path can skip recording the attempt's outcome.
//!
//! ```text
//! a plan or send record exists          -> send_outcome_required (nothing written)
//! one without the other, or malformed   -> journal_corrupt
//! neither                               -> exactly what the terminal transition decides
//! ```
//!
//! The lease module never learns about sends. The plan's absence is not immutable, so
//! a terminal transition that read no plan commits only while there is still none: its
//! commit carries an [`AssertAbsent`](Write::AssertAbsent) of the plan (a delete with
//! an `exists: false` precondition, which writes nothing). A first `begin_send` that
//! committed in between makes it fail, and the retry answers `send_outcome_required`.
//! (Rewriting the lifecycle unchanged would not do: Firestore keeps a document's update
//! time when a write does not change it, so the terminal's precondition would hold.)

use super::attempt;
use super::bound_plan::{self, BoundPlan};
use crate::error::JournalError;
use crate::lease::{Terminal, TerminalOutput};
use crate::transaction::{Decision, OperationName, Snapshot, Transition, Write};

/// A terminal transition refused once the command has a provider send.
#[derive(Debug, Clone)]
pub struct Guarded {
    terminal: Terminal,
    plan_path: String,
    send_path: String,
    hash: crate::digest::Digest,
}

impl Guarded {
    /// Guards `terminal`, a transition of the command whose key hash is `hash`.
    pub fn new(terminal: Terminal, hash: &crate::digest::Digest) -> Self {
        Self {
            terminal,
            plan_path: bound_plan::path(hash),
            send_path: attempt::path(hash),
            hash: hash.clone(),
        }
    }
}

impl Transition for Guarded {
    type Output = TerminalOutput;

    fn name(&self) -> OperationName {
        self.terminal.name()
    }

    fn paths(&self) -> Vec<String> {
        let mut paths = self.terminal.paths();
        paths.push(self.plan_path.clone());
        paths.push(self.send_path.clone());
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<TerminalOutput> {
        match (snapshot.get(&self.plan_path), snapshot.get(&self.send_path)) {
            (None, None) => match self.terminal.decide(snapshot) {
                Decision::Mutate(mut writes, output) => {
                    writes.push(Write::AssertAbsent {
                        path: self.plan_path.clone(),
                    });
                    Decision::Mutate(writes, output)
                }
                other => other,
            },
            (Some(plan), Some(_)) => match BoundPlan::parse(&self.hash, plan) {
                Ok(_) => Decision::Reject(JournalError::SendOutcomeRequired),
                Err(error) => Decision::Reject(error),
            },
            _ => Decision::Reject(JournalError::corrupt(
                "provider plan without its send record, or the reverse",
            )),
        }
    }
}
