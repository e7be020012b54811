//! Pure invariant checks over ledger reservations and their effects: lineage, the
//! strict codecs, the structural links between a reservation and its rows, whether the
//! rows still match what the reservation recorded (its integrity digest and, where the
//! rows determine it, its fingerprint; see `crate::ledger::integrity`), and, handed
//! to the cross-document checks, the correction bounds below the rows and the
//! reversals' claims on them.

use super::cross_checks::CrossChecks;
use super::keys::segments;
use super::report::{Finding, FindingCode};
use super::stored::StoredDoc;
use crate::digest::Digest;
use crate::document::fields::FieldMap;
use crate::document::value::ValueType;
use crate::ledger::Lineage;
use crate::ledger::correction::entry::{self, CorrectionEntry};
use crate::ledger::correction::{CorrectionBound, magnitude};
use crate::ledger::effect::{self, LedgerEffect};
use crate::ledger::integrity::Contradiction;
use crate::ledger::reservation::{self, ReservationDocument};
use crate::ledger::stored;

fn finding(code: FindingCode, path: &str) -> Finding {
    Finding {
        code,
        path: path.to_owned(),
    }
}

fn id_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether a field is a null (`Some(true)`), a non-null value (`Some(false)`), or absent.
fn is_null(fields: &FieldMap, name: &str) -> Option<bool> {
    fields
        .get(name)
        .map(|v| matches!(v.value_type, Some(ValueType::NullValue(_))))
}

/// The lineage rules on the raw link fields: `canonical_linked` has a reservation and
/// no migration, `historical_linked` a reservation and a migration,
/// `historical_unlinked` neither (nor an index). `None` when the lineage field itself
/// is unreadable (then the strict codec reports the document as malformed).
fn lineage_holds(fields: &FieldMap) -> Option<bool> {
    let lineage = match fields.get("lineage").and_then(|v| v.value_type.as_ref()) {
        Some(ValueType::StringValue(s)) => s.as_str(),
        _ => return None,
    };
    let reservation = is_null(fields, "reservationId")?;
    let migration = is_null(fields, "migrationId")?;
    let index = is_null(fields, "effectIndex")?;
    Some(match lineage {
        "canonical_linked" => !reservation && migration && !index,
        "historical_linked" => !reservation && !migration && !index,
        "historical_unlinked" => reservation && migration && index,
        _ => return None,
    })
}

/// Lineage first (the more specific finding), then the strict codec.
fn check_effect(doc: &StoredDoc) -> Result<LedgerEffect, Finding> {
    if lineage_holds(&doc.fields) == Some(false) {
        return Err(finding(FindingCode::LineageViolation, &doc.path));
    }
    LedgerEffect::parse(id_of(&doc.path), &doc.fields)
        .map_err(|_| finding(FindingCode::MalformedDocument, &doc.path))
}

/// A document below an id not derived from a reservation: a `historical_unlinked` row,
/// or an imported row a migration linked (whose link `cross.links` checks once the scan
/// is complete), never a canonical row; or the correction bound of such a row, which
/// sorts right after it and its log entries (`cross.corrections` checks both once the
/// scan is complete).
pub fn check_standalone_effect(doc: &StoredDoc, cross: &mut CrossChecks) -> Vec<Finding> {
    if let Some([_, original, _, document]) = segments::<4>(&doc.path) {
        if let Some(position) = entry::position_of(document) {
            return check_entry(doc, original, position, cross);
        }
        let bound = check_bound(doc, original);
        cross
            .corrections
            .standalone_bound(original, bound.as_ref().ok());
        return bound.err().into_iter().collect();
    }
    let id = id_of(&doc.path);
    match check_effect(doc) {
        Err(found) => {
            cross.links.malformed_row(id);
            cross.corrections.standalone_row(id, None);
            vec![found]
        }
        Ok(effect) if effect.lineage == Lineage::CanonicalLinked => {
            cross.corrections.standalone_row(id, None);
            vec![finding(FindingCode::LineageViolation, &doc.path)]
        }
        Ok(effect) => {
            cross.links.imported_row(&effect);
            cross.corrections.standalone_row(id, Some(&effect));
            if effect.lineage == Lineage::HistoricalLinked {
                cross.corrections.linked_row(&effect);
            }
            Vec::new()
        }
    }
}

/// The correction bound `doc` of effect `original`, parsed strictly.
fn check_bound(doc: &StoredDoc, original: &str) -> Result<CorrectionBound, Finding> {
    CorrectionBound::parse(original, &doc.fields)
        .map_err(|_| finding(FindingCode::MalformedDocument, &doc.path))
}

/// The entry `doc` at `position` of the correction log of effect `original`, parsed
/// strictly and handed to `cross.corrections` (`None` when malformed).
fn check_entry(
    doc: &StoredDoc,
    original: &str,
    position: u64,
    cross: &mut CrossChecks,
) -> Vec<Finding> {
    let parsed = CorrectionEntry::parse(original, &position.to_string(), &doc.fields);
    cross
        .corrections
        .entry(original, position, parsed.as_ref().ok());
    match parsed {
        Ok(_) => Vec::new(),
        Err(_) => vec![finding(FindingCode::MalformedDocument, &doc.path)],
    }
}

