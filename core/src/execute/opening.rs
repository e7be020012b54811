//! The opening of an `execute` call in transaction mode: its `start` and, when the
//! protocol asks for one after that lease, its `begin_send`, decided in one
//! transaction over one read ([`crate::then`]), so that a new command takes one
//! transaction to its permit rather than two.

use super::protocol::{Event, Protocol, Step};
use crate::call::Now;
use crate::lease::LeaseCall;
use crate::sends::begin::BeginSend;
use crate::sends::load::first_read;
use crate::sends::plan::ProviderPlan;
use crate::start::{Start, StartOutput};
use crate::then::{Second, decide_then};
use crate::transaction::{Decision, OperationName, Snapshot, Transition};

/// `start`, then the `begin_send` the protocol asks for after its lease, as one
/// transition: it reads what `begin_send` reads (which covers `start`'s reads and the
/// stored result) and commits both or neither.
#[derive(Debug, Clone)]
pub struct Opening {
    start: Start,
    call: LeaseCall,
    plan: ProviderPlan,
    protocol: Protocol,
}

impl Opening {
    /// The opening of a call whose protocol stands at `protocol` (before its first
    /// start), for the holder of `call` and its `start`, with `plan`.
    pub fn new(start: Start, call: LeaseCall, plan: ProviderPlan, protocol: &Protocol) -> Self {
        Self {
            start,
            call,
            plan,
            protocol: protocol.clone(),
        }
    }

    /// The `begin_send` the protocol asks for after `started`, if any (asked of a copy:
    /// the call's own protocol hears the answers when they come). The copy hears the
    /// lease at the time captured, and is asked nothing later: only the lease left
    /// then counts, whatever its steady reading.
    fn begin(&self, started: &StartOutput) -> Option<BeginSend> {
        let mut probe = self.protocol.clone();
        let now = Now {
            at: self.call.now(),
            steady: std::time::Duration::ZERO,
            elapsed: std::time::Duration::ZERO,
        };
        match probe.step(Event::Started(started.lease), now) {
            Ok(Step::BeginSend { fence }) => {
                Some(BeginSend::new(self.call.clone(), fence, self.plan.clone()))
            }
            _ => None,
        }
    }
}

impl Transition for Opening {
    type Output = (StartOutput, Second<BeginSend>);

    fn name(&self) -> OperationName {
        OperationName::Start
    }

    fn paths(&self) -> Vec<String> {
        first_read(self.call.command())
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<Self::Output> {
        decide_then(&self.start, snapshot, |started| self.begin(started))
    }
}
