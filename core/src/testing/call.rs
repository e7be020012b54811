//! The call machine driven over the in-memory store, as the library's gRPC driver
//! drives it over Firestore: every read at the store as it stands (one state, so
//! every read is repeatable), every commit under its preconditions, a transaction an
//! id of its own. A hook sees each step first and may answer it instead (a fault, a
//! lost answer, a write by someone else); the provider's calls are the hook's to
//! answer.

use super::store::Store;
use crate::attempt::Found;
use crate::call::{
    Call, CallOptions, Input, Io, Labelled, Metric, Program, ReadAnswer, TransactionId,
};
use crate::error::JournalError;
use crate::sends::provider::ProviderAnswer;
use crate::time::Timestamp;
use crate::transaction::{CommitStamps, Transition};

/// What one call did, step by step.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CallTrace {
    /// Each I/O step's name, in order: `read`, `read_in`, `begin`, `commit`,
    /// `blind`, `planned`, `rollback`, `retry`, `wait_now`, `send`, `lookup`.
    pub steps: Vec<&'static str>,
    /// Every metric the call recorded.
    pub metrics: Vec<Metric>,
    /// The transitions begun, by name.
    pub began: Vec<&'static str>,
}

impl CallTrace {
    /// The RPCs among the steps (reads, commits and rollbacks).
    pub fn rpcs(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| !matches!(**s, "retry" | "wait_now" | "send" | "lookup"))
            .count()
    }
}

impl Store {
    /// Runs `program` to its answer through the call machine at the journal's time
    /// `now`. `hook` sees every I/O step first, with the store, and may answer it
    /// (`Some`); a send or lookup it leaves unanswered is `Unknown`.
    pub fn call<P>(
        &mut self,
        program: P,
        options: CallOptions,
        now: Timestamp,
        hook: impl FnMut(&mut Store, &Io<P::Output, u64>) -> Option<Input<u64>>,
    ) -> (Result<P::Output, JournalError>, CallTrace)
    where
        P: Program,
        P::Output: Labelled,
        <P::Op as Transition>::Output: Labelled,
    {
        self.call_with_clock(program, options, || now, hook)
    }

    /// [`Store::call`] with the journal's time read from `clock` at every poll, as
    /// the library's driver reads its clock.
    pub fn call_with_clock<P>(
        &mut self,
        program: P,
        options: CallOptions,
        mut clock: impl FnMut() -> Timestamp,
        mut hook: impl FnMut(&mut Store, &Io<P::Output, u64>) -> Option<Input<u64>>,
    ) -> (Result<P::Output, JournalError>, CallTrace)
    where
        P: Program,
        P::Output: Labelled,
        <P::Op as Transition>::Output: Labelled,
    {
        let mut call = Call::<P, u64>::new(program, options);
        let mut trace = CallTrace::default();
        let mut transactions = 0u8;
        loop {
            let io = call.poll(clock());
            let step = match &io {
                Io::Done(_) => None,
                Io::Began(name) => {
                    trace.began.push(name.as_str());
                    None
                }
                Io::Ended { recorded, .. } => {
                    trace.metrics.extend(recorded.iter().copied());
                    None
                }
                Io::Read { consistency, .. } => Some(match consistency {
                    crate::call::Consistency::Begin { .. } => "begin",
                    crate::call::Consistency::In(_) => "read_in",
                    _ => "read",
                }),
                Io::Commit { kind, .. } => Some(match kind {
                    crate::call::CommitKind::Decided => "commit",
                    crate::call::CommitKind::Blind => "blind",
                    crate::call::CommitKind::Planned => "planned",
                }),
                Io::Rollback(_) => Some("rollback"),
                Io::Retry {
                    immediate: true, ..
                } => Some("wait_now"),
                Io::Retry { .. } => Some("retry"),
                Io::Send(_) => Some("send"),
                Io::Lookup(_) => Some("lookup"),
            };
            if let Some(step) = step {
                trace.steps.push(step);
            }
            let hooked = match &io {
                Io::Done(_) | Io::Began(_) | Io::Ended { .. } => None,
                io => hook(self, io),
            };
            let input = match (hooked, io) {
                (_, Io::Done(result)) => return (result, trace),
                (_, Io::Began(_) | Io::Ended { .. }) => continue,
                (Some(input), _) => input,
                (
                    None,
                    Io::Read {
                        paths, consistency, ..
                    },
                ) => {
                    let transaction = match consistency {
                        crate::call::Consistency::Begin { .. } => {
                            transactions = transactions.wrapping_add(1);
                            Some(TransactionId(vec![transactions]))
                        }
                        _ => None,
                    };
                    Input::Read(Ok(self.read_answer(&paths, transaction)))
                }
                (None, Io::Commit { writes, .. }) => match self.commit_guarded(&writes) {
                    Some(results) => Input::Committed(Ok(results)),
                    None => Input::Committed(Err(crate::call::RpcFailure::Retry {
                        code: crate::error::GrpcCode::FailedPrecondition,
                        cause: crate::call::RetryCause::PreconditionLost,
                    })),
                },
                (None, Io::Rollback(_)) => Input::RolledBack,
                (None, Io::Retry { .. }) => Input::Waited,
                (None, Io::Send(_)) => Input::Sent(ProviderAnswer::Unknown),
                (None, Io::Lookup(_)) => Input::LookedUp(ProviderAnswer::Unknown),
            };
            call.handle(input);
        }
    }

    /// What a read of `paths` answers at the store as it stands.
    fn read_answer(&self, paths: &[String], transaction: Option<TransactionId>) -> ReadAnswer<u64> {
        let found = paths
            .iter()
            .filter_map(|path| {
                let fields = self.get(path)?.clone();
                let (created, updated) = self.written(path)?;
                let time = |t: u64| (i64::try_from(t).unwrap_or(i64::MAX), 0);
                Some((
                    path.clone(),
                    Found {
                        fields,
                        version: Some(updated),
                        stamps: Some(CommitStamps {
                            created: time(created),
                            updated: time(updated),
                        }),
                    },
                ))
            })
            .collect();
        ReadAnswer {
            found,
            read_time: Some(0),
            transaction,
        }
    }
}
