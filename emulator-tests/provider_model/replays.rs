//! Stripe's stored 5xx: processing a key for the first time, the provider may store a
//! 5xx for it, after making the charge or before any, and replay that 5xx
//! (`ReplayedUnknown`) to every later request with the key while it keeps the key.
//! Which keys store one is fixed by the seed and the commands alone, whatever the
//! interleaving ([`World::stores_error`]).
//!
//! Each command a sender of which heard a replay is followed: the journal, once seen
//! to record the attempt `replayed_unknown`, must never send its key again (a
//! violation otherwise); and the run counts the commands settled (answered terminal,
//! or attempt n + 1 sent after a proven absence) before the replayed attempt's
//! cutoff, as the journal stores it.

use super::driver::Run;
use super::plans::Variant;
use super::world::World;
use super::{SECOND, STORED_ERROR_EVERY, lock, short};
use command_journal::ProviderAnswer;
use command_journal::sends::{AttemptNumber, AttemptState};

/// What the run knows of the first replay a sender of one command heard.
#[derive(Debug)]
pub(super) struct Replay {
    pub(super) attempt: AttemptNumber,
    pub(super) key: String,
    /// When a sender first heard it.
    pub(super) heard_at: i64,
    /// The attempt's `sendCutoffAt` as the journal stores it, once read.
    pub(super) cutoff: Option<i64>,
    /// When the journal was first seen to hold the attempt `replayed_unknown`.
    pub(super) recorded_at: Option<i64>,
    /// Whether the journal's current attempt is still this one, as last read.
    pub(super) current: bool,
    /// When the command first answered terminal, and whether with the charge behind
    /// the stored 5xx.
    pub(super) settled: Option<(i64, bool)>,
    /// When attempt n + 1 first reached the provider.
    pub(super) next_attempt_at: Option<i64>,
}

/// The replay figures of a run.
#[derive(Debug, Default)]
pub(super) struct ReplayTally {
    /// Commands a sender of which heard a replay.
    pub(super) commands: u64,
    /// Of those, seen recorded `replayed_unknown` by the journal.
    pub(super) recorded: u64,
    /// Settled before the replayed attempt's cutoff: by the charge behind the stored
    /// 5xx (found by a lookup), or by attempt n + 1 (a proven absence).
    pub(super) settled_found: u64,
    pub(super) settled_next_attempt: u64,
    /// The longest time from the replay heard to that settlement, in seconds.
    pub(super) settle_max_seconds: i64,
}

impl ReplayTally {
    /// Commands settled after a replay, before the replayed attempt's cutoff.
    pub(super) fn settled(&self) -> u64 {
        self.settled_found + self.settled_next_attempt
    }
}

