//! The shape of one `explain` entry: what a code is, what it means and what to do,
//! and the constructors the table is written with.

use crate::cli::exit::Exit;

/// What a code is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An error answer, in its class.
    Error(&'static str),
    /// A finding of `verify`.
    Finding,
}

/// One code: what it means and what to do.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The stable snake_case code.
    pub code: &'static str,
    /// Error (with its class) or finding.
    pub kind: Kind,
    /// The CLI's exit code.
    pub exit: Exit,
    /// What happened.
    pub meaning: &'static str,
    /// What to do about it.
    pub action: &'static str,
}

pub(super) const fn error(
    code: &'static str,
    class: &'static str,
    exit: Exit,
    meaning: &'static str,
    action: &'static str,
) -> Entry {
    Entry {
        code,
        kind: Kind::Error(class),
        exit,
        meaning,
        action,
    }
}

pub(super) const fn finding(
    code: &'static str,
    meaning: &'static str,
    action: &'static str,
) -> Entry {
    Entry {
        code,
        kind: Kind::Finding,
        exit: Exit::Broken,
        meaning,
        action,
    }
}
