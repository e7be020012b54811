//! A late charge as `pending` lists it: read strictly from its document.

use super::{LateChargeDetail, LateChargeListed};
use crate::digest::Digest;
use crate::document::fields::FieldMap;
use crate::error::JournalError;
use crate::sends::AttemptNumber;
use crate::sends::late::LateCharge;

/// The late charge stored at `hash`'s attempt `attempt` as `pending` lists it;
/// `journal_corrupt` unless `map` parses strictly.
pub fn listed(
    hash: &Digest,
    attempt: AttemptNumber,
    map: &FieldMap,
) -> Result<LateChargeListed, JournalError> {
    let late = LateCharge::parse(hash, attempt, map)?;
    Ok(LateChargeListed {
        command_key_hash: late.command_key_hash,
        late_charge: LateChargeDetail {
            attempt: late.attempt,
            reason: late.reason,
            recorded_at: late.recorded_at,
        },
        unblocked_by: "refund",
    })
}
