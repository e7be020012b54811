//! The checkout service against the attacks of issue 26 (tokens, bodies, headers,
//! slow clients), all on loopback, each bounded in time; short timeouts come from the
//! service's own settings.

use super::service::auth::{KeyFetchError, KeySet, KeySource};
use super::service::caller_id::{HASHED_PREFIX, caller_id};
use super::service::key_cache::{KeyCache, KeyCachePolicy, KeyLookupError};
use super::{KEY_A, Options, UID, claims, command_id, now_secs, payload, start_service};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use command_journal::{CallerId, CommandInput, CommandRequest, OperationSlug};
use futures::future::BoxFuture;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The bound on anything a test waits for.
const BOUND: Duration = Duration::from_secs(10);

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
    let cache = KeyCache::new(keys.clone(), KeyCachePolicy::default());
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
    assert_eq!(keys.fetches(), 4);

    // A failed fetch is cached: no refetch on the next requests.
    let failing = ScriptedKeys::new(Behaviour::Fail, Duration::ZERO);
    let cache = KeyCache::new(failing.clone(), KeyCachePolicy::default());
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
    let refresher = {
        let cache = Arc::clone(&cache);
        tokio::spawn(async move { cache.key("test-key-a").await.is_ok() })
    };
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
    assert!(!refresher.is_finished());
    refresher.abort();

    // With nothing cached, a hanging endpoint costs one short timeout.
    let hanging = ScriptedKeys::new(Behaviour::Hang, Duration::ZERO);
    let cache = KeyCache::new(
        hanging.clone(),
        KeyCachePolicy {
            fetch_timeout: Duration::from_millis(200),
            ..KeyCachePolicy::default()
        },
    );
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
    service.assert_no_leak(&extra);
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
    assert!(service.stub.calls().is_empty());
    service.assert_no_leak(&[&token]);
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
        assert_eq!(
            (answer.status, answer.body),
            (200, json!({"status": "succeeded"})),
            "{uid}"
        );
        tokens.push(token);
    }
    // One journal and one provider key per uid, each the mapped caller id's.
    let calls = service.stub.calls();
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
    service.assert_no_leak(&extra);
}
