//! One transition's run inside a call: its first attempt (a commit planned or chained
//! from what the call knows, a blind creation, or a read), every read-and-decide
//! attempt after it ([`crate::attempt`]), the rollback of a transaction an attempt
//! leaves open, and the retry budget. No I/O: it answers what to do next.

use super::io::{
    CommitKind, Concurrency, Consistency, Input, Io, ReadAnswer, RetryCause, RpcFailure,
    TransactionId,
};
use super::program::Answered;
use crate::attempt::{Action, Attempt, Precondition, Twice};
use crate::error::{GrpcCode, JournalError};
use crate::known::{Known, Planned};
use crate::transaction::{CommitTime, Transition, Write};
use std::num::NonZeroU32;

/// The commit a run tries first, before any read of its own.
pub(super) enum Fast<O, V> {
    /// Planned from what the call knows: its answer.
    Planned(Planned<O, V>),
    /// Two transitions planned as one blind commit: their answers.
    Chained(Planned<(O, O), V>),
    /// The transition's own blind creation.
    Blind(Planned<O, V>),
}

/// What the run does next.
pub(super) enum Step<X, T: Transition, V> {
    /// Hand this to the driver; its answer comes back through [`Running::handle`].
    Io(Io<X, V>),
    /// The run is over: what it answered (the transition's answer or refusal, or the
    /// answers of the transition and the one chained after it, committed together),
    /// what it left known (when the call keeps it), and its attempts.
    Finished {
        answered: Answered<T>,
        known: Option<Known<V>>,
        attempts: u32,
    },
}

/// A commit that landed: its writes and the update times they left.
type Landed<'a, V> = (&'a [Write], &'a [Option<(V, CommitTime)>]);

/// A run's end: what it answered (never a refusal: that is the `Err`) and what it left
/// known.
type Ending<T, V> = Result<(Answered<T>, Option<Known<V>>), JournalError>;

/// After a rollback: the run's end, or its next attempt.
enum After<T: Transition, V> {
    Finish(Ending<T, V>),
    Retry(GrpcCode, RetryCause, bool),
}

enum Phase<T: Transition, V> {
    /// Between attempts.
    Idle,
    /// The fast commit is in flight.
    Fast {
        written: Vec<Write>,
        base: Known<V>,
        answer: Answered<T>,
    },
    /// A read of a read-and-decide attempt is in flight (`unlocked`: transaction
    /// mode's first attempt, read without a transaction).
    Reading {
        attempt: Box<Attempt<T, V>>,
        transaction: Option<TransactionId>,
        read_time: Option<V>,
        first: bool,
        unlocked: bool,
    },
    /// The decided commit is in flight.
    Committing {
        attempt: Box<Attempt<T, V>>,
        transaction: Option<TransactionId>,
        written: Vec<Write>,
        output: T::Output,
        unlocked: bool,
    },
    /// A rollback is in flight.
    RollingBack(After<T, V>),
    /// The backoff before the next attempt.
    Waiting,
}

/// One transition's run.
pub(super) struct Running<T: Transition, V> {
    pub(super) op: T,
    paths: Vec<String>,
    concurrency: Concurrency,
    budget: NonZeroU32,
    remember: bool,
    fast: Option<Fast<T::Output, V>>,
    /// Whether the first read-and-decide attempt takes no lock (transaction mode).
    unlocked: bool,
    /// Strict mode's second `decide` for every attempt (the test store's calls).
    strict: Option<Twice<T>>,
    attempts: u32,
    refused: u32,
    last_code: Option<GrpcCode>,
    previous: Option<TransactionId>,
    phase: Phase<T, V>,
}

impl<T: Transition, V: Clone> Running<T, V> {
    /// A run of `op` whose first read is `paths`, trying `fast` first, keeping what it
    /// leaves known when `remember`.
    pub(super) fn new(
        op: T,
        paths: Vec<String>,
        fast: Option<Fast<T::Output, V>>,
        concurrency: Concurrency,
        budget: NonZeroU32,
        remember: bool,
    ) -> Self {
        Self {
            op,
            paths,
            concurrency,
            budget,
            remember,
            fast,
            unlocked: false,
            strict: None,
            attempts: 0,
            refused: 0,
            last_code: None,
            previous: None,
            phase: Phase::Idle,
        }
    }

