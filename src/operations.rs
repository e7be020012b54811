//! The journal's operations, one module per concept. Each function prepares the
//! core's transition from the caller's input and the time the [`Engine`] captures, and
//! runs it; [`Journal`](crate::Journal)'s methods delegate to them in one line.

pub(crate) mod execute;
pub(crate) mod lease;
pub(crate) mod ledger;
pub(crate) mod pending;
pub(crate) mod recover;
pub(crate) mod results;
pub(crate) mod sends;

pub(crate) use crate::engine::Engine;
