//! The transcript usage reader: the ONE place that turns a Claude Code
//! `usage` object or transcript line into token numbers. The sentinel's
//! per-turn usage, its context meter and `hoop usage` all read through here,
//! so they can never disagree on what a number means.
//!
//! Rules kept here:
//! - the five token kinds stay apart (full-price input, 5-minute cache write,
//!   1-hour cache write, cache write whose TTL the line does not say, cache
//!   read, output) because their prices differ by up to 10×;
//! - a number that is not in the line is never estimated: a missing field is
//!   0 for that kind and a line with no token field at all is not usage;
//! - transcripts are read as a stream of lines, never as a whole file, and a
//!   line that cannot carry usage is never JSON-parsed (a byte pre-filter).

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The token numbers of one API response, never estimated.
///
/// `cache_creation_input_tokens` is split by TTL when the line's
/// `cache_creation` object gives the split; whatever part of the total the
/// split does not cover is `cache_write_unsplit` (priced at the 5-minute
/// rate, the API's default TTL).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Full-price input tokens (`input_tokens`).
    pub input: u64,
    /// Cache writes with the 5-minute TTL (`cache_creation.ephemeral_5m_input_tokens`).
    pub cache_write_5m: u64,
    /// Cache writes with the 1-hour TTL (`cache_creation.ephemeral_1h_input_tokens`).
    pub cache_write_1h: u64,
    /// Cache writes the line does not split by TTL.
    pub cache_write_unsplit: u64,
    /// Cache reads (`cache_read_input_tokens`).
    pub cache_read: u64,
    /// Output tokens (`output_tokens`).
    pub output: u64,
}

/// The `usage` object as the API and the CLI write it; only the fields the
/// meter needs, everything else is skipped by serde.
#[derive(Debug, Deserialize)]
struct RawUsage {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation: Option<RawCacheCreation>,
}

#[derive(Debug, Deserialize)]
struct RawCacheCreation {
    ephemeral_5m_input_tokens: Option<u64>,
    ephemeral_1h_input_tokens: Option<u64>,
}

impl RawUsage {
    fn into_usage(self) -> Option<Usage> {
        if self.input_tokens.is_none()
            && self.output_tokens.is_none()
            && self.cache_creation_input_tokens.is_none()
            && self.cache_read_input_tokens.is_none()
        {
            return None;
        }
        let (w5, w1) = self
            .cache_creation
            .map(|c| {
                (
                    c.ephemeral_5m_input_tokens.unwrap_or(0),
                    c.ephemeral_1h_input_tokens.unwrap_or(0),
                )
            })
            .unwrap_or((0, 0));
        let total = self.cache_creation_input_tokens.unwrap_or(0);
        Some(Usage {
            input: self.input_tokens.unwrap_or(0),
            cache_write_5m: w5,
            cache_write_1h: w1,
            // A split that covers less than the total leaves the rest
            // unsplit; a split that claims more than the total is kept as
            // given (the detailed numbers are the API's own).
            cache_write_unsplit: total.saturating_sub(w5.saturating_add(w1)),
            cache_read: self.cache_read_input_tokens.unwrap_or(0),
            output: self.output_tokens.unwrap_or(0),
        })
    }
}

impl Usage {
    /// All cache writes, whatever their TTL (`cache_creation_input_tokens`).
    pub fn cache_write(&self) -> u64 {
        self.cache_write_5m
            .saturating_add(self.cache_write_1h)
            .saturating_add(self.cache_write_unsplit)
    }

    /// The context size this response leaves behind: everything the request
    /// carried (input + cache write + cache read) plus the output, which the
    /// next request carries too. This is the CLI's own measure (its
    /// autocompact `pre_tokens` is this sum plus the new turn's text), so the
    /// sentinel's compaction threshold and the CLI's ceiling compare alike.
    pub fn context_tokens(&self) -> u64 {
        self.input
            .saturating_add(self.cache_write())
            .saturating_add(self.cache_read)
            .saturating_add(self.output)
    }

    /// Every token of every kind (same sum as [`Usage::context_tokens`],
    /// named for the meter's totals).
    pub fn total(&self) -> u64 {
        self.context_tokens()
    }

