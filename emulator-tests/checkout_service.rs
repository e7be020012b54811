//! The checkout service example end to end over HTTP: the service in-process on an
//! ephemeral port against the test emulator (with a manual clock, so lease expiry and
//! the send cutoff are driven by the test), the repository's stub provider
//! (`examples/stub-provider/stub.rs`) recording every POST, lookup and charge, a
//! Prometheus recorder of the test's own behind `GET /metrics`, and the real example
//! binary for configuration and SIGTERM.

#[allow(dead_code)]
#[path = "../examples/checkout-service/service/mod.rs"]
mod service;

#[allow(dead_code)]
#[path = "../examples/stub-provider/stub.rs"]
mod stub_provider;

mod concurrency;
mod hardening;
mod recovery;
mod sends;
mod stripe;

use super::support::{self, list};
use chrono::{TimeDelta, Utc};
use command_journal::Connection;
use command_journal::Journal;
use command_journal::identity::OperationSlug;
use command_journal::sends::ProviderLookup;
use command_journal::time::ManualClock;
use command_journal::{CommandInput, CommandRequest};
use futures::future::BoxFuture;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use service::auth::{KeyFetchError, KeySet, KeySource};
use service::config::Config;
use service::handler::App;
use service::logging::Logger;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use stub_provider::{Action, Stub};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::sync::Notify;

const KEY_A: &[u8] = include_bytes!("../testdata/checkout-service/test_key_a.pem");
const KEY_B: &[u8] = include_bytes!("../testdata/checkout-service/test_key_b.pem");
const JWKS: &str = include_str!("../testdata/checkout-service/jwks.json");

// Canary values: none may appear in any log line or response body.
const UID: &str = "CANARYuid7Hq2x";
const COMMAND_ID: &str = "c0ffee00-ca4a-4e11-8a5e-0000deadbe01";
const PAYLOAD_SKU: &str = "CANARYskuP4y";
const PAYLOAD_NOTE: &str = "CANARYnote55z";

fn payload() -> Value {
    json!({"sku": PAYLOAD_SKU, "note": PAYLOAD_NOTE, "amountCents": 1250})
}

fn command_id(n: u64) -> String {
    support::uuid(12, n)
}

// ---------------------------------------------------------------------------------
// The stub provider (the one `cargo run --release --bin stub-provider` serves).

/// The prefix of the stub's charge ids: a canary, so that a charge id in a log or
/// metrics line is caught (bodies carry it, inside `charge` only).
const CHARGE_PREFIX: &str = "ch_CANARYreceipt";

async fn start_stub(stub: Stub) -> (Arc<Stub>, String) {
    let stub = Arc::new(stub);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind stub");
    let url = stub_provider::spawn(Arc::clone(&stub), listener).expect("stub address");
    (stub, url)
}

// ---------------------------------------------------------------------------------
// Tokens.

struct TestKeys {
    jwks: JwkSet,
    fetches: AtomicUsize,
}

impl KeySource for TestKeys {
    fn fetch(&self) -> BoxFuture<'_, Result<KeySet, KeyFetchError>> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        let jwks = self.jwks.clone();
        Box::pin(async move {
            Ok(KeySet {
                jwks,
                max_age: Duration::from_secs(3600),
            })
        })
    }
}

fn now_secs() -> i64 {
    Utc::now().timestamp()
}

fn claims(project: &str, uid: &str) -> Value {
    let now = now_secs();
    json!({
        "aud": project,
        "iss": format!("https://securetoken.google.com/{project}"),
        "sub": uid,
        "user_id": uid,
        "iat": now - 10,
        "auth_time": now - 20,
        "exp": now + 3600,
    })
}

fn signed(key: &[u8], kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    let key = EncodingKey::from_rsa_pem(key).expect("test key");
    jsonwebtoken::encode(&header, claims, &key).expect("sign")
}

fn unsigned(claims: &Value) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}.",
        b64.encode(br#"{"alg":"none","typ":"JWT"}"#),
        b64.encode(claims.to_string())
    )
}

// ---------------------------------------------------------------------------------
// The service in-process.

struct Service {
    url: String,
    project: String,
    connection: Connection,
    clock: Arc<ManualClock>,
    stub: Arc<Stub>,
    keys: Arc<TestKeys>,
    lines: Arc<Mutex<Vec<String>>>,
    /// Notified after every log line.
    line_written: Arc<Notify>,
    bodies: Mutex<Vec<String>>,
    http: reqwest::Client,
}

struct Options {
    /// What the stub does with the first POSTs, then `default` for the rest.
    script: Vec<Action>,
    default: Action,
    auth_emulator: bool,
    /// Extra settings (short timeouts, caps).
    env: Vec<(&'static str, String)>,
    /// The stub holds each POST until the test releases it.
    gated: bool,
    /// Where the journal reaches Firestore (a fault proxy); the emulator when `None`.
    firestore_host: Option<String>,
    /// The project to serve (an earlier service's): a fresh one when `None`.
    connection: Option<Connection>,
    /// The stub to call and its URL (an earlier service's): a new one when `None`.
    stub: Option<(Arc<Stub>, String)>,
    /// Where the service's manual clock starts: now when `None`.
    now: Option<chrono::DateTime<Utc>>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            script: Vec::new(),
            default: Action::Charge,
            auth_emulator: false,
            env: Vec::new(),
            gated: false,
            firestore_host: None,
            connection: None,
            stub: None,
            now: None,
        }
    }
}

/// The provider plan's settings every in-process service and binary run uses.
const PLAN_ENV: [(&str, &str); 4] = [
    ("PROVIDER_NAME", "stub"),
    ("PROVIDER_ACCOUNT", "acct_CANARYaccount"),
    ("PROVIDER_MODE", "test"),
    ("PROVIDER_API_VERSION", "2026-01-01"),
];

