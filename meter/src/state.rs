//! The incremental state: per transcript file its identity (device, inode),
//! size, mtime, the offset just after its last complete line, a fingerprint
//! of the bytes before that offset, its skip counters and its deduplicated
//! records. Binary and fixed-width so that a warm run loads it in
//! milliseconds; written through `hoop_core::fsutil::write_atomic`.
//!
//! Layout (little endian): magic `HOOPUSG` + version byte, u64 length of the
//! head; the head: u32 file count, per file path, dev, ino, size, mtime_ns,
//! offset, fingerprint, four skip counters, tail_incomplete and its body's
//! length, then the merged (deduplicated) entries of the run that wrote it;
//! after the head, the bodies (string table, records, tail records) in file
//! order. A rerun in which no file changed reads only the head.

use std::path::Path;

use hoop_core::fsutil::{WriteOptions, write_atomic};

use crate::codec::{R, W};
use crate::scan::{Rec, Skipped};
use crate::{Entry, MeterError};

/// The format tag; its last byte is the version. Bumped whenever what a
/// stored record means changes, not only its layout: version 5 keys records
/// by message id alone (see `scan::dedup_key`), so a version-4 cache, whose
/// keys also carried the request id, is rebuilt rather than merged with
/// keys of the new rule.
const MAGIC: &[u8; 8] = b"HOOPUSG\x05";

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

/// The deduplicated entries over all files, as the last run computed them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Merged {
    pub strings: Vec<String>,
    pub entries: Vec<Entry>,
}

/// The whole state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    pub files: Vec<FileState>,
    pub merged: Option<Merged>,
}

/// A state read with its file bodies not yet read.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Headers (bodies empty until [`Loaded::materialize`]) and merged entries.
    pub state: State,
    body_lens: Vec<u64>,
    /// Where the bodies are: the open state file (positioned after the
    /// head) or bytes already in memory.
    source: Option<BodySource>,
}

#[derive(Debug)]
enum BodySource {
    File(std::fs::File),
    Bytes(Vec<u8>),
}

impl Loaded {
    /// Read and decode every file's body; `None` when a body is missing or
    /// corrupt.
    pub fn materialize(mut self) -> Option<State> {
        let raw = match self.source.take() {
            None => return self.body_lens.is_empty().then_some(self.state),
            Some(BodySource::Bytes(b)) => b,
            Some(BodySource::File(mut f)) => {
                use std::io::Read;
                let mut b = Vec::new();
                f.read_to_end(&mut b).ok()?;
                b
            }
        };
        let mut all = R(&raw);
        for (f, &len) in self.state.files.iter_mut().zip(&self.body_lens) {
            let mut r = R(all.take(usize::try_from(len).ok()?)?);
            let ns = r.u32()?;
            f.strings = (0..ns).map(|_| r.str()).collect::<Option<_>>()?;
            f.recs = r.recs(ns)?;
            f.tail = r.recs(ns)?;
            if !r.0.is_empty() {
                return None;
            }
        }
        all.0.is_empty().then_some(self.state)
    }
}

impl W {
    fn rec(&mut self, r: &Rec) {
        self.0.extend_from_slice(&r.key.to_le_bytes());
        self.usage(&r.usage);
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

impl R<'_> {
    fn rec(&mut self, nstrings: u32) -> Option<Rec> {
        let key = u128::from_le_bytes(self.take(16)?.try_into().ok()?);
        let usage = self.usage()?;
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
        let mut bodies = W(Vec::with_capacity(1 << 16));
        w.0.extend_from_slice(MAGIC);
        w.u64(0); // head length, filled in below
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
            let start = bodies.0.len();
            bodies.u32(f.strings.len() as u32);
            for s in &f.strings {
                bodies.str(s);
            }
            bodies.recs(&f.recs);
            bodies.recs(&f.tail);
            w.u64((bodies.0.len() - start) as u64);
        }
        match &self.merged {
            None => w.0.push(0),
            Some(m) => {
                w.0.push(1);
                w.u32(m.strings.len() as u32);
                for s in &m.strings {
                    w.str(s);
                }
                w.u32(m.entries.len() as u32);
                for e in &m.entries {
                    w.usage(&e.usage);
                    w.i64(e.ts_ms);
                    w.u32(e.model);
                    w.u32(e.session);
                    w.u32(e.project);
                    w.u32(e.cwd);
                }
            }
        }
        let head_len = (w.0.len() - 16) as u64;
        w.0[8..16].copy_from_slice(&head_len.to_le_bytes());
        w.0.extend_from_slice(&bodies.0);
        w.0
    }

