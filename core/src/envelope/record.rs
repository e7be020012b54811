//! Storing a result envelope with the success that ends a command, composed around
//! the transitions that end one (the guarded `complete_command`, `record_send_outcome`
//! and `reconcile_send`): the results document is read with their documents and
//! created in the same commit as the terminal success, so the envelope exists exactly
//! when the success does.
//!
//! ```text
//! inner mutates to success, no results doc          -> its writes + create results/current
//! inner mutates, a results doc exists               -> journal_corrupt (nothing written)
//! inner observes success (exact retry), same doc    -> the same answer (read-only)
//! inner observes success, no results doc            -> terminal_conflict (succeeded without one)
//! inner observes success, another or malformed doc  -> journal_corrupt
//! inner observes anything else, a results doc exists-> journal_corrupt
//! inner refuses or reads further                    -> the same
//! ```
//!
//! An exact retry is one whose envelope has the stored commitment, so a matching
//! document holds byte-identical text; one that does not match it was altered. The
//! `Create` carries the runner's `exists: false` precondition, so a results document
//! written between the read and the commit fails the commit.

use super::ResultEnvelope;
use super::stored::{self, StoredResult};
use crate::digest::Digest;
use crate::document::lifecycle::{self, Lifecycle};
use crate::error::JournalError;
use crate::lease::TerminalOutput;
use crate::sends::SendOutcomeOutput;
use crate::time::Timestamp;
use crate::transaction::{Decision, OperationName, Snapshot, Transition, Write};

/// An answer that says whether the command ended in success.
pub trait Ending {
    /// True for a terminal success.
    fn succeeded(&self) -> bool;
}

impl Ending for TerminalOutput {
    fn succeeded(&self) -> bool {
        *self == TerminalOutput::Succeeded
    }
}

impl Ending for SendOutcomeOutput {
    fn succeeded(&self) -> bool {
        *self == SendOutcomeOutput::Terminal(TerminalOutput::Succeeded)
    }
}

/// A transition that records, on its own documents, that its success stores a result
/// envelope (the send document's `resultStored`); a no-op where nothing records it.
pub trait MarksResult {
    /// The same transition, told that its success stores the envelope.
    fn storing_result(self) -> Self;
}

/// `inner`, a transition whose success carries the commitment of `envelope`, with the
/// envelope stored in the commit of that success.
#[derive(Debug, Clone)]
pub struct WithResult<T> {
    inner: T,
    path: String,
    /// The envelope stored with the success; `None`: exactly `inner`, storing none.
    result: Option<StoredResult>,
}

impl<T: MarksResult> WithResult<T> {
    /// Wraps `inner`, a transition of the command `hash` prepared at `now` whose
    /// success request is the commitment of `envelope`'s reference.
    pub fn new(inner: T, hash: &Digest, now: Timestamp, envelope: &ResultEnvelope) -> Self {
        Self::optional(inner, hash, now, Some(envelope))
    }

    /// [`WithResult::new`] where `envelope` is given; exactly `inner` otherwise (a
    /// success with a bare reference, a decline, an unknown answer).
    pub fn optional(
        inner: T,
        hash: &Digest,
        now: Timestamp,
        envelope: Option<&ResultEnvelope>,
    ) -> Self {
        let result = envelope.map(|envelope| StoredResult {
            command_key_hash: hash.clone(),
            envelope: envelope.clone(),
            created_at: now,
        });
        Self {
            inner: if result.is_some() {
                inner.storing_result()
            } else {
                inner
            },
            path: stored::path(hash),
            result,
        }
    }
}

impl<T> WithResult<T> {
    #[cfg(test)]
    /// The wrapped transition, and the envelope its success stores.
    pub(crate) fn parts(&self) -> (&T, Option<&ResultEnvelope>) {
        (&self.inner, self.result.as_ref().map(|r| &r.envelope))
    }

    fn corrupt<O>(reason: &'static str) -> Decision<O> {
        Decision::Reject(JournalError::corrupt(reason))
    }

    /// An exact retry of the success: the stored document must be this envelope,
    /// stored at the lifecycle's terminal time.
    fn retry<O>(&self, result: &StoredResult, snapshot: &Snapshot, output: O) -> Decision<O> {
        let hash = &result.command_key_hash;
        let Some(fields) = snapshot.get(&self.path) else {
            return Decision::Reject(JournalError::TerminalConflict);
        };
        let stored = match StoredResult::parse(hash, fields) {
            Ok(stored) => stored,
            Err(error) => return Decision::Reject(error),
        };
        let lifecycle = snapshot
            .get(&lifecycle::path(hash))
            .and_then(|fields| Lifecycle::parse(hash, fields).ok());
        match lifecycle {
            Some(lifecycle) if stored.envelope == result.envelope && stored.binds(&lifecycle) => {
                Decision::Observe(output)
            }
            _ => Self::corrupt("result document disagrees with the lifecycle"),
        }
    }
}

impl<T> Transition for WithResult<T>
where
    T: Transition,
    T::Output: Ending,
{
    type Output = T::Output;

    fn name(&self) -> OperationName {
        self.inner.name()
    }

    fn paths(&self) -> Vec<String> {
        let mut paths = self.inner.paths();
        if self.result.is_some() && !paths.contains(&self.path) {
            paths.push(self.path.clone());
        }
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<T::Output> {
        let Some(result) = &self.result else {
            return self.inner.decide(snapshot);
        };
        let present = snapshot.get(&self.path).is_some();
        match self.inner.decide(snapshot) {
            Decision::Mutate(_, _) if present => {
                Self::corrupt("result document before the command succeeded")
            }
            Decision::Mutate(mut writes, output) => {
                if output.succeeded() {
                    writes.push(Write::Create {
                        path: self.path.clone(),
                        fields: result.encode(),
                    });
                }
                Decision::Mutate(writes, output)
            }
            Decision::Observe(output) if output.succeeded() => self.retry(result, snapshot, output),
            Decision::Observe(_) if present => {
                Self::corrupt("result document of a command that did not succeed")
            }
            other => other,
        }
    }
}
