//! The Stripe object an event is about, named by its kind and id: what the endpoint
//! retrieves by id when an event's meaning depends on what came after it.

use serde_json::{Map, Value};
use std::fmt;

/// The longest object id read (Stripe's ids are at most 255 characters).
const MAX_ID_BYTES: usize = 255;

/// The kinds of object whose events the journal reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    /// A PaymentIntent (`object` `payment_intent`, id `pi_…`).
    PaymentIntent,
    /// A Checkout Session (`object` `checkout.session`, id `cs_…`).
    CheckoutSession,
}

impl ObjectKind {
    /// The object's `object` property.
    pub fn name(self) -> &'static str {
        match self {
            Self::PaymentIntent => "payment_intent",
            Self::CheckoutSession => "checkout.session",
        }
    }

    /// The prefix of the kind's ids.
    fn prefix(self) -> &'static str {
        match self {
            Self::PaymentIntent => "pi_",
            Self::CheckoutSession => "cs_",
        }
    }

    /// Whether `id` is an id of this kind: its prefix, then ASCII letters, digits or
    /// `_`, at most 255 characters in all.
    fn fits(self, id: &str) -> bool {
        id.len() > self.prefix().len()
            && id.len() <= MAX_ID_BYTES
            && id.starts_with(self.prefix())
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    }
}

/// One Stripe object to read by id (`GET /v1/payment_intents/{id}` or
/// `GET /v1/checkout/sessions/{id}`). `Debug` shows the kind, never the id: an object
/// id is a provider reference, kept out of logs as the result envelope's are.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    kind: ObjectKind,
    id: String,
}

impl fmt::Debug for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectRef")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl ObjectRef {
    /// `id` as an object of `kind`, when it has that kind's form.
    pub fn new(kind: ObjectKind, id: &str) -> Option<Self> {
        kind.fits(id).then(|| Self {
            kind,
            id: id.to_owned(),
        })
    }

    /// The object `object` names itself, when it is one of `kind` with a valid id.
    pub(crate) fn of(kind: ObjectKind, object: &Map<String, Value>) -> Option<Self> {
        if object.get("object").and_then(Value::as_str) != Some(kind.name()) {
            return None;
        }
        Self::new(kind, object.get("id").and_then(Value::as_str)?)
    }

    /// The object's kind.
    pub fn kind(&self) -> ObjectKind {
        self.kind
    }

    /// The object's id, for the path of the read by id only.
    pub fn id(&self) -> &str {
        &self.id
    }
}
