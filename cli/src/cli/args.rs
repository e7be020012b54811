//! The command line, as clap parses it: each subcommand carries only the options it
//! uses, and those that read stdin lead their `--help` with what they do and the
//! object they read.
//!
//! The Firestore options may also come before the subcommand
//! (`command-journal --project P verify`); the top-level `--help` lists them, and they
//! are refused for a subcommand that does not use them.

use super::schema::Subject;
pub use super::target::{ConcurrencyArg, JournalArgs, LogFormat, TargetArgs};
use clap::{Parser, Subcommand};

/// The help layout of a subcommand that reads stdin: what it does, its stdin object,
/// then usage and options.
const STDIN_HELP: &str =
    "{about-with-newline}\n{before-help}\n{usage-heading} {usage}\n\n{all-args}{after-help}";

/// The whole command line.
#[derive(Debug, Parser)]
#[command(
    name = "command-journal",
    version,
    about = "At-most-once payment and ledger commands on Firestore",
    after_help = super::exit::Exit::after_help()
)]
pub struct Args {
    /// Firestore options given before the subcommand (see `Before`).
    #[command(flatten)]
    pub before: Before,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Cmd,
}

/// The Firestore options accepted before the subcommand, for the subcommands that use
/// them (each subcommand's `--help` shows the ones it takes, after it).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(
    next_help_heading = "Firestore options (for a subcommand that takes them; also after it)"
)]
pub struct Before {
    /// Firestore project id (default: GOOGLE_CLOUD_PROJECT, else GCLOUD_PROJECT, else,
    /// for production, the project of the Application Default Credentials).
    #[arg(long, value_name = "ID")]
    pub project: Option<String>,
    /// The emulator to use (default: FIRESTORE_EMULATOR_HOST; without either, production
    /// Firestore with Application Default Credentials).
    #[arg(long, value_name = "HOST:PORT")]
    pub emulator_host: Option<String>,
    /// Firestore database id (default: FIRESTORE_DATABASE, else `(default)`).
    #[arg(long, value_name = "ID")]
    pub database: Option<String>,
    /// How operations stay consistent [default: preconditions].
    #[arg(long, value_enum)]
    pub concurrency: Option<ConcurrencyArg>,
    /// Replace the trusted clock (RFC 3339); refused unless the target is an emulator.
    #[arg(long, value_name = "RFC3339")]
    pub at: Option<String>,
    /// Log format on stderr, when RUST_LOG enables logging (off by default) [default: text].
    #[arg(long, value_enum)]
    pub log_format: Option<LogFormat>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Print the derived identity of the command on stdin (needs no Firestore).
    #[command(help_template = STDIN_HELP, before_help = Subject::Identity.help())]
    Identity,
    /// Register the command on stdin exactly once.
    #[command(help_template = STDIN_HELP, before_help = Subject::Register.help())]
    Register(JournalArgs),
    /// Acquire the command's lease for `leaseId`.
    #[command(help_template = STDIN_HELP, before_help = Subject::Acquire.help())]
    Acquire(JournalArgs),
    /// Register the command if needed and acquire its lease for `leaseId`, in one
    /// operation (1 RPC for a new command).
    #[command(help_template = STDIN_HELP, before_help = Subject::Start.help())]
    Start(JournalArgs),
    /// Record success for the holder at `expectedFenceEpoch`.
    #[command(help_template = STDIN_HELP, before_help = Subject::Complete.help())]
    Complete(JournalArgs),
    /// Record final failure for the holder at `expectedFenceEpoch`.
    #[command(help_template = STDIN_HELP, before_help = Subject::Fail.help())]
    Fail(JournalArgs),
    /// Print the command's redacted state, revision and fence.
    #[command(help_template = STDIN_HELP, before_help = Subject::Status.help())]
    Status(JournalArgs),
    /// Provider sends: `begin` (a permit before the POST), `outcome`, `reconcile`.
    Send {
        /// Which send operation.
        #[command(subcommand)]
        action: SendCmd,
    },
    /// Ledger reservations: `fingerprint`, `accept`, `replay`, `link`.
    Ledger {
        /// Which ledger operation.
        #[command(subcommand)]
        action: LedgerCmd,
    },
    /// Print every command waiting for someone (a lease that expired without a
    /// terminal transition), one JSON line each with its commandKeyHash, send state
    /// and what would move it on; writes nothing.
    Pending {
        /// Only the commands of key range INDEX of COUNT (`0/2`, `1/2`): the ranges of
        /// one COUNT partition the key-hash space, as the recovery job's tasks split
        /// it (CLOUD_RUN_TASK_INDEX of CLOUD_RUN_TASK_COUNT).
        #[arg(long, value_name = "INDEX/COUNT")]
        key_range: Option<String>,
        /// Which Firestore, and how.
        #[command(flatten)]
        journal: JournalArgs,
    },
    /// Scan the whole journal, print every broken invariant, write nothing (exit 5 if
    /// any; exit 7 if it scanned no journal document at all).
    Verify {
        /// Exit 0 even when the project and database hold no journal document.
        #[arg(long)]
        allow_empty: bool,
        /// Split the scan into this many consistent ranges (1 to 4096), each read at
        /// its own read time: for journals that take longer than the read-time
        /// retention (one hour without point-in-time recovery) to scan.
        #[arg(long, default_value = "1", allow_hyphen_values = true)]
        ranges: String,
        /// Which Firestore.
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Run the local emulator with firestore.rules in the foreground; prints
    /// {"host","pid","rules"} and stops on Ctrl-C or SIGTERM.
    Emulator(super::emulator::EmulatorArgs),
    /// Print an unsigned Firebase ID token for the Auth emulator's conventions, for a
    /// `demo-` project only (the checkout service accepts it only with
    /// FIREBASE_AUTH_EMULATOR_HOST set).
    DevToken(super::dev_token::DevTokenArgs),
    /// Security rules: `check` that a ruleset keeps every journal document server-only.
    Rules {
        /// Which rules operation.
        #[command(subcommand)]
        action: super::rules::RulesCmd,
    },
    /// Run a worked workload on a private emulator and print what happened.
    Demo(super::demo::DemoArgs),
    /// Explain an error code or a verify finding code (all of them without CODE).
    Explain(super::explain::ExplainArgs),
    /// Print the example stdin object of a subcommand (the one its --help shows).
    Example {
        /// Which subcommand.
        #[command(subcommand)]
        of: ExampleOf,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
}

/// `send` subcommands.
#[derive(Debug, Subcommand)]
pub enum SendCmd {
    /// Record the attempt as sending before the provider call and print the permit.
    #[command(help_template = STDIN_HELP, before_help = Subject::SendBegin.help())]
    Begin(JournalArgs),
    /// Record what the provider answered the attempt.
    #[command(help_template = STDIN_HELP, before_help = Subject::ProviderAnswer.help())]
    Outcome(JournalArgs),
    /// Record verified provider evidence about an attempt whose outcome is unknown.
    #[command(help_template = STDIN_HELP, before_help = Subject::SendReconcile.help())]
    Reconcile(JournalArgs),
}

/// `ledger` subcommands.
#[derive(Debug, Subcommand)]
pub enum LedgerCmd {
    /// Print the fingerprint, its version and the exact canonical text hashed (needs no
    /// Firestore).
    #[command(help_template = STDIN_HELP, before_help = Subject::LedgerFingerprint.help())]
    Fingerprint,
    /// Accept a ledger command: its reservation and every effect, atomically.
    #[command(help_template = STDIN_HELP, before_help = Subject::LedgerAccept.help())]
    Accept(JournalArgs),
    /// Replay a reserved charge or reversal before pricing.
    #[command(help_template = STDIN_HELP, before_help = Subject::LedgerReplay.help())]
    Replay(JournalArgs),
    /// Link existing historical_unlinked rows to the reservation a migration proved.
    #[command(help_template = STDIN_HELP, before_help = Subject::LedgerLink.help())]
    Link(JournalArgs),
}

/// The subcommands `example` prints an input for.
#[derive(Debug, Subcommand)]
pub enum ExampleOf {
    /// `identity`'s input.
    Identity,
    /// `register`'s input.
    Register,
    /// `acquire`'s input.
    Acquire,
    /// `start`'s input.
    Start,
    /// `complete`'s input.
    Complete,
    /// `fail`'s input.
    Fail,
    /// `status`'s input.
    Status,
    /// A send subcommand's input.
    Send {
        /// Which send subcommand.
        #[command(subcommand)]
        action: ExampleSend,
    },
    /// A ledger subcommand's input.
    Ledger {
        /// Which ledger subcommand.
        #[command(subcommand)]
        action: ExampleLedger,
    },
}

/// `example send …`.
#[derive(Debug, Clone, Copy, Subcommand)]
pub enum ExampleSend {
    /// `send begin`'s input.
    Begin,
    /// `send outcome`'s input.
    Outcome,
    /// `send reconcile`'s input.
    Reconcile,
}

/// `example ledger …`.
#[derive(Debug, Clone, Copy, Subcommand)]
pub enum ExampleLedger {
    /// `ledger fingerprint`'s input.
    Fingerprint,
    /// `ledger accept`'s input.
    Accept,
    /// `ledger replay`'s input.
    Replay,
    /// `ledger link`'s input.
    Link,
}

impl ExampleOf {
    /// The stdin object it names.
    pub fn subject(&self) -> Subject {
        match self {
            Self::Identity => Subject::Identity,
            Self::Register => Subject::Register,
            Self::Acquire => Subject::Acquire,
            Self::Start => Subject::Start,
            Self::Complete => Subject::Complete,
            Self::Fail => Subject::Fail,
            Self::Status => Subject::Status,
            Self::Send { action } => match action {
                ExampleSend::Begin => Subject::SendBegin,
                ExampleSend::Outcome => Subject::ProviderAnswer,
                ExampleSend::Reconcile => Subject::SendReconcile,
            },
            Self::Ledger { action } => match action {
                ExampleLedger::Fingerprint => Subject::LedgerFingerprint,
                ExampleLedger::Accept => Subject::LedgerAccept,
                ExampleLedger::Replay => Subject::LedgerReplay,
                ExampleLedger::Link => Subject::LedgerLink,
            },
        }
    }
}

/// A Firestore option given before a subcommand that does not use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unused {
    /// The option, e.g. `--project`.
    pub option: &'static str,
}

impl Before {
    /// The first option given, if any, among those `allowed` does not list.
    fn unused(&self, allowed: &[&'static str]) -> Result<(), Unused> {
        let given = [
            ("--project", self.project.is_some()),
            ("--emulator-host", self.emulator_host.is_some()),
            ("--database", self.database.is_some()),
            ("--concurrency", self.concurrency.is_some()),
            ("--at", self.at.is_some()),
            ("--log-format", self.log_format.is_some()),
        ];
        match given
            .iter()
            .find(|(option, given)| *given && !allowed.contains(option))
        {
            Some((option, _)) => Err(Unused { option }),
            None => Ok(()),
        }
    }

    /// Fills `target`'s unset options from these.
    fn fill_target(&self, target: &mut TargetArgs) {
        fill(&mut target.project, &self.project);
        fill(&mut target.emulator_host, &self.emulator_host);
        fill(&mut target.database, &self.database);
        fill(&mut target.log_format, &self.log_format);
    }

    /// Fills `journal`'s unset options from these.
    fn fill_journal(&self, journal: &mut JournalArgs) {
        self.fill_target(&mut journal.target);
        fill(&mut journal.concurrency, &self.concurrency);
        fill(&mut journal.at, &self.at);
    }

    /// Moves the options given before the subcommand into it (an option after the
    /// subcommand wins); fails naming an option the subcommand does not use.
    pub fn apply(&self, command: &mut Cmd) -> Result<(), Unused> {
        const TARGET: [&str; 4] = ["--project", "--emulator-host", "--database", "--log-format"];
        const JOURNAL: [&str; 6] = [
            "--project",
            "--emulator-host",
            "--database",
            "--log-format",
            "--concurrency",
            "--at",
        ];
        let journal = match command {
            Cmd::Register(args)
            | Cmd::Acquire(args)
            | Cmd::Start(args)
            | Cmd::Complete(args)
            | Cmd::Fail(args)
            | Cmd::Status(args)
            | Cmd::Pending { journal: args, .. }
            | Cmd::Send {
                action: SendCmd::Begin(args) | SendCmd::Outcome(args) | SendCmd::Reconcile(args),
            }
            | Cmd::Ledger {
                action: LedgerCmd::Accept(args) | LedgerCmd::Replay(args) | LedgerCmd::Link(args),
            } => Some(args),
            _ => None,
        };
        if let Some(args) = journal {
            self.unused(&JOURNAL)?;
            self.fill_journal(args);
            return Ok(());
        }
        match command {
            Cmd::Verify { target, .. } => {
                self.unused(&TARGET)?;
                self.fill_target(target);
            }
            Cmd::Demo(demo) => {
                self.unused(&TARGET)?;
                let target = &mut demo.target;
                fill(&mut target.project, &self.project);
                fill(&mut target.emulator_host, &self.emulator_host);
                fill(&mut target.database, &self.database);
                fill(&mut target.log_format, &self.log_format);
            }
            Cmd::Rules {
                action: super::rules::RulesCmd::Check { emulator_host, .. },
            } => {
                self.unused(&["--emulator-host"])?;
                fill(emulator_host, &self.emulator_host);
            }
            _ => self.unused(&[])?,
        }
        Ok(())
    }
}

fn fill<T: Clone>(slot: &mut Option<T>, before: &Option<T>) {
    if slot.is_none() {
        slot.clone_from(before);
    }
}

impl Cmd {
    /// The `--log-format` the subcommand was given (text when it takes none).
    pub fn log_format(&self) -> LogFormat {
        let target = match self {
            Cmd::Register(args)
            | Cmd::Acquire(args)
            | Cmd::Start(args)
            | Cmd::Complete(args)
            | Cmd::Fail(args)
            | Cmd::Status(args)
            | Cmd::Pending { journal: args, .. }
            | Cmd::Send {
                action: SendCmd::Begin(args) | SendCmd::Outcome(args) | SendCmd::Reconcile(args),
            }
            | Cmd::Ledger {
                action: LedgerCmd::Accept(args) | LedgerCmd::Replay(args) | LedgerCmd::Link(args),
            } => Some(&args.target),
            Cmd::Verify { target, .. } => Some(target),
            Cmd::Demo(demo) => return demo.target.log_format.unwrap_or(LogFormat::Text),
            _ => None,
        };
        target
            .and_then(|target| target.log_format)
            .unwrap_or(LogFormat::Text)
    }
}

#[cfg(test)]
mod tests {
    use super::Args;
    use clap::Parser as _;

