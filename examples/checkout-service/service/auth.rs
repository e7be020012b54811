//! Caller identity from `Authorization: Bearer <Firebase ID token>`, verified the way
//! the Firebase Admin SDKs verify it.
//!
//! A token is accepted when it is an RS256 JWT whose `kid` names one of Google's
//! published securetoken keys (fetched from the JWKS endpoint and cached for the
//! response's `Cache-Control: max-age`), whose signature verifies, and whose claims
//! hold: `aud` is the project, `iss` is `https://securetoken.google.com/<project>`,
//! `exp` is in the future and `iat` and `auth_time` are not, each with [`LEEWAY`],
//! `nbf`, when present, is not in the future, and `sub` is a non-empty string of at
//! most 128 characters (Firebase's uid limit; [`super::caller_id`] maps it to the
//! journal caller id). The JOSE header must not carry `crit` (RFC 7515 §4.1.11: no
//! extension is understood here, so none may be required), and its `typ`, when
//! present, must be `JWT` (compared ASCII case-insensitively, as media types are);
//! an absent `typ` is accepted, as RFC 7519 §5.1 makes it optional. Unsigned tokens
//! (`alg: none`, what the Firebase Auth emulator issues) are accepted only when the
//! service runs with `FIREBASE_AUTH_EMULATOR_HOST` set, and their claims are checked
//! just the same. Keys are cached as [`super::key_cache`] describes.

use super::caller_id::caller_id;
use super::key_cache::{KeyCache, KeyCachePolicy, KeyLookupError};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::future::BoxFuture;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Google's published keys for Firebase ID tokens, as a JWK set.
pub const GOOGLE_JWKS_URL: &str =
    "https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com";
/// Clock skew tolerated on `exp`, `iat` and `auth_time`.
pub const LEEWAY: Duration = Duration::from_secs(5);

/// The verified caller, from the token's `sub` (the Firebase uid). Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Caller {
    caller_id: String,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Caller(<redacted>)")
    }
}

impl Caller {
    /// The journal's caller id (scope kind `member`): the uid through
    /// [`super::caller_id::caller_id`].
    pub fn caller_id(&self) -> &str {
        &self.caller_id
    }
}

/// Why a request carries no usable caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthError {
    /// No `Authorization: Bearer` header.
    Missing,
    /// The token is malformed, unsigned where that is not allowed, signed by an
    /// unknown key, badly signed, or its claims do not hold. Which, precisely, is a
    /// fixed code for the logs only.
    Invalid(&'static str),
    /// Google's keys could not be fetched; the token may be fine (retry later).
    KeysUnavailable,
}

impl AuthError {
    /// A fixed code for the logs.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing => "token_missing",
            Self::Invalid(code) => code,
            Self::KeysUnavailable => "keys_unavailable",
        }
    }
}

/// A fetched key set and how long it may be cached.
#[derive(Debug, Clone)]
pub struct KeySet {
    /// The published keys.
    pub jwks: JwkSet,
    /// `Cache-Control: max-age` of the response (zero when absent).
    pub max_age: Duration,
}

/// Where verification keys come from: Google in the service, the test's own keys in
/// tests.
pub trait KeySource: Send + Sync {
    /// Fetches the current key set.
    fn fetch(&self) -> BoxFuture<'_, Result<KeySet, KeyFetchError>>;
}

/// The key set could not be fetched or parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the token verification keys could not be fetched")]
pub struct KeyFetchError;

/// Google's securetoken JWKS endpoint.
#[derive(Debug, Clone)]
pub struct GoogleKeys {
    client: reqwest::Client,
    url: String,
}

impl GoogleKeys {
    /// Fetches [`GOOGLE_JWKS_URL`] with `client`.
    pub fn new(client: reqwest::Client) -> Self {
        Self {
            client,
            url: GOOGLE_JWKS_URL.to_owned(),
        }
    }
}

impl KeySource for GoogleKeys {
    fn fetch(&self) -> BoxFuture<'_, Result<KeySet, KeyFetchError>> {
        Box::pin(async move {
            let response = self
                .client
                .get(&self.url)
                .timeout(Duration::from_secs(10))
                .send()
                .await
                .map_err(|_| KeyFetchError)?;
            if !response.status().is_success() {
                return Err(KeyFetchError);
            }
            let max_age = response
                .headers()
                .get(reqwest::header::CACHE_CONTROL)
                .and_then(|value| value.to_str().ok())
                .and_then(max_age)
                .unwrap_or(Duration::ZERO);
            let jwks = response.json::<JwkSet>().await.map_err(|_| KeyFetchError)?;
            Ok(KeySet { jwks, max_age })
        })
    }
}

/// `max-age=N` of a `Cache-Control` value (`no-store`/`no-cache` mean zero).
pub fn max_age(cache_control: &str) -> Option<Duration> {
    let mut age = None;
    for directive in cache_control.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return Some(Duration::ZERO);
        }
        if let Some(seconds) = lower.strip_prefix("max-age=") {
            age = seconds
                .trim_matches('"')
                .parse::<u64>()
                .ok()
                .map(Duration::from_secs);
        }
    }
    age
}

