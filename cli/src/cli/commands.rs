//! `register`, `acquire`, `start`, `complete`, `fail` and `status`: one journal
//! operation each.

use super::input::{Failure, Input};
use super::output::to_json;
use super::schema::Subject;
use crate::FenceEpoch;
use crate::{CommandInput, Journal, JournalError};
use crate::{LeaseId, TerminalReferenceFingerprint};
use serde_json::Value;

/// Which journal operation to run.
#[derive(Debug, Clone, Copy)]
pub enum Command {
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

impl Command {
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

/// A journal operation with its stdin object validated. An expected fence out of
/// range is kept as its refusal, reported when the operation runs (after connecting,
/// so that a connection error is reported first, as it always was).
#[derive(Debug)]
pub enum JournalCall {
    /// `register`.
    Register(CommandInput),
    /// `status`.
    Status(CommandInput),
    /// `acquire`.
    Acquire(CommandInput, LeaseId),
    /// `start`.
    Start(CommandInput, LeaseId),
    /// `complete`.
    Complete(
        CommandInput,
        LeaseId,
        Result<FenceEpoch, JournalError>,
        TerminalReferenceFingerprint,
    ),
    /// `fail`.
    Fail(CommandInput, LeaseId, Result<FenceEpoch, JournalError>),
}

impl JournalCall {
    /// Validates the whole stdin object of `operation` (an unknown key is reported
    /// before a missing one, each key in the documented order).
    pub fn parse(operation: Command, stdin: &str) -> Result<Self, Failure> {
        let mut input = Input::parse(stdin)?;
        input.only(&operation.subject().keys())?;
        let command = input.command()?;
        let request = match operation {
            Command::Register => Self::Register(command),
            Command::Status => Self::Status(command),
            Command::Acquire => Self::Acquire(command, lease(&mut input)?),
            Command::Start => Self::Start(command, lease(&mut input)?),
            Command::Complete => {
                let lease = lease(&mut input)?;
                let fence = FenceEpoch::new(input.integer("expectedFenceEpoch")?);
                let reference = TerminalReferenceFingerprint::parse(
                    &input.string("terminalReferenceFingerprint")?,
                )?;
                Self::Complete(command, lease, fence, reference)
            }
            Command::Fail => {
                let lease = lease(&mut input)?;
                let fence = FenceEpoch::new(input.integer("expectedFenceEpoch")?);
                Self::Fail(command, lease, fence)
            }
        };
        input.finish()?;
        Ok(request)
    }

    /// Runs the operation on `journal` and returns its output as JSON.
    pub async fn execute(self, journal: &Journal) -> Result<Value, JournalError> {
        match self {
            Self::Register(command) => to_json(journal.register_command(&command).await?),
            Self::Status(command) => to_json(journal.send_status(&command).await?),
            Self::Acquire(command, lease) => {
                to_json(journal.acquire_lease(&command, &lease).await?)
            }
            Self::Start(command, lease) => to_json(journal.start(&command, &lease).await?),
            Self::Complete(command, lease, fence, reference) => {
                let fence = fence?;
                to_json(
                    journal
                        .complete_command(&command, &lease, fence, &reference)
                        .await?,
                )
            }
            Self::Fail(command, lease, fence) => {
                let fence = fence?;
                to_json(journal.fail_command(&command, &lease, fence).await?)
            }
        }
    }
}

fn lease(input: &mut Input) -> Result<LeaseId, Failure> {
    Ok(LeaseId::parse(&input.string("leaseId")?)?)
}
