//! The differential check's schedules: seeded, sequential, the same for both runs.
//!
//! A generation is a fresh pair of projects with [`COMMANDS`] commands and
//! [`HOLDERS`] holders, each holder a journal with its own clock (the shared time plus
//! a skew of up to two lease lengths either way) and its own attempt budget (one
//! attempt for about a quarter of them). A step is one operation of one holder, with
//! what happens inside the provider's callbacks while that operation waits on them
//! (interludes: the clock moving, another holder's `start` or `acquire_lease`, the
//! next commit's response armed to be lost), the provider's answers, and the clock's
//! move after it.

use command_journal::{ProviderAnswer, ResultEnvelope};
use serde_json::json;
use std::collections::{BTreeSet, HashMap};
use std::fmt;

/// Commands per generation.
pub const COMMANDS: usize = 3;
/// Holders per generation.
pub const HOLDERS: usize = 4;
/// Steps before the check moves on to a fresh generation.
pub const STEPS_PER_GENERATION: usize = 20;
/// Provider callbacks of one step that may carry an interlude.
const INTERLUDES: usize = 2;

/// One holder: its clock's skew from the shared time and its attempt budget.
#[derive(Debug, Clone, Copy)]
pub struct HolderSpec {
    /// Milliseconds added to the shared time (−120,000 to 120,000).
    pub skew_ms: i64,
    /// `RetryPolicy::attempts`: 1 or 10.
    pub attempts: u32,
}

impl HolderSpec {
    /// Whether the schedule may lose this holder's responses: a holder with one
    /// attempt stops at its first lost response, at a point that differs between the
    /// paths by design (a chained commit holds more than the commit it stands for).
    pub fn may_lose(&self) -> bool {
        self.attempts > 1
    }
}

impl fmt::Display for HolderSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "clock {:+}.{:03} s, {} attempt{}",
            self.skew_ms / 1000,
            (self.skew_ms % 1000).abs(),
            self.attempts,
            if self.attempts == 1 { "" } else { "s" }
        )
    }
}

/// A lease operation by a holder with a lease id of its own (numbered per holder and
/// command), as a step or inside a provider callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseCall {
    /// `Journal::start`.
    Start,
    /// `Journal::acquire_lease`.
    Acquire,
}

/// Another holder's lease operation inside a provider callback.
#[derive(Debug, Clone, Copy)]
pub struct Takeover {
    pub holder: usize,
    pub command: usize,
    pub call: LeaseCall,
    pub lease: u64,
}

/// What happens inside one provider callback before it answers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Interlude {
    /// Seconds the shared time moves.
    pub advance_s: i64,
    pub takeover: Option<Takeover>,
    /// Lose the response of the next commit (the step holder's).
    pub lose_next_commit: bool,
}

/// The operation of a step.
#[derive(Debug, Clone)]
pub enum Op {
    /// `Journal::execute`; `opening_lost`: the response of its first commit is lost.
    Execute { command: usize, opening_lost: bool },
    Lease {
        command: usize,
        call: LeaseCall,
        lease: u64,
    },
    /// `complete_command` (with the holder's reference) or `fail_command`, under the
    /// lease and fence the holder was last told.
    Terminal {
        command: usize,
        lease: u64,
        fence: i64,
        succeed: bool,
    },
    /// `Journal::recover` over the project; `account`: the plan's account declared;
    /// `first_lost`: the response of its first commit is lost.
    Recover { account: bool, first_lost: bool },
}

/// One step of the schedule.
#[derive(Debug, Clone)]
pub struct Step {
    /// Step number over the whole run, from 0.
    pub index: usize,
    pub generation: u64,
    /// Step number within its generation, from 0.
    pub in_generation: usize,
    pub holder: usize,
    pub op: Op,
    /// The provider's answers to sends, in order (ambiguous once exhausted).
    pub sends: Vec<ProviderAnswer>,
    /// The provider's answers to lookups, in order (unavailable once exhausted).
    pub lookups: Vec<ProviderAnswer>,
    /// By provider callback: sends and lookups in the order they come, in a
    /// recovery job each command's lookups (its first, then the one confirming an
    /// absence under the job's lease).
    pub interludes: Vec<Option<Interlude>>,
    /// Seconds the shared time moves after the step.
    pub advance_s: i64,
}

