//! The drain after each generation: the provider turns reliable and each command is
//! driven with its bound plan as far as it goes.

use super::driver::Run;
use super::plans::Variant;
use super::{LEASE, SECOND, WORKERS, lock};
use command_journal::{Execution, JournalError};

impl Run {
    /// The provider turns reliable (every pending request processed or dropped, every
    /// call answered at once and truthfully) and each command of the generation is
    /// driven, with its bound plan, as far as it goes: terminal, or waiting for
    /// evidence once its key may be forgotten.
    pub(super) async fn drain(&mut self, generation: &[usize]) {
        lock(&self.world).settle_all();
        self.note(
            None,
            "drain: the provider answers everything now".to_owned(),
        );
        for &c in generation {
            for _ in 0..24 {
                let status = match self.journal.send_status(&self.commands[c].input).await {
                    Ok(status) => status,
                    Err(JournalError::NotRegistered) => {
                        let variant = Variant::Right;
                        self.drain_call(c, variant).await;
                        continue;
                    }
                    Err(error) => self.violation(c, &format!("status failed: {error:?}")),
                };
                if status.command.state.is_terminal() {
                    break;
                }
                let variant = match &status.send {
                    Some(send) => self.bound(c, send.plan_fingerprint.as_str()),
                    None => Variant::Right,
                };
                let act_by = status
                    .send
                    .as_ref()
                    .map(|send| send.send_cutoff_at.micros());
                match self.drain_call(c, variant).await {
                    Execution::Succeeded(_) | Execution::Declined => {}
                    Execution::InProgress | Execution::RetryLater { .. } => {
                        lock(&self.world).advance((LEASE + 1) * SECOND, "drain: past a lease");
                    }
                    // Abandoned: to the end of the customer's window (the attempt's
                    // cutoff), from which the next call cancels the object.
                    Execution::CustomerMustAct(_) => {
                        let now = self.now();
                        let wait = act_by.map_or(0, |at| at - now).max((LEASE + 1) * SECOND);
                        lock(&self.world).advance(wait, "drain: to the customer's act_by");
                    }
                    Execution::PendingReconciliation => {
                        let status = self
                            .journal
                            .send_status(&self.commands[c].input)
                            .await
                            .expect("status");
                        let send = status.send.expect("a send state");
                        let now = self.now();
                        match send.absence_provable_from {
                            None => break,
                            Some(from) => {
                                let wait = (from.micros() - now).max(SECOND);
                                lock(&self.world).advance(wait, "drain: to the provable instant");
                            }
                        }
                    }
                    Execution::SucceededWithoutResult => unreachable!("checked"),
                }
            }
        }
    }

    pub(super) async fn drain_call(&mut self, c: usize, variant: Variant) -> Execution {
        let call = self.next_call;
        self.next_call += 1;
        self.tally.drain_calls += 1;
        let provider = self.provider(call, c, variant, false);
        let plan = variant.plan(&self.commands[c].parameters);
        let input = self.commands[c].input.clone();
        self.note(Some(c), format!("call#{call} drain {variant:?}: execute"));
        let result = self.journal.execute(&input, &plan, &provider).await;
        self.observe(call, WORKERS, (c, variant), result.clone());
        self.read_replays().await;
        match result {
            Ok(execution) => execution,
            Err(error) => self.violation(c, &format!("the drain's execute failed: {error:?}")),
        }
    }
}