    /// True when every number is 0 (e.g. the CLI's `<synthetic>` error lines).
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }

    /// Parse an API / CLI `usage` object (a transcript line's
    /// `message.usage`, or stream-json `result.usage`). `None` when `v` is
    /// not an object, carries no token field at all, or a token field is not
    /// a non-negative integer: a number is never guessed.
    pub fn from_json(v: &serde_json::Value) -> Option<Usage> {
        if !v.is_object() {
            return None;
        }
        RawUsage::deserialize(v).ok()?.into_usage()
    }

    /// Component-wise sum (saturating).
    pub fn add(&mut self, o: &Usage) {
        self.input = self.input.saturating_add(o.input);
        self.cache_write_5m = self.cache_write_5m.saturating_add(o.cache_write_5m);
        self.cache_write_1h = self.cache_write_1h.saturating_add(o.cache_write_1h);
        self.cache_write_unsplit = self
            .cache_write_unsplit
            .saturating_add(o.cache_write_unsplit);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
        self.output = self.output.saturating_add(o.output);
    }

    /// The order "larger usage" follows when copies of one response differ:
    /// the CLI repeats a growing usage on each content-block line, so the
    /// largest total (then the largest output, then each kind) is the final
    /// one. A total order, so the winner never depends on reading order.
    pub fn size_key(&self) -> [u64; 7] {
        [
            self.total(),
            self.output,
            self.input,
            self.cache_read,
            self.cache_write_1h,
            self.cache_write_5m,
            self.cache_write_unsplit,
        ]
    }
}

// ---------------------------------------------------------------- lines

/// The bytes a line must contain to possibly carry usage. Lines without them
/// are never JSON-parsed: that is what keeps a multi-gigabyte scan fast.
pub const USAGE_NEEDLE: &[u8] = b"\"usage\"";

/// The fields of one transcript line that carry usage, borrowed from the line
/// where no unescaping is needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageLine<'a> {
    /// `message.id` (the API response id).
    pub message_id: Option<Cow<'a, str>>,
    /// `requestId` (the API request id).
    pub request_id: Option<Cow<'a, str>>,
    /// `message.model` (e.g. `claude-opus-4-8`, `<synthetic>`).
    pub model: Option<Cow<'a, str>>,
    /// `timestamp` as written (ISO 8601).
    pub timestamp: Option<Cow<'a, str>>,
    /// `sessionId`.
    pub session_id: Option<Cow<'a, str>>,
    /// `cwd` of the session.
    pub cwd: Option<Cow<'a, str>>,
    /// `isSidechain` (subagent traffic).
    pub is_sidechain: bool,
    /// `message.usage`.
    pub usage: Usage,
}

/// What one transcript line is, for the usage reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedLine<'a> {
    /// Blank, or a line that cannot carry usage (no [`USAGE_NEEDLE`], or
    /// valid JSON without `message.usage`).
    NoUsage,
    /// A line with `message.usage`.
    Usage(UsageLine<'a>),
    /// A line that is not valid JSON (or whose usage numbers are not
    /// non-negative integers). Callers count these; they are never silent.
    Malformed,
}

#[derive(Deserialize)]
struct RawLine<'a> {
    #[serde(borrow)]
    message: Option<RawMessage<'a>>,
    #[serde(borrow, rename = "requestId")]
    request_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "sessionId")]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cwd: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<bool>,
}

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    usage: Option<RawUsage>,
}

/// True when `line` could be a JSON object line at all: the cheap structural
/// check applied to EVERY line, so a truncated line (a crash mid-write) is
/// counted even when the pre-filter keeps it from being parsed.
pub fn looks_like_object(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    t.is_empty() || (t.first() == Some(&b'{') && t.last() == Some(&b'}'))
}

