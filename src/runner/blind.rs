//! The runner's blind creation attempt (preconditions mode): the commit of a
//! [`BlindPlan`](crate::transaction::blind::BlindPlan), sent before any read. Its
//! creations carry `exists: false` and every other path the operation reads an
//! absence guard (a delete with `exists: false`, which deletes nothing), so it
//! commits exactly when every document the operation reads is absent. Whatever else
//! it meets (a document that exists, a race, a lost response, an unreachable server)
//! ends the attempt; the next one reads and decides as usual.

use super::{Count, Failure, OpenTransaction, Runner};
use crate::transaction::blind::BlindPlan;
use gcloud_sdk::google::firestore::v1::{Precondition, Write as RawWrite, precondition, write};
use gcloud_sdk::tonic::Code;
use std::collections::HashMap;

/// Whether a commit's refusal means one of its `exists: false` preconditions failed:
/// the emulator answers ALREADY_EXISTS for a create and for an absence guard alike;
/// FAILED_PRECONDITION is the documented answer to a failed precondition.
pub(super) fn is_precondition_loss(code: Code) -> bool {
    matches!(code, Code::AlreadyExists | Code::FailedPrecondition)
}

impl Runner<'_> {
    /// Commits `plan` as one blind creation; its output when the commit succeeds.
    pub(super) async fn blind_attempt<O>(&self, plan: BlindPlan<O>) -> Result<O, Failure> {
        self.tally.bump(Count::BlindCommit);
        let mut writes = plan
            .creates
            .into_iter()
            .map(|write| self.raw_write(write, &HashMap::new()))
            .collect::<Result<Vec<_>, _>>()?;
        writes.extend(plan.guards.iter().map(|path| self.absence_guard(path)));
        let mut open = OpenTransaction {
            raw: self.raw.clone(),
            database: self.database.clone(),
            id: None,
        };
        self.commit(writes, &mut open).await?;
        Ok(plan.output)
    }

    /// A write that changes nothing and fails its commit unless `path` is absent.
    pub(super) fn absence_guard(&self, path: &str) -> RawWrite {
        RawWrite {
            update_mask: None,
            update_transforms: Vec::new(),
            current_document: Some(Precondition {
                condition_type: Some(precondition::ConditionType::Exists(false)),
            }),
            operation: Some(write::Operation::Delete(format!("{}/{path}", self.root))),
        }
    }
}
