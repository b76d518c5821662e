//! Streaming scan of one transcript file from a byte offset: lines are cut
//! out of a fixed-size buffer, a line that could carry usage is parsed by
//! `hoop_core::transcript::parse_line`, and per API response (see
//! [`dedup_key`]) the largest copy is kept. Memory per scan is the buffer plus at most one line
//! of [`MAX_LINE_BYTES`]; a longer line is streamed through, never held.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use hoop_core::transcript::{ParsedLine, USAGE_NEEDLE, Usage, looks_like_object, parse_line};

use crate::timefmt::parse_ts_ms;

/// Read buffer per scan: large enough that syscalls do not dominate, small
/// enough that two scanners in parallel stay a few MB.
pub const READ_BUF_BYTES: usize = 1 << 20;
/// The longest line that is held in memory to be parsed. Tool results can
/// make single lines several MB; an assistant line (the only kind that
/// carries usage) beyond this is skipped and counted as oversized.
pub const MAX_LINE_BYTES: usize = 32 << 20;
/// How many bytes before the resume offset are fingerprinted, to notice a
/// file rewritten in place under the same inode with a larger size.
/// JSONL lines end alike (`…"sessionId":"…"}`), so the window spans more
/// than one line's worth: the file's head and the bytes before the offset.
pub const FINGERPRINT_BYTES: u64 = 4096;

/// One deduplicated response: the winning copy of its group (see
/// [`dedup_key`]) within a file. String fields index the file's string table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rec {
    /// 128-bit hash of the dedup key (see [`dedup_key`]).
    pub key: u128,
    pub usage: Usage,
    /// Unix milliseconds of the line's `timestamp`.
    pub ts_ms: i64,
    pub model: u32,
    pub session: u32,
    pub cwd: u32,
    /// Byte offset of the line in its file (last tie-break).
    pub line_off: u64,
}

/// Counters of lines that were skipped, reported, never silent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Not a JSON object, or unparsable where it could carry usage.
    pub malformed: u64,
    /// A usage-carrying line longer than [`MAX_LINE_BYTES`].
    pub oversized: u64,
    /// Usage without a (parsable) `timestamp`: it cannot be dated.
    pub no_timestamp: u64,
    /// A last line without newline that does not parse (still being written).
    pub incomplete_tail: u64,
}

impl Skipped {
    pub fn add(&mut self, o: &Skipped) {
        self.malformed += o.malformed;
        self.oversized += o.oversized;
        self.no_timestamp += o.no_timestamp;
        self.incomplete_tail += o.incomplete_tail;
    }
    pub fn total(&self) -> u64 {
        self.malformed + self.oversized + self.no_timestamp + self.incomplete_tail
    }
}

/// The order in which copies of one group compete: larger usage wins, then
/// the earlier timestamp, then the earlier position. Total, so the winner is
/// the same whatever order the copies were read in.
pub fn better(a: &Rec, a_rank: (&str, u64), b: &Rec, b_rank: (&str, u64)) -> bool {
    let ka = a.usage.size_key();
    let kb = b.usage.size_key();
    if ka != kb {
        return ka > kb;
    }
    if a.ts_ms != b.ts_ms {
        return a.ts_ms < b.ts_ms;
    }
    a_rank < b_rank
}

const FNV_OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
const FNV_PRIME: u128 = 0x0000000001000000000000000000013B;

