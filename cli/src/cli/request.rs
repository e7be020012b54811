//! What the command line asks for, parsed in full (each stdin object validated into
//! its typed request) before anything runs, and the one function that runs it.

use super::args::{Cmd, JournalArgs, LedgerCmd, SendCmd};
use super::commands::{self, Command};
use super::exit::{self, Exit};
use super::input::Failure;
use super::ledger::{self, LedgerAction};
use super::rules::RulesCmd;
use super::schema::Subject;
use super::sends::{self, SendAction};
use super::{Global, demo, dev_token, emulator, explain, identity, pending, rules, verify};
use crate::ledger::FingerprintInput;
use crate::{Journal, JournalError};
use serde_json::Value;
use std::process::ExitCode;

/// An operation that needs the journal, its input validated.
pub enum Operation {
    /// `register`, `acquire`, `start`, `complete`, `fail`, `status`.
    Command(commands::JournalCall),
    /// `send begin | outcome | reconcile` (boxed: the largest input by far).
    Send(Box<sends::SendCall>),
    /// `ledger accept | replay | link`.
    Ledger(ledger::LedgerCall),
}

impl Operation {
    /// Runs it on `journal` and returns its output as JSON.
    async fn execute(self, journal: &Journal) -> Result<Value, JournalError> {
        match self {
            Self::Command(request) => request.execute(journal).await,
            Self::Send(request) => request.execute(journal).await,
            Self::Ledger(request) => request.execute(journal).await,
        }
    }
}

/// One subcommand, ready to run: stdin already read and validated where it is read.
pub enum Request {
    /// `identity`.
    Identity(identity::IdentityQuery),
    /// `ledger fingerprint`.
    Fingerprint(FingerprintInput),
    /// An operation on the journal, with the options that connect to it.
    Journal(Box<Operation>, Global),
    /// `pending`, with its `--key-range` as given (validated when it runs).
    Pending(Global, Option<String>),
    /// `verify`.
    Verify {
        /// Its target.
        options: Global,
        /// `--allow-empty`.
        allow_empty: bool,
        /// `--ranges`, as given (validated when it runs, as the verifier parses it).
        ranges: String,
    },
    /// `demo`.
    Demo(Option<String>, demo::DemoOptions),
    /// `emulator`.
    Emulator(emulator::EmulatorArgs),
    /// `dev-token`.
    DevToken(dev_token::DevTokenArgs),
    /// `explain`.
    Explain(explain::ExplainArgs),
    /// `example`: the stdin object to print.
    Example(Subject),
    /// `completions`.
    Completions(clap_complete::Shell),
    /// `rules`.
    Rules(RulesCmd),
}

impl Request {
    /// Parses `command`, reading stdin (with `stdin`) only for a subcommand that reads
    /// it; a stdin object that does not validate is the failure, before any connection.
    pub fn parse(command: Cmd, stdin: impl FnOnce() -> String) -> Result<Self, Failure> {
        Ok(match command {
            Cmd::Identity => Self::Identity(identity::IdentityQuery::parse(&stdin())?),
            Cmd::Register(args) => journal_request(Command::Register, &args, &stdin())?,
            Cmd::Acquire(args) => journal_request(Command::Acquire, &args, &stdin())?,
            Cmd::Start(args) => journal_request(Command::Start, &args, &stdin())?,
            Cmd::Complete(args) => journal_request(Command::Complete, &args, &stdin())?,
            Cmd::Fail(args) => journal_request(Command::Fail, &args, &stdin())?,
            Cmd::Status(args) => journal_request(Command::Status, &args, &stdin())?,
            Cmd::Send { action } => match action {
                SendCmd::Begin(args) => send_request(SendAction::Begin, &args, &stdin())?,
                SendCmd::Outcome(args) => send_request(SendAction::Outcome, &args, &stdin())?,
                SendCmd::Reconcile(args) => send_request(SendAction::Reconcile, &args, &stdin())?,
            },
            Cmd::Ledger { action } => match action {
                LedgerCmd::Fingerprint => Self::Fingerprint(ledger::parse_fingerprint(&stdin())?),
                LedgerCmd::Accept(args) => ledger_request(LedgerAction::Accept, &args, &stdin())?,
                LedgerCmd::Replay(args) => ledger_request(LedgerAction::Replay, &args, &stdin())?,
                LedgerCmd::Link(args) => ledger_request(LedgerAction::Link, &args, &stdin())?,
            },
            Cmd::Pending { key_range, journal } => {
                Self::Pending(Global::from_journal(&journal), key_range)
            }
            Cmd::Verify {
                allow_empty,
                ranges,
                target,
            } => Self::Verify {
                options: Global::from_target(&target),
                allow_empty,
                ranges,
            },
            Cmd::Demo(args) => demo_request(args),
            Cmd::Emulator(args) => Self::Emulator(args),
            Cmd::DevToken(args) => Self::DevToken(args),
            Cmd::Explain(args) => Self::Explain(args),
            Cmd::Example { of } => Self::Example(of.subject()),
            Cmd::Completions { shell } => Self::Completions(shell),
            Cmd::Rules { action } => Self::Rules(action),
        })
    }

