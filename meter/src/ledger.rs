//! The account's ledger: its cumulative totals, kept as running sums so
//! that a snapshot costs the same in the first week and after a year.
//!
//! The ledger remembers per transcript file where it stopped reading (a
//! cursor: identity, size, mtime, offset, fingerprint) and, per API
//! response it ever counted (keyed as the reports key it:
//! [`crate::scan::dedup_key`]), the numbers it counted. A sync reads only
//! the bytes past each cursor, adds what is new to the totals and nothing
//! else; a file unchanged since the last sync is not opened.
//!
//! **The totals never go down.** A response seen again (a copy in a resumed
//! session, a compaction replay, the growing copies of a streamed message)
//! replaces its numbers by the larger of old and new, number by number; a
//! file that vanishes (Claude Code deletes transcripts older than its
//! `cleanupPeriodDays` setting, 30 days by default:
//! <https://code.claude.com/docs/en/settings>, and a finished worker's
//! directory is removed) keeps everything it contributed; a file rewritten
//! in place is read again from its start and merged the same way.
//! Copies of one response only ever grow, so this equals the reports'
//! "largest copy" rule on every real transcript.
//!
//! **Which records count** is the caller's: [`Ledger::sync`] takes the
//! attribution predicate over a record's working directory
//! ([`crate::attribution`]). Records that do not belong are not kept.
//!
//! **Unknown is not zero**: [`Ledger::totals`] is `None` until the account
//! has at least one response.
//!
//! **Persistence**: a base file rewritten rarely and a delta file holding
//! every change since the base, rewritten on each save that changed
//! something (both through `hoop_core::fsutil::write_atomic`). A save
//! writes at most [`DELTA_MAX_ENTRIES`] entries; when the delta would grow
//! past that, the base is rewritten with everything (a new generation) and
//! the delta starts empty. A delta of another generation than the base is
//! ignored (its contents are in the base: the base is written first).
//! Writers take the ledger's flock ([`lock`]); one that finds the files
//! changed since it last read them reads them again first.

use std::collections::{BTreeSet, HashMap};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hoop_core::fsutil::{WriteOptions, write_atomic};
use hoop_core::transcript::Usage;

use crate::codec::{R, W};
use crate::scan::{Groups, KeyMap, Strings, fingerprint_at, scan_file};
use crate::{Found, MeterError, Source, discover_in};

/// The base file's name in the ledger's directory.
pub const LEDGER_FILE: &str = "usage-ledger.bin";
/// The delta file's name.
pub const LEDGER_DELTA_FILE: &str = "usage-ledger.delta";
/// The flock writers take (never deleted).
pub const LEDGER_LOCK_FILE: &str = "usage-ledger.lock";
/// The most entries (files and responses) a delta holds before the base is
/// rewritten: a save then writes at most ~150 kB, whatever the history.
pub const DELTA_MAX_ENTRIES: usize = 2048;
/// How often [`lock`] tries again while another process holds the lock.
pub const LOCK_RETRY: Duration = Duration::from_millis(5);

const BASE_MAGIC: &[u8; 8] = b"HOOPLDG\x01";
const DELTA_MAGIC: &[u8; 8] = b"HOOPLDD\x01";

/// Where the ledger stopped reading one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Cursor {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i64,
    offset: u64,
    fingerprint: u64,
}

/// What one sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Files found / opened and read.
    pub files: usize,
    pub files_read: usize,
    pub bytes_read: u64,
    /// Files the ledger knew that are gone (their contribution stays).
    pub vanished: usize,
    /// Responses new to the ledger, and copies that raised a number.
    pub added: usize,
    pub raised: usize,
    /// Files that could not be read (each with its error).
    pub errors: Vec<String>,
}

/// The ledger (see the module doc).
#[derive(Debug)]
pub struct Ledger {
    dir: PathBuf,
    files: HashMap<String, Cursor>,
    winners: KeyMap<Usage>,
    total: Usage,
    generation: u64,
    seq: u64,
    /// Changes since the base (what the delta file holds).
    delta_files: BTreeSet<String>,
    delta_removed: BTreeSet<String>,
    delta_keys: KeyMap<()>,
    /// Changed since the last save.
    dirty: bool,
}

