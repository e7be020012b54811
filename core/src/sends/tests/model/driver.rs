//! The journal operations of a call, as `Journal::execute`'s driver runs them
//! (`core/src/call.rs`, `core/src/execute/program.rs`): in preconditions mode a commit
//! planned from what the call knows, or decided by a read, is put in flight and lands
//! (or is refused) at a later action, checked there against the journal as it then
//! stands.

use super::journal::{self, Attempted, Decided, Landed};
use super::memory::{Flight, Memory, Source};
use super::ops::{Caller, Op, Output};
use super::system::{Bounds, Mode, State};
use super::worker::Phase;

impl State {
    /// Worker `w` performs the journal operation `op` at its time now; `remember`:
    /// whether the call keeps what it leaves known (`Program::remembers`).
    pub(super) fn operate(&mut self, w: usize, bounds: &Bounds, op: Op, remember: bool) {
        let caller = self.caller(w, bounds);
        let Mode::Preconditions { plans, split_reads } = bounds.mode else {
            let (output, _) = self.run(w, caller, op);
            return self.answered(w, op, output, bounds);
        };
        // The driver takes what the call knows: the operation's answer replaces it.
        let known = self.call_mut(w).memory.take();
        let planned = match op {
            _ if !plans => None,
            Op::Open => journal::chain(caller),
            // A second lease is a plain start: nothing planned, nothing kept.
            Op::Start | Op::Status | Op::Result => None,
            _ => known.and_then(|memory| {
                let (writes, output) = journal::plan(caller, op, &memory)?;
                Some((writes, output, memory))
            }),
        };
        if let Some((writes, output, base)) = planned {
            let flight = Flight {
                caller,
                op,
                source: Source::Planned,
                remember,
                writes,
                output,
                base,
            };
            return self.fly(w, flight, format!("plans {op:?}"));
        }
        if split_reads {
            let Attempted { decided, read } = self.journal.attempt(caller, op);
            match decided {
                Decided::Commit(writes, output) => {
                    let flight = Flight {
                        caller,
                        op,
                        source: Source::Read,
                        remember,
                        writes,
                        output,
                        base: read,
                    };
                    return self.fly(w, flight, format!("reads, decides {op:?}"));
                }
                Decided::Answer(output) => {
                    let keep = remember && output.is_ok();
                    self.call_mut(w).memory = keep.then_some(read);
                    return self.answered(w, op, output, bounds);
                }
            }
        }
        let (output, known) = self.run(w, caller, op);
        let keep = remember && output.is_ok();
        self.call_mut(w).memory = keep.then_some(known);
        self.answered(w, op, output, bounds)
    }

    /// Reads, decides and commits `op` at once for worker `w`.
    fn run(&mut self, w: usize, caller: Caller, op: Op) -> (Output, Memory) {
        let before = self.journal.clone();
        let ran = self.journal.run(caller, op);
        if self.journal != before {
            self.call_mut(w).wrote = true;
        }
        ran
    }

    /// Worker `w` sends the commit `flight`; it waits for its answer.
    fn fly(&mut self, w: usize, flight: Flight, did: String) {
        let call = self.call_mut(w);
        call.flight = Some(flight);
        call.phase = Phase::Committing;
        self.workers[w].did = did;
    }

    /// Worker `w`'s commit in flight reaches the journal: it lands when its
    /// preconditions hold now, and is checked (the fence it writes under is the
    /// lifecycle's, and a read now would decide the same); refused, the runner reads
    /// and decides at once.
    pub(super) fn land(&mut self, w: usize, bounds: &Bounds) {
        let call = self.call_mut(w);
        let flight = call.flight.take().expect("a commit in flight");
        call.phase = Phase::Ready;
        let planned = flight.source == Source::Planned;
        let landing = self.journal.land(&flight);
        let did = match landing.landed {
            Some(Landed {
                fence,
                stale,
                unlike,
            }) => {
                self.call_mut(w).wrote = true;
                self.seen.stale_write |= stale;
                self.seen.unlike_read |= unlike;
                self.seen.planned_landed |= planned;
                let fence = fence.map_or("none".into(), |f| f.to_string());
                format!("lands (lifecycle fence {fence}); ")
            }
            None => {
                self.seen.planned_refused |= planned;
                if landing.wrote {
                    self.call_mut(w).wrote = true;
                }
                "refused; reads and decides: ".into()
            }
        };
        let keep = flight.remember && landing.output.is_ok();
        self.call_mut(w).memory = keep.then_some(landing.memory);
        self.answered(w, flight.op, landing.output, bounds);
        self.workers[w].did = format!("{did}{}", self.workers[w].did);
    }
}
