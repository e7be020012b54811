//! The stand-in's bodies held to Stripe's OpenAPI description: every request (a form or
//! a query, read as the JSON object its `deepObject` keys describe) and every answer
//! (by path, method and status: `200`, else `default`) is validated, and every failure
//! is kept for the test to assert on.
//!
//! The description is `stripe/openapi/payment_intents.json` and
//! `stripe/openapi/checkout_sessions.json` (OpenAPI 3.0, read as one document), or
//! Stripe's full `spec3.json` named by `STRIPE_OPENAPI`. OpenAPI 3.0 schemas are not quite JSON
//! Schema; before validating (as draft 2020-12) they are adapted:
//!
//! - `nullable: true` becomes `anyOf: [the schema, {"type": "null"}]`;
//! - an object schema with `properties` and no `additionalProperties` is closed
//!   (`additionalProperties: false`): the stand-in may answer, and the adapter may send,
//!   only fields the description names;
//! - an operation's query `parameters` become one closed object schema (under
//!   `x-stand-in-queries`, so that their `$ref`s resolve in the same document);
//! - `format`s are not asserted (`unix-time` is Stripe's own), `x-` keys are ignored.

use boon::{Compiler, Draft, SchemaIndex, Schemas};
use serde_json::{Map, Value, json};
use std::sync::Mutex;

const SUBSET: &str = include_str!("../../openapi/payment_intents.json");
const CHECKOUT: &str = include_str!("../../openapi/checkout_sessions.json");
const LOCATION: &str = "http://stand-in.invalid/openapi.json";

/// What is validated: a request's body or query, or an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Body {
    /// `POST /v1/payment_intents`'s form.
    CreateForm,
    /// `GET /v1/payment_intents`'s query.
    ListQuery,
    /// `GET /v1/payment_intents/search`'s query.
    SearchQuery,
    /// An answer of `POST /v1/payment_intents` with this status.
    Created(u16),
    /// An answer of `GET /v1/payment_intents`.
    Listed(u16),
    /// An answer of `GET /v1/payment_intents/search`.
    Searched(u16),
    /// `GET /v1/payment_intents/{intent}`'s query.
    IntentQuery,
    /// An answer of `GET /v1/payment_intents/{intent}`.
    IntentRetrieved(u16),
    /// `POST /v1/payment_intents/{intent}/cancel`'s form.
    CancelForm,
    /// An answer of `POST /v1/payment_intents/{intent}/cancel`.
    IntentCanceled(u16),
    /// `POST /v1/checkout/sessions`'s form.
    SessionForm,
    /// An answer of `POST /v1/checkout/sessions`.
    SessionCreated(u16),
    /// `GET /v1/checkout/sessions`'s query.
    SessionListQuery,
    /// An answer of `GET /v1/checkout/sessions`.
    SessionListed(u16),
    /// `GET /v1/checkout/sessions/{session}`'s query.
    SessionQuery,
    /// An answer of `GET /v1/checkout/sessions/{session}`.
    SessionRetrieved(u16),
    /// `POST /v1/checkout/sessions/{session}/expire`'s form.
    ExpireForm,
    /// An answer of `POST /v1/checkout/sessions/{session}/expire`.
    SessionExpired(u16),
}

/// The vendored subsets as one document: the paths and schemas of both.
fn subset() -> Value {
    let mut document: Value = serde_json::from_str(SUBSET).expect("the vendored description");
    let checkout: Value = serde_json::from_str(CHECKOUT).expect("the vendored description");
    for part in ["paths", "components/schemas"] {
        let pointer = format!("/{part}");
        let from = checkout
            .pointer(&pointer)
            .and_then(Value::as_object)
            .cloned();
        let into = document
            .pointer_mut(&pointer)
            .and_then(Value::as_object_mut);
        if let (Some(from), Some(into)) = (from, into) {
            into.extend(from);
        }
    }
    document
}

/// The compiled schemas and what they found.
pub struct Validator {
    schemas: Schemas,
    index: Vec<(Body, SchemaIndex)>,
    failures: Mutex<Vec<String>>,
    validated: Mutex<usize>,
}

