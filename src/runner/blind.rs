//! The runner's blind creation attempt (preconditions mode): the commit of a
//! [`BlindPlan`], sent before any read. Its
//! creations carry `exists: false` and every other path the operation reads an
//! absence guard (a delete with `exists: false`, which deletes nothing), so it
//! commits exactly when every document the operation reads is absent. Whatever else
//! it meets (a document that exists, a race, a lost response, an unreachable server)
//! ends the attempt; the next one reads and decides as usual.

use super::counters::Count;
use super::firestore::{OpenTransaction, Session};
use super::retry::Failure;
use crate::attempt::{GuardedWrite, Precondition};
use crate::transaction::Write;
use crate::transaction::blind::BlindPlan;

impl Session<'_> {
    /// Commits `plan` as one blind creation; its output when the commit succeeds.
    pub(super) async fn blind_attempt<O>(&self, plan: BlindPlan<O>) -> Result<O, Failure> {
        self.tally.bump(Count::BlindCommit);
        let guards = plan
            .guards
            .into_iter()
            .map(|path| Write::AssertAbsent { path });
        let writes = plan
            .creates
            .into_iter()
            .chain(guards)
            .map(|write| {
                self.raw_write(GuardedWrite {
                    write,
                    precondition: Precondition::Absent,
                })
            })
            .collect();
        let mut open = OpenTransaction {
            raw: self.raw.clone(),
            database: self.database.clone(),
            id: None,
        };
        self.commit(writes, &mut open).await?;
        Ok(plan.output)
    }
}
