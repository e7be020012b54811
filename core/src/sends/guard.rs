//! The guard composed around B2B's `complete_command` and `fail_command` at the
//! journal: once a command has a bound provider plan it ends only through the send
//! layer, so no code path can skip recording the attempt's outcome.
//!
//! ```text
//! a plan and its send record, readable  -> send_outcome_required (nothing written)
//! one without the other, a stray send event, a malformed plan, a send record
//!   disagreeing with its event or stored result -> journal_corrupt
//! none of the send documents            -> exactly what the terminal transition decides
//! ```
//!
//! It reads the same send documents as the send operations (`load::send_paths`) and
//! checks them the same way, so a success with no send evidence cannot be committed
//! over deleted send documents.
//!
//! The lease module never learns about sends. The plan's absence is not immutable, so
//! a terminal transition that read no plan commits only while there is still none: its
//! commit carries an [`AssertAbsent`](Write::AssertAbsent) of the plan (a delete with
//! an `exists: false` precondition, which writes nothing). A first `begin_send` that
//! committed in between makes it fail, and the retry answers `send_outcome_required`.
//! (Rewriting the lifecycle unchanged would not do: Firestore keeps a document's update
//! time when a write does not change it, so the terminal's precondition would hold.)

use super::bound_plan;
use super::load::{self, Sends};
use crate::envelope::record::MarksResult;
use crate::error::JournalError;
use crate::lease::{Terminal, TerminalOutput};
use crate::transaction::{Decision, Halt, OperationName, Snapshot, Transition, Write};

/// A terminal transition refused once the command has a provider send.
#[derive(Debug, Clone)]
pub struct Guarded {
    terminal: Terminal,
    plan_path: String,
    hash: crate::digest::Digest,
}

impl Guarded {
    /// Guards `terminal`, a transition of the command whose key hash is `hash`.
    pub fn new(terminal: Terminal, hash: &crate::digest::Digest) -> Self {
        Self {
            terminal,
            plan_path: bound_plan::path(hash),
            hash: hash.clone(),
        }
    }
}

/// No send document exists when a guarded terminal succeeds: nothing to mark.
impl MarksResult for Guarded {
    fn storing_result(self) -> Self {
        self
    }
}

impl Transition for Guarded {
    type Output = TerminalOutput;

    fn name(&self) -> OperationName {
        self.terminal.name()
    }

    fn paths(&self) -> Vec<String> {
        let mut paths = self.terminal.paths();
        paths.extend(load::send_paths(&self.hash));
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<TerminalOutput> {
        match load::load_sends(&self.hash, snapshot) {
            Ok(Sends::Unbound) => match self.terminal.decide(snapshot) {
                Decision::Mutate(mut writes, output) => {
                    writes.push(Write::AssertAbsent {
                        path: self.plan_path.clone(),
                    });
                    Decision::Mutate(writes, output)
                }
                other => other,
            },
            Ok(Sends::Bound(_)) => Decision::Reject(JournalError::SendOutcomeRequired),
            Ok(Sends::Unreadable(_, error)) => Decision::Reject(error),
            Err(Halt::Read(paths)) => Decision::Read(paths),
            Err(Halt::Reject(error)) => Decision::Reject(error),
        }
    }
}
