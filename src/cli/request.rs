//! What the command line asks for, parsed in full (each stdin object validated into
//! its typed request) before anything runs, and the one function that runs it.

use super::args::{Cmd, JournalArgs, LedgerCmd, SendCmd};
use super::commands::{self, Operation};
use super::exit::{self, Exit};
use super::input::Failure;
use super::ledger::{self, LedgerAction};
use super::rules::RulesCmd;
use super::schema::Subject;
use super::sends::{self, SendAction};
use super::{Global, demo, dev_token, emulator, explain, identity, rules, verify};
use crate::ledger::FingerprintInput;
use std::process::ExitCode;

/// One subcommand, ready to run: stdin already read and validated where it is read.
pub enum Request {
    /// `identity`.
    Identity(identity::Request),
    /// `ledger fingerprint`.
    Fingerprint(FingerprintInput),
    /// `register`, `acquire`, `start`, `complete`, `fail`, `status`.
    Journal(commands::Request, Global),
    /// `send begin | outcome | reconcile`.
    Send(sends::Request, Global),
    /// `ledger accept | replay | link`.
    Ledger(ledger::Request, Global),
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
        let journal = |operation, args: JournalArgs, stdin: String| {
            let request = commands::Request::parse(operation, &stdin)?;
            Ok(Self::Journal(request, Global::from_journal(&args)))
        };
        Ok(match command {
            Cmd::Identity => Self::Identity(identity::Request::parse(&stdin())?),
            Cmd::Register(args) => return journal(Operation::Register, args, stdin()),
            Cmd::Acquire(args) => return journal(Operation::Acquire, args, stdin()),
            Cmd::Start(args) => return journal(Operation::Start, args, stdin()),
            Cmd::Complete(args) => return journal(Operation::Complete, args, stdin()),
            Cmd::Fail(args) => return journal(Operation::Fail, args, stdin()),
            Cmd::Status(args) => return journal(Operation::Status, args, stdin()),
            Cmd::Send { action } => {
                let (action, args) = match action {
                    SendCmd::Begin(args) => (SendAction::Begin, args),
                    SendCmd::Outcome(args) => (SendAction::Outcome, args),
                    SendCmd::Reconcile(args) => (SendAction::Reconcile, args),
                };
                let options = Global::from_journal(&args);
                Self::Send(sends::Request::parse(action, &stdin())?, options)
            }
            Cmd::Ledger { action } => {
                let (action, args) = match action {
                    LedgerCmd::Fingerprint => {
                        return Ok(Self::Fingerprint(ledger::parse_fingerprint(&stdin())?));
                    }
                    LedgerCmd::Accept(args) => (LedgerAction::Accept, args),
                    LedgerCmd::Replay(args) => (LedgerAction::Replay, args),
                    LedgerCmd::Link(args) => (LedgerAction::Link, args),
                };
                let options = Global::from_journal(&args);
                Self::Ledger(ledger::Request::parse(action, &stdin())?, options)
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
            Self::Journal(request, options) => match options.journal().await {
                Ok(journal) => exit::report(request.execute(&journal).await),
                Err(error) => exit::report(Err(error)),
            },
            Self::Send(request, options) => match options.journal().await {
                Ok(journal) => exit::report(request.execute(&journal).await),
                Err(error) => exit::report(Err(error)),
            },
            Self::Ledger(request, options) => match options.journal().await {
                Ok(journal) => exit::report(request.execute(&journal).await),
                Err(error) => exit::report(Err(error)),
            },
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
