//! The checkout service against hostile clients (tokens, bodies, headers,
//! slow clients), all on loopback, each bounded in time; short timeouts come from the
//! service's own settings. Also the settings of emulator mode (a loopback provider,
//! the journal's clock offset).

use super::service::auth::{KeyFetchError, KeySet, KeySource};
use super::service::caller_id::{HASHED_PREFIX, caller_id};
use super::service::clock::OffsetClock;
use super::service::config::{Config, ConfigError, MAX_CLOCK_OFFSET_MS};
use super::service::key_cache::{KeyCache, KeyCachePolicy, KeyLookupError};
use super::{
    KEY_A, Options, PLAN_ENV, Service, UID, binary, charge_envelope, claims, command_id, now_secs,
    payload, service_command, start_service, succeeded,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{TimeDelta, Utc};
use command_journal::Clock as _;
use command_journal::identity::{CallerId, OperationSlug};
use command_journal::{CommandInput, CommandRequest, Journal};
use futures::future::BoxFuture;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// The bound on anything a test waits for.
const BOUND: Duration = Duration::from_secs(10);

fn short(header_ms: u64, body_ms: u64) -> Options {
    Options {
        env: vec![
            ("HTTP_HEADER_TIMEOUT_MS", header_ms.to_string()),
            ("HTTP_BODY_TIMEOUT_MS", body_ms.to_string()),
        ],
        ..Options::default()
    }
}

impl Service {
    async fn connect(&self) -> TcpStream {
        let address = self.url.trim_start_matches("http://");
        TcpStream::connect(address).await.expect("connect")
    }

    /// Waits (bounded) until a log line satisfies `wanted`, and returns it.
    async fn line_where(&self, wanted: impl Fn(&Value) -> bool) -> Value {
        let wait = async {
            loop {
                let notified = self.line_written.notified();
                let mut notified = std::pin::pin!(notified);
                notified.as_mut().enable();
                let found = self
                    .lines()
                    .iter()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .find(|l| wanted(l));
                if let Some(line) = found {
                    return line;
                }
                notified.await;
            }
        };
        tokio::time::timeout(BOUND, wait)
            .await
            .expect("the log line is written")
    }
}

/// Reads until the peer closes (or resets) the connection; panics past [`BOUND`].
async fn until_closed(stream: &mut TcpStream) -> String {
    let mut buffer = Vec::new();
    let read = tokio::time::timeout(BOUND, stream.read_to_end(&mut buffer)).await;
    assert!(read.is_ok(), "the server closes the connection in time");
    String::from_utf8_lossy(&buffer).into_owned()
}

/// Reads one response with a `Content-Length` body, leaving the connection open.
async fn one_response(stream: &mut TcpStream) -> String {
    let mut buffer = Vec::new();
    loop {
        let text = String::from_utf8_lossy(&buffer).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if buffer.len() >= end + 4 + length {
                return text;
            }
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the connection closed mid-response: {text}");
        buffer.extend_from_slice(&chunk[..n]);
    }
}

const HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: service\r\n\r\n";

#[tokio::test]
async fn checkout_trickled_headers_idle_connections_and_slow_bodies_are_closed() {
    let service = start_service(short(300, 300)).await;

    // Headers trickling one byte every 50 ms are cut off by the header timeout.
    let stream = service.connect().await;
    let (mut reader, mut writer) = stream.into_split();
    writer
        .write_all(b"POST /v1/checkouts HTTP/1.1\r\nHost: service\r\nX-Trickle: ")
        .await
        .expect("write");
    let trickle = async {
        let mut ticks = tokio::time::interval(Duration::from_millis(50));
        loop {
            ticks.tick().await;
            if writer.write_all(b"a").await.is_err() {
                return;
            }
        }
    };
    let closed = async {
        let mut buffer = Vec::new();
        let _ = reader.read_to_end(&mut buffer).await;
    };
    let cut = tokio::time::timeout(BOUND, async {
        tokio::select! {
            () = closed => {}
            () = trickle => {}
        }
    })
    .await;
    assert!(cut.is_ok(), "a trickling client is closed");

    // A kept-alive connection left idle after its answer is closed.
    let mut idle = service.connect().await;
    idle.write_all(HEALTHZ).await.expect("write");
    assert!(one_response(&mut idle).await.starts_with("HTTP/1.1 200"));
    assert_eq!(until_closed(&mut idle).await, "", "closed without a word");

    // A slow unauthenticated body is never read: 401 at once, then the close.
    let mut slow = service.connect().await;
    slow.write_all(
        b"POST /v1/checkouts HTTP/1.1\r\nHost: service\r\nAuthorization: Bearer not.a.jwt\r\n\
          Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"commandId\"",
    )
    .await
    .expect("write");
    let answer = until_closed(&mut slow).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");

    // A slow authenticated body gets 408 after the body timeout, and the line's
    // latency covers the body read.
    let token = service.token(UID);
    let mut slow = service.connect().await;
    slow.write_all(
        format!(
            "POST /v1/checkouts HTTP/1.1\r\nHost: service\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"commandId\""
        )
        .as_bytes(),
    )
    .await
    .expect("write");
    let answer = until_closed(&mut slow).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let line = service.line_where(|l| l["outcome"] == "body_timeout").await;
    let latency: f64 = line["httpRequest"]["latency"]
        .as_str()
        .and_then(|l| l.trim_end_matches('s').parse().ok())
        .expect("latency");
    assert!(latency >= 0.3, "the body read is in the latency: {latency}");
    assert!(service.documents().await.is_empty());
    assert!(service.stub.posts().is_empty());
    service.assert_no_leak(&[&token]).await;
}

#[tokio::test]
async fn checkout_connection_cap_holds_the_next_connection_until_one_closes() {
    let service = start_service(Options {
        env: vec![("HTTP_MAX_CONNECTIONS", "2".to_owned())],
        ..Options::default()
    })
    .await;
    let mut first = service.connect().await;
    let mut second = service.connect().await;
    for held in [&mut first, &mut second] {
        held.write_all(HEALTHZ).await.expect("write");
        assert!(one_response(held).await.starts_with("HTTP/1.1 200"));
    }
    let mut third = service.connect().await;
    third.write_all(HEALTHZ).await.expect("write");
    let waited = tokio::time::timeout(Duration::from_millis(500), one_response(&mut third)).await;
    assert!(
        waited.is_err(),
        "a third connection is not served while two are held"
    );
    drop(first);
    let served = tokio::time::timeout(BOUND, one_response(&mut third))
        .await
        .expect("served once a connection closed");
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
}

#[tokio::test]
async fn checkout_request_cap_holds_the_next_checkout_but_never_a_health_check() {
    let service = Arc::new(
        start_service(Options {
            env: vec![("HTTP_MAX_REQUESTS", "1".to_owned())],
            gated: true,
            ..Options::default()
        })
        .await,
    );
    let arrived = service.stub.arrived.notified();
    let held = {
        let service = Arc::clone(&service);
        tokio::spawn(async move { service.checkout(&command_id(90), &payload()).await })
    };
    tokio::time::timeout(BOUND, arrived)
        .await
        .expect("the first checkout reaches the provider");
    // Its one slot is taken: health checks and scrapes are still answered at once.
    for path in ["healthz", "metrics"] {
        let answer = tokio::time::timeout(
            BOUND,
            service.http.get(format!("{}/{path}", service.url)).send(),
        )
        .await
        .unwrap_or_else(|_| panic!("/{path} waited behind a checkout"))
        .expect("answer");
        assert_eq!(answer.status().as_u16(), 200, "/{path}");
    }
    // Each is logged, as every request is.
    for path in ["/healthz", "/metrics"] {
        let line = service
            .line_where(|l| l["httpRequest"]["requestUrl"] == path)
            .await;
        assert_eq!(line["httpRequest"]["status"], 200, "{line}");
    }
    // A second checkout waits for the slot.
    let second = {
        let service = Arc::clone(&service);
        tokio::spawn(async move { service.checkout(&command_id(91), &payload()).await })
    };
    let waited =
        tokio::time::timeout(Duration::from_millis(500), service.stub.arrived.notified()).await;
    assert!(waited.is_err(), "a second checkout waits for the one slot");
    let arrived = service.stub.arrived.notified();
    service.stub.release(1);
    let first = tokio::time::timeout(BOUND, held)
        .await
        .expect("the held checkout finishes")
        .expect("task");
    assert_eq!(first.status, 200);
    tokio::time::timeout(BOUND, arrived)
        .await
        .expect("the second checkout reaches the provider once the slot is free");
    service.stub.release(1);
    let second = tokio::time::timeout(BOUND, second)
        .await
        .expect("the second checkout finishes")
        .expect("task");
    assert_eq!(second.status, 200);
}

// ---------------------------------------------------------------------------------
// The key cache.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    Answer,
    Fail,
    HangAfterFirst,
    Hang,
}

