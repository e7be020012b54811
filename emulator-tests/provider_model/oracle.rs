//! The oracle: every answer a caller was given, and every command after its
//! generation's drain, checked against the provider's ledger.

use super::driver::{Run, kind};
use super::plans::{VARIANTS, Variant};
use super::world::{Request, State};
use super::{CUTOFF, LEASE, RETENTION, SECOND, lock};
use command_journal::sends::{AttemptState, CommandStatus};
use command_journal::{Execution, JournalError, ResultEnvelope};
use std::time::Duration;

impl Run {
    /// One answer a caller was given, checked against the provider's ledger.
    pub(super) fn observe(
        &mut self,
        call: u64,
        worker: usize,
        (c, variant): (usize, Variant),
        result: Result<Execution, JournalError>,
    ) {
        *self.tally.answers.entry(kind(&result)).or_default() += 1;
        let text = match &result {
            Ok(Execution::RetryLater { after }) => format!("retry_later {}s", after.as_secs()),
            Err(error) if kind(&result) == "error" => format!("error {error:?}"),
            _ => kind(&result).to_owned(),
        };
        self.note(Some(c), format!("call#{call} w{worker} answered {text}"));
        self.check_answer(c, &result);
        self.commands[c].answers.push((call, variant, result));
    }

    pub(super) fn check_answer(&mut self, c: usize, result: &Result<Execution, JournalError>) {
        let (charge, declined) = {
            let world = lock(&self.world);
            let charge = world
                .charge_of
                .get(&c)
                .map(|&i| world.charges[i].envelope.clone());
            (charge, world.declined.contains(&c))
        };
        match result {
            Ok(Execution::Succeeded(envelope)) => {
                if charge.as_ref() != Some(envelope) {
                    self.violation(c, "answered a success that is not the command's charge");
                }
            }
            Ok(Execution::Declined) => {
                if charge.is_some() || !declined {
                    self.violation(c, "answered declined, but the ledger disagrees");
                }
            }
            Ok(Execution::SucceededWithoutResult) => {
                self.violation(c, "succeeded without a result: every success stores one");
            }
            Ok(Execution::RetryLater { after }) => {
                if *after > Duration::from_secs(LEASE as u64) {
                    self.violation(c, "retry later beyond a lease");
                }
            }
            Ok(
                Execution::InProgress
                | Execution::PendingReconciliation
                | Execution::CustomerMustAct(_),
            ) => {}
            Err(JournalError::PlanConflict) => self.tally.plan_conflicts += 1,
            Err(error) => self.violation(c, &format!("execute failed: {error:?}")),
        }
        if let Ok(terminal @ (Execution::Succeeded(_) | Execution::Declined)) = result {
            if self.commands[c].terminal.is_none() {
                lock(&self.world).replay_settled(c);
            }
            let first = self.commands[c]
                .terminal
                .get_or_insert_with(|| terminal.clone());
            if first != terminal {
                let what = "two different terminal answers";
                self.violation(c, what);
            }
        }
    }

    /// The plan variant whose fingerprint `c`'s status shows.
    pub(super) fn bound(&self, c: usize, fingerprint: &str) -> Variant {
        let cmd = &self.commands[c];
        let identity = cmd.input.identity();
        VARIANTS
            .into_iter()
            .find(|v| v.plan(&cmd.parameters).fingerprint(&identity).as_str() == fingerprint)
            .unwrap_or_else(|| self.violation(c, "a bound plan no worker has"))
    }