/// Classify one transcript line (without its newline).
pub fn parse_line(line: &[u8]) -> ParsedLine<'_> {
    let t = line.trim_ascii();
    if t.is_empty() {
        return ParsedLine::NoUsage;
    }
    if !looks_like_object(t) {
        return ParsedLine::Malformed;
    }
    if memchr::memmem::find(t, USAGE_NEEDLE).is_none() {
        return ParsedLine::NoUsage;
    }
    let raw: RawLine<'_> = match serde_json::from_slice(t) {
        Ok(r) => r,
        Err(_) => return ParsedLine::Malformed,
    };
    let Some(msg) = raw.message else {
        return ParsedLine::NoUsage;
    };
    let Some(usage) = msg.usage else {
        return ParsedLine::NoUsage;
    };
    let Some(usage) = usage.into_usage() else {
        return ParsedLine::NoUsage;
    };
    ParsedLine::Usage(UsageLine {
        message_id: msg.id,
        request_id: raw.request_id,
        model: msg.model,
        timestamp: raw.timestamp,
        session_id: raw.session_id,
        cwd: raw.cwd,
        is_sidechain: raw.is_sidechain.unwrap_or(false),
        usage,
    })
}

#[derive(Deserialize)]
struct RawBoundary {
    subtype: Option<String>,
    #[serde(rename = "compactMetadata")]
    compact_metadata: Option<RawCompactMeta>,
}

#[derive(Deserialize)]
struct RawCompactMeta {
    #[serde(rename = "postTokens")]
    post_tokens: Option<u64>,
}

/// `Some(post_tokens)` when `line` is a `compact_boundary` record (the inner
/// option is `None` when the record does not say its post-compact size).
fn compact_boundary(line: &[u8]) -> Option<Option<u64>> {
    memchr::memmem::find(line, b"\"compact_boundary\"")?;
    let b: RawBoundary = serde_json::from_slice(line.trim_ascii()).ok()?;
    if b.subtype.as_deref() != Some("compact_boundary") {
        return None;
    }
    Some(b.compact_metadata.and_then(|m| m.post_tokens))
}

/// The context meter over lines already in memory (the tail of a
/// transcript): the context size of the latest non-zero main-chain usage. A
/// `compact_boundary` after it replaces it with the boundary's `postTokens`
/// (or "unknown" when the boundary does not say), because the pre-compact
/// size no longer describes the session. Sidechain (subagent) usage is not
/// the session's context and is skipped.
pub fn context_tokens_in(lines: &[u8]) -> Option<u64> {
    let mut latest = None;
    for line in lines.split(|&b| b == b'\n') {
        if let ParsedLine::Usage(u) = parse_line(line) {
            if !u.is_sidechain && !u.usage.is_zero() {
                latest = Some(u.usage.context_tokens());
            }
        } else if let Some(post) = compact_boundary(line) {
            latest = post;
        }
    }
    latest
}

