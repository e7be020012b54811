//! The recovery checkpoints (`recoveryCheckpoints/{index}-of-{count}`), each checked
//! on its own: a document whose id names no key range, or one stored below a
//! checkpoint, is not the journal's; a checkpoint that fails its strict codec (its
//! range disagreeing with its id, its position outside the range) would stop every
//! recovery run of its range.

use super::keys::segments;
use super::report::{Finding, FindingCode};
use super::stored::StoredDoc;
use crate::key_range::KeyRange;
use crate::recovery::checkpoint::{COLLECTION, Checkpoint};

/// The findings of one document read below `recoveryCheckpoints`.
pub fn check(doc: &StoredDoc) -> Vec<Finding> {
    let finding = |code| {
        vec![Finding {
            code,
            path: doc.path.clone(),
        }]
    };
    match segments(&doc.path) {
        Some([COLLECTION, id]) if KeyRange::from_id(id).is_some() => {
            match Checkpoint::parse(id, &doc.fields) {
                Ok(_) => Vec::new(),
                Err(_) => finding(FindingCode::MalformedRecoveryCheckpoint),
            }
        }
        _ => finding(FindingCode::UnexpectedDocument),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Digest;
    use crate::document::fields;
    use crate::time::Timestamp;
    use crate::verify::stored::WriteTime;

    fn valid() -> Checkpoint {
        Checkpoint {
            range: KeyRange::new(1, 2).expect("range"),
            after: Digest::parse(&"c".repeat(64)).expect("hash"),
            recorded_at: Timestamp::from_micros(1_900_000_000_000_000).expect("time"),
        }
    }

    fn at(path: &str, map: fields::FieldMap) -> StoredDoc {
        StoredDoc::new(path, map, WriteTime::default())
    }

    #[test]
    fn a_checkpoint_is_clean_and_anything_else_is_a_finding_at_its_path() {
        let codes = |doc: StoredDoc| -> Vec<FindingCode> {
            check(&doc).into_iter().map(|f| f.code).collect()
        };
        assert!(codes(at("recoveryCheckpoints/1-of-2", valid().encode())).is_empty());
        // Stored under another range's id: its position is outside that range.
        assert_eq!(
            codes(at("recoveryCheckpoints/0-of-2", valid().encode())),
            [FindingCode::MalformedRecoveryCheckpoint]
        );
        let mut extra = valid().encode();
        extra.insert("note".into(), fields::string("x"));
        assert_eq!(
            codes(at("recoveryCheckpoints/1-of-2", extra)),
            [FindingCode::MalformedRecoveryCheckpoint]
        );
        for stray in [
            "recoveryCheckpoints/latest",
            "recoveryCheckpoints/01-of-2",
            "recoveryCheckpoints/1-of-2/history/a",
        ] {
            assert_eq!(
                codes(at(stray, valid().encode())),
                [FindingCode::UnexpectedDocument],
                "{stray}"
            );
        }
    }
}
