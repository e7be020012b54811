//! Google's token verification keys, cached.
//!
//! One fetch at a time (single flight), bounded by [`KeyCachePolicy::fetch_timeout`]
//! and never under a lock that a verification waits on: when the cached set holds
//! the key asked for but has expired, the key is served at once and the refresh runs
//! in the background; while it runs, every request is served from the keys already
//! cached. Only a request with no usable key waits for the fetch. A key set is
//! fresh for its `Cache-Control: max-age`, clamped to
//! [`KeyCachePolicy::min_age`]..=[`KeyCachePolicy::max_age`] (so a missing header or
//! `max-age=0` does not refetch on every request); an expired set is still used for
//! [`KeyCachePolicy::stale_grace`] when a refresh fails or is in flight. A failed
//! fetch is not retried for [`KeyCachePolicy::failure_backoff`], and a `kid` missing
//! from a fresh set forces a refresh only when that set is at least
//! [`KeyCachePolicy::unknown_kid_interval`] old, and at most one per interval, so
//! random-`kid` tokens cannot make the service fetch on every request (Google
//! publishes a key well before it signs with it).

use super::auth::KeySource;
use jsonwebtoken::DecodingKey;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How the cache treats the key endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyCachePolicy {
    /// Shortest time a fetched set is fresh, whatever `Cache-Control` says.
    pub min_age: Duration,
    /// Longest time a fetched set is fresh, whatever `Cache-Control` says.
    pub max_age: Duration,
    /// Upper bound of one fetch.
    pub fetch_timeout: Duration,
    /// How long after a failed fetch no fetch is tried.
    pub failure_backoff: Duration,
    /// Shortest time between a fetch and a refresh forced by an unknown `kid`, and
    /// between two forced refreshes.
    pub unknown_kid_interval: Duration,
    /// How long after it expired a set is still used while no newer one can be had.
    pub stale_grace: Duration,
}

impl Default for KeyCachePolicy {
    fn default() -> Self {
        Self {
            min_age: Duration::from_secs(5 * 60),
            max_age: Duration::from_secs(24 * 60 * 60),
            fetch_timeout: Duration::from_secs(5),
            failure_backoff: Duration::from_secs(10),
            unknown_kid_interval: Duration::from_secs(60),
            stale_grace: Duration::from_secs(60 * 60),
        }
    }
}

/// Why no key is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLookupError {
    /// The current key set has no key with this `kid`.
    Unknown,
    /// No usable key set could be had.
    Unavailable,
}

struct Snapshot {
    keys: Arc<HashMap<String, DecodingKey>>,
    fetched_at: Instant,
    fresh_until: Instant,
    usable_until: Instant,
}

#[derive(Default)]
struct State {
    snapshot: Option<Snapshot>,
    /// Bumped by every fetch, successful or not.
    generation: u64,
    /// No fetch before this instant (after a failure).
    backoff_until: Option<Instant>,
    /// When an unknown `kid` last forced a refresh.
    last_forced: Option<Instant>,
}

