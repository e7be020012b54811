//! The provider keys' index (`providerKeys/{digest of the key}`), each document held
//! to its command: it parses strictly, was never rewritten, and names a registered
//! command whose stored plan derives, at the attempt it names (one opened already),
//! exactly the key whose digest is its id. Anything else is `provider_key_mismatch`
//! (a document below an index document, or whose id is no digest, is
//! `unexpected_document`).
//!
//! An attempt without an index document is no finding: attempts opened before the
//! index existed have none (evidence naming their key is an unknown object, and they
//! settle by the client's retry or recovery's lookup, as before), and the index
//! cannot be told apart from them by their own records.

use super::keys::segments;
use super::report::{Finding, FindingCode};
use super::stored::StoredDoc;
use crate::digest::Digest;
use crate::document::fields::FieldMap;
use crate::document::root::{self, RootDocument};
use crate::sends::attempt::{self, SendAttempt};
use crate::sends::bound_plan::{self, BoundPlan};
use crate::sends::key_index::{self, COLLECTION, KeyIndex};
use crate::sends::plan::attempt_key;
use crate::settle::registered::registered;

/// An index document that parsed, to hold to its command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indexed {
    /// Its path, relative to the documents root.
    pub path: String,
    /// Its id: the digest of the key it indexes.
    pub id: Digest,
    /// What it names.
    pub index: KeyIndex,
}

impl Indexed {
    /// The paths of the command documents it is held to: the root, the bound plan
    /// and the send record.
    pub fn command_paths(&self) -> [String; 3] {
        let hash = &self.index.command_key_hash;
        [
            root::path(hash),
            bound_plan::path(hash),
            attempt::path(hash),
        ]
    }
}

/// One document read below `providerKeys`: the index to hold to its command, or its
/// findings.
pub fn check(doc: &StoredDoc) -> Result<Indexed, Vec<Finding>> {
    let finding = |code| {
        vec![Finding {
            code,
            path: doc.path.clone(),
        }]
    };
    let id = match segments(&doc.path) {
        Some([COLLECTION, id]) => Digest::parse(id),
        _ => None,
    };
    let Some(id) = id else {
        return Err(finding(FindingCode::UnexpectedDocument));
    };
    match KeyIndex::parse(&doc.fields) {
        Ok(index) if !doc.rewritten() => Ok(Indexed {
            path: doc.path.clone(),
            id,
            index,
        }),
        _ => Err(finding(FindingCode::ProviderKeyMismatch)),
    }
}

/// Holds `indexed` to its command's documents as read at the same time (`get` of one
/// of [`Indexed::command_paths`], `None` when absent). A command document that fails
/// its own codec is left to the command's checks.
pub fn check_command<'a>(
    indexed: &Indexed,
    get: impl Fn(&str) -> Option<&'a FieldMap>,
) -> Vec<Finding> {
    let mismatch = || {
        vec![Finding {
            code: FindingCode::ProviderKeyMismatch,
            path: indexed.path.clone(),
        }]
    };
    let hash = &indexed.index.command_key_hash;
    let [root_path, plan_path, send_path] = indexed.command_paths();
    let (Some(root), Some(plan), Some(send)) = (get(&root_path), get(&plan_path), get(&send_path))
    else {
        // No command, or none that ever opened an attempt: nothing derives the key.
        return mismatch();
    };
    let parsed = (
        RootDocument::parse(hash.as_str(), root),
        BoundPlan::parse(hash, plan),
        SendAttempt::parse(hash, send),
    );
    let (Ok(root), Ok(plan), Ok(send)) = parsed else {
        return Vec::new();
    };
    let attempt = indexed.index.attempt;
    let key = attempt_key(&registered(&root), &plan.operation, attempt);
    if attempt > send.attempt || key_index::id(&key) != indexed.id {
        return mismatch();
    }
    Vec::new()
}

#[cfg(test)]
mod tests;
