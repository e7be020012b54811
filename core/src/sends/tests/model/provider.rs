//! The simulated payment provider: idempotent by key while it retains the key, late,
//! lagging and forgetful within the contract the plan states (`docs/providers.md`).
//!
//! - A request on the wire may be processed at any time until its settle deadline (the
//!   end of the lease it was sent under plus the plan's settle window), or never.
//! - Processing a key it does not hold (never seen, or forgotten) charges; a key it
//!   holds is replayed: the original success, no new charge.
//! - A charge is visible to the lookup only once the index has caught up, which it
//!   must have by the same settle deadline.
//! - A key-store provider forgets a key `RETENTION` after it first saw it: the lookup
//!   answers not found, and a request with that key charges again.
//! - With stored errors (`Bounds::stored_errors`), as Stripe does: processing a new
//!   key may end in a 5xx that the provider stores for the key, after making the
//!   charge or before; its sender hears nothing final (a timeout, to the model), and
//!   every later request with the key while it is retained hears that stored answer
//!   replayed (`Heard::ReplayedUnknown`), charging nothing. The lookup shows the
//!   charge, if one was made, once the index catches up. A stored 5xx that charged
//!   nothing may be rolled forward later, at any time (Stripe's incident remediation
//!   documents no horizon): the charge is made then, under the key, and indexed within
//!   the settle window.
//!
//! - With a customer (`Bounds::customer`), as a 3-D Secure PaymentIntent or a hosted
//!   page is: processing a new key charges nothing but leaves an object that waits
//!   for the customer (`customer`), and its sender hears "the customer must act"; a
//!   request with a key it holds replays that first answer, whatever the object's
//!   state now (Stripe replays the stored 200).
//!
//! The clock may not pass a settle deadline that is still open: the contract is an
//! assumption of the model, and every reachable state obeys it.

use super::objects::{Found, Object, ObjectState};
use super::world::{KeyId, RETENTION};
use std::collections::BTreeMap;

/// A request on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Request {
    /// The key it carries.
    pub key: KeyId,
    /// When it must be settled (processed and indexed) or never happen, in seconds.
    pub settle_by: i64,
    /// The worker still waiting for its answer, if any.
    pub sender: Option<usize>,
}

/// What a request's sender hears once the provider processed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Heard {
    /// The charge under the key (made now, or the original's replay).
    Success,
    /// The key's stored unknown answer, replayed: no charge made now.
    ReplayedUnknown,
    /// "The customer must act": the object made now, or the replay of the answer that
    /// made it.
    CustomerMustAct,
}

/// A key the provider holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Held {
    /// Whether a charge was made under the key (not so for a 5xx stored before it).
    charged: bool,
    /// Whether the key's stored answer is a 5xx, replayed to every later request.
    stored_error: bool,
    /// When it first processed the key (its retention counts from then).
    first_seen: i64,
    /// Whether the lookup index shows the charge.
    indexed: bool,
    /// When the index must show it.
    settle_by: i64,
}

/// The provider's state: the wire, its key store and its ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(super) struct Provider {
    /// Requests sent and not yet processed or lost, sorted.
    wire: Vec<Request>,
    /// The keys it holds (forgotten ones stay, past their retention).
    keys: BTreeMap<KeyId, Held>,
    /// Charges made under each key: the ledger, which never forgets.
    charges: BTreeMap<KeyId, u8>,
    /// Whether a new key's request leaves an object that waits for the customer.
    pub(super) customer: bool,
    /// The objects that wait or waited for the customer, in the order they were made
    /// (a key's current object is its last).
    pub(super) objects: Vec<Object>,
}

impl Provider {
    /// A provider that has processed nothing; with `customer`, its new keys' objects
    /// wait for the customer.
    pub(super) fn new(customer: bool) -> Self {
        Self {
            customer,
            ..Self::default()
        }
    }

    /// The requests on the wire, in a fixed order.
    pub(super) fn wire(&self) -> &[Request] {
        &self.wire
    }

