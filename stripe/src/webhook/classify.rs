//! What one verified event proves, read strictly from its `data.object` and nothing
//! else: whose it is (the journal key in the object's own metadata) and what it shows
//! (a success, or "read the object by id first", or nothing). Never an absence: an
//! event says what happened, never that something did not. The package's
//! `docs/events.md` gives the table with the Stripe page of each row.

use super::event::VerifiedEvent;
use super::key::JournalKey;
use super::object::{ObjectKind, ObjectRef};
use crate::answer::{self, LookupAnswer};
use crate::intent::Expected;
use crate::session::{self, PaymentStatus, SessionState};
use command_journal::ProviderAnswer;
use command_journal::strict_json;
use serde_json::{Map, Value};

/// What the journal does with one event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// `payment_intent.succeeded`: the intent in the event is the success, with the
    /// envelope a lookup of the key would build from it.
    IntentSucceeded,
    /// The event's meaning depends on what came before or after it: read the object
    /// by id and settle from its current state.
    ReadObject(&'static str),
    /// A complete session: paid, it is a success whose payment is its PaymentIntent
    /// (read by id for the envelope); otherwise nothing yet.
    SessionCompleted,
    /// A delayed payment of a session ended (`async_payment_succeeded` or `_failed`):
    /// read the session's PaymentIntent by id and settle from it.
    SessionPayment(&'static str),
    /// Nothing to record (an intermediate state the journal's answers never rest on).
    Nothing,
}

/// Every event type read, the kind of its `data.object`, and its rule.
const RULES: [(&str, ObjectKind, Rule); 12] = [
    (
        "payment_intent.succeeded",
        ObjectKind::PaymentIntent,
        Rule::IntentSucceeded,
    ),
    (
        "payment_intent.payment_failed",
        ObjectKind::PaymentIntent,
        Rule::ReadObject("payment_failed"),
    ),
    (
        "payment_intent.canceled",
        ObjectKind::PaymentIntent,
        Rule::ReadObject("canceled"),
    ),
    (
        "payment_intent.requires_action",
        ObjectKind::PaymentIntent,
        Rule::ReadObject("requires_action"),
    ),
    (
        "payment_intent.processing",
        ObjectKind::PaymentIntent,
        Rule::Nothing,
    ),
    (
        "payment_intent.created",
        ObjectKind::PaymentIntent,
        Rule::Nothing,
    ),
    (
        "payment_intent.amount_capturable_updated",
        ObjectKind::PaymentIntent,
        Rule::Nothing,
    ),
    (
        "payment_intent.partially_funded",
        ObjectKind::PaymentIntent,
        Rule::Nothing,
    ),
    (
        "checkout.session.completed",
        ObjectKind::CheckoutSession,
        Rule::SessionCompleted,
    ),
    (
        "checkout.session.async_payment_succeeded",
        ObjectKind::CheckoutSession,
        Rule::SessionPayment("async_payment_succeeded"),
    ),
    (
        "checkout.session.async_payment_failed",
        ObjectKind::CheckoutSession,
        Rule::SessionPayment("async_payment_failed"),
    ),
    (
        "checkout.session.expired",
        ObjectKind::CheckoutSession,
        Rule::ReadObject("expired"),
    ),
];

/// The event types [`classify`] reads: the ones to enable on the endpoint.
pub fn event_types() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|(event_type, _, _)| *event_type)
}

/// What one event proves. `Debug` shows no key, no object id and no envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classified {
    /// An event about an object of the journal's.
    Ours {
        /// The attempt's key, from the object's `metadata.journal_key`.
        key: JournalKey,
        /// The object the event is about (for a session's payment, the session).
        object: ObjectRef,
        /// What the event proves.
        evidence: Evidence,
    },
    /// Acknowledged and counted; nothing is recorded.
    Ignored(Ignored),
}

/// What an event of the journal's proves about its key. Never an absence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// The event proves this answer by itself: only a success
    /// ([`ProviderAnswer::Succeeded`], with the envelope the adapter's lookup builds).
    Proves(ProviderAnswer),
    /// Its meaning depends on order, or its envelope on another object: read this
    /// object by id and settle from its current state ([`settle`](super::settle)).
    /// The code names why, for a log line or a metric label.
    ReadById(ObjectRef, &'static str),
    /// Nothing to record (a state on the way: created, processing, …).
    Nothing,
}

