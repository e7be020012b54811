//! The customer in the loop: for one command in `CUSTOMER_EVERY` (which one fixed by
//! the seed), a new key's request charges nothing but leaves an object that waits for
//! the customer (a PaymentIntent in `requires_action`, a hosted page), and its sender
//! hears "the customer must act"; a re-send of the key while it is retained replays
//! that answer, whatever the object's state now.
//!
//! - The customer acts when the provider works its queue, late (rounds after the
//!   send), twice (a second tab's act on an object no longer open changes nothing:
//!   counted), or never (an abandoned object, one in three): paid (the ledger's
//!   charge, the command's one), or the challenge failed (a refusal).
//! - An object still open `EXPIRY_LAG` after its `act_by` (the instant every send of
//!   its key carried, the same on each) expires: closed, nothing charged. Until then
//!   a call from `act_by` on cancels it.
//! - `retrieve` reads the object by id at once: its current state, cancelled first when
//!   the journal asks (`cancel`), and its answer sometimes lost. A read that may
//!   re-send the key (`replayable`) is made only before the key's cutoff and never by
//!   a job, and a cancel (a caller's or a job's, each under its lease) only from
//!   `act_by` on: the journal's promises, checked.
//! - A lookup, once the index shows the key, answers an open object `Unknown` (the
//!   adapters' `lookup_pending`), a paid one its charge, and any other a refusal.
//!
//! The ledger stays the oracle: at most one charge per command, so at most one paid
//! object; a command declined or closed was never charged.

use super::plans::Variant;
use super::world::{Outcome, World};
use super::{CUTOFF, SECOND, short};
use command_journal::sends::{CustomerAction, Handoff, RetrieveRequest};
use command_journal::{ProviderAnswer, ResultEnvelope};

/// One command in this many (20%) meets a provider that waits for its customer.
pub(super) const CUSTOMER_EVERY: usize = 5;
/// How long after its `act_by` an open object expires by itself (µs).
const EXPIRY_LAG: i64 = 300 * SECOND;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ObjectState {
    Open,
    /// Paid: the charge at this index of the ledger.
    Paid(usize),
    Failed,
    Cancelled,
    Expired,
}

pub(super) struct Object {
    /// The request that made it.
    pub(super) request: usize,
    pub(super) command: usize,
    pub(super) act_by: i64,
    /// The customer never acts on it.
    pub(super) abandoned: bool,
    pub(super) state: ObjectState,
}

#[derive(Debug, Default)]
pub(super) struct CustomerTally {
    pub(super) objects: u64,
    pub(super) paid: u64,
    pub(super) failed: u64,
    pub(super) cancelled: u64,
    pub(super) expired: u64,
    /// A second act on an object no longer open (a second tab).
    pub(super) acts_ignored: u64,
    pub(super) retrieves: u64,
    pub(super) retrieves_lost: u64,
    pub(super) retrieves_cancelling: u64,
}

/// The action handed to the customer's browser.
pub(super) fn action() -> CustomerAction {
    CustomerAction::Open {
        url: Handoff::new("https://pay.example/provider-model"),
    }
}

impl World {
    /// Whether request `id`'s command meets a provider that waits for its customer.
    pub(super) fn waits_for_customer(&self, id: usize) -> bool {
        let command = self.requests[id].command;
        let block = (command / CUSTOMER_EVERY) as u64;
        let mut roll =
            fastrand::Rng::with_seed(self.seed ^ block.wrapping_mul(0x5851_f42d_4c95_7f2d));
        command % CUSTOMER_EVERY == roll.usize(..CUSTOMER_EVERY)
    }

    /// Request `id`, new to the provider, makes an open object.
    pub(super) fn open_object(&mut self, id: usize) -> Outcome {
        let r = &self.requests[id];
        let (command, act_by) = (r.command, r.act_by);
        let index = self.objects.len();
        self.objects.push(Object {
            request: id,
            command,
            act_by,
            abandoned: self.rng.u32(..3) == 0,
            state: ObjectState::Open,
        });
        self.customers.objects += 1;
        Outcome::Customer(index)
    }

