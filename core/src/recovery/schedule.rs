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

use crate::answer::ProviderAnswer;
use crate::digest::Digest;
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
pub fn further(from: Option<&Digest>, a: &Digest, b: &Digest) -> bool {
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
    /// a lookup that replays a stored unknown tells nothing, and the protocol ends
    /// both as `lookup_unavailable`.
    pub fn is_answer(answer: &ProviderAnswer) -> bool {
        !matches!(
            answer,
            ProviderAnswer::Unknown | ProviderAnswer::ReplayedUnknown
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
mod tests {
    use super::*;

    fn h(n: u8) -> Digest {
        Digest::parse(&format!("{n:02x}").repeat(32)).expect("hash")
    }

    #[test]
    fn the_circle_starts_after_the_position_and_wraps_to_the_front() {
        let all: Vec<Digest> = [1, 3, 5, 7].map(h).to_vec();
        let order = |after: Option<Digest>| circular(all.clone(), after.as_ref(), |d| d);
        assert_eq!(order(None), all);
        assert_eq!(order(Some(h(3))), [5, 7, 1, 3].map(h));
        assert_eq!(order(Some(h(4))), [5, 7, 1, 3].map(h));
        // Before every command, or past every one: the whole range, from its start.
        assert_eq!(order(Some(h(0))), all);
        assert_eq!(order(Some(h(9))), all);
        assert_eq!(order(Some(h(7))), all);
    }

    #[test]
    fn further_measures_along_the_circle_from_where_the_run_started() {
        assert!(further(None, &h(5), &h(3)));
        assert!(!further(None, &h(3), &h(5)));
        // From 4: 5, 7, then 1, 3 after the wrap.
        let from = Some(h(4));
        assert!(further(from.as_ref(), &h(1), &h(7)));
        assert!(further(from.as_ref(), &h(7), &h(5)));
        assert!(!further(from.as_ref(), &h(5), &h(3)));
        assert!(!further(from.as_ref(), &h(5), &h(5)));
    }

    /// `runs` limited runs over `k` listed commands, each recording its stop: the run
    /// at which each command was first handled.
    fn first_handled(k: u8, limit: usize, start: Option<Digest>, runs: usize) -> Vec<usize> {
        let all: Vec<Digest> = (1..=k).map(|n| h(2 * n)).collect();
        let mut first = vec![usize::MAX; all.len()];
        let mut at = start;
        for run in 0..runs {
            let order = circular(all.clone(), at.as_ref(), |d| d);
            for d in order.iter().take(limit) {
                let i = all.iter().position(|x| x == d).expect("listed");
                first[i] = first[i].min(run);
            }
            at = order.into_iter().take(limit).next_back();
        }
        first
    }

    #[test]
    fn limited_runs_reach_every_command_within_the_bound_from_any_position() {
        for (k, limit) in [(7u8, 2usize), (10, 3), (5, 5), (9, 1)] {
            let bound = usize::from(k).div_ceil(limit);
            for start in [None, Some(h(0)), Some(h(5)), Some(h(255))] {
                let first = first_handled(k, limit, start.clone(), bound);
                assert!(
                    first.iter().all(|r| *r < bound),
                    "{k} {limit} {start:?}: {first:?}"
                );
            }
        }
    }

    #[test]
    fn the_provider_down_is_the_verdict_whatever_else_the_run_met() {
        let down = Lookups {
            answered: 0,
            unavailable: 3,
        };
        let some = Lookups {
            answered: 1,
            unavailable: 3,
        };
        assert_eq!(Verdict::of(0, 0, Lookups::default()), Verdict::Clean);
        assert_eq!(Verdict::of(0, 0, down), Verdict::ProviderUnavailable);
        assert_eq!(Verdict::of(2, 1, down), Verdict::ProviderUnavailable);
        assert_eq!(Verdict::of(0, 0, some), Verdict::Clean);
        assert_eq!(Verdict::of(1, 1, some), Verdict::Errors);
        assert_eq!(Verdict::of(0, 1, some), Verdict::OtherAccount);
        assert_eq!(
            Verdict::ProviderUnavailable.as_str(),
            "provider_unavailable"
        );
    }

    fn tally(answers: &[ProviderAnswer]) -> Lookups {
        let mut lookups = Lookups::default();
        answers.iter().for_each(|a| lookups.count(a));
        lookups
    }

    /// A run whose every lookup failed is `provider_unavailable` whatever the failure
    /// looked like, a replayed unknown included; one lookup answered among them is not.
    #[test]
    fn a_run_whose_every_lookup_failed_is_the_provider_down_and_a_mix_is_not() {
        use ProviderAnswer::{Declined, NotFound, ReplayedUnknown, Unknown};
        for failed in [
            vec![Unknown],
            vec![ReplayedUnknown],
            vec![Unknown, ReplayedUnknown, Unknown],
        ] {
            let lookups = tally(&failed);
            assert_eq!(lookups.answered, 0, "{failed:?}");
            assert_eq!(lookups.unavailable, failed.len(), "{failed:?}");
            for (errors, other) in [(0, 0), (1, 0), (0, 1), (3, 2)] {
                assert_eq!(
                    Verdict::of(errors, other, lookups),
                    Verdict::ProviderUnavailable,
                    "{failed:?}"
                );
            }
        }
        for answer in [NotFound, Declined] {
            let mixed = tally(&[Unknown, ReplayedUnknown, answer.clone(), Unknown]);
            assert_eq!((mixed.answered, mixed.unavailable), (1, 3), "{answer:?}");
            assert_eq!(Verdict::of(0, 0, mixed), Verdict::Clean);
            assert_eq!(Verdict::of(1, 0, mixed), Verdict::Errors);
        }
        // No lookup at all is no outage.
        assert_eq!(Verdict::of(0, 0, tally(&[])), Verdict::Clean);
    }
}