    /// Runs the request, prints its answer and returns the process exit code.
    pub async fn execute(self) -> ExitCode {
        match self {
            Self::Identity(request) => exit::report(request.derive()),
            Self::Fingerprint(input) => exit::report(ledger::fingerprint(&input)),
            Self::Journal(operation, options) => match options.journal().await {
                Ok(journal) => exit::report(operation.execute(&journal).await),
                Err(error) => exit::report(Err(error)),
            },
            Self::Pending(options, key_range) => pending::run(&options, key_range.as_deref()).await,
            Self::Verify {
                options,
                allow_empty,
                ranges,
            } => verify::run(&options, allow_empty, &ranges).await,
            Self::Demo(host, options) => demo::run(host, options).await,
            Self::Emulator(args) => emulator::run(args).await,
            Self::DevToken(args) => dev_token::run(&args),
            Self::Explain(args) => explain::run(&args),
            Self::Example(subject) => {
                println!("{}", subject.example());
                Exit::Success.into()
            }
            Self::Completions(shell) => completions(shell),
            Self::Rules(action) => rules::run(action).await,
        }
    }
}

/// A journal operation: its stdin object, then its options.
fn journal_request(
    operation: Command,
    args: &JournalArgs,
    stdin: &str,
) -> Result<Request, Failure> {
    let request = commands::JournalCall::parse(operation, stdin)?;
    Ok(Request::Journal(
        Box::new(Operation::Command(request)),
        Global::from_journal(args),
    ))
}

/// A send operation: its stdin object, then its options.
fn send_request(action: SendAction, args: &JournalArgs, stdin: &str) -> Result<Request, Failure> {
    let request = sends::SendCall::parse(action, stdin)?;
    Ok(Request::Journal(
        Box::new(Operation::Send(Box::new(request))),
        Global::from_journal(args),
    ))
}

/// A ledger operation that needs a journal: its stdin object, then its options.
fn ledger_request(
    action: LedgerAction,
    args: &JournalArgs,
    stdin: &str,
) -> Result<Request, Failure> {
    let request = ledger::LedgerCall::parse(action, stdin)?;
    Ok(Request::Journal(
        Box::new(Operation::Ledger(request)),
        Global::from_journal(args),
    ))
}

/// `demo` with its target resolved against the environment.
fn demo_request(args: demo::DemoArgs) -> Request {
    let options = Global::from_target(&args.target.target());
    let demo = demo::DemoOptions {
        commands: args.commands,
        workers: args.workers,
        seed: args.seed,
        keep: args.keep,
        project: options.project,
        database: options.database,
    };
    Request::Demo(options.emulator_host, demo)
}

/// Prints the completion script of `shell` for the whole command line.
fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut command = <super::args::Args as clap::CommandFactory>::command();
    clap_complete::generate(
        shell,
        &mut command,
        "command-journal",
        &mut std::io::stdout(),
    );
    Exit::Success.into()
}