    /// The customer acts on some objects: pays, fails the challenge, or acts again on
    /// one no longer open.
    pub(super) fn customer_acts(&mut self) {
        for i in 0..self.objects.len() {
            let object = &self.objects[i];
            if object.abandoned || self.rng.u32(..100) >= 15 {
                continue;
            }
            let command = object.command;
            match object.state {
                ObjectState::Open if self.rng.u32(..4) == 0 => {
                    self.objects[i].state = ObjectState::Failed;
                    self.declined.insert(command);
                    self.customers.failed += 1;
                    self.note(Some(command), format!("object {i}: the challenge failed"));
                }
                ObjectState::Open => {
                    let charge = self.charge(self.objects[i].request);
                    self.objects[i].state = ObjectState::Paid(charge);
                    self.customers.paid += 1;
                    self.note(Some(command), format!("object {i}: the customer paid"));
                }
                _ => self.customers.acts_ignored += 1,
            }
        }
    }

    /// Every object still open `EXPIRY_LAG` past its `act_by` expires.
    pub(super) fn expire_objects(&mut self) {
        let now = self.now();
        for i in 0..self.objects.len() {
            let object = &self.objects[i];
            if object.state == ObjectState::Open && now >= object.act_by + EXPIRY_LAG {
                let command = object.command;
                self.objects[i].state = ObjectState::Expired;
                self.declined.insert(command);
                self.customers.expired += 1;
                self.note(Some(command), format!("object {i} expired at its act_by"));
            }
        }
    }

    /// What a lookup finds of object `i`, and why.
    pub(super) fn object_found(&self, i: usize) -> (ProviderAnswer, &'static str) {
        match self.objects[i].state {
            ObjectState::Open => (ProviderAnswer::Unknown, "an object the customer may pay"),
            ObjectState::Paid(charge) => (self.paid(charge), "a paid object"),
            ObjectState::Failed | ObjectState::Cancelled | ObjectState::Expired => {
                (ProviderAnswer::Declined, "a closed object")
            }
        }
    }

    fn paid(&self, charge: usize) -> ProviderAnswer {
        let envelope: &ResultEnvelope = &self.charges[charge].envelope;
        ProviderAnswer::Succeeded(envelope.clone())
    }

    /// Reads `request.key`'s object by id for `command` at `account`, cancelling an
    /// open one first when asked; `lossy`: the answer may be lost on the way back.
    pub(super) fn retrieve(
        &mut self,
        command: usize,
        variant: Variant,
        job: bool,
        request: &RetrieveRequest,
        lossy: bool,
    ) -> ProviderAnswer {
        let now = self.now();
        self.customers.retrieves += 1;
        let slot = (variant.account(), request.key.clone());
        let first = self.first_seen.get(&slot).copied();
        if request.replayable && (job || first.is_none_or(|t| now >= t + CUTOFF * SECOND)) {
            self.violation(
                command,
                "a replayable read past the key's cutoff, or a job's",
            );
        }
        if request.cancel && now < request.act_by.micros() {
            self.violation(command, "a cancel before act_by");
        }
        let object = match self.entries.get(&slot).map(|entry| entry.outcome) {
            Some(Outcome::Customer(i)) => Some(i),
            _ => None,
        };
        let answer = match object {
            None => ProviderAnswer::Unknown,
            Some(i) => {
                if request.cancel && self.objects[i].state == ObjectState::Open {
                    self.objects[i].state = ObjectState::Cancelled;
                    self.declined.insert(command);
                    self.customers.cancelled += 1;
                }
                match self.objects[i].state {
                    ObjectState::Open => ProviderAnswer::CustomerMustAct(action()),
                    ObjectState::Paid(charge) => self.paid(charge),
                    ObjectState::Failed => ProviderAnswer::Declined,
                    ObjectState::Cancelled | ObjectState::Expired => ProviderAnswer::Closed,
                }
            }
        };
        self.customers.retrieves_cancelling += u64::from(request.cancel);
        let lost = lossy && self.rng.u32(..100) < 15;
        self.customers.retrieves_lost += u64::from(lost);
        let text = format!(
            "retrieve of key …{} (replayable {}, cancel {}): {}{}",
            short(&request.key),
            request.replayable,
            request.cancel,
            super::world::send_text(&answer),
            if lost { ", answer lost" } else { "" }
        );
        self.note(Some(command), text);
        if lost {
            ProviderAnswer::Unknown
        } else {
            answer
        }
    }

    /// Paid objects per command never exceed one (the ledger's own check, counted).
    pub(super) fn paid_objects(&self, command: usize) -> usize {
        self.objects
            .iter()
            .filter(|o| o.command == command && matches!(o.state, ObjectState::Paid(_)))
            .count()
    }
}
