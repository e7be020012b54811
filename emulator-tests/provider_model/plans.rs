//! The plans a worker may be deployed with (the right one, another account, another
//! operation) and the commands of the run.

use super::{RETENTION, SETTLE, support};
use command_journal::sends::ProviderLookup;
use command_journal::{
    CommandInput, CommandRequest, Execution, JournalError, ProviderAccount, ProviderPlan,
    ProviderPlanRequest,
};
use serde_json::{Value, json};

/// The plan a worker was deployed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Variant {
    Right,
    /// `PROVIDER_ACCOUNT` of another deployment: the same keys in another account.
    OtherAccount,
    /// Another operation: other keys.
    OtherOperation,
}

pub(super) const VARIANTS: [Variant; 3] = [
    Variant::Right,
    Variant::OtherAccount,
    Variant::OtherOperation,
];

impl Variant {
    pub(super) fn account(self) -> &'static str {
        match self {
            Self::OtherAccount => "acct_stale",
            _ => "acct_model",
        }
    }

    pub(super) fn operation(self) -> &'static str {
        match self {
            Self::OtherOperation => "charge_legacy",
            _ => "charge",
        }
    }

    /// The account a recovery job of this deployment declares.
    pub(super) fn provider_account(self) -> ProviderAccount {
        ProviderAccount::new("simpay", self.account(), "test").expect("valid account")
    }

    pub(super) fn plan(self, parameters: &Value) -> ProviderPlan {
        ProviderPlan::new(ProviderPlanRequest {
            provider: "simpay",
            account: self.account(),
            mode: "test",
            api_version: "2026-01-01",
            operation: self.operation(),
            endpoint: "POST /v1/charges",
            parameters,
            key_retention_seconds: RETENTION,
        })
        .expect("valid plan")
        .with_lookup(ProviderLookup::KeyStore, SETTLE)
        .expect("a settle window that fits the retention")
    }
}

pub(super) struct Command {
    pub(super) input: CommandInput,
    pub(super) parameters: Value,
    /// Every answer a caller was given: call, plan, answer.
    pub(super) answers: Vec<(u64, Variant, Result<Execution, JournalError>)>,
    /// The first terminal answer (`Succeeded` or `Declined`).
    pub(super) terminal: Option<Execution>,
}

pub(super) fn command(n: u64) -> Command {
    let id = support::uuid(0x34, n);
    let payload = json!({"order": n});
    let input = CommandInput::new(CommandRequest {
        environment: "emulator",
        caller_scope_kind: "service",
        caller_id: "provider_model",
        command_id: &id,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &payload,
    })
    .expect("valid command");
    let amount = 1_000 + i64::try_from(n).expect("small");
    Command {
        input,
        parameters: json!({"amount": amount, "currency": "eur"}),
        answers: Vec::new(),
        terminal: None,
    }
}
