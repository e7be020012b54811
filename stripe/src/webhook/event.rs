//! The verified event's envelope, read strictly from the signed bytes: Stripe's event
//! object (`https://docs.stripe.com/api/events/object`) as far as the journal reads it.

use super::refusal::Refusal;
use command_journal::strict_json;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// The longest id or type read (Stripe's ids are at most 255 characters).
const MAX_ID_BYTES: usize = 255;

/// A Stripe event whose signature was verified: its envelope, and the API resource it
/// is about (`data.object`) as the exact JSON text Stripe signed, never re-serialised.
/// `Debug` shows the envelope without its id (an `evt_` id names one event in Stripe,
/// as an object id does, and stays out of logs) and without the resource (it holds a
/// customer's data): the type, creation time, mode and API version.
#[derive(Clone)]
pub struct VerifiedEvent {
    id: String,
    event_type: String,
    created: i64,
    livemode: bool,
    api_version: Option<String>,
    connect: bool,
    object: Box<RawValue>,
}

impl fmt::Debug for VerifiedEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifiedEvent")
            .field("event_type", &self.event_type)
            .field("created", &self.created)
            .field("livemode", &self.livemode)
            .field("api_version", &self.api_version)
            .field("connect", &self.connect)
            .finish_non_exhaustive()
    }
}

impl VerifiedEvent {
    /// The event's `id` (`evt_…`): the same for every delivery of one event.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The event's `type`, such as `payment_intent.succeeded`.
    pub fn event_type(&self) -> &str {
        &self.event_type
    }

    /// `created`: when Stripe made the event, in Unix seconds.
    pub fn created(&self) -> i64 {
        self.created
    }

    /// `livemode`: a live event (`true`) or a test one.
    pub fn livemode(&self) -> bool {
        self.livemode
    }

    /// `api_version`: the version the object was rendered in (`None` when Stripe sent
    /// `null`).
    pub fn api_version(&self) -> Option<&str> {
        self.api_version.as_deref()
    }

    /// Whether the event carries a top-level `account`: an event of a connected
    /// account, which Stripe sends to a platform's Connect endpoints
    /// (`https://docs.stripe.com/connect/webhooks`), never one of this account's own
    /// objects. The account id itself is not kept.
    pub fn from_connect_account(&self) -> bool {
        self.connect
    }

    /// `data.object`: the resource as the exact JSON text of the signed body.
    pub fn object(&self) -> &RawValue {
        &self.object
    }

    /// Reads `body` strictly: one JSON object without a duplicate key at any depth,
    /// `object` `"event"`, `id` and `type` non-empty strings of at most 255 ASCII
    /// characters (letters, digits, `_`; `.` too in a type), `created` a positive
    /// integer, `livemode` a boolean, `api_version` a string or `null`, `data` an object
    /// whose `object` is an object; and, where present, `account` a string,
    /// `pending_webhooks` a non-negative integer, `request` an object or `null`,
    /// `data.previous_attributes` an object. Other properties are not read: Stripe adds
    /// properties to its objects as a backward-compatible change
    /// (`https://docs.stripe.com/upgrades`). Anything else is
    /// [`Refusal::EventMalformed`].
    pub(crate) fn parse(body: &[u8]) -> Result<Self, Refusal> {
        let malformed = Refusal::EventMalformed;
        let text = std::str::from_utf8(body).map_err(|_| malformed)?;
        let event = strict_json::parse_object(text).map_err(|_| malformed)?;
        let string = |key: &str| event.get(key).and_then(Value::as_str);
        if string("object") != Some("event") {
            return Err(malformed);
        }
        let id = string("id").filter(|id| identifier(id, false));
        let event_type = string("type").filter(|t| identifier(t, true));
        let created = event
            .get("created")
            .and_then(Value::as_i64)
            .filter(|c| *c > 0);
        let livemode = event.get("livemode").and_then(Value::as_bool);
        let api_version = match event.get("api_version") {
            Some(Value::Null) => Some(None),
            Some(Value::String(version)) => Some(Some(version.clone())),
            _ => None,
        };
        let (Some(id), Some(event_type), Some(created), Some(livemode), Some(api_version)) =
            (id, event_type, created, livemode, api_version)
        else {
            return Err(malformed);
        };
        if !optional_fields_fit(&event) {
            return Err(malformed);
        }
        Ok(Self {
            id: id.to_owned(),
            event_type: event_type.to_owned(),
            created,
            livemode,
            api_version,
            connect: event.contains_key("account"),
            object: raw_object(text).ok_or(malformed)?,
        })
    }
}

/// Whether `text` is 1 to 255 ASCII letters, digits or `_` (and `.` for a type).
fn identifier(text: &str, dotted: bool) -> bool {
    (1..=MAX_ID_BYTES).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || (dotted && b == b'.'))
}

/// The optional properties the envelope names have their documented types, and
/// `data` is an object whose `object` is one.
fn optional_fields_fit(event: &Map<String, Value>) -> bool {
    let account = match event.get("account") {
        None => true,
        Some(account) => account.is_string(),
    };
    let pending = match event.get("pending_webhooks") {
        None => true,
        Some(pending) => pending.as_u64().is_some(),
    };
    let request = matches!(
        event.get("request"),
        None | Some(Value::Null | Value::Object(_))
    );
    let data = match event.get("data") {
        Some(Value::Object(data)) => {
            matches!(data.get("object"), Some(Value::Object(_)))
                && matches!(
                    data.get("previous_attributes"),
                    None | Some(Value::Object(_))
                )
        }
        _ => false,
    };
    account && pending && request && data
}

/// The exact text of `data.object` in `text` (already parsed strictly).
fn raw_object(text: &str) -> Option<Box<RawValue>> {
    let top: BTreeMap<String, Box<RawValue>> = serde_json::from_str(text).ok()?;
    let data: BTreeMap<String, Box<RawValue>> =
        serde_json::from_str(top.get("data")?.get()).ok()?;
    let object = data.get("object")?;
    Some(object.clone())
}
