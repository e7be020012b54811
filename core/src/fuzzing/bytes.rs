//! The fuzz byte decoder and the bounds it caps every generated input at.

/// Largest number of operations and corruptions one `parse_documents` input runs.
pub(super) const MAX_STEPS: usize = 48;
/// Largest number of fields in a generated map.
pub(super) const MAX_FIELDS: usize = 16;
/// Deepest generated array or map value.
pub(super) const MAX_VALUE_DEPTH: usize = 3;
/// Longest generated raw string, in bytes.
pub(super) const MAX_STRING: usize = 96;
/// Highest audit revision a generated path names.
pub(super) const MAX_PATH_REVISION: i64 = 12;
/// 2030-03-17T17:46:40Z, the base instant of generated times.
pub(super) const BASE_MICROS: i64 = 1_900_000_000_000_000;
pub(super) const LEASE_MICROS: i64 = 60_000_000;

/// Reads fuzz bytes front to back; past the end every read is zero, so any input,
/// the empty one included, decodes to something.
pub(super) struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    pub(super) fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    pub(super) fn exhausted(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub(super) fn u8(&mut self) -> u8 {
        let byte = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        byte
    }

    pub(super) fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        for byte in &mut out {
            *byte = self.u8();
        }
        out
    }

    pub(super) fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        usize::from(u16::from_le_bytes(self.bytes())) % n
    }

    pub(super) fn pick<'t, T>(&mut self, table: &'t [T]) -> &'t T {
        &table[self.below(table.len())]
    }

    pub(super) fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.bytes())
    }

    pub(super) fn take(&mut self, max: usize) -> &'a [u8] {
        let len = self.below(max + 1);
        let start = self.pos.min(self.data.len());
        let end = start.saturating_add(len).min(self.data.len());
        self.pos = self.pos.saturating_add(len);
        &self.data[start..end]
    }
}