/// A Prometheus recorder for the calling test's thread only, so tests running in
/// parallel in this binary never see each other's counts. `#[tokio::test]` runs the
/// test, the in-process service and the journal on one current-thread runtime, so
/// everything the service records lands here. The recorder and its guard live as
/// long as the test's thread.
fn thread_recorder() -> metrics_exporter_prometheus::PrometheusHandle {
    let recorder: &'static _ = Box::leak(Box::new(service::metrics::recorder()));
    let handle = recorder.handle();
    std::mem::forget(metrics::set_default_local_recorder(recorder));
    service::metrics::describe();
    handle
}

async fn start_service(options: Options) -> Service {
    let mut connection = match &options.connection {
        Some(connection) => connection.clone(),
        None => support::fresh_connection().await,
    };
    let project = connection.project().to_owned();
    if let Some(host) = &options.firestore_host {
        connection = Connection::connect(&project, command_journal::Target::Emulator(host.clone()))
            .await
            .expect("connect through the proxy");
    }
    let (stub, stub_url) = match options.stub.clone() {
        Some(started) => started,
        None => {
            let mut stub = Stub::new(options.default, CHARGE_PREFIX);
            stub.script(options.script.iter().copied());
            if options.gated {
                stub = stub.gated();
            }
            start_stub(stub).await
        }
    };
    let mut env: HashMap<&str, String> = HashMap::from([
        ("GOOGLE_CLOUD_PROJECT", project.clone()),
        (
            "FIRESTORE_EMULATOR_HOST",
            support::emulator().host().to_owned(),
        ),
        ("JOURNAL_ENVIRONMENT", "emulator".to_owned()),
        ("PROVIDER_URL", stub_url),
    ]);
    env.extend(
        PLAN_ENV
            .iter()
            .map(|(name, value)| (*name, (*value).to_owned())),
    );
    if options.auth_emulator {
        env.insert("FIREBASE_AUTH_EMULATOR_HOST", "127.0.0.1:9099".to_owned());
    }
    env.extend(options.env.iter().cloned());
    let config = Config::from_lookup(|name| env.get(name).cloned()).expect("config");
    let clock = Arc::new(ManualClock::new(options.now.unwrap_or_else(Utc::now)));
    let journal = Journal::new(connection.clone()).with_clock(clock.clone());
    let keys = Arc::new(TestKeys {
        jwks: serde_json::from_str(JWKS).expect("jwks"),
        fetches: AtomicUsize::new(0),
    });
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink_lines = Arc::clone(&lines);
    let line_written = Arc::new(Notify::new());
    let sink_written = Arc::clone(&line_written);
    let logger = Logger::with_sink(
        &project,
        Arc::new(move |line: &str| {
            sink_lines
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(line.to_owned());
            sink_written.notify_waiters();
        }),
    );
    let logger_for_server = logger.clone();
    let app = App::new(&config, journal, keys.clone(), logger, thread_recorder()).expect("app");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind service");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let router = Arc::new(app).router();
    tokio::spawn(service::server::serve(
        listener,
        router,
        config.http,
        logger_for_server,
        std::future::pending(),
        Duration::ZERO,
    ));
    Service {
        url,
        project,
        connection,
        clock,
        stub,
        keys,
        lines,
        line_written,
        bodies: Mutex::new(Vec::new()),
        http: reqwest::Client::new(),
    }
}

/// A response: status, `Retry-After`, JSON body and its exact text.
#[derive(Debug, Clone)]
struct Answer {
    status: u16,
    retry_after: Option<u64>,
    body: Value,
    text: String,
}

