//! The verified caller: the journal's caller id rule, and never printed.

use super::*;

#[test]
fn a_caller_follows_the_journals_rule_and_never_prints_its_id() {
    let caller = VerifiedCaller::new(CallerScopeKind::Member, "CANARYuid_9f3a").expect("valid");
    let printed = format!("{caller:?}");
    assert!(!printed.contains("CANARY"), "{printed}");
    assert_eq!(printed, "VerifiedCaller { kind: Member, .. }");
    for id in ["", "a b", "uid@example", &"a".repeat(129)] {
        assert_eq!(
            VerifiedCaller::new(CallerScopeKind::Member, id),
            Err(JournalError::invalid("callerId")),
            "{id}"
        );
    }
}
