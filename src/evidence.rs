//! Evidence given from outside the journal: [`Journal::record_evidence`](crate::Journal::record_evidence)
//! records one piece of it (a provider's event, verified by the provider's adapter
//! first; a backfill of events) with no client and no client's lease. The evidence
//! names the provider idempotency key its object carries and what the provider holds
//! for it; the key index (`providerKeys/{digest of the key}`, written with every
//! attempt that opens) finds its command, and the one settle program records it under
//! a lease it takes itself as a recovery holder. `docs/flows/events.md` gives the
//! flow and every outcome.

use crate::runner::{Calling, Engine};
use crate::sends::ProviderAccount;
use command_journal_core::error::JournalError;
use command_journal_core::tools::evidence::program::EvidenceProgram;

pub use command_journal_core::evidence::{Evidence, EvidenceOutcome};

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