impl World {
    /// Whether the provider, processing request `id` as the first with its key, stores
    /// a 5xx for the key, and if so whether it charged first: so for one command in
    /// every `STORED_ERROR_EVERY` (which one in each block of consecutive commands, and
    /// whether after the charge, fixed by the seed), for its attempt 1 under the right
    /// plan. Every short run meets one, whatever the interleaving.
    pub(super) fn stores_error(&self, id: usize) -> Option<bool> {
        let r = &self.requests[id];
        if r.variant != Variant::Right || r.attempt != 1 {
            return None;
        }
        let block = (r.command / STORED_ERROR_EVERY) as u64;
        let mut roll =
            fastrand::Rng::with_seed(self.seed ^ block.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let chosen = roll.usize(..STORED_ERROR_EVERY);
        let charged = roll.bool();
        (r.command % STORED_ERROR_EVERY == chosen).then_some(charged)
    }

    /// What the provider answers the sender of `id` now, delivered to it: a replay
    /// heard is counted, and the command's first is followed.
    pub(super) fn deliver(&mut self, id: usize) -> ProviderAnswer {
        let answer = self.answer_of(id);
        if answer == ProviderAnswer::ReplayedUnknown {
            self.tally.replays_heard += 1;
            let now = self.now();
            let r = &self.requests[id];
            let (command, attempt, key) = (r.command, r.attempt, r.key.clone());
            self.note(
                Some(command),
                format!(
                    "request #{id}: the sender hears key …{}'s stored 5xx replayed",
                    short(&key)
                ),
            );
            self.replays.entry(command).or_insert(Replay {
                attempt,
                key,
                heard_at: now,
                cutoff: None,
                recorded_at: None,
                current: true,
                settled: None,
                next_attempt_at: None,
            });
        }
        answer
    }

    /// A request of `command`'s attempt `attempt` with `key` reached the provider
    /// within its lease: never once the journal recorded that key's replay.
    pub(super) fn check_replayed(&mut self, command: usize, key: &str, attempt: AttemptNumber) {
        let now = self.now();
        let Some(replay) = self.replays.get_mut(&command) else {
            return;
        };
        if attempt > replay.attempt {
            replay.next_attempt_at.get_or_insert(now);
        } else if replay.key == key {
            if let Some(at) = replay.recorded_at {
                let text = format!(
                    "key …{} re-sent although the journal held its attempt replayed_unknown \
                     (seen at {})",
                    short(key),
                    self.at(at)
                );
                self.violation(command, &text);
            }
            self.tally.resends_after_replay += 1;
        }
    }

    /// `command` answered terminal for the first time, now.
    pub(super) fn replay_settled(&mut self, command: usize) {
        let now = self.now();
        let found = self
            .charge_of
            .get(&command)
            .map(|&i| self.charges[i].key.clone());
        if let Some(replay) = self.replays.get_mut(&command) {
            let found = found.as_ref() == Some(&replay.key);
            replay.settled.get_or_insert((now, found));
        }
    }
}

impl Run {
    /// Reads the send status of every command whose replayed attempt may still be
    /// the journal's current one: its stored cutoff, and whether it is recorded
    /// `replayed_unknown`. Run while no lookup can be answered (every live call parked
    /// or done), so the attempt read is still the replayed one if it ever was.
    pub(super) async fn read_replays(&mut self) {
        // Until the record is seen, while the attempt may still be sent.
        let watched: Vec<(usize, AttemptNumber)> = {
            let world = lock(&self.world);
            let now = world.now();
            world
                .replays
                .iter()
                .filter(|(_, r)| {
                    r.current && r.recorded_at.is_none() && r.cutoff.is_none_or(|at| now < at)
                })
                .map(|(&c, r)| (c, r.attempt))
                .collect()
        };
        for (c, attempt) in watched {
            let input = self.commands[c].input.clone();
            let status = self.journal.send_status(&input).await;
            let send = match status {
                Ok(status) => status.send,
                Err(error) => self.violation(c, &format!("status failed: {error:?}")),
            };
            let mut world = lock(&self.world);
            let now = world.now();
            let replay = world.replays.get_mut(&c).expect("watched");
            match send {
                Some(send) if send.attempt == attempt => {
                    replay.cutoff = Some(send.send_cutoff_at.micros());
                    if send.state == AttemptState::ReplayedUnknown {
                        replay.recorded_at.get_or_insert(now);
                    }
                }
                _ => replay.current = false,
            }
        }
    }

    /// Counts what became of the replays heard for `generation`'s commands (after
    /// its drain).
    pub(super) fn tally_replays(&mut self, generation: &[usize]) {
        let mut world = lock(&self.world);
        for c in generation {
            let Some(replay) = world.replays.get_mut(c) else {
                continue;
            };
            replay.current = false;
            let t = &mut self.tally.replays;
            t.commands += 1;
            t.recorded += u64::from(replay.recorded_at.is_some());
            let Some(cutoff) = replay.cutoff else {
                continue;
            };
            let found = replay
                .settled
                .filter(|&(at, found)| found && at < cutoff)
                .map(|(at, _)| at);
            let next = replay.next_attempt_at.filter(|&at| at < cutoff);
            match (found, next) {
                (Some(at), _) => {
                    t.settled_found += 1;
                    t.settle_max_seconds =
                        t.settle_max_seconds.max((at - replay.heard_at) / SECOND);
                }
                (None, Some(at)) => {
                    t.settled_next_attempt += 1;
                    t.settle_max_seconds =
                        t.settle_max_seconds.max((at - replay.heard_at) / SECOND);
                }
                (None, None) => {}
            }
        }
    }
}
