//! The circular order, the measure along it, the bound on the runs that reach
//! every command, and the verdict of a run from its tally.

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

/// Scheduled runs over `listed` (key-hash order), each starting after the last one's
/// stop: run `r` handles the first `handled(r)` of its circle (at least one), settles
/// those not in `stuck` (they leave the listing) and records where it stopped;
/// `join(r)` is listed before run `r`. The runs that handled each command, by hash.
fn simulate(
    mut listed: Vec<Digest>,
    stuck: &[Digest],
    start: Option<Digest>,
    runs: usize,
    handled: impl Fn(usize) -> usize,
    join: impl Fn(usize) -> Option<Digest>,
) -> std::collections::BTreeMap<Digest, Vec<usize>> {
    let mut first = std::collections::BTreeMap::new();
    let mut at = start;
    for run in 0..runs {
        if let Some(new) = join(run).filter(|d| !listed.contains(d)) {
            let i = listed.partition_point(|x| *x < new);
            listed.insert(i, new);
        }
        let order = circular(listed.clone(), at.as_ref(), |d| d);
        let done: Vec<Digest> = order.into_iter().take(handled(run).max(1)).collect();
        for d in &done {
            first.entry(d.clone()).or_insert_with(Vec::new).push(run);
        }
        listed.retain(|d| !done.contains(d) || stuck.contains(d));
        at = done.last().cloned().or(at);
    }
    first
}

fn commands(bytes: &std::collections::BTreeSet<u8>) -> Vec<Digest> {
    bytes.iter().map(|b| h(*b)).collect()
}

proptest::proptest! {
    /// With a limit `L` and `K` listed commands of which any number stay listed for
    /// good, every one is handled within `⌈K / L⌉` runs from any position, and the
    /// ones that stay are handled again within every `⌈K / L⌉` runs after.
    #[test]
    fn a_limit_reaches_every_command_within_k_over_l_runs_however_many_stay(
        bytes in proptest::collection::btree_set(proptest::prelude::any::<u8>(), 1..40),
        stuck_mask in proptest::prelude::any::<u64>(),
        start in proptest::option::of(proptest::prelude::any::<u8>()),
        limit in 1usize..12,
    ) {
        let all = commands(&bytes);
        let stuck: Vec<Digest> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| stuck_mask >> (i % 64) & 1 == 1)
            .map(|(_, d)| d.clone())
            .collect();
        let bound = all.len().div_ceil(limit);
        let first = simulate(all.clone(), &stuck, start.map(h), bound, |_| limit, |_| None);
        for d in &all {
            proptest::prop_assert!(first.get(d).is_some_and(|r| r[0] < bound), "{d:?}");
        }
        // Only the stuck ones stay: each is handled again in the next window.
        let again = simulate(all, &stuck, start.map(h), 2 * bound, |_| limit, |_| None);
        for d in &stuck {
            let runs = again.get(d).cloned().unwrap_or_default();
            proptest::prop_assert!(runs.iter().any(|r| (bound..2 * bound).contains(r)), "{d:?}");
        }
    }

    /// A run stopped by its deadline handles at least its first command: with any
    /// number handled per run, every command is handled within `K` runs.
    #[test]
    fn deadlines_reach_every_command_within_k_runs(
        bytes in proptest::collection::btree_set(proptest::prelude::any::<u8>(), 1..30),
        per_run in proptest::collection::vec(0usize..4, 30),
        start in proptest::option::of(proptest::prelude::any::<u8>()),
    ) {
        let all = commands(&bytes);
        let k = all.len();
        let first = simulate(all.clone(), &all, start.map(h), k, |r| per_run[r], |_| None);
        for d in &all {
            proptest::prop_assert!(first.get(d).is_some_and(|r| r[0] < k), "{d:?}");
        }
    }

    /// One command joining before each run delays the others by at most one place per
    /// run: with a limit `L ≥ 2`, every command listed at the start is handled within
    /// `⌈K / (L − 1)⌉` runs.
    #[test]
    fn a_command_joining_each_run_delays_the_others_one_place_per_run(
        bytes in proptest::collection::btree_set(0u8..128, 1..30),
        joins in proptest::collection::vec(proptest::prelude::any::<u8>(), 40),
        start in proptest::option::of(proptest::prelude::any::<u8>()),
        limit in 2usize..8,
    ) {
        let all = commands(&bytes);
        let bound = all.len().div_ceil(limit - 1);
        let stuck: Vec<Digest> = (0..=255).map(h).collect();
        let first = simulate(
            all.clone(), &stuck, start.map(h), bound, |_| limit, |r| joins.get(r).map(|b| h(*b)),
        );
        for d in &all {
            proptest::prop_assert!(first.get(d).is_some_and(|r| r[0] < bound), "{d:?}");
        }
    }
}

proptest::proptest! {
    /// Whatever the position (a listed command, one between, before or past them
    /// all, one of another range), the circle holds every command once: the ones after
    /// the position in order, then the ones at or before it, so no checkpoint or cursor
    /// can make a run skip or repeat a command.
    #[test]
    fn the_circle_is_every_command_once_from_any_position(
        bytes in proptest::collection::btree_set(proptest::prelude::any::<u8>(), 0..40),
        after in proptest::option::of(proptest::prelude::any::<u8>()),
    ) {
        let all = commands(&bytes);
        let order = circular(all.clone(), after.map(h).as_ref(), |d| d);
        let mut sorted = order.clone();
        sorted.sort();
        proptest::prop_assert_eq!(&sorted, &all);
        let (later, wrapped): (Vec<Digest>, Vec<Digest>) = all
            .iter()
            .cloned()
            .partition(|d| after.is_some_and(|a| *d > h(a)));
        let expected: Vec<Digest> = match after {
            Some(_) => later.into_iter().chain(wrapped).collect(),
            None => all.clone(),
        };
        proptest::prop_assert_eq!(order, expected);
    }
}