    /// Every Markdown file whose `sh` blocks show `command-journal` command lines.
    const DOCS: [(&str, &str); 10] = [
        ("README.md", include_str!("../../../README.md")),
        ("docs/cli.md", include_str!("../../../docs/cli.md")),
        (
            "docs/emulator.md",
            include_str!("../../../docs/emulator.md"),
        ),
        ("docs/rules.md", include_str!("../../../docs/rules.md")),
        ("docs/verify.md", include_str!("../../../docs/verify.md")),
        ("docs/ledger.md", include_str!("../../../docs/ledger.md")),
        ("docs/ci.md", include_str!("../../../docs/ci.md")),
        (
            "docs/production.md",
            include_str!("../../../docs/production.md"),
        ),
        ("docs/errors.md", include_str!("../../../docs/errors.md")),
        (
            "docs/local-service.md",
            include_str!("../../../docs/local-service.md"),
        ),
    ];

    /// The shell words of `line` up to its first comment, pipe, redirection or `&`,
    /// one list per pipeline stage (quotes removed; no expansion).
    fn stages(line: &str) -> Vec<Vec<String>> {
        let mut stages = vec![Vec::new()];
        let mut word: Option<String> = None;
        let mut quote = None;
        let mut previous = ' ';
        for c in line.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), c) => word.get_or_insert_with(String::new).push(c),
                (None, '\'' | '"') => {
                    quote = Some(c);
                    word.get_or_insert_with(String::new);
                }
                (None, '#') if previous.is_whitespace() => break,
                (None, '>' | '&' | ';') => break,
                (None, '|') => {
                    flush(&mut stages, &mut word);
                    stages.push(Vec::new());
                }
                (None, c) if c.is_whitespace() => flush(&mut stages, &mut word),
                (None, c) => word.get_or_insert_with(String::new).push(c),
            }
            previous = c;
        }
        flush(&mut stages, &mut word);
        stages
    }

    /// Ends the current word, if any, in the last stage.
    fn flush(stages: &mut [Vec<String>], word: &mut Option<String>) {
        if let (Some(word), Some(stage)) = (word.take(), stages.last_mut()) {
            stage.push(word);
        }
    }

    #[test]
    fn every_documented_command_line_parses_in_the_default_binary() {
        let mut checked = 0;
        for (file, text) in DOCS {
            for block in text.split("```sh\n").skip(1) {
                let block = block.split("```").next().unwrap_or_default();
                for line in block.lines() {
                    for words in stages(line) {
                        let named = words.first().is_some_and(|w| {
                            w == "command-journal" || w.ends_with("/command-journal")
                        });
                        if !named {
                            continue;
                        }
                        checked += 1;
                        let mut args = match Args::try_parse_from(&words) {
                            Ok(args) => args,
                            Err(error) if error.kind() == clap::error::ErrorKind::DisplayHelp => {
                                continue;
                            }
                            Err(error) => {
                                panic!("{file}: `{}` does not parse: {error}", words.join(" "))
                            }
                        };
                        assert!(
                            args.before.apply(&mut args.command).is_ok(),
                            "{file}: {line}"
                        );
                    }
                }
            }
        }
        assert!(checked >= 25, "only {checked} command lines found");
    }

    #[test]
    fn the_tokenizer_splits_pipelines_and_drops_comments() {
        assert_eq!(
            stages(r#"echo '{"a": 1}' | command-journal register --project p  # note"#),
            vec![
                vec!["echo".to_owned(), r#"{"a": 1}"#.to_owned()],
                vec![
                    "command-journal".into(),
                    "register".into(),
                    "--project".into(),
                    "p".into()
                ],
            ]
        );
        assert_eq!(
            stages("command-journal completions bash > file"),
            vec![vec![
                "command-journal".to_owned(),
                "completions".into(),
                "bash".into()
            ]]
        );
    }
}
