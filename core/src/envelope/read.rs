//! `result`: the stored envelope of a succeeded command, checked against the
//! lifecycle's commitment before it is returned. Read-only.
//!
//! ```text
//! not registered, no results doc                 -> not_registered
//! not succeeded (registered, leased, failed)     -> None; a results doc is journal_corrupt
//! succeeded, no results doc                      -> None (it succeeded with a bare reference)
//! succeeded, results doc binds the lifecycle     -> Some(envelope)
//! malformed, non-canonical, another commitment   -> journal_corrupt
//!   or another time than the terminal success
//! ```
//!
//! It validates the lease's documents and the send layer's as `status` does (root,
//! revision-1 event, lifecycle, its current event, the absent next one; the plan, the
//! send record, its event), so a success whose send record says it stored a result
//! answers `journal_corrupt` when the results document is missing.

use super::ResultEnvelope;
use super::stored::{self, StoredResult};
use crate::document::lifecycle::LifecycleState;
use crate::error::JournalError;
use crate::lease::CommandCall;
use crate::sends::load::{self, Context, Sends};
use crate::transaction::{Decision, Halt, OperationName, Snapshot, Transition};

/// A prepared read-only `result`.
#[derive(Debug, Clone)]
pub struct ResultRead {
    call: CommandCall,
    path: String,
}

impl ResultRead {
    /// Prepares a result read: a read needs no lease, so it takes no owner.
    pub fn new(call: CommandCall) -> Self {
        let path = stored::path(call.hash());
        Self { call, path }
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Option<ResultEnvelope>, Halt> {
        let fields = snapshot.get(&self.path);
        let current = match load::load(&self.call, snapshot) {
            Ok(Context {
                sends: Sends::Unreadable(_, error),
                ..
            }) => return Err(error.into()),
            Ok(Context { lifecycle, .. }) => lifecycle,
            Err(Halt::Reject(JournalError::NotRegistered)) if fields.is_some() => {
                return Err(JournalError::corrupt("result document without a registration").into());
            }
            Err(step) => return Err(step),
        };
        let succeeded = current
            .as_ref()
            .filter(|lifecycle| lifecycle.state == LifecycleState::Succeeded);
        match (succeeded, fields) {
            (_, None) => Ok(None),
            (None, Some(_)) => Err(JournalError::corrupt(
                "result document of a command that did not succeed",
            )
            .into()),
            (Some(lifecycle), Some(fields)) => {
                let stored = StoredResult::parse(self.call.hash(), fields)?;
                if stored.binds(lifecycle) {
                    Ok(Some(stored.envelope))
                } else {
                    Err(
                        JournalError::corrupt("result document disagrees with the lifecycle")
                            .into(),
                    )
                }
            }
        }
    }
}

impl Transition for ResultRead {
    type Output = Option<ResultEnvelope>;

    fn name(&self) -> OperationName {
        OperationName::Result
    }

    fn paths(&self) -> Vec<String> {
        load::first_read(&self.call)
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<Option<ResultEnvelope>> {
        match self.decide_inner(snapshot) {
            Ok(envelope) => Decision::Observe(envelope),
            Err(step) => step.decision(),
        }
    }
}