    /// The same run, its first read-and-decide attempt in transaction mode taken
    /// without a transaction when `unlocked`: its observation or rejection is the
    /// answer, its mutation committed without a lock when every write is under
    /// `exists: false` once every document it read absent is guarded absent
    /// ([`Attempt::proving_absences`]); any other decision is taken again at once
    /// inside a transaction, nothing sent, as is a commit refused because a document
    /// appeared.
    pub(super) fn unlocked(mut self, unlocked: bool) -> Self {
        self.unlocked = unlocked;
        self
    }

    /// The same run, every attempt in the attempt machine's strict mode when `strict`
    /// is given.
    pub(super) fn strict(mut self, strict: Option<Twice<T>>) -> Self {
        self.strict = strict;
        self
    }

    /// The first step: the fast commit, or the first read.
    pub(super) fn start<X>(&mut self) -> Step<X, T, V> {
        self.attempt()
    }

    /// The next attempt: the fast commit if one is left, a read otherwise.
    fn attempt<X>(&mut self) -> Step<X, T, V> {
        self.attempts += 1;
        if let Some(fast) = self.fast.take() {
            let (plan_writes, base, answer, blind) = match fast {
                Fast::Planned(plan) => (
                    plan.writes,
                    plan.base,
                    Answered::Ran(Ok(plan.output)),
                    false,
                ),
                Fast::Blind(plan) => (plan.writes, plan.base, Answered::Ran(Ok(plan.output)), true),
                Fast::Chained(plan) => {
                    let (a, b) = plan.output;
                    (plan.writes, plan.base, Answered::Chained(a, b), true)
                }
            };
            let written = plan_writes.iter().map(|w| w.write.clone()).collect();
            self.phase = Phase::Fast {
                written,
                base,
                answer,
            };
            return Step::Io(Io::Commit {
                writes: plan_writes,
                transaction: None,
                kind: if blind {
                    CommitKind::Blind
                } else {
                    CommitKind::Planned
                },
            });
        }
        let mut attempt = Attempt::new(&self.op, self.paths.clone()).checked(self.strict);
        let unlocked = std::mem::take(&mut self.unlocked);
        let transactional = self.concurrency == Concurrency::Transaction && !unlocked;
        if transactional {
            attempt = attempt.in_transaction();
        } else if unlocked {
            attempt = attempt.proving_absences();
        }
        let Action::Read { paths, kind } = attempt.start() else {
            return self.finish(Err(JournalError::internal("call: an attempt began unread")));
        };
        let consistency = if transactional {
            Consistency::Begin {
                retrying: self.previous.take(),
            }
        } else {
            Consistency::Latest
        };
        self.phase = Phase::Reading {
            attempt: Box::new(attempt),
            transaction: None,
            read_time: None,
            first: true,
            unlocked,
        };
        Step::Io(Io::Read {
            paths,
            kind,
            consistency,
        })
    }

