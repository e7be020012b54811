//! The runner's planned attempt: the commit of a [`Planned`] decision, sent without
//! a read of its own or a transaction. A blind creation is one, in either mode
//! (every write under `exists: false`, every other path read proven absent by an
//! absence guard); so is, in preconditions mode, a transition `execute` decides from
//! what its own last commit left known (each replacement under the update time that
//! commit answered). Whatever it meets (a document that exists or changed, a race, a
//! lost response, an unreachable server) ends the attempt; the next one reads and
//! decides as usual.

use super::counters::Count;
use super::firestore::{OpenTransaction, Session};
use super::retry::Failure;
use crate::attempt::Precondition;
use crate::known::{Known, Planned};
use crate::transaction::Write;
use gcloud_sdk::prost_types::Timestamp;

impl Session<'_> {
    /// Commits `plan`; its output and the state it leaves known, when it lands.
    pub(super) async fn planned_attempt<O>(
        &self,
        plan: Planned<O, Timestamp>,
    ) -> Result<(O, Known<Timestamp>), Failure> {
        let blind = plan
            .writes
            .iter()
            .all(|w| matches!(w.precondition, Precondition::Absent));
        self.tally.bump(if blind {
            Count::BlindCommit
        } else {
            Count::PlannedCommit
        });
        let written: Vec<Write> = plan.writes.iter().map(|w| w.write.clone()).collect();
        let writes = plan.writes;
        let mut open = OpenTransaction {
            raw: self.raw.clone(),
            database: self.database.clone(),
            id: None,
        };
        let results = self.commit(writes, &mut open).await?;
        Ok((plan.output, plan.base.committed(&written, &results)))
    }
}