/// The correction bounds and log entries `bounds` of rows of one reservation (whose
/// parsed rows are `effects`), handed to `cross.corrections`, each bound with what its
/// parent row booked.
fn check_bounds(
    bounds: &[StoredDoc],
    effects: &[(&StoredDoc, LedgerEffect)],
    cross: &mut CrossChecks,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for doc in bounds {
        let Some([_, original, _, document]) = segments::<4>(&doc.path) else {
            continue;
        };
        if let Some(position) = entry::position_of(document) {
            out.extend(check_entry(doc, original, position, cross));
            continue;
        }
        let bound = check_bound(doc, original);
        let booked = effects
            .iter()
            .find(|(_, e)| e.effect_id == original)
            .map(|(_, e)| magnitude(&e.item));
        cross
            .corrections
            .bound(original, bound.as_ref().ok(), booked);
        out.extend(bound.err());
    }
    out
}

/// A reservation (if stored), every effect whose id derives from its id and those
/// effects' correction bounds (`bound_docs`); the imported rows a historical
/// reservation lists go to `cross.links`, a reversal's effects and the bounds to
/// `cross.corrections`.
pub fn check_reservation(
    reservation_id: &Digest,
    reservation_doc: Option<&StoredDoc>,
    effect_docs: &[StoredDoc],
    bound_docs: &[StoredDoc],
    cross: &mut CrossChecks,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut effects = Vec::new();
    for doc in effect_docs {
        match check_effect(doc) {
            Ok(effect) => {
                cross.links.derived_row(&doc.path, &effect);
                effects.push((doc, effect));
            }
            Err(found) => out.push(found),
        }
    }
    out.extend(check_bounds(bound_docs, &effects, cross));
    let links = &mut cross.links;
    let Some(reservation_doc) = reservation_doc else {
        for (doc, effect) in &effects {
            let code = match effect.lineage {
                crate::ledger::Lineage::CanonicalLinked => {
                    FindingCode::CanonicalEffectWithoutReservation
                }
                _ => FindingCode::LineageViolation,
            };
            out.push(finding(code, &doc.path));
        }
        return out;
    };
    let reservation =
        match ReservationDocument::parse(reservation_id.as_str(), &reservation_doc.fields) {
            Ok(reservation) => reservation,
            Err(_) => {
                out.push(finding(
                    FindingCode::MalformedDocument,
                    &reservation_doc.path,
                ));
                return out;
            }
        };
    if reservation::links_imported_rows(reservation_id, &reservation.effect_ids) {
        links.sealed(&reservation);
        cross.corrections.linked_reservation(&reservation);
        for (index, id) in reservation.effect_ids.iter().enumerate() {
            links.listed(
                reservation_id,
                index,
                reservation.migration_id.as_deref(),
                id,
            );
        }
        // It lists none of its derived slots: whatever is there claims a link it
        // never made.
        for (doc, _) in &effects {
            out.push(finding(
                FindingCode::CanonicalEffectWithoutReservation,
                &doc.path,
            ));
        }
        return out;
    }
    // Effects the reservation does not list claim a link it never made.
    for (doc, _) in &effects {
        if !reservation
            .effect_ids
            .iter()
            .any(|id| id == id_of(&doc.path))
        {
            out.push(finding(
                FindingCode::CanonicalEffectWithoutReservation,
                &doc.path,
            ));
        }
    }
    let listed: Vec<LedgerEffect> = reservation
        .effect_ids
        .iter()
        .filter_map(|id| {
            effects
                .iter()
                .find(|(doc, _)| id_of(&doc.path) == id)
                .map(|(_, e)| e.clone())
        })
        .collect();
    let missing: Vec<&String> = reservation
        .effect_ids
        .iter()
        .filter(|id| !effect_docs.iter().any(|d| id_of(&d.path) == id.as_str()))
        .collect();
    for id in &missing {
        out.push(finding(
            FindingCode::ReservationMissingEffects,
            &effect::path(id),
        ));
    }
    let all_parsed = listed.len() == reservation.effect_ids.len();
    if !(missing.is_empty() && all_parsed) {
        return out;
    }
    if stored::verify(&reservation, &listed).is_err() {
        out.push(finding(
            FindingCode::ReservationMissingEffects,
            &reservation_doc.path,
        ));
        return out;
    }
    cross.corrections.reservation(&reservation, &listed);
    out.extend(contradictions(reservation, listed, &reservation_doc.path));
    out
}

/// The integrity findings of a reservation whose rows link structurally, at the
/// reservation's path: `effect_integrity_mismatch` when its `integrityDigest` (schema
/// version 2) is not the digest of the stored reservation and rows,
/// `effect_fingerprint_mismatch` when the fingerprint rebuilt from the rows (canonical
/// `effect_plan`, `reversal` and `internal_transfer` reservations under versions 4
/// and 5) is not the stored one, `fixed_field_violation` when a row of a canonical
/// schema-3 reservation breaks the fields the seed fixes (a mechanism outside the
/// closed set, or compensation on a non-recovery effect). A tampered row of a covered
/// family is usually several.
fn contradictions(
    reservation: ReservationDocument,
    effects: Vec<LedgerEffect>,
    path: &str,
) -> Vec<Finding> {
    let stored = stored::Stored {
        reservation,
        effects,
    };
    stored::contradictions(&stored)
        .into_iter()
        .map(|found| {
            let code = match found {
                Contradiction::Digest => FindingCode::EffectIntegrityMismatch,
                Contradiction::Fingerprint => FindingCode::EffectFingerprintMismatch,
                Contradiction::FixedFields => FindingCode::FixedFieldViolation,
            };
            finding(code, path)
        })
        .collect()
}

#[cfg(test)]
mod tests;
