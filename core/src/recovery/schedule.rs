//! The order a recovery run handles its range in, where it stops, and what its run
//! as a whole says: the definitions a scheduled job's progress, its report and its
//! exit status rest on.
//!
//! **Circular order.** A run starts after a position `p` (its checkpoint, or the
//! cursor its caller gave): it handles the commands whose key hash sorts after `p`,
//! then wraps to the range's start and handles those up to `p`. With `K` commands to
//! look up in the range and at most `L` handled per run, every one of them is handled
//! within `⌈K / L⌉` consecutive runs that each record where they stopped, whatever
//! the position and however many of them stay listed for good; a run that stops at
//! its deadline handles at least its first command, so the bound is `K` runs then.
//! Commands that join the range meanwhile can each delay the others by at most one
//! place per run.

use crate::digest::Digest;
use crate::sends::provider::ProviderAnswer;
use serde::Serialize;

/// `items` (in key-hash order) rotated to start after `after`: first those whose
/// key (`key`) sorts after it, then those at or before it. `None` keeps the order.
pub fn circular<T>(
    mut items: Vec<T>,
    after: Option<&Digest>,
    key: impl Fn(&T) -> &Digest,
) -> Vec<T> {
    if let Some(after) = after {
        let wrapped = items.partition_point(|item| key(item) <= after);
        items.rotate_left(wrapped);
    }
    items
}

/// Where `hash` falls along the circle that starts after `from`: the commands after
/// `from` first (in key-hash order), then those at or before it.
fn place<'a>(from: Option<&Digest>, hash: &'a Digest) -> (bool, &'a Digest) {
    (from.is_some_and(|from| hash <= from), hash)
}

/// Whether `a` lies strictly further than `b` along the circle that starts after
/// `from`.
pub(crate) fn further(from: Option<&Digest>, a: &Digest, b: &Digest) -> bool {
    place(from, a) > place(from, b)
}

/// Why a run stopped handling commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// It handled every command of its range it had to look up.
    Finished,
    /// It reached its limit with commands left.
    Limit,
    /// Its deadline passed with commands left: it started no further command and let
    /// the ones under way finish.
    Deadline,
}

/// The lookups of one run, answered or not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lookups {
    /// Lookups the provider answered (a charge, a decline or a "not found").
    pub answered: usize,
    /// Lookups that failed or gave no answer within their deadline.
    pub unavailable: usize,
}

impl Lookups {
    /// Whether `answer`, heard from a lookup, is the provider's answer: a charge, a
    /// decline or a "not found". An unknown answer is not, nor a replayed unknown one:
    /// a lookup that replays a stored unknown tells nothing, and the settle program
    /// ends both as `lookup_unavailable`.
    pub fn is_answer(answer: &ProviderAnswer) -> bool {
        !matches!(
            answer,
            ProviderAnswer::Unknown
                | ProviderAnswer::ReplayedUnknown
                | ProviderAnswer::Indeterminate
        )
    }

    /// Counts one lookup's answer as [`Lookups::is_answer`] classes it.
    pub fn count(&mut self, answer: &ProviderAnswer) {
        match Self::is_answer(answer) {
            true => self.answered += 1,
            false => self.unavailable += 1,
        }
    }
}

/// What a run as a whole says, for its exit status and its alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every command was handled: settled, or left listed for a reason.
    Clean,
    /// It tried at least one lookup and the provider answered none: the provider is
    /// down (or unreachable) and nothing could be settled.
    ProviderUnavailable,
    /// A command's recovery ended with an error (a broken document, Firestore
    /// unavailable).
    Errors,
    /// A command's plan was bound to another provider account than the job's: a job
    /// configured for the wrong account, or commands only a person settles.
    OtherAccount,
}

impl Verdict {
    /// The verdict of a run with `errors` commands ended in an error,
    /// `other_account` commands bound to another account, and `lookups`. The
    /// provider being down comes first: it is the one a person must act on now, and a
    /// broken command or another account's, which stays from run to run, must not
    /// hide it.
    pub fn of(errors: usize, other_account: usize, lookups: Lookups) -> Self {
        if lookups.unavailable > 0 && lookups.answered == 0 {
            Self::ProviderUnavailable
        } else if errors > 0 {
            Self::Errors
        } else if other_account > 0 {
            Self::OtherAccount
        } else {
            Self::Clean
        }
    }

    /// The serialized name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Clean => "clean",
            Self::ProviderUnavailable => "provider_unavailable",
            Self::Errors => "errors",
            Self::OtherAccount => "other_account",
        }
    }
}

#[cfg(test)]
mod tests;