    /// `None` when the bytes are not a state of this version (the caller
    /// then starts cold, which is always correct).
    pub fn decode(b: &[u8]) -> Option<State> {
        let mut r = R(b);
        if r.take(8)? != MAGIC {
            return None;
        }
        let head_len = usize::try_from(r.u64()?).ok()?;
        let head = r.take(head_len)?;
        let mut l = State::decode_head(head)?;
        l.source = Some(BodySource::Bytes(r.0.to_vec()));
        l.materialize()
    }

    /// Decode the head: headers and merged entries.
    fn decode_head(head: &[u8]) -> Option<Loaded> {
        let mut r = R(head);
        let n = r.u32()? as usize;
        let mut files = Vec::with_capacity(n.min(1 << 20));
        let mut body_lens = Vec::with_capacity(n.min(1 << 20));
        for _ in 0..n {
            let f = FileState {
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
            body_lens.push(r.u64()?);
            files.push(f);
        }
        let merged = match r.take(1)?[0] {
            0 => None,
            1 => {
                let ns = r.u32()?;
                let strings: Vec<String> = (0..ns).map(|_| r.str()).collect::<Option<_>>()?;
                let ne = r.u32()? as usize;
                if ne > r.0.len() / 72 {
                    return None;
                }
                let mut entries = Vec::with_capacity(ne);
                for _ in 0..ne {
                    let usage = r.usage()?;
                    let e = Entry {
                        usage,
                        ts_ms: r.i64()?,
                        model: r.u32()?,
                        session: r.u32()?,
                        project: r.u32()?,
                        cwd: r.u32()?,
                    };
                    if [e.model, e.session, e.project, e.cwd]
                        .iter()
                        .any(|&i| i >= ns)
                    {
                        return None;
                    }
                    entries.push(e);
                }
                Some(Merged { strings, entries })
            }
            _ => return None,
        };
        if !r.0.is_empty() {
            return None;
        }
        Some(Loaded {
            state: State { files, merged },
            body_lens,
            source: None,
        })
    }

    /// Read only the head of the state at `path`; the bodies are read by
    /// [`Loaded::materialize`] if they are needed.
    fn load_head(path: &Path) -> std::io::Result<Option<Loaded>> {
        use std::io::Read;
        let mut f = std::fs::File::open(path)?;
        let mut pre = [0u8; 16];
        if f.read_exact(&mut pre).is_err() || &pre[..8] != MAGIC {
            return Ok(None);
        }
        let head_len = u64::from_le_bytes(pre[8..16].try_into().expect("8 bytes"));
        if head_len > f.metadata()?.len() {
            return Ok(None);
        }
        let mut head = vec![0u8; head_len as usize];
        if f.read_exact(&mut head).is_err() {
            return Ok(None);
        }
        Ok(State::decode_head(&head).map(|mut l| {
            l.source = Some(BodySource::File(f));
            l
        }))
    }

    /// Load from `path`: absent → empty; unreadable or another format →
    /// empty plus a warning (a cold run is always correct).
    pub fn load(path: &Path) -> (Loaded, Option<String>) {
        match State::load_head(path) {
            Ok(Some(s)) => (s, None),
            Ok(None) => (Loaded::default(), Some(State::unreadable(path))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Loaded::default(), None),
            Err(e) => (
                Loaded::default(),
                Some(format!("usage cache {}: {e}; rebuilt", path.display())),
            ),
        }
    }

    /// The warning for a state that cannot be used.
    pub fn unreadable(path: &Path) -> String {
        format!(
            "usage cache {} is not readable by this version; rebuilt from the transcripts",
            path.display()
        )
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
    use hoop_core::transcript::Usage;

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
            merged: Some(Merged {
                strings: vec!["a".into(), "b".into()],
                entries: vec![Entry {
                    usage: r.usage,
                    ts_ms: 5,
                    model: 0,
                    session: 1,
                    project: 1,
                    cwd: 0,
                }],
            }),
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