    /// What the driver answered to the last step.
    pub(super) fn handle<X>(&mut self, input: Input<V>) -> Step<X, T, V> {
        match (std::mem::replace(&mut self.phase, Phase::Idle), input) {
            (phase, Input::DeadlinePassed) => {
                let error = Err(JournalError::unavailable(
                    self.last_code,
                    self.attempts,
                    true,
                ));
                match open_transaction(&phase) {
                    Some(id) => self.roll_back(id, After::Finish(error)),
                    None => self.end(error),
                }
            }
            (
                Phase::Fast { .. }
                | Phase::Reading {
                    first: true,
                    transaction: None,
                    ..
                },
                Input::DeadlinePassedBeforeAttempt,
            ) => {
                // Nothing of this attempt was sent: it is not one.
                self.attempts = self.attempts.saturating_sub(1);
                let attempts = self.attempts;
                self.finish(Err(JournalError::unavailable(
                    self.last_code,
                    attempts,
                    true,
                )))
            }
            (
                Phase::Fast {
                    written,
                    base,
                    answer,
                    ..
                },
                Input::Committed(Ok(results)),
            ) => {
                let known = self.remember.then(|| base.committed(&written, &results));
                self.end(Ok((answer, known)))
            }
            (Phase::Fast { .. }, Input::Committed(Err(failure))) => {
                self.failed(failure, None, true)
            }
            (
                Phase::Reading {
                    attempt,
                    transaction,
                    read_time,
                    first,
                    unlocked,
                },
                Input::Read(read),
            ) => self.read(attempt, (transaction, read_time), (first, unlocked), read),
            (
                Phase::Committing {
                    attempt,
                    written,
                    output,
                    ..
                },
                Input::Committed(Ok(results)),
            ) => {
                let known = self.known(&attempt, Some((&written, &results)));
                self.end(Ok((Answered::Ran(Ok(output)), known)))
            }
            (
                Phase::Committing {
                    transaction,
                    unlocked,
                    ..
                },
                Input::Committed(Err(failure)),
            ) => self.failed(failure, transaction, unlocked),
            (Phase::RollingBack(after), Input::RolledBack) => match after {
                After::Finish(result) => self.end(result),
                After::Retry(code, cause, fast) => self.retry(code, cause, fast),
            },
            (Phase::Waiting, Input::Waited) => self.attempt(),
            // The driver broke the contract: the attempt ends, its transaction (if
            // any) released first.
            (phase, _) => {
                let error = JournalError::internal("call: an answer out of turn");
                match open_transaction(&phase) {
                    Some(id) => self.roll_back(id, After::Finish(Err(error))),
                    None => self.finish(Err(error)),
                }
            }
        }
    }

    /// A read answered.
    fn read<X>(
        &mut self,
        mut attempt: Box<Attempt<T, V>>,
        (mut transaction, read_time): (Option<TransactionId>, Option<V>),
        (first, unlocked): (bool, bool),
        read: Result<ReadAnswer<V>, RpcFailure>,
    ) -> Step<X, T, V> {
        let transactional = self.concurrency == Concurrency::Transaction && !unlocked;
        let answer = match read {
            Ok(answer) => answer,
            Err(failure) => {
                // A first read that failed may still have opened a transaction: the
                // driver released it; name none.
                return self.failed(failure, transaction, unlocked);
            }
        };
        if first && transactional {
            transaction = answer.transaction.clone();
            if transaction.is_none() {
                // A read-write transaction that did not come back is a server defect.
                return self.retry(GrpcCode::Internal, RetryCause::Transient, false);
            }
        }
        let read_time = read_time.or(answer.read_time);
        let repeatable = read_time.is_some() || transaction.is_some();
        match attempt.read(&self.op, answer.found, repeatable) {
            Action::Read { paths, kind } => {
                let consistency = match (&transaction, &read_time) {
                    (Some(id), _) => Consistency::In(id.clone()),
                    (None, Some(time)) => Consistency::At(time.clone()),
                    (None, None) => Consistency::Latest,
                };
                self.phase = Phase::Reading {
                    attempt,
                    transaction,
                    read_time,
                    first: false,
                    unlocked,
                };
                Step::Io(Io::Read {
                    paths,
                    kind,
                    consistency,
                })
            }
            Action::Done(output) => {
                let known = self.known(&attempt, None);
                let result = Ok((Answered::Ran(Ok(output)), known));
                match transaction {
                    Some(id) => self.roll_back(id, After::Finish(result)),
                    None => self.end(result),
                }
            }
            Action::Fail(error) => match transaction {
                Some(id) => self.roll_back(id, After::Finish(Err(error))),
                None => self.end(Err(error)),
            },
            Action::Commit { writes, output } => {
                if unlocked
                    && !writes
                        .iter()
                        .all(|w| matches!(w.precondition, Precondition::Absent))
                {
                    // A replacement, or a mutable document read present: only a
                    // transaction's lock holds it. Nothing was sent: take it again in
                    // one at once, unbudgeted.
                    self.refused += 1;
                    return self.attempt();
                }
                let written = match self.remember {
                    true => writes.iter().map(|w| w.write.clone()).collect(),
                    false => Vec::new(),
                };
                self.phase = Phase::Committing {
                    attempt,
                    transaction: transaction.clone(),
                    written,
                    output,
                    unlocked,
                };
                Step::Io(Io::Commit {
                    writes,
                    transaction,
                    kind: CommitKind::Decided,
                })
            }
        }
    }

