//! A recovery job (`Journal::recover`) beside the workers, and what it settled,
//! checked against the provider's ledger as a client's answer is.

use super::WORKERS;
use super::driver::{Live, Run};
use super::plans::{VARIANTS, Variant};
use super::provider::Msg;
use command_journal::identity::OperationSlug;
use command_journal::recovery::{RecoverOptions, Recovered, Recovery};
use command_journal::sends::AttemptNumber;
use command_journal::{Execution, JournalError};
use command_journal_core::tools::sends::plan::attempt_key;
use futures::FutureExt;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

impl Run {
    /// A recovery job (`Journal::recover`) as one more call of the round: it lists the
    /// pending commands of every generation and looks up each open attempt's key.
    pub(super) fn spawn_recovery(&mut self, generation: &[usize]) -> (u64, Live) {
        let call = self.next_call;
        self.next_call += 1;
        self.tally.recoveries += 1;
        let mut keys = HashMap::new();
        for (c, cmd) in self.commands.iter().enumerate() {
            let identity = cmd.input.identity();
            for variant in VARIANTS {
                let operation = OperationSlug::parse(variant.operation()).expect("slug");
                for n in 1..=16 {
                    let attempt = AttemptNumber::new(n).expect("an attempt");
                    keys.insert(attempt_key(&identity, &operation, attempt), c);
                }
            }
        }
        let command = generation[0];
        // The job's deployment: mostly the service's, declaring its account (its "not
        // found" may record an absence); sometimes a stale deployment's, declaring
        // that account (it must leave every command bound to the right one alone);
        // sometimes one declaring no account (it records no absence).
        let (variant, declared) = match self.rng.u32(..10) {
            0 => (Variant::OtherAccount, true),
            1 => (Variant::Right, false),
            _ => (Variant::Right, true),
        };
        let mut provider = self.provider(call, command, variant, true);
        provider.keys = Some(Arc::new(keys));
        let resumed = provider.resumed.clone();
        let (journal, tx) = (self.journal.clone(), self.tx.clone());
        self.note(
            None,
            format!("call#{call} recovery job {variant:?} declared {declared}"),
        );
        let options = RecoverOptions {
            per_second: None,
            account: declared.then(|| variant.provider_account()),
            ..RecoverOptions::default()
        };
        let handle = tokio::spawn(async move {
            let run = AssertUnwindSafe(journal.recover(&provider, &options, |_| {}));
            let message = match run.catch_unwind().await {
                Ok(result) => Msg::Recovered { call, result },
                Err(panic) => Msg::Panicked(panic),
            };
            let _ = tx.send(message);
        });
        let live = Live {
            worker: WORKERS,
            command,
            variant,
            handle,
            resumed,
        };
        (call, live)
    }

    /// What a recovery job settled, checked against the provider's ledger as an
    /// answer to a client is: a success is the command's one charge (its stored result
    /// read back), a decline a command the provider declined and never charged.
    pub(super) async fn observe_recovery(
        &mut self,
        call: u64,
        result: Result<Recovery, JournalError>,
    ) {
        let report = match result {
            Ok(report) => report,
            Err(error) => self.violation(
                self.commands.len() - 1,
                &format!("call#{call}: recover failed: {error:?}"),
            ),
        };
        for done in report.commands {
            let Some(c) = self
                .commands
                .iter()
                .position(|cmd| cmd.input.identity().command_key_hash() == &done.command_key_hash)
            else {
                self.violation(0, "a recovery job handled a command of no generation");
            };
            let outcome = match done.outcome {
                Ok(outcome) => outcome,
                Err(error) => self.diagnose(call, c, error).await,
            };
            *self.tally.recovered.entry(outcome.as_str()).or_default() += 1;
            self.note(
                Some(c),
                format!("call#{call} recovery: {}", outcome.as_str()),
            );
            let answer = match outcome {
                Recovered::Succeeded => {
                    let input = self.commands[c].input.clone();
                    match self.journal.result(&input).await {
                        Ok(Some(envelope)) => Execution::Succeeded(envelope),
                        other => self.violation(
                            c,
                            &format!("a recovered success without its result: {other:?}"),
                        ),
                    }
                }
                Recovered::Declined => Execution::Declined,
                _ => continue,
            };
            self.check_answer(c, &Ok(answer));
        }
    }
}