fn fnv(mut h: u128, bytes: &[u8]) -> u128 {
    for &b in bytes {
        h ^= b as u128;
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// The dedup key, by the first of these a record has:
/// 1. its `message.id` — one API response, whatever request id, sidechain
///    flag or file its copy carries (a side question replays earlier
///    assistant records under a new request id; a resumed session copies its
///    history into the new transcript; streaming writes one response as
///    several records whose usage grows);
/// 2. its `requestId`, when it has no message id;
/// 3. the line itself (file and byte offset), so a reread stays idempotent.
///
/// The three kinds are tagged apart, so a message id never meets a request
/// id of the same spelling.
pub fn dedup_key(message_id: Option<&str>, request_id: Option<&str>, path: &str, off: u64) -> u128 {
    match (message_id, request_id) {
        (Some(id), _) => fnv(fnv(FNV_OFFSET, b"m\0"), id.as_bytes()),
        (None, Some(req)) => fnv(fnv(FNV_OFFSET, b"r\0"), req.as_bytes()),
        (None, None) => {
            let h = fnv(FNV_OFFSET, b"p\0");
            let h = fnv(h, path.as_bytes());
            let h = fnv(h, b"\0");
            fnv(h, &off.to_le_bytes())
        }
    }
}

/// 64-bit fingerprint of the file's first bytes and the bytes just before
/// `offset` (at most 2 × [`FINGERPRINT_BYTES`] read).
pub fn fingerprint(f: &mut File, offset: u64) -> io::Result<u64> {
    let head = offset.min(FINGERPRINT_BYTES);
    let start = offset.saturating_sub(FINGERPRINT_BYTES).max(head);
    let mut buf = vec![0u8; head as usize];
    f.seek(SeekFrom::Start(0))?;
    f.read_exact(&mut buf)?;
    let h = fnv(FNV_OFFSET, &buf);
    buf.resize((offset - start) as usize, 0);
    f.seek(SeekFrom::Start(start))?;
    f.read_exact(&mut buf)?;
    Ok(fnv(h, &buf) as u64)
}

/// The fingerprint of the bytes of the file at `path` before `offset` (0
/// when there are none: nothing to compare).
pub fn fingerprint_at(path: &Path, offset: u64) -> io::Result<u64> {
    if offset == 0 {
        return Ok(0);
    }
    fingerprint(&mut File::open(path)?, offset)
}

/// Hasher for maps keyed by [`dedup_key`]: the key is already a good hash,
/// so folding it is enough (SipHash over 100k keys was a third of a warm run).
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8)) ^ b as u64;
        }
    }
    fn write_u128(&mut self, v: u128) {
        self.0 = (v as u64) ^ ((v >> 64) as u64);
    }
}

/// Map keyed by dedup key.
pub type KeyMap<V> = HashMap<u128, V, std::hash::BuildHasherDefault<KeyHasher>>;

/// A file-local string table (models, sessions, cwds repeat on every line).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Strings {
    pub list: Vec<String>,
    index: HashMap<String, u32>,
}

impl Strings {
    pub fn from_list(list: Vec<String>) -> Strings {
        let index = list
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), i as u32))
            .collect();
        Strings { list, index }
    }
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
    pub fn get(&self, i: u32) -> &str {
        &self.list[i as usize]
    }
}

/// Groups of one file: winning record per key.
#[derive(Debug, Clone, Default)]
pub struct Groups {
    pub recs: Vec<Rec>,
    index: KeyMap<usize>,
}

impl Groups {
    pub fn from_recs(recs: Vec<Rec>) -> Groups {
        let index = recs.iter().enumerate().map(|(i, r)| (r.key, i)).collect();
        Groups { recs, index }
    }
    /// Keep the better of `r` and the record already held for its key.
    pub fn offer(&mut self, path: &str, r: Rec) {
        match self.index.get(&r.key) {
            Some(&i) => {
                let cur = &self.recs[i];
                if better(&r, (path, r.line_off), cur, (path, cur.line_off)) {
                    self.recs[i] = r;
                }
            }
            None => {
                self.index.insert(r.key, self.recs.len());
                self.recs.push(r);
            }
        }
    }
}

/// What a scan found beyond `from`.
#[derive(Debug, Default)]
pub struct ScanOut {
    /// Offset just after the last complete line (the resume point).
    pub consumed: u64,
    /// Counters over the complete lines read.
    pub skipped: Skipped,
    /// Records of the unterminated last line, if it parsed (kept apart: the
    /// line may still be growing).
    pub tail: Vec<Rec>,
    /// 1 when the unterminated last line did not parse.
    pub tail_incomplete: u64,
    /// Bytes read.
    pub bytes_read: u64,
}

struct LineSink<'a> {
    path: &'a str,
    strings: &'a mut Strings,
    groups: &'a mut Groups,
    skipped: Skipped,
}