/// A held ledger lock; dropping it releases it.
#[derive(Debug)]
pub struct LedgerLock {
    _file: File,
}

/// Take the ledger's flock in `dir`, waiting at most `wait`.
pub fn lock(dir: &Path, wait: Duration) -> Result<LedgerLock, MeterError> {
    let path = dir.join(LEDGER_LOCK_FILE);
    let io = |source| MeterError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io)?;
    let deadline = Instant::now() + wait;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(LedgerLock { _file: file }),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(LOCK_RETRY)
            }
            Err(TryLockError::WouldBlock) => {
                return Err(MeterError::Busy {
                    path: path.clone(),
                    waited: wait,
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
    }
}

/// The numbers of `b` where they are larger than `a`'s.
fn max_each(a: &Usage, b: &Usage) -> Usage {
    Usage {
        input: a.input.max(b.input),
        cache_write_5m: a.cache_write_5m.max(b.cache_write_5m),
        cache_write_1h: a.cache_write_1h.max(b.cache_write_1h),
        cache_write_unsplit: a.cache_write_unsplit.max(b.cache_write_unsplit),
        cache_read: a.cache_read.max(b.cache_read),
        output: a.output.max(b.output),
    }
}

/// `a - b`, number by number (`a` is never below `b` here).
fn minus(a: &Usage, b: &Usage) -> Usage {
    Usage {
        input: a.input.saturating_sub(b.input),
        cache_write_5m: a.cache_write_5m.saturating_sub(b.cache_write_5m),
        cache_write_1h: a.cache_write_1h.saturating_sub(b.cache_write_1h),
        cache_write_unsplit: a.cache_write_unsplit.saturating_sub(b.cache_write_unsplit),
        cache_read: a.cache_read.saturating_sub(b.cache_read),
        output: a.output.saturating_sub(b.output),
    }
}

impl Ledger {
    /// An empty ledger kept in `dir`.
    pub fn empty(dir: &Path) -> Ledger {
        Ledger {
            dir: dir.to_path_buf(),
            files: HashMap::new(),
            winners: KeyMap::default(),
            total: Usage::default(),
            generation: 0,
            seq: 0,
            delta_files: BTreeSet::new(),
            delta_removed: BTreeSet::new(),
            delta_keys: KeyMap::default(),
            dirty: false,
        }
    }

    /// Read the ledger kept in `dir` (absent: empty). A file that cannot be
    /// decoded is an error: starting over would forget what vanished files
    /// contributed, so the caller decides (and says so).
    pub fn load(dir: &Path) -> Result<Ledger, MeterError> {
        let mut l = Ledger::empty(dir);
        let base_path = dir.join(LEDGER_FILE);
        match read_file(&base_path)? {
            None => return Ok(l),
            Some(bytes) => decode_base(&bytes, &mut l).ok_or_else(|| corrupt(&base_path))?,
        }
        let delta_path = dir.join(LEDGER_DELTA_FILE);
        if let Some(bytes) = read_file(&delta_path)? {
            let d = decode_delta(&bytes).ok_or_else(|| corrupt(&delta_path))?;
            if d.generation == l.generation {
                l.seq = d.seq;
                for (path, c) in d.files {
                    l.delta_files.insert(path.clone());
                    l.delta_removed.remove(&path);
                    l.files.insert(path, c);
                }
                for path in d.removed {
                    l.files.remove(&path);
                    l.delta_files.remove(&path);
                    l.delta_removed.insert(path);
                }
                for (key, u) in d.winners {
                    l.delta_keys.insert(key, ());
                    l.winners.insert(key, u);
                }
            }
        }
        l.total = l.winners.values().fold(Usage::default(), |mut t, u| {
            t.add(u);
            t
        });
        Ok(l)
    }

    /// Whether the files on disk are still what this ledger last read or
    /// wrote (another process may have saved since).
    pub fn is_current(&self) -> bool {
        let path = self.dir.join(LEDGER_DELTA_FILE);
        let mut head = [0u8; 24];
        let on_disk = File::open(&path)
            .and_then(|mut f| f.read_exact(&mut head))
            .ok()
            .and_then(|()| {
                (&head[..8] == DELTA_MAGIC).then(|| {
                    (
                        u64::from_le_bytes(head[8..16].try_into().expect("8 bytes")),
                        u64::from_le_bytes(head[16..24].try_into().expect("8 bytes")),
                    )
                })
            });
        match on_disk {
            Some(stamp) => stamp == (self.generation, self.seq),
            // Nothing saved yet on either side.
            None => self.generation == 0 && self.seq == 0 && !self.dir.join(LEDGER_FILE).exists(),
        }
    }

    /// The account's totals; `None` until it has a response.
    pub fn totals(&self) -> Option<Usage> {
        (!self.winners.is_empty()).then_some(self.total)
    }

    /// Responses counted.
    pub fn responses(&self) -> usize {
        self.winners.len()
    }

    /// Files the ledger has a cursor for.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// Read every file of `sources` past its cursor and count the records
    /// `belongs` accepts (a record's working directory in, yes/no out).
    /// Files of these sources the ledger knew that are no longer found
    /// lose their cursor, never their contribution.
    pub fn sync(&mut self, sources: &[Source], belongs: &dyn Fn(&str) -> bool) -> SyncReport {
        let found = discover_in(sources);
        let mut report = self.read_found(&found, belongs);
        let present: std::collections::HashSet<&str> =
            found.iter().map(|f| f.path_str.as_str()).collect();
        // Only files these sources read can have vanished: a narrower
        // sync leaves the others' cursors alone.
        let gone: Vec<String> = self
            .files
            .keys()
            .filter(|p| !present.contains(p.as_str()))
            .filter(|p| sources.iter().any(|s| s.covers(Path::new(p.as_str()))))
            .cloned()
            .collect();
        for path in gone {
            self.files.remove(&path);
            self.delta_files.remove(&path);
            self.delta_removed.insert(path);
            self.dirty = true;
            report.vanished += 1;
        }
        report
    }

    /// Read only `paths` (the transcript a turn is writing, polled while
    /// the turn's last response lands); other files are left as they are.
    pub fn sync_files(&mut self, paths: &[PathBuf], belongs: &dyn Fn(&str) -> bool) -> SyncReport {
        let found: Vec<Found> = paths.iter().filter_map(|p| Found::stat(p, "")).collect();
        self.read_found(&found, belongs)
    }

    fn read_found(&mut self, found: &[Found], belongs: &dyn Fn(&str) -> bool) -> SyncReport {
        let mut report = SyncReport {
            files: found.len(),
            ..SyncReport::default()
        };
        for f in found {
            let old = self.files.get(&f.path_str).copied();
            if old.is_some_and(|c| {
                c.dev == f.dev && c.ino == f.ino && c.size == f.size && c.mtime_ns == f.mtime_ns
            }) {
                continue;
            }
            match self.read_file(f, old, belongs, &mut report) {
                Ok(c) => {
                    self.files.insert(f.path_str.clone(), c);
                    self.delta_removed.remove(&f.path_str);
                    self.delta_files.insert(f.path_str.clone());
                    self.dirty = true;
                    report.files_read += 1;
                }
                Err(e) => report.errors.push(format!("{}: {e}", f.path_str)),
            }
        }
        report
    }

    fn read_file(
        &mut self,
        f: &Found,
        old: Option<Cursor>,
        belongs: &dyn Fn(&str) -> bool,
        report: &mut SyncReport,
    ) -> std::io::Result<Cursor> {
        // Go on from the cursor when the file is the one it was read from
        // and its bytes before the cursor are unchanged; else from 0.
        let same_bytes = |c: &Cursor| -> std::io::Result<bool> {
            Ok(fingerprint_at(&f.path, c.offset)? == c.fingerprint)
        };
        let from = match old {
            Some(c)
                if c.dev == f.dev && c.ino == f.ino && f.size >= c.offset && same_bytes(&c)? =>
            {
                c.offset
            }
            _ => 0,
        };
        let mut strings = Strings::default();
        let mut groups = Groups::default();
        let out = scan_file(&f.path, &f.path_str, from, &mut strings, &mut groups)?;
        report.bytes_read += out.bytes_read;
        let mut verdicts: Vec<Option<bool>> = vec![None; strings.list.len()];
        for r in groups.recs.iter().chain(out.tail.iter()) {
            let i = r.cwd as usize;
            let ok = *verdicts[i].get_or_insert_with(|| belongs(strings.get(r.cwd)));
            if !ok {
                continue;
            }
            match self.winners.get_mut(&r.key) {
                None => {
                    self.winners.insert(r.key, r.usage);
                    self.total.add(&r.usage);
                    self.delta_keys.insert(r.key, ());
                    report.added += 1;
                }
                Some(w) => {
                    let m = max_each(w, &r.usage);
                    if m != *w {
                        self.total.add(&minus(&m, w));
                        *w = m;
                        self.delta_keys.insert(r.key, ());
                        report.raised += 1;
                    }
                }
            }
        }
        Ok(Cursor {
            dev: f.dev,
            ino: f.ino,
            size: f.size,
            mtime_ns: f.mtime_ns,
            offset: out.consumed,
            fingerprint: fingerprint_at(&f.path, out.consumed)?,
        })
    }

    /// Write what changed since the last save (nothing when nothing did).
    /// Returns whether anything was written.
    pub fn save(&mut self) -> Result<bool, MeterError> {
        if !self.dirty {
            return Ok(false);
        }
        let delta_len = self.delta_files.len() + self.delta_removed.len() + self.delta_keys.len();
        if delta_len > DELTA_MAX_ENTRIES {
            let next = self.generation + 1;
            let path = self.dir.join(LEDGER_FILE);
            write(&path, &encode_base(self, next))?;
            self.generation = next;
            self.seq = 0;
            self.delta_files.clear();
            self.delta_removed.clear();
            self.delta_keys.clear();
        } else {
            self.seq += 1;
            if !self.dir.join(LEDGER_FILE).exists() {
                // The first save: an empty base of this generation, so the
                // delta always has one to apply to.
                let path = self.dir.join(LEDGER_FILE);
                let empty = Ledger::empty(&self.dir);
                write(&path, &encode_base(&empty, self.generation))?;
            }
        }
        let path = self.dir.join(LEDGER_DELTA_FILE);
        write(&path, &encode_delta(self))?;
        self.dirty = false;
        Ok(true)
    }
}

fn corrupt(path: &Path) -> MeterError {
    MeterError::Corrupt {
        path: path.to_path_buf(),
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), MeterError> {
    write_atomic(path, bytes, WriteOptions::default()).map_err(|source| MeterError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn read_file(path: &Path) -> Result<Option<Vec<u8>>, MeterError> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(MeterError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

// ---------------------------------------------------------------- encoding

const FNV_OFFSET: u64 = 0xcbf29ce484222325;
const FNV_PRIME: u64 = 0x100000001b3;

fn checksum(b: &[u8]) -> u64 {
    b.iter()
        .fold(FNV_OFFSET, |h, &x| (h ^ x as u64).wrapping_mul(FNV_PRIME))
}

impl W {
    fn cursor(&mut self, path: &str, c: &Cursor) {
        self.str(path);
        for v in [
            c.dev,
            c.ino,
            c.size,
            c.mtime_ns as u64,
            c.offset,
            c.fingerprint,
        ] {
            self.u64(v);
        }
    }
    fn winner(&mut self, key: u128, u: &Usage) {
        self.0.extend_from_slice(&key.to_le_bytes());
        self.usage(u);
    }
    fn seal(mut self) -> Vec<u8> {
        let sum = checksum(&self.0);
        self.u64(sum);
        self.0
    }
}

impl R<'_> {
    fn cursor(&mut self) -> Option<(String, Cursor)> {
        let path = self.str()?;
        Some((
            path,
            Cursor {
                dev: self.u64()?,
                ino: self.u64()?,
                size: self.u64()?,
                mtime_ns: self.u64()? as i64,
                offset: self.u64()?,
                fingerprint: self.u64()?,
            },
        ))
    }
    fn winner(&mut self) -> Option<(u128, Usage)> {
        let key = u128::from_le_bytes(self.take(16)?.try_into().ok()?);
        Some((key, self.usage()?))
    }
    /// A count of items at least `min` bytes each that the rest can hold.
    fn count(&mut self, min: usize) -> Option<usize> {
        let n = self.u64()? as usize;
        (n <= self.0.len() / min).then_some(n)
    }
}

/// The body without its checksum, when the checksum holds.
fn unsealed<'a>(bytes: &'a [u8], magic: &[u8; 8]) -> Option<&'a [u8]> {
    if bytes.len() < 16 || &bytes[..8] != magic {
        return None;
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    (checksum(body) == u64::from_le_bytes(sum.try_into().ok()?)).then_some(&body[8..])
}

const CURSOR_MIN: usize = 4 + 6 * 8;
const WINNER_LEN: usize = 16 + 6 * 8;

fn encode_base(l: &Ledger, generation: u64) -> Vec<u8> {
    let mut w = W(Vec::with_capacity(64 + l.winners.len() * WINNER_LEN));
    w.0.extend_from_slice(BASE_MAGIC);
    w.u64(generation);
    let mut files: Vec<(&String, &Cursor)> = l.files.iter().collect();
    files.sort_by(|a, b| a.0.cmp(b.0));
    w.u64(files.len() as u64);
    for (p, c) in files {
        w.cursor(p, c);
    }
    w.u64(l.winners.len() as u64);
    for (k, u) in &l.winners {
        w.winner(*k, u);
    }
    w.seal()
}

fn decode_base(bytes: &[u8], l: &mut Ledger) -> Option<()> {
    let mut r = R(unsealed(bytes, BASE_MAGIC)?);
    l.generation = r.u64()?;
    let n = r.count(CURSOR_MIN)?;
    for _ in 0..n {
        let (p, c) = r.cursor()?;
        l.files.insert(p, c);
    }
    let n = r.count(WINNER_LEN)?;
    l.winners.reserve(n);
    for _ in 0..n {
        let (k, u) = r.winner()?;
        l.winners.insert(k, u);
    }
    r.0.is_empty().then_some(())
}

struct Delta {
    generation: u64,
    seq: u64,
    files: Vec<(String, Cursor)>,
    removed: Vec<String>,
    winners: Vec<(u128, Usage)>,
}

fn encode_delta(l: &Ledger) -> Vec<u8> {
    let mut w = W(Vec::new());
    w.0.extend_from_slice(DELTA_MAGIC);
    w.u64(l.generation);
    w.u64(l.seq);
    let files: Vec<(&String, &Cursor)> = l
        .delta_files
        .iter()
        .filter_map(|p| l.files.get(p).map(|c| (p, c)))
        .collect();
    w.u64(files.len() as u64);
    for (p, c) in files {
        w.cursor(p, c);
    }
    w.u64(l.delta_removed.len() as u64);
    for p in &l.delta_removed {
        w.str(p);
    }
    let winners: Vec<(u128, &Usage)> = l
        .delta_keys
        .keys()
        .filter_map(|k| l.winners.get(k).map(|u| (*k, u)))
        .collect();
    w.u64(winners.len() as u64);
    for (k, u) in winners {
        w.winner(k, u);
    }
    w.seal()
}

fn decode_delta(bytes: &[u8]) -> Option<Delta> {
    let mut r = R(unsealed(bytes, DELTA_MAGIC)?);
    let generation = r.u64()?;
    let seq = r.u64()?;
    let n = r.count(CURSOR_MIN)?;
    let files = (0..n).map(|_| r.cursor()).collect::<Option<Vec<_>>>()?;
    let n = r.count(4)?;
    let removed = (0..n).map(|_| r.str()).collect::<Option<Vec<_>>>()?;
    let n = r.count(WINNER_LEN)?;
    let winners = (0..n).map(|_| r.winner()).collect::<Option<Vec<_>>>()?;
    r.0.is_empty().then_some(Delta {
        generation,
        seq,
        files,
        removed,
        winners,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(i: u64, o: u64) -> Usage {
        Usage {
            input: i,
            output: o,
            ..Usage::default()
        }
    }

    #[test]
    fn max_each_keeps_every_largest_number() {
        let a = Usage {
            input: 5,
            cache_read: 1,
            output: 9,
            ..Usage::default()
        };
        let b = Usage {
            input: 3,
            cache_read: 4,
            output: 9,
            ..Usage::default()
        };
        let m = max_each(&a, &b);
        assert_eq!((m.input, m.cache_read, m.output), (5, 4, 9));
        assert_eq!(
            minus(&m, &a),
            Usage {
                cache_read: 3,
                ..Usage::default()
            }
        );
    }

    #[test]
    fn base_and_delta_round_trip_and_refuse_damage() {
        let d = tempfile::tempdir().unwrap();
        let mut l = Ledger::empty(d.path());
        l.files.insert(
            "/p/a.jsonl".into(),
            Cursor {
                dev: 1,
                ino: 2,
                size: 3,
                mtime_ns: -4,
                offset: 3,
                fingerprint: 6,
            },
        );
        l.winners.insert(7, usage(10, 2));
        l.delta_files.insert("/p/a.jsonl".into());
        l.delta_keys.insert(7, ());
        l.total = usage(10, 2);
        l.dirty = true;
        assert!(l.save().unwrap());
        assert!(!l.save().unwrap(), "nothing changed: nothing written");
        let back = Ledger::load(d.path()).unwrap();
        assert_eq!(back.files, l.files);
        assert_eq!(back.winners, l.winners);
        assert_eq!(back.totals(), Some(usage(10, 2)));
        assert!(back.is_current());
        // Every cut and every flipped byte of the delta is refused.
        let delta = std::fs::read(d.path().join(LEDGER_DELTA_FILE)).unwrap();
        for cut in [0, 8, 20, delta.len() - 1] {
            assert!(decode_delta(&delta[..cut]).is_none(), "cut {cut}");
        }
        for i in 0..delta.len() {
            let mut b = delta.clone();
            b[i] ^= 0x40;
            assert!(decode_delta(&b).is_none(), "byte {i}");
        }
        std::fs::write(d.path().join(LEDGER_DELTA_FILE), &delta[..delta.len() - 3]).unwrap();
        assert!(matches!(
            Ledger::load(d.path()),
            Err(MeterError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_full_delta_moves_into_a_new_base() {
        let d = tempfile::tempdir().unwrap();
        let mut l = Ledger::empty(d.path());
        for k in 0..(DELTA_MAX_ENTRIES as u128 + 5) {
            l.winners.insert(k, usage(1, 1));
            l.delta_keys.insert(k, ());
        }
        l.dirty = true;
        l.save().unwrap();
        assert_eq!(l.generation, 1);
        assert!(l.delta_keys.is_empty());
        let back = Ledger::load(d.path()).unwrap();
        assert_eq!(back.responses(), DELTA_MAX_ENTRIES + 5);
        assert_eq!(back.generation, 1);
        // A delta left from the old generation (a crash between the two
        // writes) is ignored: the base holds it already.
        let mut old = Ledger::empty(d.path());
        old.winners.insert(99_999, usage(7, 7));
        old.delta_keys.insert(99_999, ());
        std::fs::write(d.path().join(LEDGER_DELTA_FILE), encode_delta(&old)).unwrap();
        let back = Ledger::load(d.path()).unwrap();
        assert_eq!(back.responses(), DELTA_MAX_ENTRIES + 5);
    }

    #[test]
    fn a_second_writer_is_seen_and_the_lock_is_exclusive() {
        let d = tempfile::tempdir().unwrap();
        let mut a = Ledger::load(d.path()).unwrap();
        let mut b = Ledger::load(d.path()).unwrap();
        assert!(a.is_current() && b.is_current());
        a.winners.insert(1, usage(1, 1));
        a.delta_keys.insert(1, ());
        a.dirty = true;
        a.save().unwrap();
        assert!(a.is_current());
        assert!(!b.is_current(), "b must read again before it writes");
        b = Ledger::load(d.path()).unwrap();
        assert!(b.is_current());
        let held = lock(d.path(), Duration::ZERO).unwrap();
        assert!(matches!(
            lock(d.path(), Duration::from_millis(20)),
            Err(MeterError::Busy { .. })
        ));
        drop(held);
        lock(d.path(), Duration::ZERO).unwrap();
        assert!(d.path().join(LEDGER_LOCK_FILE).exists());
    }
}
