//! Where a scanned document belongs: the command (or reservation) it is part of and
//! which part, a journal document checked on its own, or an unexpected document.

use super::stored::StoredDoc;
use crate::digest::Digest;
use crate::document::{audit, root};
use crate::ledger::{correction, effect, reservation};

/// Which journal document of its command (or reservation) a scanned document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `checkoutRequests/{hash}`.
    Root,
    /// `checkoutRequests/{hash}/lifecycle/{id}` (only `current` is expected).
    Lifecycle,
    /// The audit event of this revision.
    Audit(i64),
    /// `checkoutRequests/{hash}/providerSends/{plan|current}`.
    Send,
    /// `checkoutRequests/{hash}/results/current`.
    Result,
    /// The send event of this send revision.
    SendEvent(i64),
    /// `ledgerReservations/{id}`.
    Reservation,
    /// `ledgerTransactions/{id}_{index}`.
    Effect,
    /// `ledgerTransactions/{id}_{index}/corrections/current`.
    Correction,
    /// `checkoutRequests/{hash}/lateCharges/{attempt:04}`: this attempt's late charge.
    LateCharge(crate::sends::AttemptNumber),
    /// `checkoutRequests/{hash}/leaseReleases/{fence:010}`: this fence's release.
    Release(crate::fence::FenceEpoch),
}

/// How a scanned document sorts into the merge.
pub enum Keyed {
    /// Belongs to the command (or reservation) with this hash, as this part.
    Command(Digest, Part, StoredDoc),
    /// A journal document checked on its own (a historical unlinked ledger effect).
    Standalone(StoredDoc),
    /// Not a journal document: reported as unexpected.
    Unexpected(String),
}

/// How one scanned collection sorts its documents into the merge.
pub type Classify = fn(StoredDoc) -> Keyed;

/// The `N` segments of `path`, when it has exactly `N`.
pub fn segments<const N: usize>(path: &str) -> Option<[&str; N]> {
    let mut parts = path.split('/');
    let mut out = [""; N];
    for slot in &mut out {
        *slot = parts.next()?;
    }
    parts.next().is_none().then_some(out)
}

/// `doc` keyed by `key`, or unexpected without one.
pub fn keyed(key: Option<(Digest, Part)>, doc: StoredDoc) -> Keyed {
    match key {
        Some((hash, part)) => Keyed::Command(hash, part, doc),
        None => Keyed::Unexpected(doc.path),
    }
}

/// A document `{collection}/{id}` whose id is a digest belongs to that digest.
pub fn keyed_by_digest_id(collection: &str, part: Part, doc: StoredDoc) -> Keyed {
    let key = match segments(&doc.path) {
        Some([c, id]) if c == collection => Digest::parse(id).map(|hash| (hash, part)),
        _ => None,
    };
    keyed(key, doc)
}

/// A root, a document of its `lifecycle` collection, or (anything else below
/// `checkoutRequests`, at any depth) unexpected.
pub fn classify_command_tree(doc: StoredDoc) -> Keyed {
    let key = match segments::<2>(&doc.path) {
        Some([root::COLLECTION, id]) => Digest::parse(id).map(|hash| (hash, Part::Root)),
        _ => match segments(&doc.path) {
            Some([root::COLLECTION, id, "lifecycle", _]) => {
                Digest::parse(id).map(|hash| (hash, Part::Lifecycle))
            }
            Some([root::COLLECTION, id, "providerSends", "plan" | "current"]) => {
                Digest::parse(id).map(|hash| (hash, Part::Send))
            }
            Some(
                [
                    root::COLLECTION,
                    id,
                    crate::envelope::stored::COLLECTION,
                    "current",
                ],
            ) => Digest::parse(id).map(|hash| (hash, Part::Result)),
            Some(
                [
                    root::COLLECTION,
                    id,
                    crate::sends::late::COLLECTION,
                    attempt,
                ],
            ) => {
                let attempt = crate::sends::late::parse_id(attempt);
                Digest::parse(id)
                    .zip(attempt)
                    .map(|(hash, n)| (hash, Part::LateCharge(n)))
            }
            Some(
                [
                    root::COLLECTION,
                    id,
                    crate::document::release::COLLECTION,
                    fence,
                ],
            ) => {
                let fence = crate::document::release::parse_id(fence);
                Digest::parse(id)
                    .zip(fence)
                    .map(|(hash, fence)| (hash, Part::Release(fence)))
            }
            _ => None,
        },
    };
    keyed(key, doc)
}

/// A `lifecycle` document outside `checkoutRequests` is never the journal's.
pub fn classify_stray(doc: StoredDoc) -> Keyed {
    Keyed::Unexpected(doc.path)
}

/// A transition audit event at `auditEvents/{hash}_{revision}` belongs to that command.
pub fn classify_audit(doc: StoredDoc) -> Keyed {
    let key = match segments(&doc.path) {
        Some([audit::COLLECTION, id]) => {
            audit::parse_id(id).map(|(hash, revision)| (hash, Part::Audit(revision)))
        }
        _ => None,
    };
    keyed(key, doc)
}

/// A send event at `auditEvents/provider_send_{hash}_{revision}` belongs to that command.
pub fn classify_send_audit(doc: StoredDoc) -> Keyed {
    let key = match segments(&doc.path) {
        Some([audit::COLLECTION, id]) => crate::sends::event::parse_id(id)
            .map(|(hash, revision)| (hash, Part::SendEvent(revision))),
        _ => None,
    };
    keyed(key, doc)
}

/// A reservation at `ledgerReservations/{reservationId}` is that reservation's.
pub fn classify_reservation(doc: StoredDoc) -> Keyed {
    keyed_by_digest_id(reservation::COLLECTION, Part::Reservation, doc)
}

/// An effect at `{reservationId}_{index:04}`, and its correction bound and log
/// (`…/corrections/current`, `…/corrections/{position}`), belong to that reservation;
/// any other id is an imported row, checked on its own, as are its bound and log;
/// anything else below an effect is unexpected.
pub fn classify_effect(doc: StoredDoc) -> Keyed {
    let (id, part) = match segments::<2>(&doc.path) {
        Some([effect::COLLECTION, id]) => (id, Part::Effect),
        _ => match segments::<4>(&doc.path) {
            Some([effect::COLLECTION, id, correction::COLLECTION, document])
                if document == correction::DOCUMENT
                    || correction::entry::position_of(document).is_some() =>
            {
                (id, Part::Correction)
            }
            _ => return Keyed::Unexpected(doc.path),
        },
    };
    let derived = match id.split_once('_') {
        Some((rid, index)) if index.len() == 4 && index.bytes().all(|b| b.is_ascii_digit()) => {
            Digest::parse(rid)
        }
        _ => None,
    };
    match derived {
        Some(rid) => Keyed::Command(rid, part, doc),
        None => Keyed::Standalone(doc),
    }
}

#[cfg(test)]
mod tests;