/// Why an event was acknowledged without recording anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// A type the journal does not read (not one of [`event_types`]).
    TypeUnhandled,
    /// An event of the other mode (a test event at a live endpoint: Stripe sends test
    /// events of a Connect account connected in live mode to the live endpoint).
    OtherMode,
    /// The object is not the kind the event type names, or has no valid id.
    ObjectUnexpected,
    /// The object carries no `metadata.journal_key`: another integration's object.
    NotOurs,
    /// `metadata.journal_key` is not of the journal's form: never one the journal made.
    KeyInvalid,
    /// The event carries a Connect `account`: activity on a connected account, not
    /// this account's ("Connect webhooks are for activity on any connected account":
    /// `https://docs.stripe.com/connect/webhooks`); never recorded, whatever its object
    /// says.
    ConnectAccount,
}

impl Ignored {
    /// The stable snake_case code, for a log line or a metric label.
    pub fn code(self) -> &'static str {
        match self {
            Self::TypeUnhandled => "webhook_type_unhandled",
            Self::OtherMode => "webhook_other_mode",
            Self::ObjectUnexpected => "webhook_object_unexpected",
            Self::NotOurs => "webhook_not_ours",
            Self::KeyInvalid => "webhook_key_invalid",
            Self::ConnectAccount => "webhook_connect_account",
        }
    }
}

/// Classifies `event` for a journal whose Stripe key runs in live mode when `livemode`
/// (`SecretKey::mode() == "live"`). A pure function of the event: the same event
/// delivered twice, or events in any order, classify the same.
pub fn classify(event: &VerifiedEvent, livemode: bool) -> Classified {
    let Some((_, kind, rule)) = RULES.iter().find(|(t, _, _)| *t == event.event_type()) else {
        return Classified::Ignored(Ignored::TypeUnhandled);
    };
    // Another account's activity: its objects are not the journal's, even one that
    // carries a key of the journal's form.
    if event.from_connect_account() {
        return Classified::Ignored(Ignored::ConnectAccount);
    }
    if event.livemode() != livemode {
        return Classified::Ignored(Ignored::OtherMode);
    }
    // Already parsed strictly by the verifier; parsed again here as a map.
    let Ok(object) = strict_json::parse_object(event.object().get()) else {
        return Classified::Ignored(Ignored::ObjectUnexpected);
    };
    let Some(reference) = ObjectRef::of(*kind, &object) else {
        return Classified::Ignored(Ignored::ObjectUnexpected);
    };
    let key = match object
        .get("metadata")
        .and_then(|metadata| metadata.get("journal_key"))
    {
        None => return Classified::Ignored(Ignored::NotOurs),
        Some(Value::String(text)) => match JournalKey::parse(text) {
            Some(key) => key,
            None => return Classified::Ignored(Ignored::KeyInvalid),
        },
        Some(_) => return Classified::Ignored(Ignored::KeyInvalid),
    };
    let evidence = evidence(*rule, &object, &reference, &key);
    Classified::Ours {
        key,
        object: reference,
        evidence,
    }
}

/// What `object` (of the journal's, under `key`) proves under `rule`.
fn evidence(
    rule: Rule,
    object: &Map<String, Value>,
    reference: &ObjectRef,
    key: &JournalKey,
) -> Evidence {
    match rule {
        // The adapter's own reading of an intent for a key (a recovery job's, by the
        // key alone): a `succeeded` intent's envelope, or nothing concluded.
        Rule::IntentSucceeded => {
            let found = answer::evidence(
                std::slice::from_ref(object),
                key.as_str(),
                &Expected::key_only(),
            );
            match found {
                LookupAnswer::Found(_) => Evidence::Proves(answer::lookup_result(found)),
                // A signed `succeeded` whose object says otherwise: its current state
                // decides.
                _ => Evidence::ReadById(reference.clone(), "succeeded_unreadable"),
            }
        }
        Rule::ReadObject(why) => Evidence::ReadById(reference.clone(), why),
        Rule::SessionCompleted => match session::state(object) {
            SessionState::Complete {
                payment: PaymentStatus::Paid,
                intent,
            } => Evidence::ReadById(intent.unwrap_or_else(|| reference.clone()), "session_paid"),
            // Unpaid: a delayed method, whose end comes as an `async_payment_*` event.
            _ => Evidence::Nothing,
        },
        Rule::SessionPayment(why) => Evidence::ReadById(
            session::intent_of(object).unwrap_or_else(|| reference.clone()),
            why,
        ),
        Rule::Nothing => Evidence::Nothing,
    }
}