impl LineSink<'_> {
    /// Returns the record of a usage line, or counts the skip.
    fn classify(&mut self, line: &[u8], off: u64) -> Result<Option<Rec>, ()> {
        match parse_line(line) {
            ParsedLine::NoUsage => Ok(None),
            ParsedLine::Malformed => Err(()),
            ParsedLine::Usage(u) => {
                let Some(ts) = u.timestamp.as_deref().and_then(parse_ts_ms) else {
                    self.skipped.no_timestamp += 1;
                    return Ok(None);
                };
                let key = dedup_key(
                    u.message_id.as_deref(),
                    u.request_id.as_deref(),
                    self.path,
                    off,
                );
                let model = self.strings.intern(u.model.as_deref().unwrap_or("unknown"));
                let session = self.strings.intern(u.session_id.as_deref().unwrap_or(""));
                let cwd = self.strings.intern(u.cwd.as_deref().unwrap_or(""));
                Ok(Some(Rec {
                    key,
                    usage: u.usage,
                    ts_ms: ts,
                    model,
                    session,
                    cwd,
                    line_off: off,
                }))
            }
        }
    }

    fn line(&mut self, line: &[u8], off: u64) {
        match self.classify(line, off) {
            Ok(Some(r)) => self.groups.offer(self.path, r),
            Ok(None) => {}
            Err(()) => self.skipped.malformed += 1,
        }
    }
}

/// Scan `path` from byte `from` to its end, offering every usage record of a
/// complete line to `groups` (strings interned in `strings`).
pub fn scan_file(
    path: &Path,
    path_str: &str,
    from: u64,
    strings: &mut Strings,
    groups: &mut Groups,
) -> io::Result<ScanOut> {
    scan_file_with(
        path,
        path_str,
        from,
        strings,
        groups,
        Limits {
            read_buf: READ_BUF_BYTES,
            max_line: MAX_LINE_BYTES,
        },
    )
}

/// Buffer sizes of a scan (the constants above; tests shrink them to put
/// every line across buffer edges).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub read_buf: usize,
    pub max_line: usize,
}

/// [`scan_file`] with explicit buffer sizes.
pub fn scan_file_with(
    path: &Path,
    path_str: &str,
    from: u64,
    strings: &mut Strings,
    groups: &mut Groups,
    limits: Limits,
) -> io::Result<ScanOut> {
    let mut f = File::open(path)?;
    if from > 0 {
        f.seek(SeekFrom::Start(from))?;
    }
    let mut sink = LineSink {
        path: path_str,
        strings,
        groups,
        skipped: Skipped::default(),
    };
    let mut buf = vec![0u8; limits.read_buf.max(1)];
    // A line cut by the buffer end is carried here (bounded by MAX_LINE_BYTES).
    let mut carry: Vec<u8> = Vec::new();
    // Streaming state of a line longer than the cap.
    let mut over: Option<Oversized> = None;
    let mut line_start = from; // file offset of the current line's first byte
    let mut pos = from; // file offset of buf[0]
    let mut bytes_read = 0u64;
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        bytes_read += n as u64;
        let chunk = &buf[..n];
        let mut i = 0usize;
        while i < n {
            match memchr::memchr(b'\n', &chunk[i..]) {
                Some(rel) => {
                    let end = i + rel;
                    let piece = &chunk[i..end];
                    if let Some(o) = over.as_mut() {
                        o.feed(piece);
                        let o = over.take().expect("present");
                        o.finish(&mut sink.skipped);
                    } else if carry.is_empty() && piece.len() <= limits.max_line {
                        sink.line(piece, line_start);
                    } else if carry.len() + piece.len() > limits.max_line {
                        let mut o = Oversized::default();
                        o.feed(&carry);
                        o.feed(piece);
                        o.finish(&mut sink.skipped);
                        carry = Vec::new();
                    } else {
                        carry.extend_from_slice(piece);
                        sink.line(&carry, line_start);
                        carry.clear();
                    }
                    i = end + 1;
                    line_start = pos + i as u64;
                }
                None => {
                    let piece = &chunk[i..];
                    if let Some(o) = over.as_mut() {
                        o.feed(piece);
                    } else if carry.len() + piece.len() > limits.max_line {
                        let mut o = Oversized::default();
                        o.feed(&carry);
                        o.feed(piece);
                        carry = Vec::new();
                        over = Some(o);
                    } else {
                        carry.extend_from_slice(piece);
                    }
                    i = n;
                }
            }
        }
        pos += n as u64;
    }
    let mut out = ScanOut {
        consumed: line_start,
        bytes_read,
        ..ScanOut::default()
    };
    // The unterminated last line: parsed fresh on every run, never committed.
    if over.is_some() {
        out.tail_incomplete = 1;
    } else if !carry.trim_ascii().is_empty() {
        match sink.classify(&carry, line_start) {
            Ok(Some(r)) => out.tail.push(r),
            Ok(None) => {}
            Err(()) => out.tail_incomplete = 1,
        }
    }
    out.skipped = sink.skipped;
    Ok(out)
}

