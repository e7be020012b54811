//! What `verify` lists for a person beside the broken invariants: a journal whose
//! every invariant holds may still hold a command that only the provider's final state
//! can settle, or one that waits for its customer. Each is an [`Attention`] with a stable [`AttentionCode`]; none makes a
//! report unclean.

use super::report::{Attention, AttentionCode};
use super::stored::CommandDocs;
use crate::digest::Digest;
use crate::sends::attempt::{self, AttemptState, SendAttempt};

/// What one command's documents ask of a person (nothing, for most).
pub fn attention(hash: &Digest, docs: &CommandDocs) -> Vec<Attention> {
    let path = attempt::path(hash);
    let current = docs
        .sends
        .iter()
        .find(|doc| doc.path == path)
        .and_then(|doc| SendAttempt::parse(hash, &doc.fields).ok());
    let mut out = match current {
        // The customer may still pay: their return, or the provider's object read by
        // id, settles it, never a new key.
        Some(attempt) if attempt.state == AttemptState::AwaitingCustomer => vec![Attention {
            code: AttentionCode::AwaitingCustomer,
            path,
        }],
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
