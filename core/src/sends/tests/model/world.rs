//! The fixed world of the model: the instants its clock takes, the two plans (the
//! service's and a misconfigured deploy's), the provider keys they give, and the result
//! a charge answers.

use super::super::{SEC, T0, identity};
use crate::envelope::ResultEnvelope;
use crate::sends::AttemptNumber;
use crate::sends::plan::{ProviderLookup, ProviderPlan, ProviderPlanRequest, attempt_key};
use serde_json::json;
use std::sync::LazyLock;

/// The plan's key retention: the cutoff is 2,700 s after an attempt's first send, and a
/// key-store provider may forget the key 3,600 s after it.
pub(super) const RETENTION: i64 = 3_600;
/// The plan's lookup settle window: a request sent under a lease is processed and
/// visible to the provider's lookup at the latest this long after the lease's end.
pub(super) const SETTLE: i64 = 300;
/// The cutoff of an attempt first sent at `T0`, in seconds after `T0`.
pub(super) const CUTOFF: i64 = RETENTION - RETENTION / 4;
/// What the driver keeps back from a lease for recording (`settle::SEND_MARGIN`).
pub(super) const SEND_MARGIN: i64 = 10;

/// The instants of the default check, in seconds after `T0`: the first send; two
/// seconds before the cutoff (a late re-send); the cutoff (the late re-send's answer
/// arrives, lookups start); after the late re-send's lease but inside its settle
/// window; the end of the first send's key retention.
pub(super) const INSTANTS: [i64; 5] = [0, CUTOFF - 2, CUTOFF, CUTOFF + 59, RETENTION];

/// The instants of the wide check (`CJ_MODEL_INSTANTS=wide`): the default's, and a
/// re-send after the first lease (61 s), and the late re-send's provable absence
/// (`CUTOFF - 2 + 60 + SETTLE`).
pub(super) const WIDE: [i64; 7] = [
    0,
    61,
    CUTOFF - 2,
    CUTOFF,
    CUTOFF + 59,
    CUTOFF - 2 + 60 + SETTLE,
    RETENTION,
];

/// The journal's microseconds of an instant given in seconds after `T0`.
pub(super) fn micros(seconds: i64) -> i64 {
    T0 + seconds * SEC
}

/// Seconds after `T0` of a journal timestamp (whole seconds in this model).
pub(super) fn seconds(at: crate::time::Timestamp) -> i64 {
    (at.micros() - T0) / SEC
}

/// Which plan a worker's call carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum PlanChoice {
    /// The service's plan (operation `charge`).
    Right,
    /// A misconfigured deploy's: the same provider and parameters, another operation,
    /// so other keys (what a wrong `PROVIDER_*` variable gives).
    Other,
}

fn build(operation: &str, lookup: ProviderLookup) -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stripe",
        account: "acct_model",
        mode: "test",
        api_version: "2024-06-20",
        operation,
        endpoint: "POST /v1/payment_intents",
        parameters: &json!({"amount": 1250}),
        key_retention_seconds: RETENTION,
    })
    .expect("valid model plan")
    .with_lookup(lookup, SETTLE)
    .expect("valid settle window")
}

/// The plans with a `key_store` lookup, then with a `final_state` one (Stripe's).
static PLANS: LazyLock<[ProviderPlan; 4]> = LazyLock::new(|| {
    [
        build("charge", ProviderLookup::KeyStore),
        build("charge_other", ProviderLookup::KeyStore),
        build("charge", ProviderLookup::FinalState),
        build("charge_other", ProviderLookup::FinalState),
    ]
});

thread_local! {
    /// Whether this thread's transitions bind plans with a `final_state` lookup
    /// ([`with_final_state`]).
    static FINAL_STATE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the plans' lookup `final_state` (`on`) or `key_store`: the keys are
/// the same (a key does not depend on the lookup), only the absence rule differs.
pub(super) fn with_final_state<T>(on: bool, f: impl FnOnce() -> T) -> T {
    let before = FINAL_STATE.with(|flag| flag.replace(on));
    let out = f();
    FINAL_STATE.with(|flag| flag.set(before));
    out
}

/// The plan a call with `choice` carries.
pub(super) fn plan(choice: PlanChoice) -> &'static ProviderPlan {
    let offset = if FINAL_STATE.with(std::cell::Cell::get) {
        2
    } else {
        0
    };
    &PLANS[choice as usize + offset]
}

/// A provider key the model knows: a plan's key of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct KeyId {
    pub plan: PlanChoice,
    pub attempt: AttemptNumber,
}

/// The attempts whose keys the model knows (the clock's instants allow two).
const ATTEMPTS: i64 = 3;

static KEYS: LazyLock<Vec<(KeyId, String, ResultEnvelope)>> = LazyLock::new(|| {
    let mut keys = Vec::new();
    for choice in [PlanChoice::Right, PlanChoice::Other] {
        for n in 1..=ATTEMPTS {
            let attempt = AttemptNumber::new(n).expect("a model attempt");
            let id = KeyId::new(choice, attempt);
            let key = attempt_key(&identity(), plan(choice).operation(), attempt);
            let charge = format!("ch_{choice:?}_{attempt}").to_lowercase();
            let envelope = ResultEnvelope::new(&json!({"id": charge, "amount": 1250}))
                .expect("valid envelope");
            keys.push((id, key, envelope));
        }
    }
    keys
});

impl KeyId {
    /// The key of `attempt` under `choice`'s plan.
    pub(super) fn new(plan: PlanChoice, attempt: AttemptNumber) -> Self {
        Self { plan, attempt }
    }

    /// The model's name of a key the journal or a worker derived.
    pub(super) fn of(key: &str) -> Self {
        KEYS.iter()
            .find(|(_, text, _)| text == key)
            .map(|(id, _, _)| *id)
            .expect("a key of a model plan's attempt 1 to 3")
    }

    /// The key whose charge answered `envelope`.
    pub(super) fn of_envelope(envelope: &ResultEnvelope) -> Self {
        KEYS.iter()
            .find(|(_, _, result)| result == envelope)
            .map(|(id, _, _)| *id)
            .expect("the result of a model key's charge")
    }

    /// The key whose charge a late charge's `commitment` (the command-bound commitment
    /// of its reference) names.
    pub(super) fn of_commitment(commitment: &crate::digest::Digest) -> Self {
        KEYS.iter()
            .find(|(_, _, result)| {
                identity().terminal_commitment(&result.reference()) == *commitment
            })
            .map(|(id, _, _)| *id)
            .expect("the commitment of a model key's charge")
    }

    /// The result a charge under this key answers (on its first processing and on
    /// every replay).
    pub(super) fn envelope(self) -> ResultEnvelope {
        KEYS.iter()
            .find(|(id, _, _)| *id == self)
            .map(|(_, _, result)| result.clone())
            .expect("a key the model knows")
    }
}