impl Service {
    fn token(&self, uid: &str) -> String {
        signed(KEY_A, "test-key-a", &claims(&self.project, uid))
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let response = request.send().await.expect("service answers");
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let text = response.text().await.expect("body");
        self.bodies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text.clone());
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text.clone()));
        Answer {
            status,
            retry_after,
            body,
            text,
        }
    }

    fn post(&self, token: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let request = self
            .http
            .post(format!("{}/v1/checkouts", self.url))
            .json(body);
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    async fn checkout(&self, id: &str, payload: &Value) -> Answer {
        let token = self.token(UID);
        self.send(self.post(Some(&token), &json!({"commandId": id, "payload": payload})))
            .await
    }

    fn command(&self, id: &str, payload: &Value) -> CommandInput {
        CommandInput::new(CommandRequest {
            environment: "emulator",
            caller_scope_kind: "member",
            caller_id: UID,
            command_id: id,
            command_type: "checkout",
            endpoint_schema_version: 1,
            payload,
        })
        .expect("command")
    }

    fn expected_key(&self, id: &str, payload: &Value) -> String {
        self.command(id, payload)
            .identity()
            .provider_idempotency_key(&OperationSlug::parse("charge").expect("slug"))
    }

    /// Every journal document as `(name, update time)`.
    async fn documents(&self) -> Vec<(String, String)> {
        support::documents(&self.connection).await
    }

    /// Every journal document's path, the command key hash written `H`.
    async fn document_kinds(&self) -> Vec<String> {
        let mut kinds: Vec<String> = self
            .documents()
            .await
            .into_iter()
            .map(|(name, _)| {
                let path = name
                    .rsplit_once("/documents/")
                    .map_or(name.as_str(), |(_, path)| path);
                let hash: String = path
                    .split(['/', '_'])
                    .find(|part| part.len() == 64)
                    .unwrap_or_default()
                    .to_owned();
                path.replace(&hash, "H")
            })
            .collect();
        kinds.sort();
        kinds
    }

    async fn assert_verifies_clean(&self, commands: u64) {
        let report = command_journal::verify(&self.connection, &mut |_| {})
            .await
            .expect("verify");
        assert!(report.clean, "findings: {:?}", report.finding_counts);
        // `scanned.checkout_requests` counts every document below the roots (the
        // send layer's and the results' included): count the roots themselves.
        let roots = list(&self.connection, "", "checkoutRequests").await;
        assert_eq!(roots.len() as u64, commands);
        assert!(report.scanned.checkout_requests >= commands);
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// No canary in any log line or body; bodies carry no hash either; every line
    /// is a Cloud Logging JSON object. Scrapes `GET /metrics` first, so every
    /// metrics line is scanned as a body.
    async fn assert_no_leak(&self, extra: &[&str]) {
        let scrape = self.scrape().await;
        assert!(
            scrape.contains("checkout_service_requests_total"),
            "{scrape}"
        );
        let bodies = self
            .bodies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        assert_no_secrets(&self.lines(), &bodies, extra, &self.references());
    }

    /// The terminal reference of every charge the stub holds.
    fn references(&self) -> Vec<String> {
        self.stub
            .charges()
            .iter()
            .map(|charge| envelope_reference(&charge_envelope(&charge.object)))
            .collect()
    }

    /// `GET /metrics` through the service: its text (kept with the bodies).
    async fn scrape(&self) -> String {
        let answer = self
            .send(self.http.get(format!("{}/metrics", self.url)))
            .await;
        assert_eq!(answer.status, 200);
        answer.text
    }

    /// The value of the metrics sample `name{labels}` (labels in any order, all of
    /// them given), 0 when there is none.
    async fn sample(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        sample(&self.scrape().await, name, labels)
    }

    /// The charge the stub made first, as its envelope.
    fn first_charge(&self) -> Value {
        charge_envelope(&self.stub.charges().first().expect("a charge").object)
    }
}

/// The terminal reference of a charge's envelope: the SHA-256 of its RFC 8785
/// canonical text.
fn envelope_reference(envelope: &Value) -> String {
    use sha2::Digest as _;
    let canonical = serde_json_canonicalizer::to_string(envelope).expect("canonical");
    hex::encode(sha2::Sha256::digest(canonical.as_bytes()))
}

/// The envelope of a charge the stub holds: its `id`, `amount`, `currency` and
/// `status`, those present.
fn charge_envelope(object: &Value) -> Value {
    let object = object.as_object().expect("a charge object");
    Value::Object(service::provider::envelope(object).expect("envelope fields"))
}

/// The 200 body of a succeeded checkout with `charge`.
fn succeeded(charge: &Value) -> Value {
    json!({"status": "succeeded", "charge": charge})
}

/// The value of the sample `name{labels}` in a Prometheus text exposition, its
/// labels exactly `labels` (in any order); 0 when there is no such sample.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> u64 {
    let mut wanted: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    wanted.sort();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (series_name, series_labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        let mut got: Vec<String> = series_labels
            .split(',')
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        got.sort();
        if series_name == name && got == wanted {
            let value: f64 = value.parse().expect("a sample value");
            return value as u64;
        }
    }
    0
}

/// A command's root, lifecycle and its first `events` audit events.
fn commerce_documents(events: u32) -> Vec<String> {
    let mut documents = vec![
        "checkoutRequests/H".to_owned(),
        "checkoutRequests/H/lifecycle/current".to_owned(),
    ];
    documents.extend((1..=events).map(|n| format!("auditEvents/commerce_command_H_{n:010}")));
    documents
}

/// A command's plan, send record and its first `events` send events.
fn send_documents(events: u32) -> Vec<String> {
    let mut documents = vec![
        "checkoutRequests/H/providerSends/current".to_owned(),
        "checkoutRequests/H/providerSends/plan".to_owned(),
    ];
    documents.extend((1..=events).map(|n| format!("auditEvents/provider_send_H_{n:010}")));
    documents
}

/// True when `text` holds a UUID-shaped run (8-4-4-4-12 hex digits).
fn has_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    let shape = [8, 4, 4, 4, 12];
    (0..bytes.len()).any(|start| {
        let mut i = start;
        for (n, len) in shape.iter().enumerate() {
            if n > 0 {
                if bytes.get(i) != Some(&b'-') {
                    return false;
                }
                i += 1;
            }
            for _ in 0..*len {
                if !bytes.get(i).is_some_and(u8::is_ascii_hexdigit) {
                    return false;
                }
                i += 1;
            }
        }
        true
    })
}

/// True when `text` holds a run of 64 hex digits (a SHA-256 digest).
fn has_digest(text: &str) -> bool {
    text.as_bytes()
        .split(|b| !b.is_ascii_hexdigit())
        .any(|run| run.len() >= 64)
}

/// No canary, provider key or id in any log line; and none in any body, nor a hash,
/// outside a success's `charge` (the caller's receipt: envelope fields only, its id
/// the stub's). `references` are the terminal references, never in a line either.
fn assert_no_secrets(lines: &[String], bodies: &[String], extra: &[&str], references: &[String]) {
    let mut canaries = vec![
        UID,
        COMMAND_ID,
        PAYLOAD_SKU,
        PAYLOAD_NOTE,
        CHARGE_PREFIX,
        "CANARY",
    ];
    canaries.extend_from_slice(extra);
    for line in lines {
        for canary in &canaries {
            assert!(
                !line.contains(canary),
                "a log line leaks {canary:?}: {line}"
            );
        }
        for reference in references {
            assert!(
                !line.contains(reference.as_str()),
                "a log line leaks the terminal reference"
            );
        }
        assert!(!line.contains("cj1-"), "a log line leaks the provider key");
        assert!(!has_uuid(line), "a log line carries an id: {line}");
        let parsed: Value = serde_json::from_str(line).expect("every line is JSON");
        assert!(
            parsed["severity"].is_string() && parsed["message"].is_string(),
            "{line}"
        );
    }
    for body in bodies {
        let scanned = match serde_json::from_str::<Value>(body) {
            Ok(Value::Object(mut object)) => {
                if let Some(charge) = object.remove("charge") {
                    let fields = charge.as_object().expect("charge is an object");
                    assert!(
                        fields
                            .keys()
                            .all(|k| ["id", "amount", "currency", "status"].contains(&k.as_str())),
                        "{body}"
                    );
                    assert!(
                        charge["id"]
                            .as_str()
                            .is_some_and(|id| id.starts_with(CHARGE_PREFIX)
                                || id.starts_with(stripe::INTENT_PREFIX)),
                        "{body}"
                    );
                }
                Value::Object(object).to_string()
            }
            _ => body.clone(),
        };
        for canary in &canaries {
            assert!(!scanned.contains(canary), "a body leaks {canary:?}: {body}");
        }
        assert!(
            !has_uuid(&scanned) && !has_digest(&scanned) && !scanned.contains("cj1-"),
            "{body}"
        );
    }
}

