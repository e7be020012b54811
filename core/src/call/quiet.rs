//! A transition run outside every operation (a tool's, a test helper's): the call
//! machine runs it as it runs the journal's own, and its answer carries no outcome
//! label, since such a call records no metric.

use super::labels::Labelled;
use crate::transaction::{Decision, OperationName, Snapshot, Transition};

/// `T` run as a tool's transition: the same reads, decision and commit, its answer
/// wrapped in [`Untold`].
pub struct Quiet<T>(pub T);

/// The answer of a [`Quiet`] transition: the inner answer, labelled none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untold<O>(pub O);

impl<O> Labelled for Untold<O> {
    fn label(&self) -> &'static str {
        "untold"
    }
}

impl<T: Transition> Transition for Quiet<T> {
    type Output = Untold<T::Output>;

    fn paths(&self) -> Vec<String> {
        self.0.paths()
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<Self::Output> {
        self.0.decide(snapshot).map(Untold)
    }

    fn name(&self) -> OperationName {
        self.0.name()
    }

    fn blind_create(&self) -> bool {
        self.0.blind_create()
    }

    fn first_read_unlocked(&self) -> bool {
        self.0.first_read_unlocked()
    }
}

/// A borrowed transition is the transition: a caller keeps what it lends a call.
impl<T: Transition + ?Sized> Transition for &T {
    type Output = T::Output;

    fn paths(&self) -> Vec<String> {
        (**self).paths()
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<T::Output> {
        (**self).decide(snapshot)
    }

    fn name(&self) -> OperationName {
        (**self).name()
    }

    fn blind_create(&self) -> bool {
        (**self).blind_create()
    }

    fn first_read_unlocked(&self) -> bool {
        (**self).first_read_unlocked()
    }
}
