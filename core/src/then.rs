//! Two transitions decided as one, over one snapshot, for one commit: the first over
//! what was read, the second (built from the first's answer) over the state the
//! first's writes leave. Transaction mode uses it to open a new command (the lease
//! and the permit) in one transaction where two would read the same documents twice.
//!
//! The second never sees a document the first did not leave: a path the first
//! writes reads as written, its commit times dropped (the commit will change them);
//! every other path reads as the snapshot holds it. The writes merge into one commit:
//! a path both write is written once, with the second's fields, as a creation when
//! the first created it; a second creation of a path the first wrote, or an assertion
//! about it, is refused (`internal`): no transition of the journal does either.

use crate::error::JournalError;
use crate::transaction::{Decision, Snapshot, Transition, Write};

/// What the second transition answered, when the first's answer asked for one.
pub(crate) type Second<B> = Option<Result<<B as Transition>::Output, JournalError>>;

/// Decides `first` over `snapshot`, then the transition `then` builds from its answer
/// (none: the first alone) over the state the first's writes leave; one decision of
/// both. A refusal of the first is the whole refusal; a refusal of the second is its
/// answer beside the first's, whose writes still commit. A follow-up read of either
/// is the whole decision's.
pub(crate) fn decide_then<A, B, F>(
    first: &A,
    snapshot: &Snapshot,
    then: F,
) -> Decision<(A::Output, Second<B>)>
where
    A: Transition,
    B: Transition,
    F: FnOnce(&A::Output) -> Option<B>,
{
    let (writes, output) = match first.decide(snapshot) {
        Decision::Read(paths) => return Decision::Read(paths),
        Decision::Reject(error) => return Decision::Reject(error),
        Decision::Observe(output) => (Vec::new(), output),
        Decision::Mutate(writes, output) => (writes, output),
    };
    let Some(second) = then(&output) else {
        return finish(writes, (output, None));
    };
    let after = overlay(snapshot, &writes);
    match second.decide(&after) {
        Decision::Read(paths) => Decision::Read(paths),
        Decision::Reject(error) => finish(writes, (output, Some(Err(error)))),
        Decision::Observe(answer) => finish(writes, (output, Some(Ok(answer)))),
        Decision::Mutate(more, answer) => match merge(writes, more) {
            Ok(writes) => finish(writes, (output, Some(Ok(answer)))),
            Err(error) => Decision::Reject(error),
        },
    }
}

fn finish<O>(writes: Vec<Write>, output: O) -> Decision<O> {
    if writes.is_empty() {
        Decision::Observe(output)
    } else {
        Decision::Mutate(writes, output)
    }
}

/// `snapshot` with `writes` applied: written documents read as written, without
/// commit times.
fn overlay(snapshot: &Snapshot, writes: &[Write]) -> Snapshot {
    let mut after = snapshot.clone();
    for write in writes {
        match write {
            Write::Create { path, fields } | Write::Replace { path, fields } => {
                after.docs.insert(path.clone(), Some(fields.clone()));
                after.stamps.remove(path);
            }
            Write::AssertAbsent { .. } | Write::AssertUnchanged { .. } => {}
        }
    }
    after
}

/// The first's writes followed by the second's, one write per path.
fn merge(mut writes: Vec<Write>, more: Vec<Write>) -> Result<Vec<Write>, JournalError> {
    for write in more {
        let Some(index) = writes.iter().position(|w| w.path() == write.path()) else {
            writes.push(write);
            continue;
        };
        let created = matches!(writes[index], Write::Create { .. });
        writes[index] = match (write, created) {
            (Write::Replace { path, fields }, true) => Write::Create { path, fields },
            (Write::Replace { path, fields }, false) => Write::Replace { path, fields },
            _ => {
                return Err(JournalError::internal(
                    "a chained transition created or asserted a document the first wrote",
                ));
            }
        };
    }
    Ok(writes)
}
