//! Settling from an object's current state, read by id: the step after an event
//! whose meaning depends on order ([`Evidence::ReadById`](super::Evidence)). A
//! PaymentIntent is read by the adapter's own mapping (the one its lookups use); a
//! Checkout Session by its status, down to the PaymentIntent that carries its payment.

use super::key::JournalKey;
use super::object::{ObjectKind, ObjectRef};
use crate::answer;
use crate::intent::Expected;
use crate::session;
use command_journal::evidence::Evidence;
use command_journal::strict_json;
use command_journal::{ProviderAnswer, Timestamp};
use serde_json::{Map, Value};
use std::future::Future;

/// How many objects one settlement reads at most: a session, then its PaymentIntent.
pub const MAX_READS: usize = 2;

/// What an object's current state settles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    /// The journal's answer for the key.
    Answer(ProviderAnswer),
    /// The answer rests on another object: read it by id and settle from it (a
    /// complete session's PaymentIntent).
    ReadById(ObjectRef),
}

/// Reads one Stripe object by id for its current state (`GET /v1/payment_intents/{id}`
/// or `GET /v1/checkout/sessions/{id}`, with the journal's API key and version). The
/// adapter's client implements it ([`Stripe`](crate::Stripe), `crate::read`).
pub trait ReadById {
    /// The object's JSON body as Stripe answered it with a 200; `None` for anything
    /// else (a timeout, a 404, a 5xx): the settlement is then unknown.
    fn read(&self, object: &ObjectRef) -> impl Future<Output = Option<String>> + Send;
}

/// Settles `key` from the current state of `object`, given as the body `json` its
/// read by id answered. `expected` is what the object must show to be this request's
/// ([`Expected::of`] the plan's parameters, or [`Expected::key_only`]).
///
/// A PaymentIntent answers what the adapter's lookup answers for it (`succeeded`: a
/// success with the same envelope; canceled: a decline; anything still open, a
/// refused confirmation the customer may retry included: unknown). A Checkout Session
/// of the key answers as the adapter's retrieve reads it ([`session::current`]): a
/// `complete` one, and an `expired` one that names a PaymentIntent, read on to it
/// ([`Settlement::ReadById`], which [`settle_by_id`] follows); `open` is
/// [`ProviderAnswer::CustomerMustAct`] with its hosted page's URL (the customer may
/// still pay); `expired` with no intent is [`ProviderAnswer::Closed`] (nothing paid,
/// nothing payable any more). Anything not this object, or not of this key, is
/// unknown. Never [`ProviderAnswer::NotFound`].
pub fn settle(object: &ObjectRef, json: &str, key: &JournalKey, expected: &Expected) -> Settlement {
    let unknown = Settlement::Answer(ProviderAnswer::Unknown);
    let Ok(read) = strict_json::parse_object(json) else {
        return unknown;
    };
    if ObjectRef::of(object.kind(), &read).as_ref() != Some(object) {
        return unknown;
    }
    match object.kind() {
        // "If the payment attempt fails (for example due to a decline), the
        // PaymentIntent's status returns to requires_payment_method so that the payment
        // can be retried" (https://docs.stripe.com/payments/paymentintents/lifecycle):
        // a customer who holds the client secret (3-D Secure) or an open Checkout page
        // may still pay on it, so an event never makes that refusal final. Only the
        // journal's own cancel, then a read by id (`Provider::retrieve`), or a lookup of
        // an attempt no customer acts on, does.
        ObjectKind::PaymentIntent
            if read.get("status").and_then(Value::as_str) == Some("requires_payment_method") =>
        {
            unknown
        }
        ObjectKind::PaymentIntent => {
            let found = answer::evidence(std::slice::from_ref(&read), key.as_str(), expected);
            Settlement::Answer(answer::lookup_result(found))
        }
        ObjectKind::CheckoutSession if keyed(&read, key) => settle_session(&read),
        ObjectKind::CheckoutSession => unknown,
    }
}

/// A session's answer from its state, the adapter's own mapping
/// ([`session::current`]), or the PaymentIntent it rests on, to read by id first.
fn settle_session(session: &Map<String, Value>) -> Settlement {
    match session::intent_to_read(session) {
        Some(intent) => Settlement::ReadById(intent),
        None => Settlement::Answer(answer::retrieve_result(session::current(session, None))),
    }
}

/// Whether `object`'s `metadata.journal_key` is `key`.
fn keyed(object: &Map<String, Value>, key: &JournalKey) -> bool {
    object
        .get("metadata")
        .and_then(|metadata| metadata.get("journal_key"))
        .and_then(Value::as_str)
        == Some(key.as_str())
}

/// Reads `object` by id through `reader` and settles `key` from it: a PaymentIntent
/// by the adapter's lookup mapping ([`settle`]); a Checkout Session by the adapter's
/// session mapping ([`session::current`], the same as a retrieve's), reading on to the
/// PaymentIntent it rests on (a complete session's, an expired one's that names one):
/// at most [`MAX_READS`] reads; `None` when a read failed (a timeout, a 5xx: read
/// again later). So an expired session whose intent `succeeded` is the payment, one
/// whose intent is canceled or that names none is closed, and one whose intent is
/// still on its way (`processing`, `requires_capture`) is unknown.
/// `at` is the journal's time taken before the first read: the answer is evidence
/// read by id at or after it
/// ([`Evidence::read_by_id`](command_journal::evidence::Evidence::read_by_id)), so a
/// `Closed` (an expired session) ends an attempt awaiting its customer when recorded
/// within a lease of `at`, where a `Closed` from an event's body would not.
pub async fn settle_by_id(
    reader: &impl ReadById,
    object: ObjectRef,
    key: &JournalKey,
    expected: &Expected,
    at: Timestamp,
) -> Option<Evidence> {
    let json = reader.read(&object).await?;
    let answer = match settle(&object, &json, key, expected) {
        Settlement::Answer(answer) => answer,
        // Only a session reads on: its intent, then the session's own mapping with it.
        Settlement::ReadById(intent) => {
            let intent_json = reader.read(&intent).await?;
            let intent_read = strict_json::parse_object(&intent_json)
                .ok()
                .filter(|read| {
                    ObjectRef::of(ObjectKind::PaymentIntent, read).as_ref() == Some(&intent)
                })
                .filter(|read| expected.owns(read, key.as_str()));
            match strict_json::parse_object(&json) {
                Ok(session) => {
                    answer::retrieve_result(session::current(&session, intent_read.as_ref()))
                }
                Err(_) => ProviderAnswer::Unknown,
            }
        }
    };
    Some(Evidence::read_by_id(key.as_str(), answer, at))
}
