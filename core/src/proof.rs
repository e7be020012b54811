//! What a commit proves besides its own writes: that every mutable document its
//! decision read, and depends on without changing, is still as read.
//!
//! A decision is taken from a snapshot. Its creations carry `exists: false` and its
//! replacements the update time read, so the documents it writes are proven by their
//! own preconditions. A document it read but does not write is proven by nothing
//! else: an immutable one (a root, an audit event, a plan, a stored result, a
//! reservation) cannot change, but a mutable one can. The lifecycle is the lease
//! (holder, fence, expiry) and changes with every takeover; the send record changes
//! with every send transition; a ledger effect row changes when a migration links
//! it. [`with_proofs`] adds to a mutation a [`Write::AssertUnchanged`] of each mutable
//! document the decision read present and does not write: rewritten exactly as read
//! under the update time read, it changes nothing (Firestore keeps the update time of
//! a write that changes nothing) and fails the commit if the document changed. So the
//! commit lands only where a read at commit time would have given the decision the
//! same documents, and a holder whose lease was taken over in between writes nothing.
//!
//! The preconditions mode and every commit planned from what the journal knows
//! (`crate::known`) carry these proofs. A commit inside a read-write transaction does
//! not need them: the transaction holds what it read.
//!
//! A commit that needs no lock at all proves the whole snapshot its decision read:
//! [`with_absence_guards`] adds a [`Write::AssertAbsent`] of every document read
//! absent and not written, so a commit whose every write is then under `exists: false`
//! (creations and guards, no mutable document read present) lands only where every
//! document read is as read: the absent ones still absent, the present ones
//! immutable. Transaction mode commits such a decision without a transaction.

use crate::document::{lifecycle, root};
use crate::ledger::effect;
use crate::recovery::checkpoint;
use crate::sends::attempt;
use crate::sends::reverted::{Rule, reverted};
use crate::transaction::{Snapshot, Write};

/// Whether a stored document at `path` can change after it is created: a lifecycle,
/// a send record, a ledger effect row or a recovery checkpoint. Every other document
/// of the journal is written once and never changed.
pub(crate) fn is_mutable(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        [collection, _, below, "current"] if *collection == root::COLLECTION => {
            *below == lifecycle::COLLECTION || *below == attempt::COLLECTION
        }
        [collection, _] => {
            *collection == effect::COLLECTION || *collection == checkpoint::COLLECTION
        }
        _ => false,
    }
}

/// `writes`, then an unchanged rewrite of every mutable document among `read` (the
/// paths the decision read) that `snapshot` holds present and `writes` does not
/// write, in the order of `read`.
pub(crate) fn with_proofs<'a>(
    read: impl IntoIterator<Item = &'a str>,
    snapshot: &Snapshot,
    mut writes: Vec<Write>,
) -> Vec<Write> {
    if reverted(Rule::LeaseProof) {
        return writes;
    }
    let mut proofs = Vec::new();
    for path in read {
        let Some(fields) = snapshot.get(path) else {
            continue;
        };
        let written = writes.iter().chain(&proofs).any(|w| w.path() == path);
        if is_mutable(path) && !written {
            proofs.push(Write::AssertUnchanged {
                path: path.to_owned(),
                fields: fields.clone(),
            });
        }
    }
    writes.extend(proofs);
    writes
}

/// `writes`, then an absence guard of every path among `read` (the paths the decision
/// read) that `snapshot` holds read absent and `writes` does not write, once each, in
/// the order of `read`.
pub(crate) fn with_absence_guards<'a>(
    read: impl IntoIterator<Item = &'a str>,
    snapshot: &Snapshot,
    mut writes: Vec<Write>,
) -> Vec<Write> {
    for path in read {
        let absent = snapshot.was_read(path) && snapshot.get(path).is_none();
        if absent && !writes.iter().any(|w| w.path() == path) {
            writes.push(Write::AssertAbsent {
                path: path.to_owned(),
            });
        }
    }
    writes
}

#[cfg(test)]
mod tests;