/// What a holder was last told of a command's lease: the lease number and fence.
pub type Told = HashMap<(usize, usize), (u64, i64)>;

/// A generation's holders.
pub struct Generation {
    pub index: u64,
    pub holders: Vec<HolderSpec>,
}

/// The seeded generator.
pub struct Schedule {
    rng: fastrand::Rng,
    /// The newest lease number each holder used on each command, this generation.
    leases: HashMap<(usize, usize), u64>,
}

impl Schedule {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: fastrand::Rng::with_seed(seed),
            leases: HashMap::new(),
        }
    }

    /// The next generation's holders.
    pub fn generation(&mut self, index: u64) -> Generation {
        self.leases.clear();
        let holders = (0..HOLDERS)
            .map(|_| HolderSpec {
                skew_ms: self.skew_ms(),
                attempts: if self.rng.u8(0..4) == 0 { 1 } else { 10 },
            })
            .collect();
        Generation { index, holders }
    }

    /// A skew of up to two leases (120 s) either way: none, uniform, or at the
    /// lease boundaries.
    fn skew_ms(&mut self) -> i64 {
        match self.rng.u8(0..10) {
            0..3 => 0,
            3..7 => self.rng.i64(-120_000..=120_000),
            _ => {
                let edge = [59_000, 60_000, 61_000, 119_000, 120_000][self.rng.usize(0..5)];
                if self.rng.bool() { edge } else { -edge }
            }
        }
    }

    /// A lease for `holder` on `command`: the one it last used (a retry, or a holder
    /// coming back) or a fresh one.
    fn lease(&mut self, holder: usize, command: usize) -> u64 {
        let current = self.leases.entry((holder, command)).or_insert(0);
        if *current == 0 || self.rng.u8(0..10) < 6 {
            *current += 1;
        }
        *current
    }

    fn other_holder(&mut self, holder: usize) -> usize {
        (holder + self.rng.usize(1..HOLDERS)) % HOLDERS
    }

    /// Ambiguous more often than not, so that commands stay open for the steps after.
    fn send_result(&mut self, charge: &str) -> ProviderAnswer {
        match self.rng.u8(0..20) {
            0..6 => ProviderAnswer::Succeeded(envelope(charge)),
            6..9 => ProviderAnswer::Declined,
            _ => ProviderAnswer::Unknown,
        }
    }

    fn lookup_result(&mut self, charge: &str) -> ProviderAnswer {
        match self.rng.u8(0..20) {
            0..5 => ProviderAnswer::Succeeded(envelope(charge)),
            5..7 => ProviderAnswer::Declined,
            7..15 => ProviderAnswer::NotFound,
            _ => ProviderAnswer::Unknown,
        }
    }

    /// The shared time's move after a step: none, a second, past a lease, past the
    /// settle window, toward or past the cutoff (45 min) and the key's retention (1 h).
    fn advance_s(&mut self) -> i64 {
        match self.rng.u8(0..100) {
            0..25 => 0,
            25..40 => 1,
            40..65 => 61,
            65..80 => 360,
            80..93 => 1_500,
            _ => 4_200,
        }
    }

    fn interlude(&mut self, setup: &Generation, step_holder: usize, command: usize) -> Interlude {
        let advance_s = match self.rng.u8(0..20) {
            0..12 => 0,
            12..14 => 1,
            14..17 => 30,
            _ => 61,
        };
        let takeover = (self.rng.u8(0..100) < 75).then(|| {
            let holder = self.other_holder(step_holder);
            let call = if self.rng.bool() {
                LeaseCall::Start
            } else {
                LeaseCall::Acquire
            };
            Takeover {
                holder,
                command,
                call,
                lease: self.lease(holder, command),
            }
        });
        let lose_next_commit = setup.holders[step_holder].may_lose() && self.rng.u8(0..10) < 2;
        Interlude {
            advance_s,
            takeover,
            lose_next_commit,
        }
    }

    /// Step `index` of `setup`, given what the planned run's holders were told.
    pub fn step(
        &mut self,
        setup: &Generation,
        told: &Told,
        settled: &BTreeSet<usize>,
        index: usize,
        in_generation: usize,
    ) -> Step {
        let holder = self.rng.usize(0..HOLDERS);
        // Mostly a command still open; one in five any (a replay, most of the time).
        let open: Vec<usize> = (0..COMMANDS).filter(|c| !settled.contains(c)).collect();
        let command = if open.is_empty() || self.rng.u8(0..5) == 0 {
            self.rng.usize(0..COMMANDS)
        } else {
            open[self.rng.usize(0..open.len())]
        };
        let may_lose = setup.holders[holder].may_lose();
        let lost = |rng: &mut fastrand::Rng| may_lose && rng.u8(0..100) < 12;
        let mut held: Vec<&(usize, usize)> = told.keys().collect();
        held.sort();
        let op = match self.rng.u8(0..100) {
            0..45 => Op::Execute {
                command,
                opening_lost: lost(&mut self.rng),
            },
            67..75 if !held.is_empty() => {
                // A holder finishing under the lease it was last told (it may have
                // been taken over since).
                let &(holder, command) = held[self.rng.usize(0..held.len())];
                let (lease, fence) = told[&(holder, command)];
                let succeed = self.rng.bool();
                return self.finish(
                    setup,
                    index,
                    in_generation,
                    (holder, command),
                    Op::Terminal {
                        command,
                        lease,
                        fence,
                        succeed,
                    },
                );
            }
            45..57 | 67..75 => Op::Lease {
                command,
                call: LeaseCall::Start,
                lease: self.lease(holder, command),
            },
            57..67 => Op::Lease {
                command,
                call: LeaseCall::Acquire,
                lease: self.lease(holder, command),
            },
            _ => Op::Recover {
                account: self.rng.u8(0..100) < 85,
                first_lost: lost(&mut self.rng),
            },
        };
        self.finish(setup, index, in_generation, (holder, command), op)
    }

    /// The step of `holder` doing `op`: its provider scripts, interludes (other
    /// holders' leases on `command`) and the clock's move after it.
    fn finish(
        &mut self,
        setup: &Generation,
        index: usize,
        in_generation: usize,
        (holder, command): (usize, usize),
        op: Op,
    ) -> Step {
        let charge = |n: usize| format!("ch_{}_{index}_{n}", setup.index);
        let sends = (0..2).map(|n| self.send_result(&charge(n))).collect();
        let lookups = (0..4).map(|n| self.lookup_result(&charge(n + 2))).collect();
        let with_callbacks = matches!(op, Op::Execute { .. } | Op::Recover { .. });
        let interludes = (0..INTERLUDES)
            .map(|n| {
                let odds = if n == 0 { 60 } else { 40 };
                (with_callbacks && self.rng.u8(0..100) < odds)
                    .then(|| self.interlude(setup, holder, command))
            })
            .collect();
        Step {
            index,
            generation: setup.index,
            in_generation,
            holder,
            op,
            sends,
            lookups,
            interludes,
            advance_s: self.advance_s(),
        }
    }
}