/// The JSON pointer of `path`'s `method` operation.
fn operation(path: &str, method: &str) -> String {
    format!(
        "/paths/{}/{method}",
        path.replace('~', "~0").replace('/', "~1")
    )
}

/// The adapted document: `nullable` rewritten, objects closed.
fn adapt(value: &Value) -> Value {
    match value {
        Value::Object(object) => {
            let mut adapted: Map<String, Value> = object
                .iter()
                .filter(|(key, value)| !(key.as_str() == "nullable" && value.is_boolean()))
                .map(|(key, value)| (key.clone(), adapt(value)))
                .collect();
            if object.contains_key("properties") && !object.contains_key("additionalProperties") {
                adapted.insert("additionalProperties".into(), Value::Bool(false));
            }
            if object.get("nullable") == Some(&Value::Bool(true)) {
                return json!({"anyOf": [adapted, {"type": "null"}]});
            }
            Value::Object(adapted)
        }
        Value::Array(items) => Value::Array(items.iter().map(adapt).collect()),
        other => other.clone(),
    }
}

/// One closed object schema of an operation's query parameters.
fn query_schema(document: &Value, pointer: &str) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let parameters = document
        .pointer(&format!("{pointer}/parameters"))
        .and_then(Value::as_array)
        .expect("the operation's parameters");
    for parameter in parameters.iter().filter(|p| p["in"] == "query") {
        let name = parameter["name"].as_str().expect("a parameter's name");
        properties.insert(name.to_owned(), parameter["schema"].clone());
        if parameter["required"] == true {
            required.push(Value::String(name.to_owned()));
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

impl Validator {
    /// Compiles the schemas of every [`Body`].
    pub fn new() -> Self {
        let mut document: Value = match std::env::var("STRIPE_OPENAPI") {
            Ok(path) => serde_json::from_slice(&std::fs::read(path).expect("STRIPE_OPENAPI"))
                .expect("STRIPE_OPENAPI is JSON"),
            Err(_) => subset(),
        };
        let create = operation("/v1/payment_intents", "post");
        let list = operation("/v1/payment_intents", "get");
        let search = operation("/v1/payment_intents/search", "get");
        let intent = operation("/v1/payment_intents/{intent}", "get");
        let cancel = operation("/v1/payment_intents/{intent}/cancel", "post");
        let sessions = operation("/v1/checkout/sessions", "post");
        let session_list = operation("/v1/checkout/sessions", "get");
        let session = operation("/v1/checkout/sessions/{session}", "get");
        let expire = operation("/v1/checkout/sessions/{session}/expire", "post");
        let queries = json!({
            "list": query_schema(&document, &list),
            "search": query_schema(&document, &search),
            "intent": query_schema(&document, &intent),
            "sessions": query_schema(&document, &session_list),
            "session": query_schema(&document, &session),
        });
        document["x-stand-in-queries"] = queries;
        let document = adapt(&document);
        let answer = |pointer: &str, status: u16| {
            let key = if status == 200 { "200" } else { "default" };
            format!("{pointer}/responses/{key}/content/application~1json/schema")
        };
        let form = |pointer: &str| {
            format!("{pointer}/requestBody/content/application~1x-www-form-urlencoded/schema")
        };
        let mut targets = vec![
            (Body::CreateForm, form(&create)),
            (Body::ListQuery, "/x-stand-in-queries/list".to_owned()),
            (Body::SearchQuery, "/x-stand-in-queries/search".to_owned()),
            (Body::IntentQuery, "/x-stand-in-queries/intent".to_owned()),
            (Body::CancelForm, form(&cancel)),
            (Body::SessionForm, form(&sessions)),
            (
                Body::SessionListQuery,
                "/x-stand-in-queries/sessions".to_owned(),
            ),
            (Body::SessionQuery, "/x-stand-in-queries/session".to_owned()),
            (Body::ExpireForm, form(&expire)),
        ];
        for status in [200, 400, 401, 402, 403, 404, 409, 429, 500, 503] {
            targets.push((Body::Created(status), answer(&create, status)));
            targets.push((Body::Listed(status), answer(&list, status)));
            targets.push((Body::Searched(status), answer(&search, status)));
            targets.push((Body::IntentRetrieved(status), answer(&intent, status)));
            targets.push((Body::IntentCanceled(status), answer(&cancel, status)));
            targets.push((Body::SessionCreated(status), answer(&sessions, status)));
            targets.push((Body::SessionListed(status), answer(&session_list, status)));
            targets.push((Body::SessionRetrieved(status), answer(&session, status)));
            targets.push((Body::SessionExpired(status), answer(&expire, status)));
        }
        let mut compiler = Compiler::new();
        compiler.set_default_draft(Draft::V2020_12);
        compiler
            .add_resource(LOCATION, document)
            .expect("the description loads");
        let mut schemas = Schemas::new();
        let index = targets
            .into_iter()
            .map(|(body, pointer)| {
                let location = format!("{LOCATION}#{pointer}");
                let compiled = compiler
                    .compile(&location, &mut schemas)
                    .unwrap_or_else(|e| panic!("{location}: {e}"));
                (body, compiled)
            })
            .collect();
        Self {
            schemas,
            index,
            failures: Mutex::new(Vec::new()),
            validated: Mutex::new(0),
        }
    }

    /// Validates `value` as `body`; a failure is kept, with its reasons.
    pub fn check(&self, body: Body, value: &Value) {
        let Some((_, schema)) = self.index.iter().find(|(b, _)| *b == body) else {
            self.fail(format!("{body:?}: no schema for it"));
            return;
        };
        if let Err(error) = self.schemas.validate(value, *schema) {
            self.fail(format!("{body:?}: {error:#}"));
        }
        *self.validated.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }

    fn fail(&self, failure: String) {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(failure);
    }

    /// Every failure so far.
    pub fn failures(&self) -> Vec<String> {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How many bodies were validated.
    pub fn validated(&self) -> usize {
        *self.validated.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A form or query string as the JSON object its `deepObject` keys describe:
/// `metadata[journal_key]=k` is `{"metadata": {"journal_key": "k"}}`,
/// `payment_method_types[0]=card` is `{"payment_method_types": ["card"]}`. Values of
/// decimal digits are integers and `true` / `false` booleans (a form has no types; the
/// schema says which fields are which), but under a `metadata` (at any depth) and in
/// the text fields (URLs, names), whose values are strings.
pub fn form_object(encoded: &[u8]) -> Value {
    let mut object = Value::Object(Map::new());
    for (name, value) in form_urlencoded::parse(encoded) {
        let mut segments = name.split('[').map(|segment| segment.trim_end_matches(']'));
        let root = segments.next().unwrap_or_default().to_owned();
        let path: Vec<String> = std::iter::once(root.clone())
            .chain(segments.map(str::to_owned))
            .collect();
        let text = path.iter().any(|segment| {
            matches!(
                segment.as_str(),
                "metadata" | "name" | "success_url" | "cancel_url" | "client_secret"
            )
        });
        let typed = if text {
            Value::String(value.into_owned())
        } else if let Ok(number) = value.parse::<i64>() {
            Value::from(number)
        } else if value == "true" || value == "false" {
            Value::Bool(value == "true")
        } else {
            Value::String(value.into_owned())
        };
        insert(&mut object, &path, typed);
    }
    object
}

fn insert(target: &mut Value, path: &[String], value: Value) {
    let Some((first, rest)) = path.split_first() else {
        *target = value;
        return;
    };
    let next_is_index = rest.first().is_some_and(|s| s.parse::<usize>().is_ok());
    let empty = || {
        if next_is_index {
            Value::Array(Vec::new())
        } else {
            Value::Object(Map::new())
        }
    };
    match target {
        Value::Array(items) => {
            let at = first.parse::<usize>().unwrap_or(items.len());
            while items.len() <= at {
                items.push(empty());
            }
            insert(&mut items[at], rest, value);
        }
        Value::Object(object) => {
            let slot = object.entry(first.clone()).or_insert_with(empty);
            if rest.is_empty() {
                *slot = value;
            } else {
                insert(slot, rest, value);
            }
        }
        _ => {}
    }
}
