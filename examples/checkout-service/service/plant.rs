//! Planted defects, for the soak's plant suite only (`bench/chaos/README.md`,
//! "Planted defects"). They exist only in a build with the test-only feature `plants`
//! (`cargo test --all-features` builds it; `cargo build --release` never does): such a
//! build reads `CHAOS_PLANT` at start-up, in emulator mode only, plants the defect it
//! names for the whole process and states it on its first line. A build without the
//! feature never reads the variable, and every hook here hands back its input.
//!
//! | `CHAOS_PLANT` | the defect |
//! |---|---|
//! | `overcharge` | every checkout charges its payload's `amount + 1` |
//! | `lookup_found_as_pending` | a lookup takes every charge it finds for a pending one |
//! | `webhook_any_timestamp` | the webhook endpoint verifies a signature at the time it signs, not the clock's: a stale capture replayed is taken |
//! | `no_lease_proof`, `no_settle_window`, `recovery_skips_ambiguous` | the journal's (`command_journal::plants`) |

use super::config::ConfigError;
use super::provider::Looked;
use command_journal::Timestamp;
use command_journal::identity::Environment;
use serde_json::Value;
use std::borrow::Cow;

#[cfg(feature = "plants")]
mod planted {
    use super::{ConfigError, Cow, Environment, Looked, Timestamp, Value};
    use command_journal::plants;
    use std::sync::OnceLock;

    /// The variable a plants build reads its plant from.
    pub const VARIABLE: &str = "CHAOS_PLANT";

    /// A defect of the service, or of its journal.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Plant {
        /// Every checkout charges `amount + 1`.
        Overcharge,
        /// A lookup's found charge is taken for a pending one (nothing concluded).
        LookupFoundAsPending,
        /// The webhook endpoint verifies a signature at its own timestamp.
        WebhookAnyTimestamp,
        /// A defect of the journal.
        Journal(plants::Plant),
    }

    impl Plant {
        /// The plant named `name`.
        pub fn parse(name: &str) -> Option<Self> {
            match name {
                "overcharge" => Some(Self::Overcharge),
                "lookup_found_as_pending" => Some(Self::LookupFoundAsPending),
                "webhook_any_timestamp" => Some(Self::WebhookAnyTimestamp),
                other => plants::Plant::parse(other).map(Self::Journal),
            }
        }

        /// Its name, as `CHAOS_PLANT` gives it.
        pub fn as_str(self) -> &'static str {
            match self {
                Self::Overcharge => "overcharge",
                Self::LookupFoundAsPending => "lookup_found_as_pending",
                Self::WebhookAnyTimestamp => "webhook_any_timestamp",
                Self::Journal(plant) => plant.as_str(),
            }
        }
    }

    static PLANTED: OnceLock<Plant> = OnceLock::new();

    fn planted(plant: Plant) -> bool {
        PLANTED.get() == Some(&plant)
    }

    /// Reads the plant through `get` and plants it for the whole process: its name,
    /// `None` when unset. Refused outside emulator mode, and for an unknown name.
    pub fn install_from(
        get: impl Fn(&str) -> Option<String>,
        environment: Environment,
    ) -> Result<Option<&'static str>, ConfigError> {
        let Some(name) = get(VARIABLE).filter(|v| !v.trim().is_empty()) else {
            return Ok(None);
        };
        let refuse = |problem| ConfigError {
            variable: VARIABLE,
            problem,
        };
        if environment != Environment::Emulator {
            return Err(refuse("is only accepted with JOURNAL_ENVIRONMENT=emulator"));
        }
        let plant = Plant::parse(name.trim()).ok_or(refuse("names no plant"))?;
        let installed = *PLANTED.get_or_init(|| plant);
        if installed != plant {
            return Err(refuse("differs from the plant already installed"));
        }
        if let Plant::Journal(plant) = plant {
            plants::plant(plant);
        }
        Ok(Some(plant.as_str()))
    }

    /// The parameters a checkout of `payload` charges: `amount + 1` when
    /// `overcharge` is planted.
    pub fn charged(payload: &Value) -> Cow<'_, Value> {
        if !planted(Plant::Overcharge) {
            return Cow::Borrowed(payload);
        }
        let mut charged = payload.clone();
        if let Some(amount) = payload.get("amount").and_then(Value::as_i64) {
            charged["amount"] = Value::from(amount + 1);
        }
        Cow::Owned(charged)
    }

    /// What a lookup concludes from `looked`: a found charge is pending (nothing
    /// concluded) when `lookup_found_as_pending` is planted.
    pub fn looked(looked: Looked) -> Looked {
        match looked {
            Looked::Found(_) if planted(Plant::LookupFoundAsPending) => {
                Looked::Unavailable("lookup_pending")
            }
            other => other,
        }
    }

    /// The time a delivery signed by `header` is verified at: the header's own `t`
    /// (so that no timestamp is ever too old) when `webhook_any_timestamp` is
    /// planted, else `now`.
    pub fn verified_at(header: Option<&str>, now: Timestamp) -> Timestamp {
        if !planted(Plant::WebhookAnyTimestamp) {
            return now;
        }
        header
            .and_then(|h| h.split(',').find_map(|element| element.strip_prefix("t=")))
            .and_then(|t| t.parse::<i64>().ok())
            .and_then(|seconds| seconds.checked_mul(1_000_000))
            .and_then(Timestamp::from_micros)
            .unwrap_or(now)
    }
}

#[cfg(feature = "plants")]
pub use planted::{charged, install_from, looked, verified_at};

/// Plants the defect `CHAOS_PLANT` names, in a plants build (feature `plants`); its
/// name, `None` when none is planted. A build without the feature plants nothing and
/// never reads the variable.
pub fn install(environment: Environment) -> Result<Option<&'static str>, ConfigError> {
    #[cfg(feature = "plants")]
    {
        install_from(|name| std::env::var(name).ok(), environment)
    }
    #[cfg(not(feature = "plants"))]
    {
        let _ = environment;
        Ok(None)
    }
}

/// The parameters a checkout of `payload` charges: `payload` itself.
#[cfg(not(feature = "plants"))]
pub fn charged(payload: &Value) -> Cow<'_, Value> {
    Cow::Borrowed(payload)
}

/// What a lookup concludes: what it `looked` up.
#[cfg(not(feature = "plants"))]
pub fn looked(looked: Looked) -> Looked {
    looked
}

/// The time a delivery is verified at: `now`, the journal's clock.
#[cfg(not(feature = "plants"))]
pub fn verified_at(_header: Option<&str>, now: Timestamp) -> Timestamp {
    now
}
