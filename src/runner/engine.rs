//! What every call of a journal runs on: the connection, the trusted clock, the
//! counters and the run options, shared by the journal and its clones; the time each
//! call captures, and the calls it prepares from a caller's input.

use super::concurrency::RunOptions;
use super::counters::Counters;
use super::driver::Driver;
use crate::connection::Connection;
use crate::identity::{CommandInput, LeaseId};
use crate::time::{Clock, SystemClock, Timestamp};
use command_journal_core::error::JournalError;
use command_journal_core::sends::LookupRequest;
use command_journal_core::tools::call::{Labelled, Program, Quiet, Single, Untold};
use command_journal_core::tools::lease::{CommandCall, LeaseCall};
use command_journal_core::tools::transaction::Transition;
use command_journal_core::{Provider, ProviderAnswer, SendRequest};
use std::sync::Arc;

/// The shared state of a journal and its clones.
#[derive(Clone)]
pub(crate) struct Engine {
    pub(crate) connection: Connection,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) options: RunOptions,
}

impl Engine {
    /// An engine on `connection` with the system clock and the default options.
    pub(crate) fn new(connection: Connection) -> Self {
        Self {
            connection,
            clock: Arc::new(SystemClock),
            counters: Arc::new(Counters::default()),
            options: RunOptions::default(),
        }
    }

    /// The trusted time now, truncated to whole microseconds.
    pub(crate) fn now(&self) -> Result<Timestamp, JournalError> {
        Timestamp::from_datetime(self.clock.now()).ok_or(JournalError::ClockRegression)
    }

    /// A new lease id for a call that takes a lease of its own (`execute`, a
    /// recovery): random, from the shell.
    pub(crate) fn new_lease(&self) -> LeaseId {
        crate::identity::generate_lease_id()
    }

    /// A call on `command` at the time captured now: what a read needs.
    pub(crate) fn command_call(&self, command: &CommandInput) -> Result<CommandCall, JournalError> {
        Ok(CommandCall::new(command.identity(), self.now()?))
    }

    /// A call on `command` by the holder of `lease`, at the time captured now.
    pub(crate) fn lease_call(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
    ) -> Result<LeaseCall, JournalError> {
        let identity = command.identity();
        let owner = command.lease_owner(&identity, lease)?;
        Ok(LeaseCall::new(identity, owner, self.now()?))
    }

    /// The driver of this engine's calls.
    pub(crate) fn driver(&self) -> Driver<'_> {
        Driver {
            connection: &self.connection,
            counters: &self.counters,
            options: self.options,
            clock: self.clock.as_ref(),
        }
    }

    /// Runs `call` to its answer through the one driver: a transition of the journal
    /// (its operation metric recorded: its outcome or error code, and its duration,
    /// `crate::metrics`), a tool's transition ([`Unrecorded`]: its span and RPCs
    /// counted, no operation metric), or a program with the provider it reaches
    /// ([`Calling`]).
    pub(crate) async fn run<C: IntoCall>(&self, call: C) -> Result<C::Output, JournalError>
    where
        <C::Program as Program>::Output: Labelled,
        <<C::Program as Program>::Op as Transition>::Output: Labelled,
    {
        let Calling { program, provider } = call.into_call();
        self.driver()
            .drive(program, provider.as_ref())
            .await
            .map(C::answer)
    }
}

/// One call: a program, and the provider its sends and lookups reach (`None`: it
/// reaches none, and asks none).
pub(crate) struct Calling<P, Q> {
    program: P,
    provider: Option<Q>,
}

impl<P: Program, Q: Provider> Calling<P, Q> {
    /// `program`, its sends and lookups made through `provider`.
    pub(crate) fn with(program: P, provider: Q) -> Self {
        Self {
            program,
            provider: Some(provider),
        }
    }
}

impl<P: Program> Calling<P, Nowhere> {
    /// `program`, which reaches no provider (evidence given to it, never asked).
    pub(crate) fn without(program: P) -> Self {
        Self {
            program,
            provider: None,
        }
    }
}

/// What the one driver runs ([`Engine::run`]).
pub(crate) trait IntoCall {
    /// The program.
    type Program: Program;
    /// The provider it reaches.
    type Provider: Provider;
    /// What the caller is answered.
    type Output;

    /// The call.
    fn into_call(self) -> Calling<Self::Program, Self::Provider>;

    /// The caller's answer, from the program's.
    fn answer(output: <Self::Program as Program>::Output) -> Self::Output;
}

/// A transition of the journal: its own call, recorded under its name.
impl<T: Transition> IntoCall for T {
    type Program = Single<T>;
    type Provider = Nowhere;
    type Output = T::Output;

    fn into_call(self) -> Calling<Single<T>, Nowhere> {
        Calling {
            program: Single::new(self),
            provider: None,
        }
    }

    fn answer(output: T::Output) -> T::Output {
        output
    }
}

/// A tool's transition (a checkpoint's read or record, a caller's own): its own call,
/// recorded under no operation, its answer labelled none.
pub(crate) struct Unrecorded<T>(pub(crate) T);

impl<T: Transition> IntoCall for Unrecorded<T> {
    type Program = Single<Quiet<T>>;
    type Provider = Nowhere;
    type Output = T::Output;

    fn into_call(self) -> Calling<Single<Quiet<T>>, Nowhere> {
        Calling {
            program: Single::unrecorded(Quiet(self.0)),
            provider: None,
        }
    }

    fn answer(Untold(output): Untold<T::Output>) -> T::Output {
        output
    }
}

impl<P: Program, Q: Provider> IntoCall for Calling<P, Q> {
    type Program = P;
    type Provider = Q;
    type Output = P::Output;

    fn into_call(self) -> Self {
        self
    }

    fn answer(output: P::Output) -> P::Output {
        output
    }
}

/// The provider of a call that reaches none: no value of it exists.
pub(crate) enum Nowhere {}

impl Provider for Nowhere {
    async fn send(&self, _request: SendRequest) -> ProviderAnswer {
        match *self {}
    }

    async fn lookup(&self, _request: LookupRequest) -> ProviderAnswer {
        match *self {}
    }
}
