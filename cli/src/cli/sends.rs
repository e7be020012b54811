//! `send begin`, `send outcome` and `send reconcile`: the provider send layer, each
//! reading the command object of `complete` (command fields, `leaseId`,
//! `expectedFenceEpoch`) plus its own keys.

use super::input::{Failure, Input};
use super::output::to_json;
use super::schema::Subject;
use crate::FenceEpoch;
use crate::sends::{AttemptNumber, ProviderLookup};
use crate::{CommandInput, Journal, JournalError, LeaseId};
use crate::{ProviderPlan, ProviderPlanRequest, ResultEnvelope, TerminalReferenceFingerprint};
use command_journal::ProviderAnswer;
use command_journal_core::tools::sends::plan::DEFAULT_LOOKUP_SETTLE_SECONDS;
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
            Self::Outcome => Subject::ProviderAnswer,
            Self::Reconcile => Subject::SendReconcile,
        }
    }
}

/// The keys of the `plan` object, in the order they are validated (the last three
/// optional: `lookup` defaults to `key_store`, `lookupSettleSeconds` to 300, and
/// without `customerWindowSeconds` the customer's window ends at the cutoff).
pub const PLAN_KEYS: [&str; 11] = [
    "provider",
    "account",
    "mode",
    "apiVersion",
    "operation",
    "endpoint",
    "parameters",
    "keyRetentionSeconds",
    "lookup",
    "lookupSettleSeconds",
    "customerWindowSeconds",
];

/// Validates the `plan` object of `send begin`, `send outcome`, `send reconcile` and
/// `identity`.
pub(crate) fn plan(value: &Value) -> Result<ProviderPlan, JournalError> {
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
    let lookup = match map.get("lookup") {
        None => ProviderLookup::default(),
        Some(Value::String(text)) => ProviderLookup::parse(text)?,
        Some(_) => return Err(JournalError::invalid("lookup")),
    };
    let settle = match map.get("lookupSettleSeconds") {
        None => DEFAULT_LOOKUP_SETTLE_SECONDS,
        Some(value) => value
            .as_i64()
            .ok_or(JournalError::invalid("lookupSettleSeconds"))?,
    };
    let plan = ProviderPlan::new(request)?.with_lookup(lookup, settle)?;
    match map.get("customerWindowSeconds") {
        None => Ok(plan),
        Some(value) => plan.with_customer_window(
            value
                .as_i64()
                .ok_or(JournalError::invalid("customerWindowSeconds"))?,
        ),
    }
}

/// A success's answer: exactly one of `terminalReferenceFingerprint` (a bare
/// reference) and `result` (a result envelope, stored with the success).
fn success(input: &mut Input) -> Result<SuccessAnswer, JournalError> {
    let reference = input.optional_string("terminalReferenceFingerprint")?;
    let result = input.optional_value("result");
    match (reference, result) {
        (Some(text), None) => Ok(SuccessAnswer::Reference(
            TerminalReferenceFingerprint::parse(&text)?,
        )),
        (None, Some(value)) => Ok(SuccessAnswer::Envelope(ResultEnvelope::new(&value)?)),
        (None, None) => Err(JournalError::invalid("terminalReferenceFingerprint")),
        (Some(_), Some(_)) => Err(JournalError::invalid("result")),
    }
}

/// What a success carries.
enum SuccessAnswer {
    Reference(TerminalReferenceFingerprint),
    Envelope(ResultEnvelope),
}

/// Fails when an answer other than a success carries a reference or a result.
fn no_success_fields(input: &mut Input) -> Result<(), JournalError> {
    if input
        .optional_string("terminalReferenceFingerprint")?
        .is_some()
    {
        return Err(JournalError::invalid("terminalReferenceFingerprint"));
    }
    if input.optional_value("result").is_some() {
        return Err(JournalError::invalid("result"));
    }
    Ok(())
}