/// Verifies Firebase ID tokens for one project.
pub struct Verifier {
    project: String,
    issuer: String,
    accept_unsigned: bool,
    keys: Arc<KeyCache>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("project", &self.project)
            .field("accept_unsigned", &self.accept_unsigned)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Claims {
    aud: String,
    iss: String,
    sub: String,
    exp: i64,
    iat: i64,
    auth_time: i64,
    #[serde(default)]
    nbf: Option<i64>,
}

#[derive(Deserialize)]
struct RawHeader {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    typ: Option<String>,
    #[serde(default)]
    crit: Option<serde_json::Value>,
}

impl Verifier {
    /// A verifier for `project` with keys from `source`; `accept_unsigned` only when
    /// `FIREBASE_AUTH_EMULATOR_HOST` is set.
    pub fn new(project: &str, accept_unsigned: bool, source: Arc<dyn KeySource>) -> Self {
        Self::with_policy(project, accept_unsigned, source, KeyCachePolicy::default())
    }

    /// [`Verifier::new`] with its key cache under `policy`.
    pub fn with_policy(
        project: &str,
        accept_unsigned: bool,
        source: Arc<dyn KeySource>,
        policy: KeyCachePolicy,
    ) -> Self {
        Self {
            project: project.to_owned(),
            issuer: format!("https://securetoken.google.com/{project}"),
            accept_unsigned,
            keys: Arc::new(KeyCache::new(source, policy)),
        }
    }

    /// Verifies the `Authorization` header's bearer token.
    pub async fn verify(&self, authorization: Option<&str>) -> Result<Caller, AuthError> {
        let header = authorization.ok_or(AuthError::Missing)?;
        let (scheme, token) = header.trim().split_once(' ').ok_or(AuthError::Missing)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::Missing);
        }
        let token = token.trim();
        let mut parts = token.split('.');
        let (Some(head), Some(body), Some(_signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(AuthError::Invalid("token_malformed"));
        };
        let raw: RawHeader = URL_SAFE_NO_PAD
            .decode(head)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or(AuthError::Invalid("token_malformed"))?;
        if raw.crit.is_some() {
            return Err(AuthError::Invalid("crit_header"));
        }
        if raw
            .typ
            .as_deref()
            .is_some_and(|typ| !typ.eq_ignore_ascii_case("JWT"))
        {
            return Err(AuthError::Invalid("typ_header"));
        }
        let claims = match raw.alg.as_str() {
            "none" if self.accept_unsigned => URL_SAFE_NO_PAD
                .decode(body)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Claims>(&bytes).ok())
                .ok_or(AuthError::Invalid("claims_malformed"))?,
            "none" => return Err(AuthError::Invalid("unsigned_token")),
            "RS256" => {
                let kid = raw.kid.ok_or(AuthError::Invalid("kid_missing"))?;
                let key = self.keys.key(&kid).await.map_err(|error| match error {
                    KeyLookupError::Unknown => AuthError::Invalid("unknown_key"),
                    KeyLookupError::Unavailable => AuthError::KeysUnavailable,
                })?;
                let mut validation = Validation::new(Algorithm::RS256);
                validation.leeway = LEEWAY.as_secs();
                validation.validate_nbf = true;
                validation.set_audience(&[&self.project]);
                validation.set_issuer(&[&self.issuer]);
                validation.set_required_spec_claims(&["exp", "iat", "aud", "iss", "sub"]);
                jsonwebtoken::decode::<Claims>(token, &key, &validation)
                    .map_err(|_| AuthError::Invalid("signature_or_claims"))?
                    .claims
            }
            _ => return Err(AuthError::Invalid("algorithm")),
        };
        self.check(&claims, unix_now())?;
        Ok(Caller {
            caller_id: caller_id(&claims.sub),
        })
    }

    /// The claim checks every token passes, signed or not.
    fn check(&self, claims: &Claims, now: i64) -> Result<(), AuthError> {
        let leeway = i64::try_from(LEEWAY.as_secs()).unwrap_or(0);
        if claims.aud != self.project {
            return Err(AuthError::Invalid("audience"));
        }
        if claims.iss != self.issuer {
            return Err(AuthError::Invalid("issuer"));
        }
        if claims.exp.saturating_add(leeway) <= now {
            return Err(AuthError::Invalid("expired"));
        }
        if claims.iat.saturating_sub(leeway) > now {
            return Err(AuthError::Invalid("issued_in_future"));
        }
        if claims.auth_time.saturating_sub(leeway) > now {
            return Err(AuthError::Invalid("auth_time_in_future"));
        }
        if claims
            .nbf
            .is_some_and(|nbf| nbf.saturating_sub(leeway) > now)
        {
            return Err(AuthError::Invalid("not_yet_valid"));
        }
        if claims.sub.is_empty() || claims.sub.chars().count() > 128 {
            return Err(AuthError::Invalid("subject"));
        }
        Ok(())
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
