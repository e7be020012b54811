//! The ledger's checks that relate documents the scan reads apart, settled once every
//! range was read: historical links ([`HistoricalLinks`]) and reversals against what
//! they correct ([`Corrections`]).

use super::corrections::Corrections;
use super::historical_links::HistoricalLinks;
use super::report::Finding;
use std::collections::BTreeSet;

/// What the scan learnt, across reservations, so far.
#[derive(Debug, Default)]
pub struct CrossChecks {
    /// Imported rows and the reservations that link them.
    pub links: HistoricalLinks,
    /// Reversal effects, the originals they name and those originals' bounds.
    pub corrections: Corrections,
}

impl CrossChecks {
    /// Every finding, once the whole ledger was scanned, in path then code order.
    pub fn finish(&self) -> Vec<Finding> {
        let mut found = self.links.finish();
        found.extend(self.corrections.finish());
        found.sort();
        found.dedup();
        found
    }

    /// Every document a finding of [`finish`](Self::finish) was decided from, to read
    /// again at one read time.
    pub fn involved(&self, findings: &[Finding]) -> BTreeSet<String> {
        let mut paths = self.links.involved(findings);
        paths.extend(self.corrections.involved(findings));
        paths
    }
}