    /// Keys charged and not yet visible to the lookup.
    pub(super) fn lagging(&self) -> impl Iterator<Item = KeyId> + '_ {
        self.keys
            .iter()
            .filter(|(_, held)| self.shows(held) && !held.indexed)
            .map(|(key, _)| *key)
    }

    /// Puts a request on the wire.
    pub(super) fn send(&mut self, key: KeyId, settle_by: i64, sender: usize) {
        self.wire.push(Request {
            key,
            settle_by,
            sender: Some(sender),
        });
        self.wire.sort();
    }

    /// Whether the provider retains `key` at `now`.
    pub(super) fn retains(&self, key: KeyId, now: i64) -> bool {
        self.keys
            .get(&key)
            .is_some_and(|held| now < held.first_seen + RETENTION)
    }

    /// Processes request `i` at `now`: the worker waiting for its answer, if any, and
    /// what it hears.
    pub(super) fn process(&mut self, i: usize, now: i64) -> Option<(usize, Heard)> {
        let request = self.wire.remove(i);
        let first = match self.customer {
            true => Heard::CustomerMustAct,
            false => Heard::Success,
        };
        let heard = match self.keys.get(&request.key) {
            Some(held) if now < held.first_seen + RETENTION && held.stored_error => {
                Heard::ReplayedUnknown
            }
            Some(held) if now < held.first_seen + RETENTION => first,
            _ => {
                self.create(request.key, request.settle_by, now);
                first
            }
        };
        request.sender.map(|w| (w, heard))
    }

    /// Processes a new request with `key` at `now`, to be indexed by `settle_by`: a
    /// charge, or with a customer an object that waits for them.
    pub(super) fn create(&mut self, key: KeyId, settle_by: i64, now: i64) {
        let request = Request {
            key,
            settle_by,
            sender: None,
        };
        self.hold(&request, now, !self.customer, false);
        if self.customer {
            self.objects.push(Object {
                key,
                state: ObjectState::Open,
            });
        }
    }

    /// Whether the lookup index shows `held` once caught up: its charge, or its object.
    fn shows(&self, held: &Held) -> bool {
        held.charged || self.customer
    }

    /// Processes request `i`, a key it does not retain, at `now` into a 5xx it stores
    /// for the key, after making the charge when `charged`: its sender hears nothing.
    pub(super) fn store_error(&mut self, i: usize, now: i64, charged: bool) {
        let request = self.wire.remove(i);
        self.hold(&request, now, charged, true);
    }

    fn hold(&mut self, request: &Request, now: i64, charged: bool, stored_error: bool) {
        if charged {
            *self.charges.entry(request.key).or_default() += 1;
        }
        let held = Held {
            charged,
            stored_error,
            first_seen: now,
            indexed: false,
            settle_by: request.settle_by,
        };
        self.keys.insert(request.key, held);
    }

    /// Keys whose stored 5xx charged nothing yet: the provider may still roll each
    /// forward.
    pub(super) fn unrolled(&self) -> impl Iterator<Item = KeyId> + '_ {
        self.keys
            .iter()
            .filter(|(_, held)| held.stored_error && !held.charged)
            .map(|(key, _)| *key)
    }

    /// The provider completes `key`'s stored 5xx at `now`: the charge is made, and the
    /// index shows it within `settle` seconds.
    pub(super) fn roll_forward(&mut self, key: KeyId, now: i64, settle: i64) {
        if let Some(held) = self.keys.get_mut(&key) {
            held.charged = true;
            held.indexed = false;
            held.settle_by = now + settle;
            *self.charges.entry(key).or_default() += 1;
        }
    }

    /// Adds a charge under `key` to the ledger.
    pub(super) fn charge(&mut self, key: KeyId) {
        *self.charges.entry(key).or_default() += 1;
    }

    /// Whether the index shows `key` (its charge or its object), retained or not: what
    /// a durable lookup finds an object's id by.
    pub(super) fn indexed(&self, key: KeyId) -> bool {
        self.keys.get(&key).is_some_and(|held| held.indexed)
    }

    /// Request `i` never reaches the provider.
    pub(super) fn lose(&mut self, i: usize) {
        self.wire.remove(i);
    }

    /// The lookup index catches up with `key`.
    pub(super) fn catch_up(&mut self, key: KeyId) {
        if let Some(held) = self.keys.get_mut(&key) {
            held.indexed = true;
        }
    }

    /// What the lookup of `key` at `now` finds: what the index shows, while the key is
    /// retained.
    pub(super) fn lookup(&self, key: KeyId, now: i64) -> Found {
        let shown = self.keys.get(&key).is_some_and(|held| {
            self.shows(held) && held.indexed && now < held.first_seen + RETENTION
        });
        match (shown, self.object(key)) {
            (false, _) => Found::Nothing,
            (true, None) => Found::Charge,
            (true, Some(object)) => object.state.found(),
        }
    }

    /// No worker waits for an answer from `worker`'s requests any more.
    pub(super) fn orphan(&mut self, worker: usize) {
        for request in &mut self.wire {
            if request.sender == Some(worker) {
                request.sender = None;
            }
        }
        self.wire.sort();
    }

    /// Whether the clock may move to `t`: nothing on the wire or in the index is due
    /// by then.
    pub(super) fn settled_before(&self, t: i64) -> bool {
        let wire = self.wire.iter().all(|request| request.settle_by > t);
        let index = self
            .keys
            .values()
            .all(|held| !self.shows(held) || held.indexed || held.settle_by > t);
        wire && index
    }

    /// Charges made under all of the command's keys.
    pub(super) fn charges(&self) -> u32 {
        self.charges.values().map(|n| u32::from(*n)).sum()
    }

    /// Whether `key`'s stored answer is a 5xx, and if so whether a charge was made
    /// before it.
    pub(super) fn stored_error(&self, key: KeyId) -> Option<bool> {
        self.keys
            .get(&key)
            .filter(|held| held.stored_error)
            .map(|held| held.charged)
    }

    /// Charges made under `key`.
    pub(super) fn charges_of(&self, key: KeyId) -> u8 {
        self.charges.get(&key).copied().unwrap_or(0)
    }
}