// ---------------------------------------------------------------------------------
// Tests.

#[tokio::test]
async fn checkout_24_concurrent_identical_requests_call_the_provider_once() {
    // The stub holds the one POST until the other 23 have been answered, so every one
    // of them meets the held lease: exactly 1 acquired and 23 busy.
    let service = Arc::new(
        start_service(Options {
            gated: true,
            ..Options::default()
        })
        .await,
    );
    let id = command_id(1);
    let (busy_tx, mut busy_rx) = tokio::sync::mpsc::unbounded_channel();
    let tasks: Vec<_> = (0..24)
        .map(|_| {
            let service = Arc::clone(&service);
            let id = id.clone();
            let busy_tx = busy_tx.clone();
            tokio::spawn(async move {
                let answer = service.checkout(&id, &payload()).await;
                if answer.status == 409 {
                    let _ = busy_tx.send(());
                }
                answer
            })
        })
        .collect();
    for _ in 0..23 {
        tokio::time::timeout(Duration::from_secs(60), busy_rx.recv())
            .await
            .expect("23 requests answered busy while the POST is held")
            .expect("a sender is alive");
    }
    service.stub.release(1);
    let mut bodies = Vec::new();
    for task in tasks {
        let answer = task.await.expect("task");
        match answer.status {
            200 => bodies.push(answer.text),
            409 => {
                assert_eq!(answer.body, json!({"status": "in_progress"}));
                assert_eq!(answer.retry_after, Some(2));
            }
            other => panic!("unexpected {other}: {:?}", answer.body),
        }
    }
    assert_eq!(bodies.len(), 1, "the request that charged answers 200");
    let charge = service.first_charge();
    assert_eq!(
        serde_json::from_str::<Value>(&bodies[0]).expect("JSON"),
        succeeded(&charge)
    );
    assert_eq!(
        service.stub.posts().len(),
        1,
        "the provider is called exactly once"
    );
    for _ in 0..5 {
        let answer = service.checkout(&id, &payload()).await;
        assert_eq!(answer.status, 200);
        assert_eq!(
            answer.text, bodies[0],
            "a replay is the first answer, byte for byte"
        );
    }
    let calls = service.stub.posts();
    assert_eq!(calls.len(), 1, "retries never call the provider");
    assert_eq!(
        calls[0].key.as_deref(),
        Some(service.expected_key(&id, &payload()).as_str())
    );
    assert_eq!(calls[0].body, payload(), "the payload is the charge body");
    assert!(service.stub.lookups().is_empty());
    // The commerce documents (root, lifecycle, audits: registered, leased,
    // succeeded), the send layer's (plan, send record, events: opened, succeeded) and
    // the stored charge: nothing from the 23 busy requests or the 5 replays.
    let mut expected = commerce_documents(3);
    expected.extend(send_documents(2));
    expected.push("checkoutRequests/H/results/current".to_owned());
    expected.sort();
    assert_eq!(service.document_kinds().await, expected);
    let start = |outcome| [("operation", "start"), ("outcome", outcome)];
    let ops = "command_journal_operations_total";
    assert_eq!(service.sample(ops, &start("acquired")).await, 1);
    assert_eq!(service.sample(ops, &start("busy")).await, 23);
    assert_eq!(service.sample(ops, &start("replayed")).await, 5);
    assert_eq!(service.sample(ops, &start("recovered")).await, 0);
    let requests = |status, outcome| {
        [
            ("route", "/v1/checkouts"),
            ("status", status),
            ("outcome", outcome),
        ]
    };
    let served = "checkout_service_requests_total";
    assert_eq!(
        service.sample(served, &requests("409", "lease_busy")).await,
        23
    );
    let status = Journal::new(service.connection.clone())
        .status(&service.command(&id, &payload()))
        .await
        .expect("status");
    assert_eq!(
        (status.state.as_str(), status.fence_epoch),
        ("succeeded", Some(crate::support::fence_at(1)))
    );
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_provider_503_then_takeover_after_expiry_reuses_the_key() {
    let service = start_service(Options {
        script: vec![Action::Status(503)],
        ..Options::default()
    })
    .await;
    let id = command_id(2);
    let first = service.checkout(&id, &payload()).await;
    assert_eq!(
        (first.status, &first.body),
        (503, &json!({"status": "retry"}))
    );
    assert_eq!(
        first.retry_after,
        Some(60),
        "retry once the lease has expired"
    );

    // Before expiry another attempt finds the lease busy and does not call.
    let early = service.checkout(&id, &payload()).await;
    assert_eq!(early.status, 409);
    assert_eq!(service.stub.posts().len(), 1);

    service.clock.advance(TimeDelta::seconds(61));
    let second = service.checkout(&id, &payload()).await;
    assert_eq!(
        (second.status, second.body),
        (200, succeeded(&service.first_charge()))
    );

    let calls = service.stub.posts();
    let expected = service.expected_key(&id, &payload());
    assert_eq!(calls.len(), 2, "the provider is called twice");
    assert!(
        calls
            .iter()
            .all(|c| c.key.as_deref() == Some(expected.as_str())),
        "same key"
    );
    let status = Journal::new(service.connection.clone())
        .status(&service.command(&id, &payload()))
        .await
        .expect("status");
    assert_eq!(
        (status.state.as_str(), status.fence_epoch),
        ("succeeded", Some(crate::support::fence_at(2)))
    );
    // The commerce documents (root, lifecycle, audits: registered, leased, taken
    // over, succeeded), the send layer's (plan, send record, events: opened,
    // ambiguous, re-sent, succeeded) and the stored charge.
    let mut expected = commerce_documents(4);
    expected.extend(send_documents(4));
    expected.push("checkoutRequests/H/results/current".to_owned());
    expected.sort();
    assert_eq!(service.document_kinds().await, expected);
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_decline_is_final_and_never_recharged() {
    let service = start_service(Options {
        default: Action::Decline,
        ..Options::default()
    })
    .await;
    let id = command_id(3);
    for _ in 0..3 {
        let answer = service.checkout(&id, &payload()).await;
        assert_eq!(
            (answer.status, answer.body),
            (402, json!({"status": "failed"}))
        );
    }
    assert_eq!(service.stub.posts().len(), 1, "a decline is never retried");
    let status = Journal::new(service.connection.clone())
        .status(&service.command(&id, &payload()))
        .await
        .expect("status");
    assert_eq!(status.state.as_str(), "failed_final");
    service.assert_verifies_clean(1).await;
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_changed_payload_is_422_and_writes_nothing() {
    let service = start_service(Options::default()).await;
    let id = command_id(4);
    assert_eq!(service.checkout(&id, &payload()).await.status, 200);
    let before = service.documents().await;
    let changed = json!({"sku": PAYLOAD_SKU, "note": PAYLOAD_NOTE, "amountCents": 9999});
    let answer = service.checkout(&id, &changed).await;
    assert_eq!(
        (answer.status, answer.body),
        (422, json!({"error": "command_conflict"}))
    );
    assert_eq!(service.documents().await, before, "nothing written");
    assert_eq!(service.stub.posts().len(), 1);
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_bad_tokens_are_401_and_touch_nothing() {
    let service = start_service(Options::default()).await;
    let project = service.project.clone();
    let body = json!({"commandId": command_id(5), "payload": payload()});
    let now = now_secs();
    let mut expired = claims(&project, UID);
    expired["iat"] = json!(now - 7200);
    expired["auth_time"] = json!(now - 7200);
    expired["exp"] = json!(now - 3600);
    let mut audience = claims(&project, UID);
    audience["aud"] = json!("another-project");
    let mut issuer = claims(&project, UID);
    issuer["iss"] = json!("https://securetoken.google.com/another-project");
    let mut empty_sub = claims(&project, UID);
    empty_sub["sub"] = json!("");
    let mut future = claims(&project, UID);
    future["iat"] = json!(now + 600);
    let cases: Vec<(&str, Option<String>)> = vec![
        ("no token", None),
        ("expired", Some(signed(KEY_A, "test-key-a", &expired))),
        (
            "wrong audience",
            Some(signed(KEY_A, "test-key-a", &audience)),
        ),
        ("wrong issuer", Some(signed(KEY_A, "test-key-a", &issuer))),
        (
            "empty subject",
            Some(signed(KEY_A, "test-key-a", &empty_sub)),
        ),
        (
            "issued in the future",
            Some(signed(KEY_A, "test-key-a", &future)),
        ),
        (
            "alg none without the emulator variable",
            Some(unsigned(&claims(&project, UID))),
        ),
        (
            "unknown key",
            Some(signed(KEY_B, "test-key-b", &claims(&project, UID))),
        ),
        (
            "known kid, wrong key",
            Some(signed(KEY_B, "test-key-a", &claims(&project, UID))),
        ),
        ("malformed", Some("not.a.jwt".to_owned())),
    ];
    for (name, token) in &cases {
        let answer = service.send(service.post(token.as_deref(), &body)).await;
        assert_eq!(answer.status, 401, "{name}");
        assert_eq!(answer.body, json!({"error": "unauthenticated"}), "{name}");
    }
    assert!(
        service.documents().await.is_empty(),
        "the journal was not touched"
    );
    assert!(service.stub.posts().is_empty());

    // The same request with a good token goes through; keys were fetched once and
    // cached per Cache-Control.
    let good = service.token(UID);
    let answer = service.send(service.post(Some(&good), &body)).await;
    assert_eq!(answer.status, 200);
    assert_eq!(service.keys.fetches.load(Ordering::SeqCst), 1);
    let tokens: Vec<&str> = cases.iter().filter_map(|(_, t)| t.as_deref()).collect();
    let mut extra = tokens.clone();
    extra.push(&good);
    service.assert_no_leak(&extra).await;
}

#[tokio::test]
async fn checkout_unsigned_emulator_tokens_only_with_the_auth_emulator_variable() {
    let service = start_service(Options {
        auth_emulator: true,
        ..Options::default()
    })
    .await;
    let project = service.project.clone();
    let mut wrong_audience = claims(&project, UID);
    wrong_audience["aud"] = json!("another-project");
    let body = json!({"commandId": command_id(6), "payload": payload()});
    let refused = service
        .send(service.post(Some(&unsigned(&wrong_audience)), &body))
        .await;
    assert_eq!(refused.status, 401, "claims are still checked");
    assert!(service.documents().await.is_empty());
    let accepted = service
        .send(service.post(Some(&unsigned(&claims(&project, UID))), &body))
        .await;
    assert_eq!(
        (accepted.status, accepted.body),
        (200, succeeded(&service.first_charge()))
    );
    service.assert_no_leak(&[]).await;
}

#[tokio::test]
async fn checkout_request_shape_errors_and_healthz() {
    let service = start_service(Options::default()).await;
    let token = service.token(UID);
    let url = format!("{}/v1/checkouts", service.url);

    let text = service
        .send(
            service
                .http
                .post(&url)
                .bearer_auth(&token)
                .header("content-type", "text/plain")
                .body("{}"),
        )
        .await;
    assert_eq!(text.status, 415);

    let big = json!({"commandId": command_id(7), "payload": {"blob": "x".repeat(70 * 1024)}});
    let too_large = service.send(service.post(Some(&token), &big)).await;
    assert_eq!(
        (too_large.status, too_large.body),
        (413, json!({"error": "payload_too_large"}))
    );

    let cases = [
        (
            json!({"commandId": "not-a-uuid", "payload": payload()}),
            "commandId",
        ),
        (json!({"commandId": 7, "payload": payload()}), "commandId"),
        (json!({"commandId": command_id(7)}), "payload"),
        (
            json!({"commandId": command_id(7), "payload": ["CANARYarray"]}),
            "payload",
        ),
        (
            json!({"commandId": command_id(7), "payload": payload(), "extra": 1}),
            "body",
        ),
        (json!(["CANARYnotAnObject"]), "body"),
    ];
    for (body, field) in cases {
        let answer = service.send(service.post(Some(&token), &body)).await;
        assert_eq!(
            (answer.status, answer.body),
            (400, json!({"error": "invalid_input", "field": field}))
        );
    }
    let broken = service
        .send(
            service
                .http
                .post(&url)
                .bearer_auth(&token)
                .header("content-type", "application/json; charset=utf-8")
                .body("{\"commandId\": \"CANARYbroken"),
        )
        .await;
    assert_eq!(broken.status, 400);
    assert!(service.documents().await.is_empty());
    assert!(service.stub.posts().is_empty());

    let health = service
        .send(service.http.get(format!("{}/healthz", service.url)))
        .await;
    assert_eq!((health.status, health.body), (200, json!({"status": "ok"})));
    service.assert_no_leak(&[&token]).await;
}

#[tokio::test]
async fn checkout_canary_scan_over_every_log_line_and_body() {
    let service = start_service(Options {
        script: vec![Action::Status(503), Action::Decline],
        ..Options::default()
    })
    .await;
    let trace_id = "0af7651916cd43dd8448eb211c80319c";
    let token = service.token(UID);
    let traced = |body: &Value| {
        service
            .post(Some(&token), body)
            .header("x-cloud-trace-context", format!("{trace_id}/12345;o=1"))
    };
    let body = json!({"commandId": COMMAND_ID, "payload": payload()});
    // 503 (provider down), 409 (busy), then after expiry 402 (declined), then 402.
    assert_eq!(service.send(traced(&body)).await.status, 503);
    assert_eq!(service.send(traced(&body)).await.status, 409);
    service.clock.advance(TimeDelta::seconds(61));
    assert_eq!(service.send(traced(&body)).await.status, 402);
    assert_eq!(service.send(traced(&body)).await.status, 402);
    let other = json!({"commandId": command_id(8), "payload": payload()});
    assert_eq!(service.send(traced(&other)).await.status, 200);
    let changed = json!({"commandId": COMMAND_ID, "payload": {"sku": "CANARYchanged"}});
    assert_eq!(service.send(traced(&changed)).await.status, 422);
    let _ = service.send(service.post(None, &body)).await;

    let lines = service.lines();
    let checkout_lines: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
        .filter(|l| l["message"] == "checkout")
        .collect();
    assert_eq!(checkout_lines.len(), 7, "one line per request");
    let resource = format!("projects/{}/traces/{trace_id}", service.project);
    for line in &checkout_lines[..6] {
        assert_eq!(line["logging.googleapis.com/trace"], json!(resource));
        assert_eq!(line["logging.googleapis.com/spanId"], json!("12345"));
        assert!(line["httpRequest"]["status"].is_u64());
    }
    assert!(
        checkout_lines[6]
            .get("logging.googleapis.com/trace")
            .is_none()
    );
    assert_eq!(
        checkout_lines
            .iter()
            .map(|l| l["severity"].as_str().unwrap_or(""))
            .collect::<Vec<_>>(),
        ["WARNING", "INFO", "INFO", "INFO", "INFO", "INFO", "INFO"]
    );
    service.assert_no_leak(&["CANARYchanged", &token]).await;
}

#[test]
fn checkout_configuration_is_strict_and_names_the_variable() {
    let mut base = HashMap::from([
        ("GOOGLE_CLOUD_PROJECT", "demo-project"),
        ("JOURNAL_ENVIRONMENT", "production"),
        ("PROVIDER_URL", "https://provider.example/base/"),
    ]);
    base.extend(PLAN_ENV);
    let config = |changes: &[(&'static str, Option<&'static str>)]| {
        let mut env = base.clone();
        for (name, value) in changes {
            match value {
                Some(value) => env.insert(name, value),
                None => env.remove(name),
            };
        }
        Config::from_lookup(|name| env.get(name).map(|v| (*v).to_owned()))
    };
    let ok = config(&[]).expect("valid");
    assert_eq!(ok.port, 8080);
    assert_eq!(
        ok.charges_url().as_str(),
        "https://provider.example/base/v1/charges"
    );
    assert!(!ok.auth_emulator);
    let gcloud = config(&[
        ("GOOGLE_CLOUD_PROJECT", None),
        ("GCLOUD_PROJECT", Some("other-1")),
    ])
    .expect("GCLOUD_PROJECT");
    assert_eq!(gcloud.project, "other-1");
    let refused = [
        (vec![("PORT", Some("http"))], "PORT"),
        (vec![("GOOGLE_CLOUD_PROJECT", None)], "GOOGLE_CLOUD_PROJECT"),
        (
            vec![("GOOGLE_CLOUD_PROJECT", Some("Bad_Project"))],
            "GOOGLE_CLOUD_PROJECT",
        ),
        (vec![("JOURNAL_ENVIRONMENT", None)], "JOURNAL_ENVIRONMENT"),
        (
            vec![("JOURNAL_ENVIRONMENT", Some("prod"))],
            "JOURNAL_ENVIRONMENT",
        ),
        (
            vec![("JOURNAL_ENVIRONMENT", Some("emulator"))],
            "JOURNAL_ENVIRONMENT",
        ),
        (
            vec![("FIRESTORE_EMULATOR_HOST", Some("127.0.0.1:8080"))],
            "JOURNAL_ENVIRONMENT",
        ),
        (
            vec![("FIREBASE_AUTH_EMULATOR_HOST", Some("127.0.0.1:9099"))],
            "FIREBASE_AUTH_EMULATOR_HOST",
        ),
        (vec![("PROVIDER_URL", None)], "PROVIDER_URL"),
        (
            vec![("PROVIDER_URL", Some("http://provider.example"))],
            "PROVIDER_URL",
        ),
        (
            vec![("PROVIDER_URL", Some("https://u:p@provider.example"))],
            "PROVIDER_URL",
        ),
        (vec![("PROVIDER_URL", Some("not a url"))], "PROVIDER_URL"),
        (vec![("PROVIDER_NAME", None)], "PROVIDER_NAME"),
        (vec![("PROVIDER_NAME", Some("Stripe!"))], "PROVIDER_NAME"),
        (vec![("PROVIDER_ACCOUNT", None)], "PROVIDER_ACCOUNT"),
        (
            vec![("PROVIDER_ACCOUNT", Some("acct\u{7}CANARY"))],
            "PROVIDER_ACCOUNT",
        ),
        (vec![("PROVIDER_MODE", None)], "PROVIDER_MODE"),
        (vec![("PROVIDER_MODE", Some("sandbox"))], "PROVIDER_MODE"),
        (
            vec![
                ("JOURNAL_ENVIRONMENT", Some("staging")),
                ("PROVIDER_MODE", Some("live")),
            ],
            "PROVIDER_MODE",
        ),
        (vec![("PROVIDER_API_VERSION", None)], "PROVIDER_API_VERSION"),
        (
            vec![("PROVIDER_API_VERSION", Some("2026 01 01"))],
            "PROVIDER_API_VERSION",
        ),
        (
            vec![("PROVIDER_KEY_RETENTION_SECONDS", Some("60"))],
            "PROVIDER_KEY_RETENTION_SECONDS",
        ),
        (
            vec![("PROVIDER_KEY_RETENTION_SECONDS", Some("a day"))],
            "PROVIDER_KEY_RETENTION_SECONDS",
        ),
        (
            vec![("PROVIDER_TIMEOUT_MS", Some("0"))],
            "PROVIDER_TIMEOUT_MS",
        ),
        (
            vec![("PROVIDER_LOOKUP", Some("Durable"))],
            "PROVIDER_LOOKUP",
        ),
        (vec![("PROVIDER_LOOKUP", Some("search"))], "PROVIDER_LOOKUP"),
        (
            vec![("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("-1"))],
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
        ),
        (
            vec![("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("5 min"))],
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
        ),
        (
            vec![
                ("PROVIDER_LOOKUP", Some("durable")),
                ("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("86401")),
            ],
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
        ),
        // A key-store lookup needs a lease plus the settle window within a quarter
        // of the retention: 60 + 841 > 3600 / 4.
        (
            vec![
                ("PROVIDER_KEY_RETENTION_SECONDS", Some("3600")),
                ("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("841")),
            ],
            "PROVIDER_LOOKUP_SETTLE_SECONDS",
        ),
    ];
    for (changes, variable) in refused {
        let error = config(&changes).expect_err(variable);
        assert_eq!(error.variable, variable, "{changes:?}");
        let text = error.to_string();
        assert!(!text.contains('\n') && text.contains(variable), "{text}");
        assert!(!text.contains("CANARY") && !text.contains("2026"), "{text}");
    }
    // The plan: the environment's settings, the request's payload as parameters,
    // a one-day key retention unless told otherwise; live only in production.
    assert_eq!(ok.plan.key_retention_seconds, 86_400);
    let plan = ok.plan.plan(&json!({"amount": 1250})).expect("plan");
    assert_eq!(plan.provider(), "stub");
    // The lookup: key_store and a 300 s settle window unless told otherwise.
    assert_eq!(
        (plan.lookup(), plan.lookup_settle_seconds()),
        (ProviderLookup::KeyStore, 300)
    );
    let edge = config(&[
        ("PROVIDER_KEY_RETENTION_SECONDS", Some("3600")),
        ("PROVIDER_LOOKUP", Some("key_store")),
        ("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("840")),
    ])
    .expect("60 + 840 = 3600 / 4");
    assert_eq!(
        (edge.plan.lookup, edge.plan.lookup_settle_seconds),
        (ProviderLookup::KeyStore, 840)
    );
    let durable = config(&[
        ("PROVIDER_KEY_RETENTION_SECONDS", Some("3600")),
        ("PROVIDER_LOOKUP", Some(" durable ")),
        ("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("86400")),
    ])
    .expect("a durable lookup is not bound by the retention");
    let plan = durable.plan.plan(&json!({"amount": 1250})).expect("plan");
    assert_eq!(
        (plan.lookup(), plan.lookup_settle_seconds()),
        (ProviderLookup::Durable, 86_400)
    );
    assert_eq!(
        config(&[("PROVIDER_LOOKUP_SETTLE_SECONDS", Some("0"))])
            .expect("no settle window")
            .plan
            .lookup_settle_seconds,
        0
    );
    assert!(
        !format!("{:?}", ok.plan).contains("CANARY"),
        "the account stays out"
    );
    let live = config(&[
        ("PROVIDER_MODE", Some("live")),
        ("PROVIDER_KEY_RETENTION_SECONDS", Some("3600")),
    ])
    .expect("live in production");
    assert_eq!(
        (live.plan.mode.as_str(), live.plan.key_retention_seconds),
        ("live", 3600)
    );
    assert_eq!(
        service::auth::max_age("public, max-age=19302, must-revalidate"),
        Some(Duration::from_secs(19302))
    );
    assert_eq!(service::auth::max_age("no-store"), Some(Duration::ZERO));
    assert_eq!(service::auth::max_age("public"), None);
}

// ---------------------------------------------------------------------------------
// The real binary.

/// The example binary, which `cargo test` builds with the other targets, beside the
/// CLI's. A run filtered to this test binary (`--test emulator`) does not build it:
/// build it first with `cargo test --all-features --test example-binaries` (the same
/// features as the whole suite's, so that neither build invalidates the other's
/// dependencies, minutes each on a small machine).
fn binary() -> PathBuf {
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_command-journal"))
        .with_file_name("checkout-service");
    assert!(
        binary.is_file(),
        "the checkout-service binary is not built at {}: run the README's test \
         command, or `cargo test --all-features --test example-binaries` before a \
         filtered run",
        binary.display()
    );
    binary
}

fn service_command(env: &[(&str, &str)]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(binary());
    command.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    command.envs(env.iter().copied());
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
}

#[tokio::test]
async fn checkout_binary_refuses_bad_configuration_with_one_line_and_exit_1() {
    let cases: [(&[(&str, &str)], &str); 3] = [
        (
            &[
                ("GOOGLE_CLOUD_PROJECT", "demo-project"),
                ("JOURNAL_ENVIRONMENT", "production"),
            ],
            "PROVIDER_URL",
        ),
        (
            &[
                ("GOOGLE_CLOUD_PROJECT", "demo-project"),
                ("JOURNAL_ENVIRONMENT", "production"),
                ("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1"),
                ("PROVIDER_URL", "https://provider.example"),
            ],
            "JOURNAL_ENVIRONMENT",
        ),
        (&[("PORT", "99999")], "PORT"),
    ];
    for (env, variable) in cases {
        let output = service_command(env)
            .output()
            .await
            .expect("run the service");
        assert_eq!(output.status.code(), Some(1), "{variable}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(variable), "{stderr}");
        assert!(output.stdout.is_empty());
    }
}

#[tokio::test]
async fn checkout_sigterm_lets_the_in_flight_request_finish_and_exits_0() {
    let emulator = support::emulator();
    let project = emulator.new_project_id();
    let (stub, stub_url) = start_stub(Stub::new(Action::Charge, CHARGE_PREFIX).gated()).await;
    let mut child = service_command(&[
        PLAN_ENV[0],
        PLAN_ENV[1],
        PLAN_ENV[2],
        PLAN_ENV[3],
        ("PORT", "0"),
        ("GOOGLE_CLOUD_PROJECT", &project),
        ("FIRESTORE_EMULATOR_HOST", emulator.host()),
        ("JOURNAL_ENVIRONMENT", "emulator"),
        ("PROVIDER_URL", &stub_url),
        ("FIREBASE_AUTH_EMULATOR_HOST", "127.0.0.1:9099"),
    ])
    .spawn()
    .expect("start the service");
    let pid = child.id().expect("pid");
    let (line_tx, mut line_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let stdout = child.stdout.take().expect("stdout");
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = line_tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let mut next_line = async || {
        let line = tokio::time::timeout(Duration::from_secs(60), line_rx.recv())
            .await
            .expect("a log line in time")
            .expect("the service is still writing");
        seen.push(line.clone());
        serde_json::from_str::<Value>(&line).expect("JSON line")
    };
    let port = loop {
        let line = next_line().await;
        if line["message"] == "listening" {
            break line["port"].as_u64().expect("port");
        }
    };
    let base = format!("http://127.0.0.1:{port}");
    let token = unsigned(&claims(&project, UID));
    let http = reqwest::Client::new();
    let request = http
        .post(format!("{base}/v1/checkouts"))
        .bearer_auth(&token)
        .json(&json!({"commandId": COMMAND_ID, "payload": payload()}));
    let in_flight = tokio::spawn(async move {
        let response = request.send().await.expect("in-flight request answered");
        (
            response.status().as_u16(),
            response.text().await.expect("body"),
        )
    });
    tokio::time::timeout(Duration::from_secs(60), stub.arrived.notified())
        .await
        .expect("the provider call arrives");

    let signalled = std::time::Instant::now();
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    let sent = unsafe { libc::kill(i32::try_from(pid).expect("pid fits"), libc::SIGTERM) };
    assert_eq!(sent, 0);
    loop {
        let line = next_line().await;
        if line["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("shutdown started"))
        {
            assert_eq!(line["signal"], "SIGTERM");
            break;
        }
    }
    // No new connections once shutdown started (the listener closes right after).
    let refused = async {
        loop {
            match tokio::net::TcpStream::connect(("127.0.0.1", u16::try_from(port).expect("port")))
                .await
            {
                Err(_) => return,
                Ok(stream) => drop(stream),
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), refused)
        .await
        .expect("the listener closes on SIGTERM");
    assert!(
        !in_flight.is_finished(),
        "the in-flight request is still held by the provider"
    );

    stub.release(1);
    let (status, body) = in_flight.await.expect("request task");
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            r#"{"status":"succeeded","charge":{"id":"ch_CANARYreceipt1","status":"succeeded"}}"#
        ),
        "the body is the status, then the charge's canonical envelope"
    );
    let exit = tokio::time::timeout(Duration::from_secs(15), child.wait())
        .await
        .expect("the service exits after draining")
        .expect("wait");
    assert_eq!(exit.code(), Some(0));
    assert!(
        signalled.elapsed() < Duration::from_secs(10),
        "drained within 10 s"
    );
    while let Ok(line) = line_rx.try_recv() {
        seen.push(line);
    }
    while let Some(line) = line_rx.recv().await {
        seen.push(line);
    }
    assert!(
        seen.iter().any(|l| l.contains("shutdown complete")),
        "{seen:?}"
    );
    assert_eq!(stub.posts().len(), 1);
    let references: Vec<String> = stub
        .charges()
        .iter()
        .map(|charge| envelope_reference(&charge_envelope(&charge.object)))
        .collect();
    assert_no_secrets(&seen, &[body], &[&token], &references);
}
