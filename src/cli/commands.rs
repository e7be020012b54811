//! `register`, `acquire`, `start`, `complete`, `fail` and `status`: one journal
//! operation each.

use super::input::{Failure, Input};
use super::schema::Subject;
use crate::fence::FenceEpoch;
use crate::{Journal, JournalError};
use crate::{LeaseId, TerminalReferenceFingerprint};
use serde_json::Value;

/// Which journal operation to run.
#[derive(Debug, Clone, Copy)]
pub enum Operation {
    /// `register_command`.
    Register,
    /// `acquire_lease`.
    Acquire,
    /// `start`: registration and acquisition in one operation.
    Start,
    /// `complete_command`.
    Complete,
    /// `fail_command`.
    Fail,
    /// `status`.
    Status,
}

fn to_json<T: serde::Serialize>(value: T) -> Result<Value, JournalError> {
    serde_json::to_value(value).map_err(|_| JournalError::Internal {
        reason: "output serialization failed",
    })
}

impl Operation {
    /// The stdin object it reads.
    pub fn subject(self) -> Subject {
        match self {
            Self::Register => Subject::Register,
            Self::Acquire => Subject::Acquire,
            Self::Start => Subject::Start,
            Self::Complete => Subject::Complete,
            Self::Fail => Subject::Fail,
            Self::Status => Subject::Status,
        }
    }
}

/// Validates the whole stdin object first (exit 2 before any connection; an unknown
/// key is reported before a missing one), then runs the operation through `journal()`.
pub async fn run<F, Fut>(operation: Operation, stdin: &str, journal: F) -> Result<Value, Failure>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Journal, JournalError>>,
{
    let mut input = Input::parse(stdin)?;
    input.only(&operation.subject().keys())?;
    let command = input.command()?;
    let lease = match operation {
        Operation::Register | Operation::Status => None,
        _ => Some(LeaseId::parse(&input.string("leaseId")?)?),
    };
    let fence = match operation {
        Operation::Complete | Operation::Fail => Some(input.integer("expectedFenceEpoch")?),
        _ => None,
    };
    let reference = match operation {
        Operation::Complete => Some(TerminalReferenceFingerprint::parse(
            &input.string("terminalReferenceFingerprint")?,
        )?),
        _ => None,
    };
    input.finish()?;
    let journal = journal().await?;
    let value = match (operation, lease, fence, reference) {
        (Operation::Register, ..) => to_json(journal.register_command(&command).await?),
        (Operation::Status, ..) => to_json(journal.send_status(&command).await?),
        (Operation::Acquire, Some(lease), ..) => {
            to_json(journal.acquire_lease(&command, &lease).await?)
        }
        (Operation::Start, Some(lease), ..) => to_json(journal.start(&command, &lease).await?),
        (Operation::Complete, Some(lease), Some(fence), Some(reference)) => to_json(
            journal
                .complete_command(&command, &lease, FenceEpoch::new(fence)?, &reference)
                .await?,
        ),
        (Operation::Fail, Some(lease), Some(fence), _) => to_json(
            journal
                .fail_command(&command, &lease, FenceEpoch::new(fence)?)
                .await?,
        ),
        _ => Err(JournalError::InvalidInput { field: "input" }),
    };
    Ok(value?)
}
