//! A customer who acts late, twice or never, against the whole call over the
//! in-memory store: a small provider (one object per key: open, paid, failed or
//! cancelled; a re-send replays the first answer; a read by id answers the current
//! state and cancels an open object when asked; any answer may be lost) and calls at
//! random times (inside a lease, past it, past the cutoff). The property, over many
//! seeds: at most one paid object per command, never a new key while an earlier
//! object could still be paid, and the command's answer agrees with the provider.

use super::*;
use crate::call::{CallOptions, Input, Io};
use crate::testing::Store;
use std::collections::BTreeMap;
use std::num::NonZeroU32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Object {
    Open,
    Paid,
    Failed,
    Cancelled,
}

/// What the customer does at a call: nothing, pay, or fail the challenge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    Nothing,
    Pay,
    Fail,
}

/// A deterministic generator (64-bit LCG): the seed alone replays a run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

struct World {
    objects: BTreeMap<String, Object>,
    /// Keys in the order their first send created them.
    created: Vec<String>,
    rng: Rng,
}

impl World {
    fn paid(&self) -> Vec<&String> {
        self.objects
            .iter()
            .filter(|(_, o)| **o == Object::Paid)
            .map(|(k, _)| k)
            .collect()
    }

    /// The answer for `key`'s object as it stands now.
    fn state_of(&self, key: &str) -> ProviderAnswer {
        match self.objects.get(key) {
            None => ProviderAnswer::NotFound,
            Some(Object::Open) => ProviderAnswer::CustomerMustAct(action()),
            Some(Object::Paid) => ProviderAnswer::Succeeded(envelope_of(key)),
            Some(Object::Failed) => ProviderAnswer::Declined,
            Some(Object::Cancelled) => ProviderAnswer::Closed,
        }
    }

    /// One in four answers is lost on its way back.
    fn lost(&mut self, answer: ProviderAnswer) -> ProviderAnswer {
        if self.rng.below(4) == 0 {
            ProviderAnswer::Unknown
        } else {
            answer
        }
    }

    fn answer(&mut self, io: &Io<Executed, u64>) -> Option<Input<u64>> {
        match io {
            Io::Send(request) => {
                // A new key only once every earlier object can no longer be paid.
                if !self.objects.contains_key(&request.key) {
                    let open = self
                        .objects
                        .values()
                        .any(|o| matches!(o, Object::Open | Object::Paid));
                    assert!(!open, "a new key while the customer could still pay");
                    self.objects.insert(request.key.clone(), Object::Open);
                    self.created.push(request.key.clone());
                    let answer = ProviderAnswer::CustomerMustAct(action());
                    return Some(Input::Sent(self.lost(answer)));
                }
                // A re-send replays the first answer: the customer must act.
                let answer = ProviderAnswer::CustomerMustAct(action());
                Some(Input::Sent(self.lost(answer)))
            }
            Io::Retrieve(request) => {
                if request.cancel && self.objects.get(&request.key) == Some(&Object::Open) {
                    self.objects.insert(request.key.clone(), Object::Cancelled);
                }
                let answer = self.state_of(&request.key);
                Some(Input::Retrieved(self.lost(answer)))
            }
            Io::Lookup(request) => {
                // The durable lookup: an open object is found but not final (the
                // adapter's contract: never "not found" for an object that exists and
                // may still be paid); a cancelled one holds nothing chargeable.
                let answer = match self.state_of(&request.key) {
                    ProviderAnswer::CustomerMustAct(_) => ProviderAnswer::Unknown,
                    ProviderAnswer::Closed => ProviderAnswer::NotFound,
                    other => other,
                };
                Some(Input::LookedUp(self.lost(answer)))
            }
            _ => None,
        }
    }

    /// The customer acts on the newest object.
    fn act(&mut self, act: Act) {
        if let Some(key) = self.created.last()
            && self.objects.get(key) == Some(&Object::Open)
        {
            match act {
                Act::Pay => {
                    self.objects.insert(key.clone(), Object::Paid);
                }
                Act::Fail => {
                    self.objects.insert(key.clone(), Object::Failed);
                }
                Act::Nothing => {}
            }
        }
    }
}