/// A line past the cap: only what is needed to count it is kept.
#[derive(Default)]
struct Oversized {
    first: Option<u8>,
    last: Option<u8>,
    needle: bool,
    /// The last bytes seen, to find the needle across chunk boundaries.
    window: Vec<u8>,
}

impl Oversized {
    fn feed(&mut self, piece: &[u8]) {
        if piece.is_empty() {
            return;
        }
        if self.first.is_none() {
            self.first = piece.iter().copied().find(|b| !b.is_ascii_whitespace());
        }
        if let Some(&l) = piece.iter().rev().find(|b| !b.is_ascii_whitespace()) {
            self.last = Some(l);
        }
        if !self.needle {
            // `window` holds the stream's last k bytes, so a needle cut by
            // any number of piece edges is still seen.
            let k = USAGE_NEEDLE.len() - 1;
            let mut joined = std::mem::take(&mut self.window);
            joined.extend_from_slice(&piece[..piece.len().min(k)]);
            self.needle = memchr::memmem::find(&joined, USAGE_NEEDLE).is_some()
                || memchr::memmem::find(piece, USAGE_NEEDLE).is_some();
            if piece.len() >= k {
                self.window = piece[piece.len() - k..].to_vec();
            } else {
                // `joined` is the old window plus all of this short piece.
                self.window = joined[joined.len().saturating_sub(k)..].to_vec();
            }
        }
    }
    fn finish(self, skipped: &mut Skipped) {
        let structural =
            looks_like_object(&[self.first.unwrap_or(b'{'), self.last.unwrap_or(b'}')]);
        if !structural {
            skipped.malformed += 1;
        } else if self.needle {
            skipped.oversized += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_needle_is_found_across_chunk_edges() {
        let mut o = Oversized::default();
        o.feed(b"{\"a\":1,\"us");
        o.feed(b"age\":{}}");
        assert!(o.needle);
        let mut s = Skipped::default();
        o.finish(&mut s);
        assert_eq!(s.oversized, 1);
        let mut o = Oversized::default();
        o.feed(b"{\"a\":\"xxxxxxxx");
        o.feed(b"yyyy\"}");
        let mut s = Skipped::default();
        o.finish(&mut s);
        assert_eq!(
            s,
            Skipped::default(),
            "a long line without usage is not a skip"
        );
    }

    /// The key as a table: which pairs of records are copies of one
    /// response (same key) and which are not.
    #[test]
    fn dedup_key_table() {
        type R<'a> = (Option<&'a str>, Option<&'a str>, &'a str, u64);
        let cases: &[(R, R, bool)] = &[
            // One message id: one response, whatever the request id or file.
            (
                (Some("m1"), Some("r1"), "f", 0),
                (Some("m1"), Some("r1"), "g", 9),
                true,
            ),
            (
                (Some("m1"), Some("r1"), "f", 0),
                (Some("m1"), Some("r2"), "f", 5),
                true,
            ),
            (
                (Some("m1"), Some("r1"), "f", 0),
                (Some("m1"), None, "g", 0),
                true,
            ),
            ((Some("m1"), None, "f", 0), (Some("m1"), None, "f", 7), true),
            // Different message ids are different responses, even under one
            // request id.
            (
                (Some("m1"), Some("r1"), "f", 0),
                (Some("m2"), Some("r1"), "f", 0),
                false,
            ),
            // No message id: the request id decides.
            ((None, Some("r1"), "f", 0), (None, Some("r1"), "g", 3), true),
            (
                (None, Some("r1"), "f", 0),
                (None, Some("r2"), "f", 0),
                false,
            ),
            // A message id never meets a request id of the same spelling.
            ((Some("x"), None, "f", 0), (None, Some("x"), "f", 0), false),
            (
                (Some("x"), Some("r"), "f", 0),
                (None, Some("x"), "f", 0),
                false,
            ),
            // Neither: the line itself (file and offset).
            ((None, None, "f", 0), (None, None, "f", 0), true),
            ((None, None, "f", 0), (None, None, "f", 1), false),
            ((None, None, "f", 0), (None, None, "g", 0), false),
            ((None, None, "f", 0), (None, Some("f"), "f", 0), false),
        ];
        for (a, b, same) in cases {
            let ka = dedup_key(a.0, a.1, a.2, a.3);
            let kb = dedup_key(b.0, b.1, b.2, b.3);
            assert_eq!(ka == kb, *same, "{a:?} vs {b:?}");
        }
    }

    use proptest::prelude::*;

    fn scan_with(
        body: &[u8],
        read_buf: usize,
        max_line: usize,
    ) -> (Vec<Rec>, Skipped, u64, Vec<Rec>, u64) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.jsonl");
        std::fs::write(&p, body).unwrap();
        let mut s = Strings::default();
        let mut g = Groups::default();
        let out =
            scan_file_with(&p, "t", 0, &mut s, &mut g, Limits { read_buf, max_line }).unwrap();
        let mut recs = g.recs;
        recs.sort_by_key(|r| r.key);
        (
            recs,
            out.skipped,
            out.consumed,
            out.tail,
            out.tail_incomplete,
        )
    }

