//! Every operation is traced under its own span name.

use crate::runner::Concurrency;
use command_journal_core::tools::transaction::OperationName;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata};

/// A subscriber that enables every span, so that each one keeps its metadata.
struct EveryItem;

impl tracing::Subscriber for EveryItem {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn every_operation_is_traced_under_its_own_name() {
    tracing::subscriber::with_default(EveryItem, || {
        let mut names = std::collections::BTreeSet::new();
        for op in OperationName::ALL {
            let span = super::operation_span(op, Concurrency::Preconditions);
            let name = span.metadata().map(|m| m.name());
            assert_eq!(name, Some(op.as_str()), "{op:?}");
            assert_eq!(format!("journal.{}", op.label()), op.as_str());
            assert!(names.insert(op.as_str()), "{op:?} shares a name");
        }
    });
}
