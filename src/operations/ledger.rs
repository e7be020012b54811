//! The ledger's operations: accept, the two replays before pricing, and the
//! historical link.

use super::Engine;
use crate::error::JournalError;
use crate::identity::LedgerKey;
use crate::ledger::accept::Accept;
use crate::ledger::migration::Link;
use crate::ledger::replay::Replay;
use crate::ledger::{
    FingerprintInput, HistoricalCommand, Intent, LedgerOutcome, LedgerReplay, LedgerScope,
    ReversalAuthority,
};

pub(crate) async fn accept(
    engine: &Engine,
    key: &LedgerKey,
    plan: &FingerprintInput,
    scope: &LedgerScope,
) -> Result<LedgerOutcome, JournalError> {
    let op = Accept::new(key, plan, scope, engine.now()?)?;
    engine.run(op).await
}

pub(crate) async fn replay_charge(
    engine: &Engine,
    key: &LedgerKey,
    scope: &LedgerScope,
    intent: &Intent,
) -> Result<LedgerReplay, JournalError> {
    engine.run(Replay::charge(key, scope, intent)?).await
}

pub(crate) async fn replay_reversal(
    engine: &Engine,
    key: &LedgerKey,
    scope: &LedgerScope,
    authority: &ReversalAuthority,
) -> Result<LedgerReplay, JournalError> {
    engine.run(Replay::reversal(key, scope, authority)?).await
}

pub(crate) async fn link(
    engine: &Engine,
    key: &LedgerKey,
    scope: &LedgerScope,
    command: &HistoricalCommand,
) -> Result<LedgerOutcome, JournalError> {
    let op = Link::new(key, scope, command, engine.now()?)?;
    engine.run(op).await
}