/// The provider's charge `id`.
pub fn envelope(id: &str) -> ResultEnvelope {
    ResultEnvelope::new(&json!({"id": id, "amount": 700, "currency": "eur", "status": "succeeded"}))
        .expect("envelope")
}

fn send_text(result: &ProviderAnswer) -> String {
    match result {
        ProviderAnswer::Succeeded(envelope) => format!("succeeded {}", envelope.canonical()),
        ProviderAnswer::Declined => "declined".to_owned(),
        ProviderAnswer::Unknown => "ambiguous".to_owned(),
        ProviderAnswer::ReplayedUnknown => "replayed unknown".to_owned(),
        ProviderAnswer::Indeterminate => "indeterminate".to_owned(),
        ProviderAnswer::SucceededWithReference(_) => "succeeded by reference".to_owned(),
        ProviderAnswer::NotFound => "not found".to_owned(),
        ProviderAnswer::CustomerMustAct(_) => "customer must act".to_owned(),
        ProviderAnswer::Closed => "closed".to_owned(),
    }
}

fn lookup_text(result: &ProviderAnswer) -> String {
    match result {
        ProviderAnswer::Succeeded(envelope) => format!("found {}", envelope.canonical()),
        ProviderAnswer::Declined => "declined".to_owned(),
        ProviderAnswer::NotFound => "not found".to_owned(),
        ProviderAnswer::Unknown
        | ProviderAnswer::ReplayedUnknown
        | ProviderAnswer::Indeterminate
        | ProviderAnswer::CustomerMustAct(_) => "unavailable".to_owned(),
        ProviderAnswer::SucceededWithReference(_) => "found by reference".to_owned(),
        ProviderAnswer::Closed => "closed".to_owned(),
    }
}

