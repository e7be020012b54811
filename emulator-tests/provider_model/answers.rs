//! How the driver answers a parked call: the truth, a lost answer, no answer yet, a
//! timeout, a crash of its worker, or a wait.

use super::driver::{Live, Run};
use super::lock;
use super::provider::Parked;
use super::world::{lookup_text, send_text};
use command_journal::ProviderAnswer;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

impl Run {
    /// Answers (or crashes) one parked call; `Some` when it is left waiting.
    pub(super) fn answer(
        &mut self,
        call: u64,
        parked: Parked,
        must: bool,
        live: &mut BTreeMap<u64, Live>,
    ) -> Option<Parked> {
        let command = live[&call].command;
        match parked {
            Parked::Send {
                request,
                deadline_at,
                reply,
            } => {
                // 0 the truth, 1 a lost answer (processed, answered ambiguous), 2 no
                // answer yet (the sender gives up), 3 a crash, 4 wait; weights: the
                // mood's truth, 15 scaled down by the mood's losses, 15, 8, 12.
                let (truth, lost) = (self.mood.truth, 15 * (100 - self.mood.lost) / 100);
                let roll = self.rng.u32(..truth + lost + 35);
                let choice = match (roll.checked_sub(truth), roll.checked_sub(truth + lost)) {
                    (None, _) => 0,
                    (Some(_), None) => 1,
                    (_, Some(0..15)) => 2,
                    (_, Some(15..23)) => 3,
                    (_, Some(_)) => 4,
                };
                if choice == 4 && !must {
                    return Some(Parked::Send {
                        request,
                        deadline_at,
                        reply,
                    });
                }
                // One call at least is answered: the last may not wait.
                let choice = if choice == 4 { 2 } else { choice };
                let mut world = lock(&self.world);
                let now = world.now();
                if choice == 3 {
                    world.sender_left(request);
                    world.note(
                        Some(command),
                        format!("call#{call} crashed while sending request #{request}"),
                    );
                    if self.rng.u32(..100) < self.mood.lost.max(50) {
                        // Before the request left the process, or lost on the way.
                        world.drop_request(request);
                    }
                    drop(world);
                    self.tally.crashes_parked += 1;
                    live.remove(&call).expect("live").handle.abort();
                    return None;
                }
                let timed_out = now >= deadline_at;
                let (answer, how) = match choice {
                    1 => {
                        world.process(request);
                        self.tally.lost_answers += 1;
                        (ProviderAnswer::Unknown, "answer lost")
                    }
                    2 => {
                        if self.rng.u32(..100) < self.mood.lost {
                            world.drop_request(request);
                        }
                        self.tally.gave_up += 1;
                        (
                            ProviderAnswer::Unknown,
                            "no answer yet: the sender gives up",
                        )
                    }
                    _ => {
                        world.process(request);
                        if timed_out {
                            self.tally.send_timeouts += 1;
                            (ProviderAnswer::Unknown, "past the deadline: timed out")
                        } else {
                            (world.deliver(request), "answered")
                        }
                    }
                };
                world.sender_left(request);
                world.note(
                    Some(command),
                    format!(
                        "call#{call} request #{request}: {how}: {}",
                        send_text(&answer)
                    ),
                );
                drop(world);
                live[&call].resumed.store(now, Ordering::SeqCst);
                let _ = reply.send(answer);
                None
            }
            Parked::Lookup {
                command,
                account,
                key,
                truth,
                evaluated_at,
                deadline_at,
                reply,
            } => {
                let unavailable = self.mood.unavailable;
                let roll = self.rng.u32(..100);
                let wait = roll >= 88;
                if wait && !must {
                    return Some(Parked::Lookup {
                        command,
                        account,
                        key,
                        truth,
                        evaluated_at,
                        deadline_at,
                        reply,
                    });
                }
                if (80..88).contains(&roll) {
                    self.tally.crashes_parked += 1;
                    self.note(
                        Some(command),
                        format!("call#{call} crashed while looking up"),
                    );
                    live.remove(&call).expect("live").handle.abort();
                    return None;
                }
                let mut world = lock(&self.world);
                let now = world.now();
                let answer = if now >= deadline_at {
                    self.tally.lookup_timeouts += 1;
                    ProviderAnswer::Unknown
                } else if roll < unavailable.min(80) {
                    self.tally.lookups_unavailable += 1;
                    ProviderAnswer::Unknown
                } else if self.rng.bool() {
                    // Evaluated when it arrived (a slow response).
                    self.tally.lookups_answered_stale += 1;
                    if truth == ProviderAnswer::NotFound
                        && world.settles_between(command, evaluated_at, now)
                    {
                        self.tally.stale_not_found_across_settle += 1;
                    }
                    truth
                } else {
                    world.lookup(command, account, &key)
                };
                world.note(
                    Some(command),
                    format!("call#{call} lookup answered: {}", lookup_text(&answer)),
                );
                drop(world);
                live[&call].resumed.store(now, Ordering::SeqCst);
                let _ = reply.send(answer);
                None
            }
        }
    }
}