/// The context meter: read only the last `tail_bytes` of a transcript and
/// return the context size of the latest non-zero usage (see
/// [`context_tokens_in`]). `Ok(None)` when the tail holds no usage. The
/// first, possibly cut, line of the tail is skipped.
pub fn context_tokens_from_tail(path: &Path, tail_bytes: u64) -> io::Result<Option<u64>> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(tail_bytes);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((len - start) as usize);
    f.take(len - start).read_to_end(&mut buf)?;
    let body = if start > 0 {
        match memchr::memchr(b'\n', &buf) {
            Some(i) => &buf[i + 1..],
            None => &[][..],
        }
    } else {
        &buf[..]
    };
    Ok(context_tokens_in(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn from_json_keeps_the_kinds_apart_and_splits_cache_writes() {
        let u = Usage::from_json(&json!({
            "input_tokens": 10, "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 1000, "output_tokens": 7,
            "cache_creation": {"ephemeral_5m_input_tokens": 30, "ephemeral_1h_input_tokens": 60}
        }))
        .unwrap();
        assert_eq!(
            u,
            Usage {
                input: 10,
                cache_write_5m: 30,
                cache_write_1h: 60,
                cache_write_unsplit: 10,
                cache_read: 1000,
                output: 7
            }
        );
        assert_eq!(u.cache_write(), 100);
        assert_eq!(u.context_tokens(), 10 + 100 + 1000 + 7);
    }

    #[test]
    fn from_json_never_guesses() {
        // Not an object, no token field, a negative or fractional number.
        for v in [
            json!(null),
            json!(5),
            json!({}),
            json!({"service_tier": "standard"}),
            json!({"input_tokens": -1, "output_tokens": 3}),
            json!({"input_tokens": 1.5}),
            json!({"input_tokens": "12"}),
        ] {
            assert_eq!(Usage::from_json(&v), None, "{v}");
        }
        // Missing kinds are zero, not estimated.
        let u = Usage::from_json(&json!({"output_tokens": 3})).unwrap();
        assert_eq!(
            u,
            Usage {
                output: 3,
                ..Usage::default()
            }
        );
    }

    #[test]
    fn from_json_reads_a_real_stream_json_result_usage() {
        let v: serde_json::Value = serde_json::from_str(r#"{"input_tokens":1002,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":7,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"}"#).unwrap();
        let u = Usage::from_json(&v).unwrap();
        assert_eq!(u.input, 1002);
        assert_eq!(u.cache_write(), 200);
        assert_eq!(u.cache_write_unsplit, 200, "a 0/0 split does not cover 200");
        assert_eq!(u.cache_read, 3000);
        assert_eq!(u.output, 7);
    }

    const REAL_ASSISTANT: &str = r#"{"parentUuid":"7fd6ca04-5e1b-4036-8230-6d60538b0568","isSidechain":false,"message":{"id":"msg_0001","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{"type":"tool_use","id":"toolu_0001","name":"Bash","input":{"command":"echo hi > /srv/obs/touched","description":"Write hi to touched file"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1001,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":7,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},"stop_details":null},"type":"assistant","uuid":"03a975c5-08f8-47ff-a951-e217c8e949ef","timestamp":"2026-12-02T11:57:57.327Z","userType":"external","entrypoint":"sdk-cli","cwd":"/srv/obs/work","sessionId":"e9e99e95-77b7-4c2f-8803-b41bf3fd50ee","version":"2.1.197","gitBranch":"HEAD"}"#;

    #[test]
    fn parses_a_real_assistant_line() {
        let ParsedLine::Usage(u) = parse_line(REAL_ASSISTANT.as_bytes()) else {
            panic!("usage line not recognised")
        };
        assert_eq!(u.message_id.as_deref(), Some("msg_0001"));
        assert_eq!(u.request_id, None);
        assert_eq!(u.model.as_deref(), Some("claude-opus-4-8"));
        assert_eq!(u.timestamp.as_deref(), Some("2026-12-02T11:57:57.327Z"));
        assert_eq!(
            u.session_id.as_deref(),
            Some("e9e99e95-77b7-4c2f-8803-b41bf3fd50ee")
        );
        assert_eq!(u.cwd.as_deref(), Some("/srv/obs/work"));
        assert!(!u.is_sidechain);
        assert_eq!(u.usage.context_tokens(), 4208);
    }

    #[test]
    fn classifies_lines() {
        let cases: &[(&str, &str)] = &[
            ("", "none"),
            ("   ", "none"),
            (
                r#"{"type":"user","message":{"role":"user","content":"hi"}}"#,
                "none",
            ),
            // Mentions usage but has no message.usage (e.g. a tool result).
            (
                r#"{"type":"user","toolUseResult":{"usage":{"input_tokens":5}}}"#,
                "none",
            ),
            // A line cut mid-write: counted even without the needle.
            (r#"{"type":"user","message":{"role":"us"#, "bad"),
            (r#"{"message":{"usage":{"input_tokens":1,}}}"#, "bad"),
            (r#"{"message":{"usage":{"input_tokens":-4}}}"#, "bad"),
            (r#"{"message":{"usage":{"input_tokens":4}}}"#, "usage"),
            (r#"garbage"#, "bad"),
        ];
        for (line, want) in cases {
            let got = match parse_line(line.as_bytes()) {
                ParsedLine::NoUsage => "none",
                ParsedLine::Usage(_) => "usage",
                ParsedLine::Malformed => "bad",
            };
            assert_eq!(got, *want, "{line}");
        }
    }

    #[test]
    fn size_key_prefers_the_grown_copy() {
        let a = Usage {
            input: 10,
            output: 1,
            ..Usage::default()
        };
        let b = Usage {
            input: 10,
            output: 250,
            ..Usage::default()
        };
        assert!(b.size_key() > a.size_key());
    }

    fn write(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    #[test]
    fn context_meter_takes_the_latest_non_zero_usage() {
        let d = tempfile::tempdir().unwrap();
        let body = [
            r#"{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":100,"output_tokens":5}}}"#,
            r#"{"type":"assistant","message":{"id":"m2","usage":{"input_tokens":300,"cache_read_input_tokens":1000,"output_tokens":5}}}"#,
            r#"{"type":"assistant","isSidechain":true,"message":{"id":"s1","usage":{"input_tokens":9,"output_tokens":1}}}"#,
            r#"{"type":"assistant","message":{"id":"e","model":"<synthetic>","usage":{"input_tokens":0,"output_tokens":0}}}"#,
            r#"{"type":"last-prompt"}"#,
        ]
        .join("\n");
        let p = write(d.path(), "t.jsonl", &body);
        assert_eq!(context_tokens_from_tail(&p, 1 << 20).unwrap(), Some(1305));
        let p = write(d.path(), "empty.jsonl", "");
        assert_eq!(context_tokens_from_tail(&p, 1 << 20).unwrap(), None);
        assert!(context_tokens_from_tail(&d.path().join("missing"), 10).is_err());
    }

    #[test]
    fn context_meter_reads_only_the_tail_and_skips_the_cut_line() {
        let d = tempfile::tempdir().unwrap();
        let early = r#"{"message":{"id":"m1","usage":{"input_tokens":777,"output_tokens":1}}}"#;
        let late = r#"{"message":{"id":"m2","usage":{"input_tokens":5,"output_tokens":1}}}"#;
        let body = format!("{early}\n{late}\n");
        let p = write(d.path(), "t.jsonl", &body);
        // A tail that cuts into `late` sees nothing whole.
        assert_eq!(context_tokens_from_tail(&p, 10).unwrap(), None);
        // A tail that holds all of `late` but cuts `early` sees `late` only.
        let n = late.len() as u64 + 3;
        assert_eq!(context_tokens_from_tail(&p, n).unwrap(), Some(6));
        // With only `early` in the file the meter sees it; proves the tail
        // above really excluded it.
        let p2 = write(d.path(), "e.jsonl", &format!("{early}\n"));
        assert_eq!(context_tokens_from_tail(&p2, 1 << 20).unwrap(), Some(778));
    }

    #[test]
    fn context_meter_after_a_compact_boundary_uses_post_tokens() {
        let pre = r#"{"message":{"id":"m1","usage":{"input_tokens":170000,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":18}}}"#;
        let boundary = r#"{"parentUuid":null,"isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":173218,"postTokens":595}}"#;
        let after = r#"{"message":{"id":"m5","usage":{"input_tokens":900,"output_tokens":7}}}"#;
        assert_eq!(context_tokens_in(pre.as_bytes()), Some(173218));
        assert_eq!(
            context_tokens_in(format!("{pre}\n{boundary}\n").as_bytes()),
            Some(595)
        );
        assert_eq!(
            context_tokens_in(format!("{pre}\n{boundary}\n{after}\n").as_bytes()),
            Some(907)
        );
    }

    #[test]
    fn context_meter_on_real_transcripts() {
        // Written by the real CLI (copies kept with the meter's test data).
        let compacted = include_bytes!(
            "../../meter/tests/data/transcript-two-turns-resume-reactive-compact.jsonl"
        );
        // The last usage (msg_0003) comes after the compact boundary.
        assert_eq!(context_tokens_in(compacted), Some(1003 + 200 + 3000 + 7));
        let tool = include_bytes!("../../meter/tests/data/transcript-sample-tool-use.jsonl");
        assert_eq!(context_tokens_in(tool), Some(1002 + 200 + 3000 + 7));
        let error = include_bytes!("../../meter/tests/data/transcript-api-error-401.jsonl");
        assert_eq!(
            context_tokens_in(error),
            None,
            "a zero <synthetic> usage is not a size"
        );
    }
}
