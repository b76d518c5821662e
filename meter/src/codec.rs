//! The little-endian byte writer and reader both state files of the meter
//! are made of (`state`, the reports' cache; `ledger`, the account's
//! totals): fixed-width numbers, length-prefixed strings, and the six token
//! numbers of a `Usage` in its field order. Each file adds its own records
//! on top (inherent methods in its module).

use hoop_core::transcript::Usage;

/// A byte writer.
pub(crate) struct W(pub(crate) Vec<u8>);

impl W {
    pub(crate) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    /// The six token numbers, in `Usage`'s field order.
    pub(crate) fn usage(&mut self, u: &Usage) {
        for v in [
            u.input,
            u.cache_write_5m,
            u.cache_write_1h,
            u.cache_write_unsplit,
            u.cache_read,
            u.output,
        ] {
            self.u64(v);
        }
    }
}

/// A byte reader: every read is `None` past the end (a cut file is never
/// half-decoded).
pub(crate) struct R<'a>(pub(crate) &'a [u8]);

impl<'a> R<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub(crate) fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub(crate) fn str(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
    /// The six token numbers, as [`W::usage`] wrote them.
    pub(crate) fn usage(&mut self) -> Option<Usage> {
        Some(Usage {
            input: self.u64()?,
            cache_write_5m: self.u64()?,
            cache_write_1h: self.u64()?,
            cache_write_unsplit: self.u64()?,
            cache_read: self.u64()?,
            output: self.u64()?,
        })
    }
}