fn envelope_of(key: &str) -> ResultEnvelope {
    ResultEnvelope::new(&json!({"id": format!("pi_{}", key.len()), "key": key})).unwrap()
}

fn call_options() -> CallOptions {
    CallOptions {
        concurrency: Concurrency::Preconditions,
        attempts: NonZeroU32::new(10).unwrap(),
        fast_paths: true,
        deadline: None,
    }
}

/// How the runs ended: paid, declined (a failed challenge or a closed object), and
/// how often a call handed the action over.
#[derive(Default)]
struct Seen {
    paid: usize,
    declined: usize,
    closed: usize,
    handed: usize,
}

/// One run of `calls` calls, the customer's acts chosen by `seed`.
fn run_customer(seed: u64, calls: usize, seen: &mut Seen) {
    let mut world = World {
        objects: BTreeMap::new(),
        created: Vec::new(),
        rng: Rng(seed),
    };
    let mut store = Store::new();
    let input = input();
    let identity = input.identity();
    let mut now: i64 = 0;
    let mut last = None;
    for n in 0..calls {
        // Late (hours), inside a lease, past it, or past the cutoff.
        now += match world.rng.below(5) {
            0 => 5,
            1 => 61,
            2 => 3_600,
            3 => 20 * 3_600,
            _ => 120,
        };
        let act = match world.rng.below(6) {
            0 | 1 => Act::Pay,
            2 => Act::Fail,
            _ => Act::Nothing,
        };
        world.act(act);
        let lease =
            crate::identity::LeaseId::parse(&format!("1ea5e001-0000-4000-8000-{:012x}", n + 1))
                .unwrap();
        let owner = input.lease_owner(&identity, &lease).unwrap();
        let program = ExecuteProgram::new(
            identity.clone(),
            owner,
            plan(),
            Concurrency::Preconditions,
            true,
        )
        .unwrap();
        let (answer, _) = store.call(program, call_options(), at(now), |_, io| world.answer(io));
        let execution = answer.map(|e| e.execution);
        let paid = world.paid();
        assert!(paid.len() <= 1, "seed {seed}: two paid objects");
        seen.handed += usize::from(matches!(execution, Ok(Execution::CustomerMustAct(_))));
        match &execution {
            Ok(Execution::Succeeded(envelope)) => {
                let key = paid.first().expect("a success is a paid object");
                assert_eq!(envelope, &envelope_of(key), "seed {seed}");
            }
            Ok(Execution::Declined) => assert!(paid.is_empty(), "seed {seed}: declined, paid"),
            Ok(_) => {}
            Err(error) => panic!("seed {seed}: call {n} failed: {error:?}"),
        }
        if let Some(Ok(terminal @ (Execution::Succeeded(_) | Execution::Declined))) = &last {
            assert_eq!(
                execution.as_ref().ok(),
                Some(terminal),
                "seed {seed}: changed"
            );
        }
        if matches!(execution, Ok(Execution::Succeeded(_) | Execution::Declined)) {
            last = Some(execution);
        }
    }
    assert!(
        world.created.len() <= 1,
        "seed {seed}: {} keys",
        world.created.len()
    );
    match last {
        Some(Ok(Execution::Succeeded(_))) => seen.paid += 1,
        Some(Ok(Execution::Declined)) => seen.declined += 1,
        _ => {}
    }
    seen.closed += usize::from(world.objects.values().any(|o| *o == Object::Cancelled));
}

#[test]
fn a_customer_who_acts_late_twice_or_never_is_charged_at_most_once() {
    let mut seen = Seen::default();
    for seed in 0..200 {
        run_customer(seed, 12, &mut seen);
    }
    // Every ending is reached: paid, a failed challenge, abandoned and closed.
    assert!(
        seen.paid > 0 && seen.declined > 0,
        "{} {}",
        seen.paid,
        seen.declined
    );
    assert!(
        seen.closed > 0 && seen.handed > 0,
        "{} {}",
        seen.closed,
        seen.handed
    );
}
