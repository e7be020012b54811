//! The pending listing's index held to the lifecycles, both ways: `Journal::pending`
//! finds the commands not yet settled by one collection-group query on the lifecycle's
//! indexed `state` (`docs/recovery.md`), so the verifier runs that query at the scan's
//! read time and compares what it returns with the lifecycles in state `leased` the
//! scan read. A leased lifecycle the query misses is a command `pending` would never
//! list (an index exemption, a field of another type); a document the query returns
//! that the scan did not read as a command's leased lifecycle is one `pending` would
//! list wrongly. Either is `pending_index_mismatch` at that document.

use super::report::{Finding, FindingCode};
use crate::document::fields::FieldMap;
use crate::document::lifecycle::LifecycleState;
use crate::document::value::{Value, ValueType};

/// Whether the raw lifecycle `fields` hold `state: "leased"`, as the query's equality
/// filter matches them (a string of exactly that text).
pub fn leased(fields: &FieldMap) -> bool {
    matches!(
        fields.get("state"),
        Some(Value { value_type: Some(ValueType::StringValue(s)) })
            if s == LifecycleState::Leased.as_str()
    )
}

/// The findings of one range: `scanned` the paths of the leased lifecycles the scan
/// read, `listed` the paths the query returned, both relative to the documents root.
pub fn check(mut scanned: Vec<String>, mut listed: Vec<String>) -> Vec<Finding> {
    scanned.sort_unstable();
    scanned.dedup();
    listed.sort_unstable();
    listed.dedup();
    let mut out = Vec::new();
    let (mut a, mut b) = (
        scanned.into_iter().peekable(),
        listed.into_iter().peekable(),
    );
    loop {
        let path = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(x), Some(y)) if x == y => {
                a.next();
                b.next();
                continue;
            }
            (Some(x), Some(y)) if x < y => a.next(),
            (Some(_), None) => a.next(),
            _ => b.next(),
        };
        if let Some(path) = path {
            out.push(Finding {
                code: FindingCode::PendingIndexMismatch,
                path,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn equal_sets_are_clean_and_each_difference_is_a_finding_at_its_path() {
        assert!(check(paths(&["a", "b"]), paths(&["b", "a"])).is_empty());
        assert!(check(Vec::new(), Vec::new()).is_empty());
        let found = check(paths(&["a", "c", "d"]), paths(&["b", "c", "e"]));
        let at: Vec<&str> = found.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(at, ["a", "b", "d", "e"]);
        assert!(
            found
                .iter()
                .all(|f| f.code == FindingCode::PendingIndexMismatch)
        );
    }

    #[test]
    fn only_the_exact_string_leased_is_leased() {
        let with = |value: Value| {
            let mut map = FieldMap::new();
            map.insert("state".into(), value);
            map
        };
        let text = |s: &str| Value {
            value_type: Some(ValueType::StringValue(s.to_owned())),
        };
        assert!(leased(&with(text("leased"))));
        assert!(!leased(&with(text("succeeded"))));
        assert!(!leased(&with(text("Leased"))));
        assert!(!leased(&with(Value {
            value_type: Some(ValueType::IntegerValue(1)),
        })));
        assert!(!leased(&FieldMap::new()));
    }
}
