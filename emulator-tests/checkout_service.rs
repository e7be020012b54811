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

mod adversary;
mod charges;
mod concurrency;
mod configuration;
mod customer;
mod event_checkpoint;
mod flow;
mod hardening;
mod keyed;
mod recovery;
mod requests;
mod sends;
mod shutdown;
mod stripe;
mod tokens;
mod webhooks;
mod window;

use super::support::{self, list};
use chrono::Utc;
use command_journal::Connection;
use command_journal::Journal;
use command_journal::identity::OperationSlug;
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
    let webhooks =
        service::webhook::WebhookSettings::from_lookup(|name| env.get(name).cloned(), &config)
            .expect("webhook settings")
            .map(|settings| {
                service::webhook::Webhooks::new(settings, &config, journal.clone(), logger.clone())
                    .expect("webhooks")
            });
    let app = App::new(&config, journal, keys.clone(), logger, thread_recorder())
        .expect("app")
        .with_provider_clock(clock.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind service");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let mut router = Arc::new(app).router();
    if let Some(webhooks) = webhooks {
        router = router.merge(Arc::new(webhooks).router());
    }
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

/// A response: status, `Retry-After`, JSON body and its exact text, its media type
/// and whether it said `Idempotent-Replayed: true`.
#[derive(Debug, Clone)]
struct Answer {
    status: u16,
    retry_after: Option<u64>,
    body: Value,
    text: String,
    content_type: String,
    replayed: bool,
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
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        let content_type = header("content-type");
        let replayed = match header("idempotent-replayed").as_str() {
            "" => false,
            "true" => true,
            other => panic!("Idempotent-Replayed: {other}"),
        };
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
            content_type,
            replayed,
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

    /// The header form: `Idempotency-Key: "<key>"`, the payload as the body.
    async fn keyed(&self, key: &str, payload: &Value) -> Answer {
        let token = self.token(UID);
        let request = self
            .post(Some(&token), payload)
            .header("idempotency-key", format!("\"{key}\""));
        self.send(request).await
    }

    /// The header form's command for a UUID v4 key `id`: its payload is the layer's.
    fn keyed_command(&self, id: &str, payload: &Value) -> CommandInput {
        let wrapped = json!({"body": payload, "method": "POST", "target": "/v1/checkouts"});
        self.command(id, &wrapped)
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

    /// `Journal::pending` at the service's clock: every command that waits, as its
    /// JSON (what `command-journal pending` prints).
    async fn pending(&self) -> Vec<Value> {
        let journal = Journal::new(self.connection.clone()).with_clock(self.clock.clone());
        let listing = journal.pending().await.expect("pending");
        listing
            .pending
            .iter()
            .map(|p| serde_json::to_value(p).expect("json"))
            .collect()
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
                // The customer's action is the browser's: its secret or URL is checked
                // to reach nothing else (`customer.rs`).
                if object.get("status") == Some(&json!("customer_must_act")) {
                    let action = object.remove("action").unwrap_or_default();
                    let mut keys: Vec<&str> = action
                        .as_object()
                        .map(|a| a.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    keys.sort_unstable();
                    assert!(
                        keys == ["clientSecret", "nextAction", "type"] || keys == ["type", "url"],
                        "{body}"
                    );
                }
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
