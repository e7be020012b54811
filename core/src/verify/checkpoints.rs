//! The recovery checkpoints (`recoveryCheckpoints/{index}-of-{count}`), each checked
//! on its own: a document whose id names no key range, or one stored below a
//! checkpoint, is not the journal's; a checkpoint that fails its strict codec (its
//! range disagreeing with its id, its position outside the range) would stop every
//! recovery run of its range. The evidence checkpoints
//! (`evidenceCheckpoints/{digest of the feed's name}`) likewise: an id that is no
//! digest, or a document below one, is not the journal's; one that fails its codec
//! would stop every backfill run of its feed.

use super::keys::segments;
use super::report::{Finding, FindingCode};
use super::stored::StoredDoc;
use crate::digest::Digest;
use crate::evidence::checkpoint::{COLLECTION as EVIDENCE, EvidenceCheckpoint};
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

/// The findings of one document read below `evidenceCheckpoints`.
pub fn check_evidence(doc: &StoredDoc) -> Vec<Finding> {
    let code = match segments(&doc.path) {
        Some([EVIDENCE, id]) if Digest::parse(id).is_some() => {
            match EvidenceCheckpoint::parse(&doc.fields) {
                Ok(_) => return Vec::new(),
                Err(_) => FindingCode::MalformedEvidenceCheckpoint,
            }
        }
        _ => FindingCode::UnexpectedDocument,
    };
    vec![Finding {
        code,
        path: doc.path.clone(),
    }]
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

    #[test]
    fn an_evidence_checkpoint_is_clean_and_anything_else_is_a_finding_at_its_path() {
        let codes = |doc: StoredDoc| -> Vec<FindingCode> {
            check_evidence(&doc).into_iter().map(|f| f.code).collect()
        };
        let valid = EvidenceCheckpoint {
            list_from: 1_899_999_700,
            recorded_at: Timestamp::from_micros(1_900_000_000_000_000).expect("time"),
        }
        .encode();
        let id = "d".repeat(64);
        let path = format!("evidenceCheckpoints/{id}");
        assert!(codes(at(&path, valid.clone())).is_empty());
        let mut late = valid.clone();
        late.insert("listFrom".into(), fields::int(1_900_000_001));
        assert_eq!(
            codes(at(&path, late)),
            [FindingCode::MalformedEvidenceCheckpoint]
        );
        let mut extra = valid.clone();
        extra.insert("feed".into(), fields::string("stripe-events:acct_x:test"));
        assert_eq!(
            codes(at(&path, extra)),
            [FindingCode::MalformedEvidenceCheckpoint]
        );
        for stray in [
            "evidenceCheckpoints/stripe".to_owned(),
            format!("evidenceCheckpoints/{}", "D".repeat(64)),
            format!("{path}/history/a"),
        ] {
            assert_eq!(
                codes(at(&stray, valid.clone())),
                [FindingCode::UnexpectedDocument],
                "{stray}"
            );
        }
    }
}
