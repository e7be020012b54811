//! `send begin`, `send outcome` and `send reconcile`: the provider send layer, each
//! reading the command object of `complete` (command fields, `leaseId`,
//! `expectedFenceEpoch`) plus its own keys.

use super::input::{Failure, Input};
use super::output::to_json;
use super::schema::Subject;
use crate::fence::FenceEpoch;
use crate::sends::{SendEvidence, SendOutcome};
use crate::{CommandInput, Journal, JournalError, LeaseId};
use crate::{ProviderPlan, ProviderPlanRequest, TerminalReferenceFingerprint};
use serde_json::Value;

/// Which send operation to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendAction {
    /// `begin_send`.
    Begin,
    /// `record_send_outcome`.
    Outcome,
    /// `reconcile_send`.
    Reconcile,
}

impl SendAction {
    /// The stdin object it reads.
    pub fn subject(self) -> Subject {
        match self {
            Self::Begin => Subject::SendBegin,
            Self::Outcome => Subject::SendOutcome,
            Self::Reconcile => Subject::SendReconcile,
        }
    }
}

/// The keys of the `plan` object, in the order they are validated.
pub const PLAN_KEYS: [&str; 8] = [
    "provider",
    "account",
    "mode",
    "apiVersion",
    "operation",
    "endpoint",
    "parameters",
    "keyRetentionSeconds",
];

fn plan(value: &Value) -> Result<ProviderPlan, JournalError> {
    let invalid = JournalError::InvalidInput { field: "plan" };
    let map = value.as_object().ok_or(invalid)?;
    if map.keys().any(|k| !PLAN_KEYS.contains(&k.as_str())) {
        return Err(invalid);
    }
    let text = |field: &'static str| match map.get(field) {
        Some(Value::String(text)) => Ok(text.as_str()),
        _ => Err(JournalError::InvalidInput { field }),
    };
    let parameters = map.get("parameters").ok_or(JournalError::InvalidInput {
        field: "parameters",
    })?;
    let request = ProviderPlanRequest {
        provider: text("provider")?,
        account: text("account")?,
        mode: text("mode")?,
        api_version: text("apiVersion")?,
        operation: text("operation")?,
        endpoint: text("endpoint")?,
        parameters,
        key_retention_seconds: map
            .get("keyRetentionSeconds")
            .and_then(Value::as_i64)
            .ok_or(JournalError::InvalidInput {
                field: "keyRetentionSeconds",
            })?,
    };
    ProviderPlan::new(request)
}

fn reference(
    input: &mut Input,
    given: bool,
) -> Result<Option<TerminalReferenceFingerprint>, JournalError> {
    let text = input.optional_string("terminalReferenceFingerprint")?;
    match (text, given) {
        (Some(text), true) => TerminalReferenceFingerprint::parse(&text).map(Some),
        (None, false) => Ok(None),
        _ => Err(JournalError::InvalidInput {
            field: "terminalReferenceFingerprint",
        }),
    }
}

/// What the stdin object asks for, validated: the command, the lease, the expected
/// fence (a [`FenceEpoch`] once connected, as before) and the operation's own part.
#[derive(Debug)]
pub struct Request {
    command: CommandInput,
    lease: LeaseId,
    fence: i64,
    operation: SendOperation,
}

/// The operation's own part of a send request.
#[derive(Debug)]
enum SendOperation {
    Begin(ProviderPlan),
    Outcome(i64, SendOutcome),
    Reconcile(i64, SendEvidence),
}

impl Request {
    /// Validates the whole stdin object of `action`.
    pub fn parse(action: SendAction, stdin: &str) -> Result<Self, Failure> {
        let mut input = Input::parse(stdin)?;
        input.only(&action.subject().keys())?;
        let command = input.command()?;
        let lease = LeaseId::parse(&input.string("leaseId")?)?;
        let fence = input.integer("expectedFenceEpoch")?;
        let operation = match action {
            SendAction::Begin => SendOperation::Begin(plan(&input.value("plan")?)?),
            SendAction::Outcome => {
                let attempt = input.integer("attempt")?;
                let outcome = input.string("outcome")?;
                let reference = reference(&mut input, outcome == "succeeded")?;
                let outcome = match (outcome.as_str(), reference) {
                    ("succeeded", Some(r)) => SendOutcome::Succeeded(r),
                    ("declined", None) => SendOutcome::Declined,
                    ("ambiguous", None) => SendOutcome::Ambiguous,
                    _ => return Err(JournalError::invalid("outcome").into()),
                };
                SendOperation::Outcome(attempt, outcome)
            }
            SendAction::Reconcile => {
                let attempt = input.integer("attempt")?;
                let evidence = input.string("evidence")?;
                let reference = reference(&mut input, evidence == "succeeded")?;
                let evidence = match (evidence.as_str(), reference) {
                    ("succeeded", Some(r)) => SendEvidence::Succeeded(r),
                    ("declined", None) => SendEvidence::Declined,
                    ("not_found", None) => SendEvidence::NotFound,
                    _ => return Err(JournalError::invalid("evidence").into()),
                };
                SendOperation::Reconcile(attempt, evidence)
            }
        };
        input.finish()?;
        Ok(Self {
            command,
            lease,
            fence,
            operation,
        })
    }

    /// Runs the send operation on `journal` and returns its output as JSON.
    pub async fn execute(self, journal: &Journal) -> Result<Value, JournalError> {
        let Self {
            command,
            lease,
            fence,
            operation,
        } = self;
        let fence = FenceEpoch::new(fence)?;
        match operation {
            SendOperation::Begin(plan) => {
                to_json(journal.begin_send(&command, &lease, fence, &plan).await?)
            }
            SendOperation::Outcome(attempt, outcome) => to_json(
                journal
                    .record_send_outcome(&command, &lease, fence, attempt, &outcome)
                    .await?,
            ),
            SendOperation::Reconcile(attempt, evidence) => to_json(
                journal
                    .reconcile_send(&command, &lease, fence, attempt, &evidence)
                    .await?,
            ),
        }
    }
}
