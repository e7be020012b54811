//! Creation in one RPC: the plan of a *blind creation*, the commit a new command's
//! operation sends before reading anything, without a transaction in either
//! concurrency mode: it takes no lock, and needs none.
//!
//! An operation opts in with [`Transition::blind_create`]. Its plan is its own pure
//! `decide` over the snapshot in which every path of [`Transition::paths`] is absent,
//! accepted only when that decision is a mutation whose every write is a
//! [`Write::Create`] of a distinct path the operation reads. The commit then proves
//! the snapshot it assumed: every created document carries `exists: false`, and every
//! other path read gets an *absence guard*, a delete with `exists: false`, which
//! deletes nothing and fails the commit if that document exists. So the commit
//! succeeds exactly when the all-absent snapshot is the state at commit time, and
//! writes exactly what the read-and-decide path would have written from it, with the
//! same output and the same captured time. Any refusal leaves everything unwritten
//! and the runner falls back to reading.

use super::{Decision, Snapshot, Transition, Write};
use std::collections::HashSet;

/// What a blind creation commits and answers.
#[derive(Debug, Clone, PartialEq)]
pub struct BlindPlan<O> {
    /// The creations of the all-absent decision, in its order.
    pub creates: Vec<Write>,
    /// Every other path read, each to be proven absent by the commit.
    pub guards: Vec<String>,
    /// The all-absent decision's answer.
    pub output: O,
}

/// The blind creation of `op` over `paths` (its first read), or `None` when `op` did
/// not opt in or its all-absent decision is anything but creations of paths it reads.
pub(crate) fn plan<T: Transition>(op: &T, paths: &[String]) -> Option<BlindPlan<T::Output>> {
    if !op.blind_create() {
        return None;
    }
    let absent = Snapshot::new(paths.iter().map(|path| (path.clone(), None)));
    let Decision::Mutate(writes, output) = op.decide(&absent) else {
        return None;
    };
    let read: HashSet<&str> = paths.iter().map(String::as_str).collect();
    let mut created = HashSet::new();
    for write in &writes {
        match write {
            Write::Create { path, .. } if read.contains(path.as_str()) => {
                if !created.insert(path.as_str()) {
                    return None;
                }
            }
            _ => return None,
        }
    }
    let mut guards: Vec<String> = Vec::new();
    for path in paths {
        if !created.contains(path.as_str()) && !guards.contains(path) {
            guards.push(path.clone());
        }
    }
    Some(BlindPlan {
        creates: writes,
        guards,
        output,
    })
}

#[cfg(test)]
mod tests;
