//! Evidence given from outside the journal: [`Journal::record_evidence`](crate::Journal::record_evidence)
//! records one piece of it (a provider's event, verified by the provider's adapter
//! first; a backfill of events) with no client and no client's lease. The evidence
//! names the provider idempotency key its object carries and what the provider holds
//! for it; the key index (`providerKeys/{digest of the key}`, written with every
//! attempt that opens) finds its command, and the one settle program records it under
//! a lease it takes itself as a recovery holder. `docs/flows/events.md` gives the
//! flow and every outcome.
//!
//! A job that lists a provider's evidence by creation time (a backfill from Stripe's
//! Events API) keeps where it got to in an evidence checkpoint
//! (`evidenceCheckpoints/{digest of the feed's name}`):
//! [`Journal::evidence_checkpoint`](crate::Journal::evidence_checkpoint) reads it,
//! [`window`] says where the run lists from, [`ListingProgress`] tallies what the run
//! took, and [`Journal::advance_evidence_checkpoint`](crate::Journal::advance_evidence_checkpoint)
//! moves it forward only (`docs/documents.md`, `docs/webhooks.md`).

use crate::runner::{Calling, Engine, Unrecorded};
use crate::sends::ProviderAccount;
use command_journal_core::error::JournalError;
use command_journal_core::tools::evidence::checkpoint::{
    EvidenceCheckpointAdvance, EvidenceCheckpointRead,
};
use command_journal_core::tools::evidence::program::EvidenceProgram;

pub use command_journal_core::evidence::{
    Advance, Evidence, EvidenceCheckpoint, EvidenceOutcome, ListingProgress, Window, window,
};

/// How evidence is recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvidenceOptions {
    /// The provider account the evidence comes from (the account whose endpoint
    /// received the event). Declared, evidence for a command whose plan was bound to
    /// another account writes nothing ([`EvidenceOutcome::OtherAccount`]); `None`
    /// (the default): the key alone, which derives from the command, decides.
    pub account: Option<ProviderAccount>,
}

/// Records `evidence` as [`Journal::record_evidence`](crate::Journal::record_evidence)
/// says, traced and counted as the `record_evidence` operation.
pub(crate) async fn record(
    engine: &Engine,
    evidence: Evidence,
    options: &EvidenceOptions,
) -> Result<EvidenceOutcome, JournalError> {
    let program = EvidenceProgram::new(evidence, engine.new_lease(), options.account.clone());
    engine.run(Calling::without(program)).await
}

/// The checkpoint of the feed named `feed`, as
/// [`Journal::evidence_checkpoint`](crate::Journal::evidence_checkpoint) says.
pub(crate) async fn checkpoint(
    engine: &Engine,
    feed: &str,
) -> Result<Option<EvidenceCheckpoint>, JournalError> {
    let feed = command_journal_core::evidence::Feed::new(feed)?;
    engine
        .run(Unrecorded(EvidenceCheckpointRead::new(feed)))
        .await
}

/// Advances the checkpoint of the feed named `feed` to `list_from`, as
/// [`Journal::advance_evidence_checkpoint`](crate::Journal::advance_evidence_checkpoint)
/// says.
pub(crate) async fn advance_checkpoint(
    engine: &Engine,
    feed: &str,
    list_from: i64,
) -> Result<Advance, JournalError> {
    let feed = command_journal_core::evidence::Feed::new(feed)?;
    let op = EvidenceCheckpointAdvance::new(feed, list_from, engine.now()?);
    engine.run(Unrecorded(op)).await
}