    /// An RPC of this attempt failed; `transaction` is the attempt's, still open.
    fn failed<X>(
        &mut self,
        failure: RpcFailure,
        transaction: Option<TransactionId>,
        fast: bool,
    ) -> Step<X, T, V> {
        let after = match failure {
            RpcFailure::Final(error) => After::Finish(Err(error)),
            RpcFailure::Retry { code, cause } => After::Retry(code, cause, fast),
        };
        match transaction {
            Some(id) => {
                // Retried by name, so production Firestore keeps its priority.
                self.previous = Some(id.clone());
                self.roll_back(id, after)
            }
            None => match after {
                After::Finish(result) => self.end(result),
                After::Retry(code, cause, fast) => self.retry(code, cause, fast),
            },
        }
    }

    /// Releases `id`, then goes on with `after`.
    fn roll_back<X>(&mut self, id: TransactionId, after: After<T, V>) -> Step<X, T, V> {
        self.phase = Phase::RollingBack(after);
        Step::Io(Io::Rollback(id))
    }

    /// Another attempt after a failure with `code`, unless the budget is spent. A
    /// refused fast path wrote nothing and spends none of it: read at once.
    fn retry<X>(&mut self, code: GrpcCode, cause: RetryCause, fast: bool) -> Step<X, T, V> {
        self.last_code = Some(code);
        let refused = fast && cause == RetryCause::PreconditionLost;
        if refused {
            self.refused += 1;
        }
        let spent = self.attempts - self.refused;
        if !refused && spent >= self.budget.get() {
            return self.finish(Err(JournalError::unavailable(
                self.last_code,
                self.attempts,
                false,
            )));
        }
        self.phase = Phase::Waiting;
        Step::Io(Io::Retry {
            attempts: self.attempts,
            spent,
            code,
            cause,
            immediate: refused,
        })
    }

    /// What `attempt` leaves known, once its commit landed, if any; nothing unless
    /// the run remembers.
    fn known(&self, attempt: &Attempt<T, V>, committed: Option<Landed<'_, V>>) -> Option<Known<V>> {
        if !self.remember {
            return None;
        }
        let (snapshot, versions) = attempt.read_state();
        let known = Known::read(snapshot.clone(), versions);
        Some(match committed {
            Some((written, results)) => known.committed(written, results),
            None => known,
        })
    }

    fn end<X>(&mut self, result: Ending<T, V>) -> Step<X, T, V> {
        match result {
            Ok((answered, known)) => Step::Finished {
                answered,
                known,
                attempts: self.attempts,
            },
            Err(error) => self.finish(Err(error)),
        }
    }

    /// The run's end with `result`, leaving nothing known.
    fn finish<X>(&mut self, result: Result<Answered<T>, JournalError>) -> Step<X, T, V> {
        self.phase = Phase::Idle;
        Step::Finished {
            answered: result.unwrap_or_else(|error| Answered::Ran(Err(error))),
            known: None,
            attempts: self.attempts,
        }
    }
}

/// The transaction an attempt in `phase` holds open, if any.
fn open_transaction<T: Transition, V>(phase: &Phase<T, V>) -> Option<TransactionId> {
    match phase {
        Phase::Reading { transaction, .. } | Phase::Committing { transaction, .. } => {
            transaction.clone()
        }
        _ => None,
    }
}
