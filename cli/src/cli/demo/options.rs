//! `demo`'s command-line options, with their limits, and how the demo names this
//! binary in the commands it prints.

/// The most commands `--commands` accepts: the workload holds every command in memory.
pub const MAX_COMMANDS: u64 = 2_000;
/// The most workers `--workers` accepts: each round spawns commands × workers tasks.
pub const MAX_WORKERS: u64 = 16;

/// `demo`'s options, as parsed.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// Commands in the workload, 1 to 2000.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=MAX_COMMANDS))]
    pub commands: u64,
    /// Workers sent at each unfinished command per round, 1 to 16.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=MAX_WORKERS))]
    pub workers: u64,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// Leave the emulator running afterwards, print how to inspect the journal,
    /// and stop it on Ctrl-C or SIGTERM.
    #[arg(long)]
    pub keep: bool,
    /// The project, database and emulator to use.
    #[command(flatten)]
    pub target: DemoTarget,
}

/// Where the demo runs.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Firestore")]
pub struct DemoTarget {
    /// The project to run in (default: a fresh `demo-…` project).
    #[arg(long, value_name = "ID")]
    pub project: Option<String>,
    /// An emulator to use instead of starting one (default: FIRESTORE_EMULATOR_HOST).
    #[arg(long, value_name = "HOST:PORT")]
    pub emulator_host: Option<String>,
    /// Firestore database id (default: FIRESTORE_DATABASE, else `(default)`).
    #[arg(long, value_name = "ID")]
    pub database: Option<String>,
    /// Log format on stderr, when RUST_LOG enables logging (off by default) [default: text].
    #[arg(long, value_enum)]
    pub log_format: Option<crate::cli::target::LogFormat>,
}

impl DemoTarget {
    /// The same options as a subcommand's target.
    pub fn target(&self) -> crate::cli::target::TargetArgs {
        crate::cli::target::TargetArgs {
            project: self.project.clone(),
            emulator_host: self.emulator_host.clone(),
            database: self.database.clone(),
            log_format: self.log_format,
        }
    }
}

/// How to run this binary again as printed: `command-journal` when that name on
/// `PATH` is this executable, otherwise its path (relative to the current directory
/// when below it, as `target/release/command-journal` after `cargo run --release`).
pub fn invocation() -> String {
    let Ok(me) = std::env::current_exe().and_then(std::fs::canonicalize) else {
        return "command-journal".to_owned();
    };
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join("command-journal"))
        .find(|candidate| candidate.is_file())
        .and_then(|candidate| std::fs::canonicalize(candidate).ok());
    if on_path.as_ref() == Some(&me) {
        return "command-journal".to_owned();
    }
    let shown = std::env::current_dir()
        .ok()
        .and_then(|cwd| me.strip_prefix(cwd).ok().map(std::path::Path::to_path_buf))
        .unwrap_or(me);
    let text = shown.display().to_string();
    if text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b))
    {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}
