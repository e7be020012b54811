//! Provider sends: the layer above the lease that decides, under the lease and fence,
//! whether the caller may send to its payment provider, and records what happened.
//! `docs/providers.md` gives the states, the transitions table and every field.
//!
//! The types are the core's (`command_journal_core::sends`); [`Journal`](crate::Journal)'s
//! `bind_provider_plan`, `begin_send`, `record_send_outcome`, `reconcile_send` and
//! `send_status` run its decisions, and [`Journal::execute`](crate::Journal::execute)
//! drives them around one provider call ([`Journal::execute_marked`](crate::Journal::execute_marked)
//! also answers whether its outcome is a replay, [`Executed`]).

pub use command_journal_core::Executed;
pub use command_journal_core::sends::{
    ActionName, AttemptNumber, AttemptState, BeginSendOutput, CommandStatus, CustomerAction,
    Handoff, LookupRequest, MIN_CUSTOMER_WINDOW_SECONDS, ProviderAccount, ProviderLookup,
    ProviderMode, ProviderPlan, ProviderPlanRequest, RetrieveRequest, SendOutcomeOutput,
    SendPermit, SendStatus, act_by,
};