/// The key cache of one verifier.
pub struct KeyCache {
    source: Arc<dyn KeySource>,
    policy: KeyCachePolicy,
    state: Mutex<State>,
    /// Held by the one fetch in flight; a request waits on it only when it has no
    /// usable key.
    refresh: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyCache")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// What a lookup found before any fetch.
enum Seen {
    Hit(DecodingKey),
    /// A fetch is wanted; `fallback` is a stale key usable meanwhile, `forced` says
    /// the set is fresh but lacks the `kid`.
    Fetch {
        fallback: Option<DecodingKey>,
        forced: bool,
        generation: u64,
    },
    Miss(KeyLookupError),
}

impl KeyCache {
    /// An empty cache over `source`.
    pub fn new(source: Arc<dyn KeySource>, policy: KeyCachePolicy) -> Self {
        Self {
            source,
            policy,
            state: Mutex::new(State::default()),
            refresh: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key named `kid`.
    pub async fn key(self: &Arc<Self>, kid: &str) -> Result<DecodingKey, KeyLookupError> {
        self.key_at(kid, Instant::now()).await
    }

    /// Resolves once no fetch is in flight (tests wait for a background refresh).
    #[allow(dead_code, reason = "the tests wait on it; the service never needs to")]
    pub async fn settled(&self) {
        drop(self.refresh.lock().await);
    }

    /// [`KeyCache::key`] as if the clock read `now` (tests move time forward).
    pub async fn key_at(
        self: &Arc<Self>,
        kid: &str,
        now: Instant,
    ) -> Result<DecodingKey, KeyLookupError> {
        let (fallback, forced, generation) = match self.look(kid, now) {
            Seen::Hit(key) => return Ok(key),
            Seen::Miss(error) => return Err(error),
            Seen::Fetch {
                fallback,
                forced,
                generation,
            } => (fallback, forced, generation),
        };
        let missing = if forced {
            KeyLookupError::Unknown
        } else {
            KeyLookupError::Unavailable
        };
        match Arc::clone(&self.refresh).try_lock_owned() {
            Ok(guard) => {
                // Someone may have fetched between the look and the lock.
                let stale = self.state().generation == generation;
                if let Some(key) = fallback {
                    if stale {
                        let this = Arc::clone(self);
                        tokio::spawn(async move {
                            this.fetch(now).await;
                            drop(guard);
                        });
                    }
                    return Ok(key);
                }
                if stale {
                    self.fetch(now).await;
                }
                drop(guard);
            }
            Err(_) => {
                if let Some(key) = fallback {
                    return Ok(key);
                }
                // Nothing usable: wait for the fetch in flight (bounded by its timeout).
                drop(self.refresh.lock().await);
            }
        }
        self.usable(kid, now).or(fallback).ok_or(missing)
    }

    fn look(&self, kid: &str, now: Instant) -> Seen {
        let mut state = self.state();
        let generation = state.generation;
        let backoff = state.backoff_until.is_some_and(|until| now < until);
        match &state.snapshot {
            Some(snapshot) if now < snapshot.fresh_until => {
                if let Some(key) = snapshot.keys.get(kid) {
                    return Seen::Hit(key.clone());
                }
                let interval = self.policy.unknown_kid_interval;
                let recently = now < snapshot.fetched_at + interval
                    || state.last_forced.is_some_and(|at| now < at + interval);
                if recently || backoff {
                    return Seen::Miss(KeyLookupError::Unknown);
                }
                state.last_forced = Some(now);
                Seen::Fetch {
                    fallback: None,
                    forced: true,
                    generation,
                }
            }
            snapshot => {
                let fallback = snapshot
                    .as_ref()
                    .filter(|s| now < s.usable_until)
                    .and_then(|s| s.keys.get(kid).cloned());
                if backoff {
                    return match fallback {
                        Some(key) => Seen::Hit(key),
                        None => Seen::Miss(KeyLookupError::Unavailable),
                    };
                }
                Seen::Fetch {
                    fallback,
                    forced: false,
                    generation,
                }
            }
        }
    }

    fn usable(&self, kid: &str, now: Instant) -> Option<DecodingKey> {
        self.state()
            .snapshot
            .as_ref()
            .filter(|s| now < s.usable_until)
            .and_then(|s| s.keys.get(kid).cloned())
    }

    /// One fetch, started at `now`, under the refresh lock; the state lock is held
    /// only to store it.
    async fn fetch(&self, now: Instant) {
        let fetched = tokio::time::timeout(self.policy.fetch_timeout, self.source.fetch()).await;
        let mut state = self.state();
        state.generation += 1;
        match fetched {
            Ok(Ok(set)) => {
                let mut keys = HashMap::new();
                for jwk in &set.jwks.keys {
                    if let (Some(id), Ok(key)) = (&jwk.common.key_id, DecodingKey::from_jwk(jwk)) {
                        keys.insert(id.clone(), key);
                    }
                }
                let age = set.max_age.clamp(self.policy.min_age, self.policy.max_age);
                state.snapshot = Some(Snapshot {
                    keys: Arc::new(keys),
                    fetched_at: now,
                    fresh_until: now + age,
                    usable_until: now + age + self.policy.stale_grace,
                });
                state.backoff_until = None;
            }
            Ok(Err(_)) | Err(_) => {
                state.backoff_until = Some(now + self.policy.failure_backoff);
            }
        }
    }
}