    fn usage_line(id: u8, out: u16, pad: usize) -> String {
        format!(
            r#"{{"message":{{"id":"m{id}","model":"claude-opus-4-6","content":"{}","usage":{{"input_tokens":3,"output_tokens":{out}}}}},"requestId":"r","timestamp":"2026-11-01T10:00:00.000Z","sessionId":"s"}}"#,
            "p".repeat(pad)
        )
    }

    proptest! {
        /// Lines cut anywhere by the read buffer give the same result as
        /// lines read whole; a line over the cap is counted, never parsed.
        #[test]
        fn buffer_edges_change_nothing(
            lines in prop::collection::vec((0u8..5, 1u16..900, 0usize..300, 0u8..6), 1..25),
            read_buf in 1usize..97,
            unterminated in any::<bool>(),
        ) {
            let mut body = String::new();
            for (id, out, pad, kind) in &lines {
                match kind {
                    0 => body.push_str("{\"type\":\"user\",\"message\":{\"content\":\"x\"}}"),
                    1 => body.push_str("not json"),
                    _ => body.push_str(&usage_line(*id, *out, *pad)),
                }
                body.push('\n');
            }
            if unterminated {
                body.pop();
            }
            let whole = scan_with(body.as_bytes(), 1 << 20, 1 << 20);
            let cut = scan_with(body.as_bytes(), read_buf, 1 << 20);
            prop_assert_eq!(&whole, &cut);
            // With a cap below the longest usage line, those lines are
            // counted as oversized whatever the buffer size.
            let cap = 250;
            let small = scan_with(body.as_bytes(), read_buf, cap);
            let small_whole = scan_with(body.as_bytes(), 1 << 20, cap);
            prop_assert_eq!(&small, &small_whole);
            let over = body.lines().take(if unterminated { lines.len() - 1 } else { lines.len() })
                .filter(|l| l.len() > cap && l.contains("\"usage\"")).count() as u64;
            prop_assert_eq!(small.1.oversized, over);
        }
    }
}
