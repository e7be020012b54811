//! `command-journal explain [CODE]`: what an error code or a verify finding code
//! means and what to do about it, from the one table below. docs/errors.md is this
//! table as `explain --markdown` prints it; a test keeps the two equal, and another
//! that every code the library can answer has its entry.

mod entries;
mod entry;

pub use entries::ENTRIES;
pub use entry::{Entry, Kind};

use super::exit::Exit;
use super::input::{InvalidInput, Problem};
use std::process::ExitCode;

/// `explain`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct ExplainArgs {
    /// The code, e.g. `stale_fence` or `audit_gap` (all of them when absent).
    pub code: Option<String>,
    /// Print the whole table as Markdown (docs/errors.md).
    #[arg(long, conflicts_with = "code")]
    pub markdown: bool,
}

/// The entry of `code`.
pub fn lookup(code: &str) -> Option<&'static Entry> {
    ENTRIES.iter().find(|entry| entry.code == code)
}

impl Entry {
    /// `error (class)` or `verify finding`.
    fn kind_text(&self) -> String {
        match self.kind {
            Kind::Error(class) => format!("error, class {class}"),
            Kind::Finding => "verify finding".to_owned(),
        }
    }

    /// The text `explain CODE` prints.
    pub fn text(&self) -> String {
        format!(
            "{}: {}, exit {}\n  {}\n  What to do: {}\n",
            self.code,
            self.kind_text(),
            self.exit,
            self.meaning,
            self.action
        )
    }
}

/// The whole table as Markdown, as docs/errors.md holds it.
pub fn markdown() -> String {
    let mut text =
        String::from("| code | kind | exit | meaning | what to do |\n|---|---|---|---|---|\n");
    for entry in ENTRIES {
        let kind = match entry.kind {
            Kind::Error(class) => format!("error ({class})"),
            Kind::Finding => "finding".to_owned(),
        };
        text += &format!(
            "| `{}` | {kind} | {} | {} | {} |\n",
            entry.code, entry.exit, entry.meaning, entry.action
        );
    }
    text
}

/// Prints the entry of the code asked for, every entry, or the Markdown table; an
/// unknown code is `invalid_input` on `code` (exit 2).
pub fn run(args: &ExplainArgs) -> ExitCode {
    if args.markdown {
        print!("{}", markdown());
        return Exit::Success.into();
    }
    match &args.code {
        None => {
            for entry in ENTRIES {
                println!("{}", entry.text());
            }
            Exit::Success.into()
        }
        Some(code) => match lookup(code.trim()) {
            Some(entry) => {
                print!("{}", entry.text());
                Exit::Success.into()
            }
            None => {
                let failure = InvalidInput {
                    field: "code".to_owned(),
                    problem: Problem::Invalid,
                    expected: "an error or verify finding code; `command-journal explain` \
                               lists them all",
                };
                println!("{}", super::exit::invalid_line(&failure));
                Exit::Input.into()
            }
        },
    }
}

#[cfg(test)]
mod tests;
