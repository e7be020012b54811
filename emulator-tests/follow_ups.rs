//! The runner's bound on follow-up reads, on the emulator: a `decide` may ask for
//! at most `MAX_FOLLOW_UP_READS` more reads in one attempt; one that keeps asking is
//! refused as `journal_corrupt` after exactly that many, with nothing written.

use super::support;
use command_journal::{Concurrency, Journal, JournalError};
use command_journal_core::tools::transaction::{
    Decision, MAX_FOLLOW_UP_READS, OperationName, Snapshot, Transition,
};

/// Reads `probe/0`, then asks for `probe/1`, `probe/2`, … until it has read
/// `answer_after` follow-ups (never, when `None`), then observes.
struct Probe {
    answer_after: Option<usize>,
}

impl Transition for Probe {
    type Output = usize;

    fn name(&self) -> OperationName {
        OperationName::Status
    }

    fn paths(&self) -> Vec<String> {
        vec!["probe/0".to_owned()]
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<usize> {
        let read = (0..)
            .take_while(|n| snapshot.was_read(&format!("probe/{n}")))
            .count();
        match self.answer_after {
            Some(limit) if read > limit => Decision::Observe(read - 1),
            _ => Decision::Read(vec![format!("probe/{read}")]),
        }
    }
}

#[tokio::test]
async fn follow_up_reads_stop_at_the_documented_limit_in_both_modes() {
    let connection = support::fresh_connection().await;
    for mode in [Concurrency::Preconditions, Concurrency::Transaction] {
        let journal = Journal::new(connection.clone()).with_concurrency(mode);

        let before = journal.stats();
        let answered = journal
            .run_transition(&Probe {
                answer_after: Some(MAX_FOLLOW_UP_READS),
            })
            .await;
        assert_eq!(answered, Ok(MAX_FOLLOW_UP_READS), "{mode:?}");
        let used = journal.stats().since(&before);
        assert_eq!(used.batch_gets, 1 + MAX_FOLLOW_UP_READS as u64, "{mode:?}");

        let before = journal.stats();
        let refused = journal.run_transition(&Probe { answer_after: None }).await;
        assert!(
            matches!(refused, Err(JournalError::JournalCorrupt { .. })),
            "{mode:?}: {refused:?}"
        );
        let used = journal.stats().since(&before);
        assert_eq!(
            (used.attempts, used.batch_gets, used.commits),
            (1, 1 + MAX_FOLLOW_UP_READS as u64, 0),
            "{mode:?}: one attempt, the first read and exactly the allowed follow-ups"
        );
    }
}
