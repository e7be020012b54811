//! Provider sends: the layer above the lease that decides, under the lease and fence,
//! whether the caller may send to its payment provider, and records what happened.
//! `docs/providers.md` gives the states, the transitions table and every field.
//!
//! The library still never calls a provider. A command binds one [`ProviderPlan`]
//! (stored only as its fingerprint) on its first send; each attempt is opened as
//! `sending` before the POST with a stored cutoff; an unknown outcome may be re-sent
//! with the same key only before that cutoff; only recorded provider absence lets a
//! new attempt, with a new key, open. Every decision is pure, reads the lease's
//! documents and the send layer's, and composes B2B's terminal transition
//! rather than restating it; the lease module never learns about sends.

pub(crate) mod absence;
pub(crate) mod account;
pub(crate) mod attempt;
pub(crate) mod attempt_number;
pub(crate) mod begin;
pub(crate) mod bound_plan;
pub(crate) mod close;
pub(crate) mod customer;
pub(crate) mod event;
pub(crate) mod guard;
pub(crate) mod key_index;
pub(crate) mod late;
pub(crate) mod load;
pub(crate) mod lookup;
pub(crate) mod mutation;
pub(crate) mod output;
pub(crate) mod plan;
pub(crate) mod provider;
pub(crate) mod record;
pub(crate) mod reverted;
pub(crate) mod status;
pub(crate) mod window;

pub use account::ProviderAccount;
pub use attempt::AttemptState;
pub use attempt_number::AttemptNumber;
pub use customer::{ActionName, CustomerAction, Handoff};
pub use late::{LateChargeOutput, LateReason};
pub use output::{BeginSendOutput, SendOutcomeOutput, SendPermit};
pub use plan::{ProviderLookup, ProviderMode, ProviderPlan, ProviderPlanRequest};
pub use provider::{LookupRequest, RetrieveRequest};
pub use status::{CommandStatus, SendStatus};
pub use window::{MIN_CUSTOMER_WINDOW_SECONDS, act_by};

#[cfg(test)]
pub(crate) mod tests;
