//! Provider sends: the layer above the lease that decides, under the lease and fence,
//! whether the caller may send to its payment provider, and records what happened.
//! `docs/providers.md` gives the states, the transitions table and every field.
//!
//! The library still never calls a provider. A command binds one [`ProviderPlan`]
//! (stored only as its fingerprint) on its first send; each attempt is opened as
//! `sending` before the POST with a stored cutoff; an unknown outcome may be re-sent
//! with the same key only before that cutoff; only recorded provider absence lets a
//! new attempt, with a new key, open.

pub(crate) mod plan;

pub use plan::{ProviderMode, ProviderPlan, ProviderPlanRequest};