    /// The checks of [`Self::check_generation`] on one command against the ledger;
    /// the charge a succeeded command's stored result must equal.
    pub(super) fn judge(
        &mut self,
        c: usize,
        status: &CommandStatus,
        bound: Option<Variant>,
        now: i64,
    ) -> Option<ResultEnvelope> {
        let terminal_state = status.command.state.is_terminal();
        let world = lock(&self.world);
        let charge = world.charge_of.get(&c).map(|&i| &world.charges[i]);
        let requests: Vec<&Request> = world
            .by_command
            .get(&c)
            .into_iter()
            .flatten()
            .map(|&id| &world.requests[id])
            .collect();
        let mut succeeded_with = None;
        match (&status.send, bound) {
            (Some(send), Some(variant)) => {
                if variant != Variant::Right {
                    self.tally.wrong_plan_bound += 1;
                }
                self.tally.max_attempt = self.tally.max_attempt.max(send.attempt.get());
                if send.attempt >= 2 {
                    self.tally.commands_with_attempt_2 += 1;
                }
                for r in &requests {
                    if r.variant != variant || r.attempt > send.attempt {
                        world.violation(c, "a request under another plan or a later attempt");
                    }
                    if r.attempt < send.attempt
                        && matches!(r.state, State::Processed(outcome) if outcome.binding())
                    {
                        world.violation(
                            c,
                            "an attempt recorded absent holds an outcome at the provider",
                        );
                    }
                    if r.state == State::Pending {
                        world.violation(c, "a request still pending after the drain");
                    }
                }
                let key = world
                    .attempt_keys
                    .get(&(c, variant.operation(), send.attempt))
                    .cloned();
                match status.command.state.as_str() {
                    "succeeded" => {
                        self.tally.succeeded += 1;
                        let Some(charge) = charge else {
                            world.violation(c, "succeeded with no charge");
                        };
                        if Some(&charge.key) != key.as_ref() {
                            world
                                .violation(c, "succeeded, but charged under another attempt's key");
                        }
                        succeeded_with = Some(charge.envelope.clone());
                    }
                    "failed_final" => {
                        self.tally.failed += 1;
                        if charge.is_some() || !world.declined.contains(&c) {
                            world.violation(c, "failed_final, but the ledger disagrees");
                        }
                    }
                    _ => {
                        // Not terminal after the drain: only an outcome unknown past
                        // the cutoff, once the provider may have forgotten the key,
                        // so that no lookup can prove an absence: it waits for
                        // evidence or an operator.
                        // Or an attempt the provider answered as indeterminate (a
                        // stored 5xx, fresh or replayed), which no lookup's "not
                        // found" ends at any time (the roll-forward rule): with the
                        // drain's truthful lookups, it holds no charge.
                        let open = send.state.outcome_unknown();
                        let forgotten_from =
                            send.send_cutoff_at.micros() + (RETENTION - CUTOFF) * SECOND;
                        let indeterminate = matches!(
                            send.state,
                            AttemptState::ReplayedUnknown | AttemptState::Indeterminate
                        );
                        if indeterminate && now < forgotten_from && charge.is_some() {
                            world.violation(
                                c,
                                "an indeterminate attempt left open although the provider \
                                 holds its charge",
                            );
                        }
                        if !(open
                            && send.needs_reconciliation
                            && send.absence_provable_from.is_none()
                            && (now >= forgotten_from || indeterminate))
                        {
                            world.violation(
                                c,
                                &format!("left unexplained after the drain: {send:?}"),
                            );
                        }
                        if now < forgotten_from {
                            self.tally.pending_indeterminate += 1;
                        }
                        self.tally.pending_forgotten += 1;
                        if charge.is_some() {
                            self.tally.pending_forgotten_charged += 1;
                        }
                    }
                }
            }
            _ => {
                if !requests.is_empty() || terminal_state {
                    world.violation(c, "sent or terminal, but no plan is bound");
                }
                self.tally.never_sent += 1;
            }
        }
        for (call, variant, answer) in &self.commands[c].answers {
            let other_plan = bound.is_some_and(|b| b != *variant);
            let conflict = matches!(answer, Err(JournalError::PlanConflict));
            if conflict && !other_plan {
                world.violation(c, &format!("call#{call}: plan_conflict for the bound plan"));
            }
            if other_plan
                && !matches!(
                    answer,
                    Err(JournalError::PlanConflict)
                        | Ok(Execution::InProgress
                            | Execution::RetryLater { .. }
                            | Execution::Succeeded(_)
                            | Execution::Declined)
                )
            {
                world.violation(
                    c,
                    &format!("call#{call} with another plan answered {answer:?}"),
                );
            }
            let terminal = matches!(answer, Ok(Execution::Succeeded(_) | Execution::Declined));
            if terminal && !terminal_state {
                world.violation(
                    c,
                    &format!("call#{call} answered terminal, the command is not"),
                );
            }
        }
        succeeded_with
    }

    /// After the drain: each command terminal as the ledger says, or in a state its
    /// status explains; every earlier attempt never processed; plan conflicts only for
    /// other plans than the bound one.
    pub(super) async fn check_generation(&mut self, generation: &[usize]) {
        for &c in generation {
            let input = self.commands[c].input.clone();
            let status = self.journal.send_status(&input).await.expect("status");
            let bound = status
                .send
                .as_ref()
                .map(|send| self.bound(c, send.plan_fingerprint.as_str()));
            let now = self.now();
            let succeeded_with = self.judge(c, &status, bound, now);
            if let Some(envelope) = succeeded_with {
                let stored = self.journal.result(&input).await.expect("result");
                if stored.as_ref() != Some(&envelope) {
                    self.violation(c, "the stored result is not the provider's charge");
                }
            }
        }
        self.tally_replays(generation);
        let mut world = lock(&self.world);
        if std::env::var_os("CJ_MODEL_TRACE").is_some() {
            println!("{}", world.log.join("\n"));
        }
        world.log.clear();
    }
}