/// What the stdin object asks for, validated: the command, the lease, the expected
/// fence and the operation's own part. A fence or an attempt number out of range is
/// kept as its refusal, reported when the operation runs (after a connection error,
/// as it always was).
#[derive(Debug)]
pub struct SendCall {
    command: CommandInput,
    lease: LeaseId,
    fence: Result<FenceEpoch, JournalError>,
    operation: SendOperation,
}

/// The operation's own part of a send request.
#[derive(Debug)]
enum SendOperation {
    Begin(ProviderPlan),
    Outcome(
        ProviderPlan,
        Result<AttemptNumber, JournalError>,
        ProviderAnswer,
    ),
    Reconcile(
        ProviderPlan,
        Result<AttemptNumber, JournalError>,
        ProviderAnswer,
    ),
}

impl SendCall {
    /// Validates the whole stdin object of `action`.
    pub fn parse(action: SendAction, stdin: &str) -> Result<Self, Failure> {
        let mut input = Input::parse(stdin)?;
        input.only(&action.subject().keys())?;
        let command = input.command()?;
        let lease = LeaseId::parse(&input.string("leaseId")?)?;
        let fence = FenceEpoch::new(input.integer("expectedFenceEpoch")?);
        let operation = match action {
            SendAction::Begin => SendOperation::Begin(plan(&input.value("plan")?)?),
            SendAction::Outcome => {
                let plan = plan(&input.value("plan")?)?;
                let attempt = AttemptNumber::new(input.integer("attempt")?);
                let outcome = match input.string("outcome")?.as_str() {
                    "succeeded" => match success(&mut input)? {
                        SuccessAnswer::Reference(r) => ProviderAnswer::SucceededWithReference(r),
                        SuccessAnswer::Envelope(e) => ProviderAnswer::Succeeded(e),
                    },
                    "declined" => ProviderAnswer::Declined,
                    "ambiguous" => ProviderAnswer::Unknown,
                    "replayed_unknown" => ProviderAnswer::ReplayedUnknown,
                    "indeterminate" => ProviderAnswer::Indeterminate,
                    _ => return Err(JournalError::invalid("outcome").into()),
                };
                if !matches!(
                    outcome,
                    ProviderAnswer::SucceededWithReference(_) | ProviderAnswer::Succeeded(_)
                ) {
                    no_success_fields(&mut input)?;
                }
                SendOperation::Outcome(plan, attempt, outcome)
            }
            SendAction::Reconcile => {
                let plan = plan(&input.value("plan")?)?;
                let attempt = AttemptNumber::new(input.integer("attempt")?);
                let evidence = match input.string("evidence")?.as_str() {
                    "succeeded" => match success(&mut input)? {
                        SuccessAnswer::Reference(r) => ProviderAnswer::SucceededWithReference(r),
                        SuccessAnswer::Envelope(e) => ProviderAnswer::Succeeded(e),
                    },
                    "declined" => ProviderAnswer::Declined,
                    "not_found" => ProviderAnswer::NotFound,
                    _ => return Err(JournalError::invalid("evidence").into()),
                };
                if !matches!(
                    evidence,
                    ProviderAnswer::SucceededWithReference(_) | ProviderAnswer::Succeeded(_)
                ) {
                    no_success_fields(&mut input)?;
                }
                SendOperation::Reconcile(plan, attempt, evidence)
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
        let fence = fence?;
        match operation {
            SendOperation::Begin(plan) => {
                to_json(journal.begin_send(&command, &lease, fence, &plan).await?)
            }
            SendOperation::Outcome(plan, attempt, outcome) => to_json(
                journal
                    .record_send_outcome(&command, &lease, fence, &plan, attempt?, &outcome)
                    .await?,
            ),
            SendOperation::Reconcile(plan, attempt, evidence) => to_json(
                journal
                    .reconcile_send(&command, &lease, fence, &plan, attempt?, &evidence)
                    .await?,
            ),
        }
    }
}