impl fmt::Display for LeaseCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Start => "start",
            Self::Acquire => "acquire_lease",
        })
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Execute {
                command,
                opening_lost,
            } => {
                write!(f, "execute on command {command}")?;
                if *opening_lost {
                    f.write_str(", its first commit's response lost")?;
                }
                Ok(())
            }
            Self::Lease {
                command,
                call,
                lease,
            } => write!(f, "{call} on command {command} with lease {lease}"),
            Self::Terminal {
                command,
                lease,
                fence,
                succeed,
            } => write!(
                f,
                "{} on command {command} with lease {lease} at fence {fence}",
                if *succeed {
                    "complete_command"
                } else {
                    "fail_command"
                }
            ),
            Self::Recover {
                account,
                first_lost,
            } => {
                write!(
                    f,
                    "recover ({})",
                    if *account {
                        "the plan's account declared"
                    } else {
                        "no account declared"
                    }
                )?;
                if *first_lost {
                    f.write_str(", its first commit's response lost")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Interlude {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.advance_s > 0 {
            parts.push(format!("time +{} s", self.advance_s));
        }
        if let Some(t) = &self.takeover {
            parts.push(format!(
                "holder {} calls {} on command {} with lease {}",
                t.holder, t.call, t.command, t.lease
            ));
        }
        if self.lose_next_commit {
            parts.push("the next commit's response is lost".to_owned());
        }
        if parts.is_empty() {
            parts.push("nothing".to_owned());
        }
        f.write_str(&parts.join(", then "))
    }
}

impl Step {
    /// The step as a failure message names it.
    pub fn describe(&self, setup: &Generation) -> String {
        let mut text = format!(
            "step {} (generation {}, step {} of it): holder {} ({}): {}",
            self.index,
            self.generation,
            self.in_generation,
            self.holder,
            setup.holders[self.holder],
            self.op
        );
        if matches!(self.op, Op::Execute { .. } | Op::Recover { .. }) {
            let sends: Vec<String> = self.sends.iter().map(send_text).collect();
            let lookups: Vec<String> = self.lookups.iter().map(lookup_text).collect();
            text.push_str(&format!(
                "\n  provider sends answer [{}]; lookups answer [{}]",
                sends.join(", "),
                lookups.join(", ")
            ));
            for (n, interlude) in self.interludes.iter().enumerate() {
                if let Some(interlude) = interlude {
                    text.push_str(&format!("\n  in provider callback {n}: {interlude}"));
                }
            }
            if matches!(self.op, Op::Recover { .. }) {
                text.push_str(
                    "\n  (in a recovery job, callback n is each command's lookup n, and a \
                     lease inside it is on the command looked up)",
                );
            }
        }
        text.push_str(&format!("\n  then time +{} s", self.advance_s));
        text
    }
}
