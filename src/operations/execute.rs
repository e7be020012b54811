//! `execute`: the core's program (`command_journal_core::execute::program`) run by the
//! driver, with the call's own lease and the provider.

use super::Engine;
use crate::error::JournalError;
use crate::execute::{Execution, Provider};
use crate::identity::{CommandInput, LeaseId};
use crate::sends::ProviderPlan;
use command_journal_core::execute::program::ExecuteProgram;

/// The whole call, traced and counted as the `execute` operation.
pub(crate) async fn execute<P: Provider>(
    engine: &Engine,
    command: &CommandInput,
    plan: &ProviderPlan,
    provider: &P,
) -> Result<Execution, JournalError> {
    let lease = LeaseId::generate();
    let identity = command.identity();
    let owner = command.lease_owner(&identity, &lease)?;
    let program = ExecuteProgram::new(
        identity,
        owner,
        plan.clone(),
        engine.options.concurrency,
        !engine.options.reads_only,
    )?;
    engine.call(program, provider, &mut |_| {}).await
}
