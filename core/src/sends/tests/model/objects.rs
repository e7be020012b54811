//! The customer in the loop (`Bounds::customer`): the provider's objects that wait
//! for the customer (a PaymentIntent in `requires_action`, an open hosted page), what
//! the customer does to them, and the provider's read of one by id.
//!
//! - A new key's request leaves an object `Open`; the customer may pay it (`Pay`: the
//!   ledger's charge) or fail its challenge (`Fail`: a final refusal, as the adapter
//!   cancels a failed challenge's intent) at any instant, late, or never (abandoned).
//!   An object that is no longer open takes no second act: a second tab's act on it
//!   changes nothing at the provider, so the model has no action for it.
//! - A read by id (`retrieve`) answers the object's current state; with `cancel` it
//!   cancels an open object first (`Cancelled`: `Closed`). A `replayable` read
//!   re-sends the key to learn the object's id: while the provider retains the key
//!   that is the first answer's replay, but a key it has forgotten is a new request,
//!   and makes a new object. A read that is not replayable finds the object through
//!   the durable lookup, once the index shows it. Its answer may be lost (`Lost`),
//!   what it did (a cancel) done.
//! - A lookup of the key, once the index shows it, finds an open object pending
//!   (`Unknown`: the adapters' `lookup_pending`, never "not found" for an object that
//!   may still be paid), a paid one charged, a failed or cancelled one refused.
//!
//! No object expires on its own: a hosted page's `expires_at` only ends the
//! customer's window earlier than the model's open intent does, so the model keeps
//! the longer window.

use super::provider::Provider;
use super::world::KeyId;
use crate::sends::provider::ProviderAnswer;
use crate::sends::{CustomerAction, Handoff};

/// An object's state at the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum ObjectState {
    /// Waits for the customer.
    Open,
    /// The customer paid it: the ledger holds its charge.
    Paid,
    /// The customer failed its challenge: refused for good.
    Failed,
    /// Cancelled by a read with `cancel`: closed, nothing charged.
    Cancelled,
}

impl ObjectState {
    /// What a lookup finds of an object in this state, once the index shows it.
    pub(super) fn found(self) -> Found {
        match self {
            Self::Open => Found::Pending,
            Self::Paid => Found::Charge,
            Self::Failed | Self::Cancelled => Found::Refusal,
        }
    }
}

/// One object that waits or waited for the customer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Object {
    /// The key whose request made it.
    pub key: KeyId,
    pub state: ObjectState,
}

/// What a lookup of a key finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// Nothing the index shows.
    Nothing,
    /// A charge.
    Charge,
    /// A final refusal.
    Refusal,
    /// An object the customer may still pay: nothing final.
    Pending,
}

/// The action the customer's browser is handed (never stored; its value is no fact
/// the model checks).
pub(super) fn action() -> CustomerAction {
    CustomerAction::Open {
        url: Handoff::new("https://pay.example/model"),
    }
}

impl Provider {
    /// `key`'s current object: its last.
    pub(super) fn object(&self, key: KeyId) -> Option<&Object> {
        self.objects.iter().rev().find(|object| object.key == key)
    }

    /// The objects the customer may still act on, by index.
    pub(super) fn open(&self) -> impl Iterator<Item = usize> + '_ {
        self.objects
            .iter()
            .enumerate()
            .filter(|(_, object)| object.state == ObjectState::Open)
            .map(|(i, _)| i)
    }

    /// Whether an object of a key other than `key` may still be paid.
    pub(super) fn open_beside(&self, key: KeyId) -> bool {
        self.objects
            .iter()
            .any(|object| object.key != key && object.state == ObjectState::Open)
    }

    /// The customer pays object `i`.
    pub(super) fn pay(&mut self, i: usize) {
        self.objects[i].state = ObjectState::Paid;
        let key = self.objects[i].key;
        self.charge(key);
    }

    /// The customer fails object `i`'s challenge.
    pub(super) fn fail(&mut self, i: usize) {
        self.objects[i].state = ObjectState::Failed;
    }

    /// Reads `key`'s object by id at `now` (re-sending the key first when
    /// `replayable`, a new request to be indexed by `settle_by` if the key is
    /// forgotten), cancelling it first when `cancel` and it is open: what it answers.
    pub(super) fn retrieve(
        &mut self,
        key: KeyId,
        replayable: bool,
        cancel: bool,
        now: i64,
        settle_by: i64,
    ) -> ProviderAnswer {
        if replayable && !self.retains(key, now) {
            self.create(key, settle_by, now);
        }
        if !replayable && !self.indexed(key) {
            return ProviderAnswer::Unknown;
        }
        let Some(i) = self.objects.iter().rposition(|object| object.key == key) else {
            return ProviderAnswer::Unknown;
        };
        if cancel && self.objects[i].state == ObjectState::Open {
            self.objects[i].state = ObjectState::Cancelled;
        }
        match self.objects[i].state {
            ObjectState::Open => ProviderAnswer::CustomerMustAct(action()),
            ObjectState::Paid => ProviderAnswer::Succeeded(key.envelope()),
            ObjectState::Failed => ProviderAnswer::Declined,
            ObjectState::Cancelled => ProviderAnswer::Closed,
        }
    }
}
