//! The incremental state: per transcript file its identity (device, inode),
//! size, mtime, the offset just after its last complete line, a fingerprint
//! of the bytes before that offset, its skip counters and its deduplicated
//! records. Binary and fixed-width so that a warm run loads it in
//! milliseconds; written through `hoop_core::fsutil::write_atomic`.
//!
//! Layout (little endian): magic `HOOPUSG` + version byte, u32 file count,
//! then per file: path, dev, ino, size, mtime_ns, offset, fingerprint, four
//! skip counters, tail_incomplete, string table, records, tail records.

use std::path::Path;

use hoop_core::fsutil::{WriteOptions, write_atomic};
use hoop_core::transcript::Usage;

use crate::MeterError;
use crate::scan::{Rec, Skipped};

const MAGIC: &[u8; 8] = b"HOOPUSG\x02";

/// What the state remembers of one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileState {
    pub path: String,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    /// Just after the last complete line: the next run reads from here.
    pub offset: u64,
    /// Fingerprint of the bytes before `offset` (see `scan::fingerprint`).
    pub fingerprint: u64,
    /// Skips over the complete lines before `offset`.
    pub skipped: Skipped,
    /// 1 when the unterminated last line (at `offset..size`) did not parse.
    pub tail_incomplete: u64,
    pub strings: Vec<String>,
    /// Winning record per group over the complete lines.
    pub recs: Vec<Rec>,
    /// Records of the unterminated last line (valid for this size + mtime).
    pub tail: Vec<Rec>,
}

/// The whole state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    pub files: Vec<FileState>,
}

struct W(Vec<u8>);

impl W {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn rec(&mut self, r: &Rec) {
        self.0.extend_from_slice(&r.key.to_le_bytes());
        let u = &r.usage;
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
        self.i64(r.ts_ms);
        self.u32(r.model);
        self.u32(r.session);
        self.u32(r.cwd);
        self.u64(r.line_off);
    }
    fn recs(&mut self, rs: &[Rec]) {
        self.u32(rs.len() as u32);
        for r in rs {
            self.rec(r);
        }
    }
}

struct R<'a>(&'a [u8]);

impl<'a> R<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
    fn rec(&mut self, nstrings: u32) -> Option<Rec> {
        let key = u128::from_le_bytes(self.take(16)?.try_into().ok()?);
        let usage = Usage {
            input: self.u64()?,
            cache_write_5m: self.u64()?,
            cache_write_1h: self.u64()?,
            cache_write_unsplit: self.u64()?,
            cache_read: self.u64()?,
            output: self.u64()?,
        };
        let r = Rec {
            key,
            usage,
            ts_ms: self.i64()?,
            model: self.u32()?,
            session: self.u32()?,
            cwd: self.u32()?,
            line_off: self.u64()?,
        };
        (r.model < nstrings && r.session < nstrings && r.cwd < nstrings).then_some(r)
    }
    fn recs(&mut self, nstrings: u32) -> Option<Vec<Rec>> {
        let n = self.u32()? as usize;
        if n > self.0.len() / 16 {
            return None;
        }
        (0..n).map(|_| self.rec(nstrings)).collect()
    }
}

impl State {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = W(Vec::with_capacity(1 << 16));
        w.0.extend_from_slice(MAGIC);
        w.u32(self.files.len() as u32);
        for f in &self.files {
            w.str(&f.path);
            w.u64(f.dev);
            w.u64(f.ino);
            w.u64(f.size);
            w.i64(f.mtime_ns);
            w.u64(f.offset);
            w.u64(f.fingerprint);
            w.u64(f.skipped.malformed);
            w.u64(f.skipped.oversized);
            w.u64(f.skipped.no_timestamp);
            w.u64(f.skipped.incomplete_tail);
            w.u64(f.tail_incomplete);
            w.u32(f.strings.len() as u32);
            for s in &f.strings {
                w.str(s);
            }
            w.recs(&f.recs);
            w.recs(&f.tail);
        }
        w.0
    }

    /// `None` when the bytes are not a state of this version (the caller
    /// then starts cold, which is always correct).
    pub fn decode(b: &[u8]) -> Option<State> {
        let mut r = R(b);
        if r.take(8)? != MAGIC {
            return None;
        }
        let n = r.u32()? as usize;
        let mut files = Vec::with_capacity(n.min(1 << 20));
        for _ in 0..n {
            let mut f = FileState {
                path: r.str()?,
                dev: r.u64()?,
                ino: r.u64()?,
                size: r.u64()?,
                mtime_ns: r.i64()?,
                offset: r.u64()?,
                fingerprint: r.u64()?,
                skipped: Skipped {
                    malformed: r.u64()?,
                    oversized: r.u64()?,
                    no_timestamp: r.u64()?,
                    incomplete_tail: r.u64()?,
                },
                tail_incomplete: r.u64()?,
                ..FileState::default()
            };
            let ns = r.u32()?;
            f.strings = (0..ns).map(|_| r.str()).collect::<Option<_>>()?;
            f.recs = r.recs(ns)?;
            f.tail = r.recs(ns)?;
            files.push(f);
        }
        r.0.is_empty().then_some(State { files })
    }

    /// Load from `path`: absent → empty; unreadable or another format →
    /// empty plus a warning (a cold run is always correct).
    pub fn load(path: &Path) -> (State, Option<String>) {
        match std::fs::read(path) {
            Ok(b) => match State::decode(&b) {
                Some(s) => (s, None),
                None => (
                    State::default(),
                    Some(format!(
                        "usage cache {} is not readable by this version; rebuilt from the transcripts",
                        path.display()
                    )),
                ),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (State::default(), None),
            Err(e) => (
                State::default(),
                Some(format!("usage cache {}: {e}; rebuilt", path.display())),
            ),
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), MeterError> {
        write_atomic(path, &self.encode(), WriteOptions::SECRET).map_err(|e| MeterError::Io {
            path: path.to_path_buf(),
            source: e,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_garbage() {
        let r = Rec {
            key: 0x1234_5678_9abc_def0_1122_3344_5566_7788,
            usage: Usage {
                input: 1,
                cache_write_5m: 2,
                cache_write_1h: 3,
                cache_write_unsplit: 4,
                cache_read: 5,
                output: 6,
            },
            ts_ms: -7,
            model: 0,
            session: 1,
            cwd: 1,
            line_off: 99,
        };
        let s = State {
            files: vec![FileState {
                path: "/p/a.jsonl".into(),
                dev: 1,
                ino: 2,
                size: 3,
                mtime_ns: -4,
                offset: 5,
                fingerprint: 6,
                skipped: Skipped {
                    malformed: 7,
                    oversized: 8,
                    no_timestamp: 9,
                    incomplete_tail: 0,
                },
                tail_incomplete: 1,
                strings: vec!["m".into(), "s".into()],
                recs: vec![r],
                tail: vec![r],
            }],
        };
        let b = s.encode();
        assert_eq!(State::decode(&b), Some(s));
        for cut in [0, 7, 8, 12, b.len() - 1] {
            assert_eq!(State::decode(&b[..cut]), None, "cut at {cut}");
        }
        let mut extra = b.clone();
        extra.push(0);
        assert_eq!(State::decode(&extra), None);
    }
}
