//! What `verify` lists for a person beside the broken invariants: a journal whose
//! every invariant holds may still hold a command that only the provider's final state
//! can settle. Each is an [`Attention`] with a stable [`AttentionCode`]; none makes a
//! report unclean.

use super::report::{Attention, AttentionCode};
use super::stored::CommandDocs;
use crate::digest::Digest;
use crate::sends::attempt::{self, SendAttempt};

/// What one command's documents ask of a person (nothing, for most).
pub fn attention(hash: &Digest, docs: &CommandDocs) -> Vec<Attention> {
    let path = attempt::path(hash);
    let current = docs
        .sends
        .iter()
        .find(|doc| doc.path == path)
        .and_then(|doc| SendAttempt::parse(hash, &doc.fields).ok());
    let mut out = match current {
        // The provider answered the attempt as indeterminate and may still complete
        // it: only its final state settles it, never a new key (`sends::absence`).
        Some(attempt) if attempt.state.indeterminate() => vec![Attention {
            code: AttentionCode::IndeterminateSend,
            path,
        }],
        _ => Vec::new(),
    };
    // Every late charge is money a person refunds.
    out.extend(docs.late_charges.iter().map(|(_, doc)| Attention {
        code: AttentionCode::LateCharge,
        path: doc.path.clone(),
    }));
    out
}
