//! The Firestore options every subcommand that talks to Firestore shares (target,
//! concurrency, clock) and the log format: their own file, so that the argument
//! parser, the demo's options and the resolved options all use them without
//! importing each other.

/// Which Firestore a subcommand talks to.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Firestore")]
pub struct TargetArgs {
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
    /// Log format on stderr, when RUST_LOG enables logging (off by default) [default: text].
    #[arg(long, value_enum)]
    pub log_format: Option<LogFormat>,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The options of a journal operation: its target, mode and clock.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct JournalArgs {
    /// Which Firestore.
    #[command(flatten)]
    pub target: TargetArgs,
    /// How operations stay consistent [default: preconditions].
    #[arg(long, value_enum, help_heading = "Firestore")]
    pub concurrency: Option<ConcurrencyArg>,
    /// Replace the trusted clock (RFC 3339); refused unless the target is an emulator.
    #[arg(long, value_name = "RFC3339", help_heading = "Firestore")]
    pub at: Option<String>,
}

/// `--concurrency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ConcurrencyArg {
    /// One read, precondition-guarded commit; no server lock.
    Preconditions,
    /// Firestore read-write transactions.
    Transaction,
}