struct ScriptedKeys {
    jwks: JwkSet,
    max_age: Duration,
    behaviour: Behaviour,
    fetches: AtomicUsize,
    started: Notify,
}

impl ScriptedKeys {
    fn new(behaviour: Behaviour, max_age: Duration) -> Arc<Self> {
        Arc::new(Self {
            jwks: serde_json::from_str(super::JWKS).expect("jwks"),
            max_age,
            behaviour,
            fetches: AtomicUsize::new(0),
            started: Notify::new(),
        })
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

impl KeySource for ScriptedKeys {
    fn fetch(&self) -> BoxFuture<'_, Result<KeySet, KeyFetchError>> {
        let n = self.fetches.fetch_add(1, Ordering::SeqCst);
        let hang = self.behaviour == Behaviour::Hang
            || (self.behaviour == Behaviour::HangAfterFirst && n > 0);
        if hang {
            self.started.notify_one();
        }
        Box::pin(async move {
            if hang {
                return futures::future::pending().await;
            }
            if self.behaviour == Behaviour::Fail {
                return Err(KeyFetchError);
            }
            Ok(KeySet {
                jwks: self.jwks.clone(),
                max_age: self.max_age,
            })
        })
    }
}

#[tokio::test]
async fn checkout_key_cache_floors_max_age_caches_failures_and_limits_unknown_kids() {
    // No Cache-Control (zero): the floor keeps the set for every request.
    let keys = ScriptedKeys::new(Behaviour::Answer, Duration::ZERO);
    let cache = Arc::new(KeyCache::new(keys.clone(), KeyCachePolicy::default()));
    let start = Instant::now();
    for _ in 0..20 {
        assert!(cache.key_at("test-key-a", start).await.is_ok());
    }
    assert_eq!(
        keys.fetches(),
        1,
        "max-age 0 does not refetch every request"
    );
    // Random kids: no refresh within a minute of the fetch, then one a minute.
    let unknown = async |at: Instant, from: usize| {
        for n in from..from + 20 {
            let kid = format!("random-{n}");
            assert_eq!(
                cache.key_at(&kid, at).await.err(),
                Some(KeyLookupError::Unknown)
            );
        }
    };
    unknown(start + Duration::from_secs(30), 0).await;
    assert_eq!(keys.fetches(), 1, "the set is under a minute old");
    unknown(start + Duration::from_secs(61), 20).await;
    assert_eq!(keys.fetches(), 2, "an unknown kid forces one refresh");
    unknown(start + Duration::from_secs(100), 40).await;
    assert_eq!(keys.fetches(), 2, "and no second one within the minute");
    unknown(start + Duration::from_secs(122), 60).await;
    assert_eq!(keys.fetches(), 3, "one more a minute later");
    assert!(
        cache
            .key_at("test-key-a", start + Duration::from_secs(122))
            .await
            .is_ok()
    );
    // Past the floor (five minutes), the set is refetched once.
    let later = start + Duration::from_secs(122 + 301);
    for _ in 0..5 {
        assert!(cache.key_at("test-key-a", later).await.is_ok());
    }
    cache.settled().await;
    assert_eq!(keys.fetches(), 4, "one background refresh");

    // A failed fetch is cached: no refetch on the next requests.
    let failing = ScriptedKeys::new(Behaviour::Fail, Duration::ZERO);
    let cache = Arc::new(KeyCache::new(failing.clone(), KeyCachePolicy::default()));
    for _ in 0..10 {
        assert_eq!(
            cache.key("test-key-a").await.err(),
            Some(KeyLookupError::Unavailable)
        );
    }
    assert_eq!(failing.fetches(), 1);
}

#[tokio::test]
async fn checkout_key_cache_serves_cached_keys_while_a_refresh_hangs() {
    // Every set is stale at once, so the second lookup refreshes; that fetch hangs.
    let keys = ScriptedKeys::new(Behaviour::HangAfterFirst, Duration::ZERO);
    let policy = KeyCachePolicy {
        min_age: Duration::ZERO,
        max_age: Duration::ZERO,
        fetch_timeout: Duration::from_secs(600),
        ..KeyCachePolicy::default()
    };
    let cache = Arc::new(KeyCache::new(keys.clone(), policy));
    assert!(cache.key("test-key-a").await.is_ok());
    let started = keys.started.notified();
    // The expired key is served at once; the refresh runs in the background.
    let served = tokio::time::timeout(BOUND, cache.key("test-key-a"))
        .await
        .expect("not held behind the refresh");
    assert!(served.is_ok());
    tokio::time::timeout(BOUND, started)
        .await
        .expect("the refresh starts");
    for _ in 0..5 {
        let served = tokio::time::timeout(BOUND, cache.key("test-key-a"))
            .await
            .expect("not held behind the hanging fetch");
        assert!(served.is_ok(), "the cached key is served meanwhile");
    }
    assert_eq!(
        keys.fetches(),
        2,
        "one fetch in flight, not one per request"
    );

    // With nothing cached, a hanging endpoint costs one short timeout.
    let hanging = ScriptedKeys::new(Behaviour::Hang, Duration::ZERO);
    let cache = Arc::new(KeyCache::new(
        hanging.clone(),
        KeyCachePolicy {
            fetch_timeout: Duration::from_millis(200),
            ..KeyCachePolicy::default()
        },
    ));
    let answer = tokio::time::timeout(BOUND, cache.key("test-key-a"))
        .await
        .expect("bounded by the fetch timeout");
    assert_eq!(answer.err(), Some(KeyLookupError::Unavailable));
}

// ---------------------------------------------------------------------------------
// The JOSE header and the claims.

fn signed_with_header(header: &Value, claims: &Value) -> String {
    let message = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let key = EncodingKey::from_rsa_pem(KEY_A).expect("test key");
    let signature =
        jsonwebtoken::crypto::sign(message.as_bytes(), &key, Algorithm::RS256).expect("sign");
    format!("{message}.{signature}")
}

#[tokio::test]
async fn checkout_crit_future_nbf_and_foreign_typ_are_refused() {
    let service = start_service(Options::default()).await;
    let good = claims(&service.project, UID);
    let mut future_nbf = good.clone();
    future_nbf["nbf"] = json!(now_secs() + 600);
    let mut past_nbf = good.clone();
    past_nbf["nbf"] = json!(now_secs() - 60);
    let header = |extra: Value| {
        let mut header = json!({"alg": "RS256", "kid": "test-key-a"});
        if let (Some(header), Value::Object(extra)) = (header.as_object_mut(), extra) {
            header.extend(extra);
        }
        header
    };
    let refused = [
        (
            "crit",
            header(json!({"typ": "JWT", "crit": ["exp"]})),
            &good,
        ),
        ("typ", header(json!({"typ": "at+jwt"})), &good),
        ("nbf", header(json!({"typ": "JWT"})), &future_nbf),
    ];
    let mut tokens = Vec::new();
    for (n, (name, head, claims)) in refused.iter().enumerate() {
        let token = signed_with_header(head, claims);
        let body = json!({"commandId": command_id(40 + n as u64), "payload": payload()});
        let answer = service.send(service.post(Some(&token), &body)).await;
        assert_eq!(answer.status, 401, "{name}");
        tokens.push(token);
    }
    assert!(service.documents().await.is_empty());
    // An absent typ, a lowercase one and a past nbf are accepted.
    let accepted = [
        header(json!({})),
        header(json!({"typ": "jwt"})),
        header(json!({"typ": "JWT"})),
    ];
    for (n, head) in accepted.iter().enumerate() {
        let claims = if n == 2 { &past_nbf } else { &good };
        let token = signed_with_header(head, claims);
        let body = json!({"commandId": command_id(50 + n as u64), "payload": payload()});
        let answer = service.send(service.post(Some(&token), &body)).await;
        assert_eq!(answer.status, 200, "{head}");
        tokens.push(token);
    }
    let extra: Vec<&str> = tokens.iter().map(String::as_str).collect();
    service.assert_no_leak(&extra).await;
}

// ---------------------------------------------------------------------------------
// The body.

#[tokio::test]
async fn checkout_duplicate_json_keys_are_400_and_reach_nothing() {
    let service = start_service(Options::default()).await;
    let token = service.token(UID);
    let first = command_id(60);
    let second = command_id(61);
    let cases = [
        (
            format!(r#"{{"commandId":"{first}","payload":{{"amount":1,"amount":1000000}}}}"#),
            "payload",
        ),
        (
            format!(r#"{{"commandId":"{first}","commandId":"{second}","payload":{{"amount":1}}}}"#),
            "commandId",
        ),
        (
            format!(r#"{{"commandId":"{first}","payload":{{"a":{{"b":1,"b":2}}}}}}"#),
            "payload",
        ),
    ];
    for (body, field) in cases {
        let answer = service
            .send(
                service
                    .http
                    .post(format!("{}/v1/checkouts", service.url))
                    .bearer_auth(&token)
                    .header("content-type", "application/json")
                    .body(body),
            )
            .await;
        assert_eq!(
            (answer.status, answer.body),
            (400, json!({"error": "invalid_input", "field": field}))
        );
    }
    assert!(service.documents().await.is_empty());
    assert!(service.stub.posts().is_empty());
    service.assert_no_leak(&[&token]).await;
}

// ---------------------------------------------------------------------------------
// Emulator mode.

/// The configuration of `environment` (the emulator's host set exactly in emulator
/// mode) with `extra` settings.
fn config(environment: &str, extra: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let mut env: HashMap<&str, String> = HashMap::from([
        ("GOOGLE_CLOUD_PROJECT", "demo-project".to_owned()),
        ("JOURNAL_ENVIRONMENT", environment.to_owned()),
        ("PROVIDER_URL", "http://127.0.0.1:9/".to_owned()),
    ]);
    env.extend(
        PLAN_ENV
            .iter()
            .map(|(name, value)| (*name, (*value).to_owned())),
    );
    if environment == "emulator" {
        env.insert("FIRESTORE_EMULATOR_HOST", "127.0.0.1:8080".to_owned());
    }
    for (name, value) in extra {
        env.insert(name, (*value).to_owned());
    }
    Config::from_lookup(|name| env.get(name).cloned())
}

#[test]
fn checkout_emulator_mode_binds_loopback_and_requires_a_loopback_provider() {
    let emulator = config("emulator", &[]).expect("emulator");
    assert_eq!(emulator.bind_address.to_string(), "127.0.0.1");
    let told = config("emulator", &[("BIND_ADDRESS", "0.0.0.0")]).expect("told");
    assert_eq!(told.bind_address.to_string(), "0.0.0.0");
    let production = config(
        "production",
        &[("PROVIDER_URL", "https://provider.example")],
    )
    .expect("production");
    assert_eq!(production.bind_address.to_string(), "0.0.0.0");
    for loopback in ["http://localhost:9", "http://[::1]:9", "https://127.0.0.2"] {
        assert!(
            config("emulator", &[("PROVIDER_URL", loopback)]).is_ok(),
            "{loopback}"
        );
    }
    for remote in [
        "https://provider.example",
        "http://10.0.0.1:9",
        "https://localhost.example",
    ] {
        let error = config("emulator", &[("PROVIDER_URL", remote)]).expect_err(remote);
        assert_eq!(error.variable, "PROVIDER_URL");
        assert!(!error.to_string().contains('\n'));
    }
    let error = config("emulator", &[("BIND_ADDRESS", "everywhere")]).expect_err("bind");
    assert_eq!(error.variable, "BIND_ADDRESS");
    let error = config("test", &[("HTTP_BODY_TIMEOUT_MS", "0")]).expect_err("zero");
    assert_eq!(error.variable, "HTTP_BODY_TIMEOUT_MS");
}

#[test]
fn checkout_clock_offset_is_taken_in_emulator_mode_only() {
    const OFFSET: &str = "JOURNAL_CLOCK_OFFSET_MS";
    assert_eq!(config("emulator", &[]).expect("unset").clock_offset, None);
    for (text, ms) in [("0", 0), ("-90000", -90_000), (" 61000 ", 61_000)] {
        let offset = config("emulator", &[(OFFSET, text)])
            .expect(text)
            .clock_offset;
        assert_eq!(offset, Some(TimeDelta::milliseconds(ms)), "{text}");
    }
    let week = MAX_CLOCK_OFFSET_MS.to_string();
    assert!(config("emulator", &[(OFFSET, &week)]).is_ok());
    let past_a_week = (MAX_CLOCK_OFFSET_MS + 1).to_string();
    let before_a_week = (-MAX_CLOCK_OFFSET_MS - 1).to_string();
    for text in ["1.5", "90s", "CANARYoffset", &past_a_week, &before_a_week] {
        let error = config("emulator", &[(OFFSET, text)]).expect_err(text);
        assert_eq!(error.variable, OFFSET);
        assert!(!error.to_string().contains(text), "{error}");
    }
    // Outside emulator mode a journal runs on the system clock: the setting is refused
    // whatever its value.
    for environment in ["test", "staging", "production"] {
        let url = ("PROVIDER_URL", "https://provider.example");
        let error = config(environment, &[(OFFSET, "0"), url]).expect_err(environment);
        assert_eq!(error.variable, OFFSET);
        assert!(error.to_string().contains("emulator"), "{error}");
    }
}

#[test]
fn checkout_concurrency_is_preconditions_unless_set_to_transaction() {
    use command_journal::Concurrency;
    const VARIABLE: &str = "JOURNAL_CONCURRENCY";
    let unset = config("emulator", &[]).expect("unset").concurrency;
    assert_eq!(unset, Concurrency::Preconditions);
    for (text, mode) in [
        ("preconditions", Concurrency::Preconditions),
        (" transaction ", Concurrency::Transaction),
    ] {
        let taken = config("emulator", &[(VARIABLE, text)])
            .expect(text)
            .concurrency;
        assert_eq!(taken, mode, "{text}");
    }
    for text in ["Transaction", "tx", "CANARYmode"] {
        let error = config("emulator", &[(VARIABLE, text)]).expect_err(text);
        assert_eq!(error.variable, VARIABLE);
        assert!(!error.to_string().contains(text), "{error}");
    }
}

#[test]
fn checkout_offset_clock_reads_the_system_clock_moved() {
    for ms in [-90_000, 0, 3_600_000] {
        let clock = OffsetClock::new(TimeDelta::milliseconds(ms));
        let before = Utc::now();
        let read = clock.now();
        let after = Utc::now();
        assert!(read - before >= TimeDelta::milliseconds(ms), "{ms}");
        assert!(read - after <= TimeDelta::milliseconds(ms), "{ms}");
    }
}

#[tokio::test]
async fn checkout_binary_in_emulator_mode_refuses_a_remote_provider() {
    let _ = binary();
    let output = service_command(&[
        ("GOOGLE_CLOUD_PROJECT", "demo-project"),
        ("JOURNAL_ENVIRONMENT", "emulator"),
        ("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1"),
        ("PROVIDER_URL", "https://provider.example"),
    ])
    .output()
    .await
    .expect("run the service");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("PROVIDER_URL"), "{stderr}");
    assert!(output.stdout.is_empty());
}

// ---------------------------------------------------------------------------------
// Caller ids.

#[test]
fn checkout_uid_mapping_is_identity_on_caller_ids_and_injective() {
    let generated = "Yk3sPq9ZrT0aBcDeFgHiJkLmNoPq";
    for uid in [generated, "a", "a_b-C", UID, &"Z".repeat(128)] {
        assert_eq!(caller_id(uid), uid, "a valid caller id stays itself");
    }
    let long = "é".repeat(128);
    let too_long = "a".repeat(129);
    let odd = [
        "alice@example.com",
        "a/b",
        "a b",
        "ünïcødé",
        long.as_str(),
        too_long.as_str(),
    ];
    let hashed_a_b = caller_id("a/b");
    let reserved = [hashed_a_b.as_str(), "uid-sha256-", "uid-sha256-x"];
    let mut seen = BTreeSet::new();
    for uid in odd
        .iter()
        .chain(reserved.iter())
        .chain(["a_b", "a-b"].iter())
    {
        let mapped = caller_id(uid);
        assert!(CallerId::parse(&mapped).is_ok(), "{uid}: {mapped}");
        assert!(seen.insert(mapped), "no two uids share a caller id: {uid}");
    }
    for uid in odd.iter().chain(reserved.iter()) {
        let mapped = caller_id(uid);
        assert!(
            mapped.starts_with(HASHED_PREFIX) && mapped.len() == 75,
            "{mapped}"
        );
    }
    assert_ne!(
        caller_id(&hashed_a_b),
        hashed_a_b,
        "a uid spelling another's mapped id is itself hashed"
    );
}

#[tokio::test]
async fn checkout_uids_outside_the_caller_id_alphabet_check_out() {
    let service = start_service(Options::default()).await;
    let long = "é".repeat(128);
    let slash = "CANARY/b";
    let spelled = caller_id(slash);
    let uids = [
        "CANARY.user@example.com",
        slash,
        "CANARYünï",
        long.as_str(),
        spelled.as_str(),
        UID,
    ];
    let id = command_id(70);
    let mut tokens = Vec::new();
    for uid in uids {
        let token = service.token(uid);
        let answer = service
            .send(service.post(
                Some(&token),
                &json!({"commandId": id, "payload": payload()}),
            ))
            .await;
        let charge = charge_envelope(
            &service
                .stub
                .charges()
                .last()
                .expect("a charge per uid")
                .object,
        );
        assert_eq!(
            (answer.status, answer.body),
            (200, succeeded(&charge)),
            "{uid}"
        );
        tokens.push(token);
    }
    // One journal and one provider key per uid, each the mapped caller id's.
    let calls = service.stub.posts();
    assert_eq!(calls.len(), uids.len());
    let operation = OperationSlug::parse("charge").expect("slug");
    for (call, uid) in calls.iter().zip(uids) {
        let mapped = caller_id(uid);
        let expected = CommandInput::new(CommandRequest {
            environment: "emulator",
            caller_scope_kind: "member",
            caller_id: &mapped,
            command_id: &id,
            command_type: "checkout",
            endpoint_schema_version: 1,
            payload: &payload(),
        })
        .expect("command")
        .identity()
        .provider_idempotency_key(&operation);
        assert_eq!(call.key.as_deref(), Some(expected.as_str()), "{uid}");
    }
    service.assert_verifies_clean(uids.len() as u64).await;
    let mut extra: Vec<&str> = tokens.iter().map(String::as_str).collect();
    extra.extend(["ünï", "example.com", &long, &spelled]);
    service.assert_no_leak(&extra).await;
}

// ---------------------------------------------------------------------------------
// Refusals before the handler.

#[tokio::test]
async fn checkout_refusals_before_the_handler_leave_one_line_each() {
    let service = start_service(Options::default()).await;
    let token = service.token(UID);
    let url = &service.url;
    let allowed = service
        .http
        .get(format!("{url}/v1/checkouts"))
        .send()
        .await
        .expect("answer");
    assert_eq!(
        allowed.headers().get("allow").map(|v| v.as_bytes()),
        Some(&b"POST"[..])
    );
    let get_checkouts = service
        .send(service.http.get(format!("{url}/v1/checkouts")))
        .await;
    assert_eq!(get_checkouts.status, 405);
    let post_healthz = service
        .send(service.http.post(format!("{url}/healthz")))
        .await;
    assert_eq!(post_healthz.status, 405);
    let unknown = service
        .send(
            service
                .http
                .get(format!("{url}/v1/checkouts/{}", command_id(80))),
        )
        .await;
    assert_eq!(unknown.status, 404);
    let big = json!({"commandId": command_id(81), "payload": {"blob": "x".repeat(70 * 1024)}});
    assert_eq!(
        service.send(service.post(Some(&token), &big)).await.status,
        413
    );

    let long_uri = format!(
        "GET /{} HTTP/1.1\r\nHost: service\r\n\r\n",
        "a".repeat(70_000)
    );
    let many_headers = format!(
        "GET /healthz HTTP/1.1\r\nHost: service\r\n{}\r\n",
        (0..150)
            .map(|n| format!("X-H{n}: v\r\n"))
            .collect::<String>()
    );
    let raw = [
        (long_uri, 414),
        (many_headers, 431),
        ("GARBAGE\r\n\r\n".to_owned(), 400),
    ];
    for (request, status) in &raw {
        let mut stream = service.connect().await;
        let _ = stream.write_all(request.as_bytes()).await;
        let answer = until_closed(&mut stream).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{status}: {answer}"
        );
    }

    let shape = |line: &Value| {
        let keys: BTreeSet<&str> = line
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let http: BTreeSet<&str> = line["httpRequest"]
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        (
            keys.into_iter().map(str::to_owned).collect::<Vec<_>>(),
            http.into_iter().map(str::to_owned).collect::<Vec<_>>(),
        )
    };
    let expected_shape = (
        [
            "httpRequest",
            "message",
            "outcome",
            "providerCalled",
            "severity",
        ]
        .map(str::to_owned)
        .to_vec(),
        ["latency", "requestMethod", "requestUrl", "status"]
            .map(str::to_owned)
            .to_vec(),
    );
    for status in [405, 404, 413, 414, 431, 400] {
        let line = service
            .line_where(|l| l["httpRequest"]["status"] == status)
            .await;
        assert_eq!(shape(&line), expected_shape, "{status}: {line}");
    }
    let refused = service
        .lines()
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["httpRequest"].is_object())
        .count();
    assert_eq!(refused, 8, "one line per refused request");
    service
        .assert_no_leak(&[&token, "aaaaaaaaaaaaaaaa", "X-H1"])
        .await;
}

#[tokio::test]
async fn checkout_a_client_gone_after_the_provider_was_called_still_has_its_outcome_recorded() {
    let service = Arc::new(
        start_service(Options {
            gated: true,
            ..Options::default()
        })
        .await,
    );
    let id = command_id(92);
    let arrived = service.stub.arrived.notified();
    let client = {
        let service = Arc::clone(&service);
        let id = id.clone();
        tokio::spawn(async move { service.checkout(&id, &payload()).await })
    };
    tokio::time::timeout(BOUND, arrived)
        .await
        .expect("the provider is called");
    // The client goes away, and its connection with it, while the provider works.
    client.abort();
    assert!(client.await.is_err(), "the client was still waiting");
    service.stub.release(1);
    // The provider's answer is recorded, logged and counted all the same.
    let line = service
        .line_where(|l| l["commandKeyHash"].is_string() && l["httpRequest"]["status"] == 200)
        .await;
    assert_eq!(line["providerCalled"], true, "{line}");
    let journal = Journal::new(service.connection.clone());
    let status = journal
        .status(&service.command(&id, &payload()))
        .await
        .expect("status");
    assert_eq!(status.state.as_str(), "succeeded");
    // The client's retry replays the stored answer: one charge.
    let retry = service.checkout(&id, &payload()).await;
    assert_eq!(retry.status, 200);
    assert_eq!(service.stub.charges().len(), 1);
}

#[tokio::test]
async fn checkout_with_firestore_not_answering_is_503_within_its_deadline() {
    let proxy = crate::proxy::Proxy::start(crate::support::emulator().host()).await;
    let service = start_service(Options {
        firestore_host: Some(proxy.host()),
        env: vec![("FIRESTORE_DEADLINE_MS", "2000".to_owned())],
        ..Options::default()
    })
    .await;
    // From the first commit's answer on, Firestore says nothing more for 10 minutes.
    proxy.arm(
        crate::proxy::Rpc::Commit,
        crate::proxy::Fault::DelayResponse(Duration::from_secs(600)),
    );
    let started = std::time::Instant::now();
    let answer = tokio::time::timeout(BOUND, service.checkout(&command_id(93), &payload()))
        .await
        .expect("answered within the bound, not after the journal's ~100 s of retries");
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(proxy.fired(), 1);
    assert!(
        service.stub.charges().is_empty(),
        "no provider call without a permit"
    );
}

#[tokio::test]
async fn checkout_a_pipelining_client_that_never_reads_cannot_pin_the_last_connection() {
    let service = start_service(Options {
        env: vec![
            ("HTTP_MAX_CONNECTIONS", "1".to_owned()),
            ("HTTP_WRITE_TIMEOUT_MS", "500".to_owned()),
        ],
        ..Options::default()
    })
    .await;
    // The one connection: a client that pipelines health checks without end and never
    // reads an answer (a small receive buffer, so the server's writes stall soon).
    let address = service
        .url
        .trim_start_matches("http://")
        .parse()
        .expect("address");
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("receive buffer");
    let hog = socket.connect(address).await.expect("connect");
    let (unread, mut requests) = hog.into_split();
    let pipelining = tokio::spawn(async move {
        let burst = HEALTHZ.repeat(256);
        while requests.write_all(&burst).await.is_ok() {}
    });
    // hyper reads no request while an answer cannot be written, so only a write
    // timeout frees the connection: then the next client is served.
    let mut next = service.connect().await;
    next.write_all(HEALTHZ).await.expect("write");
    let served = tokio::time::timeout(BOUND, one_response(&mut next))
        .await
        .expect("served once the pipelining client's connection was cut");
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    let line = service
        .line_where(|l| l["outcome"] == "write_timeout")
        .await;
    assert_eq!(line["severity"], "INFO", "{line}");
    drop(unread);
    pipelining.abort();
}
