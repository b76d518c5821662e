//! An honest model of the API's prompt cache, so cache-hit figures measured
//! through the stand-in mean something.
//!
//! The prompt is the sequence tools → system blocks → message blocks. A block
//! carrying `cache_control` is a breakpoint: after the request, the prefix
//! ending at each breakpoint is cached for its TTL (5 minutes, or 1 hour with
//! `"ttl":"1h"`). A later request reads from the cache when, at one of its
//! breakpoints or up to [`LOOKBACK`] blocks before it, its prefix is
//! byte-identical to a cached one. Reported usage: the longest cached prefix
//! is `cache_read`, the rest up to the last breakpoint `cache_creation`, the
//! remainder `input`. Tokens are counted as about four bytes each. The cache
//! lives in the server, so it survives the client process — as the real one
//! does; only a byte change in the prefix (or the TTL) loses it.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How many blocks before a breakpoint the API looks for an earlier entry.
pub const LOOKBACK: usize = 20;
/// Default cache lifetime.
pub const TTL_5M: Duration = Duration::from_secs(5 * 60);
/// Lifetime with `"ttl":"1h"`.
pub const TTL_1H: Duration = Duration::from_secs(60 * 60);

/// The usage split of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Accounted {
    pub input: u64,
    pub creation: u64,
    pub read: u64,
}

/// The cached prefixes: prefix hash → expiry.
#[derive(Debug, Default, Clone)]
pub struct CacheModel {
    entries: HashMap<u64, Instant>,
}

struct Piece {
    hash: u64,
    cum_tokens: u64,
    ttl: Option<Duration>,
}

fn tokens_of(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

fn strip_cache_control(v: &Value) -> (Value, Option<Duration>) {
    let mut v = v.clone();
    let mut ttl = None;
    if let Value::Object(m) = &mut v
        && let Some(cc) = m.remove("cache_control")
    {
        ttl = Some(if cc["ttl"] == "1h" { TTL_1H } else { TTL_5M });
    }
    (v, ttl)
}

/// The prompt as a chain of prefix hashes.
fn pieces(body: &Value) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut h = DefaultHasher::new();
    let mut cum = 0u64;
    let mut push = |tag: &str, block: &Value, out: &mut Vec<Piece>| {
        let (clean, ttl) = strip_cache_control(block);
        let text = clean.to_string();
        tag.hash(&mut h);
        text.hash(&mut h);
        cum += tokens_of(text.len());
        out.push(Piece {
            hash: h.finish(),
            cum_tokens: cum,
            ttl,
        });
    };
    if let Some(tools) = body["tools"].as_array() {
        for t in tools {
            push("tool", t, &mut out);
        }
    }
    match &body["system"] {
        Value::String(s) => push("system", &Value::String(s.clone()), &mut out),
        Value::Array(a) => a.iter().for_each(|b| push("system", b, &mut out)),
        _ => {}
    }
    if let Some(msgs) = body["messages"].as_array() {
        for m in msgs {
            let role = m["role"].as_str().unwrap_or("?");
            match &m["content"] {
                Value::Array(blocks) => {
                    for (i, b) in blocks.iter().enumerate() {
                        let tag = if i == 0 {
                            format!("{role}:start")
                        } else {
                            role.to_string()
                        };
                        push(&tag, b, &mut out);
                    }
                }
                other => push(&format!("{role}:start"), other, &mut out),
            }
        }
    }
    out
}

impl CacheModel {
    /// Account one request at `now` and record its breakpoints.
    pub fn account(&mut self, body: &Value, now: Instant) -> Accounted {
        self.entries.retain(|_, exp| *exp > now);
        let ps = pieces(body);
        let total = ps.last().map_or(0, |p| p.cum_tokens);
        let breakpoints: Vec<usize> = (0..ps.len()).filter(|&i| ps[i].ttl.is_some()).collect();
        let Some(&last) = breakpoints.last() else {
            return Accounted {
                input: total,
                ..Accounted::default()
            };
        };
        let mut hit: Option<usize> = None;
        for &b in &breakpoints {
            for j in (b.saturating_sub(LOOKBACK)..=b).rev() {
                if self.entries.contains_key(&ps[j].hash) {
                    hit = Some(hit.map_or(j, |h| h.max(j)));
                    break;
                }
            }
        }
        let read = hit.map_or(0, |j| ps[j].cum_tokens);
        if let Some(j) = hit {
            // A read refreshes the entry's lifetime.
            let ttl = ps[j].ttl.unwrap_or(TTL_5M);
            self.entries.insert(ps[j].hash, now + ttl);
        }
        for &b in &breakpoints {
            let ttl = ps[b].ttl.unwrap_or(TTL_5M);
            let exp = now + ttl;
            let e = self.entries.entry(ps[b].hash).or_insert(exp);
            if *e < exp {
                *e = exp;
            }
        }
        let upto = ps[last].cum_tokens;
        Accounted {
            input: total - upto,
            creation: upto - read,
            read,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(system: &str, msgs: Value) -> Value {
        json!({
            "tools": [{"name": "Bash", "description": "run a command", "input_schema": {}}],
            "system": [
                {"type": "text", "text": system},
                {"type": "text", "text": "main prompt ".repeat(50), "cache_control": {"type": "ephemeral"}}
            ],
            "messages": msgs,
        })
    }

    #[test]
    fn no_breakpoint_means_all_input() {
        let mut c = CacheModel::default();
        let a = c.account(
            &json!({"messages": [{"role": "user", "content": "hi"}]}),
            Instant::now(),
        );
        assert_eq!((a.creation, a.read), (0, 0));
        assert!(a.input > 0);
    }

    #[test]
    fn second_request_reads_the_shared_prefix_and_a_changed_prefix_reads_nothing() {
        let mut c = CacheModel::default();
        let now = Instant::now();
        let m1 = json!([{"role": "user", "content": [{"type": "text", "text": "turn one", "cache_control": {"type": "ephemeral"}}]}]);
        let a1 = c.account(&req("header A", m1), now);
        assert_eq!(a1.read, 0);
        assert!(a1.creation > 0);
        let m2 = json!([
            {"role": "user", "content": [{"type": "text", "text": "turn one"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {"role": "user", "content": [{"type": "text", "text": "turn two", "cache_control": {"type": "ephemeral"}}]}
        ]);
        let a2 = c.account(&req("header A", m2.clone()), now);
        assert_eq!(a2.read, a1.creation, "the whole first prompt is read back");
        // Same conversation, different first system block (another process's
        // billing header): nothing matches.
        let a3 = c.account(&req("header B", m2), now);
        assert_eq!(a3.read, 0);
    }

    #[test]
    fn entries_expire_after_their_ttl() {
        let mut c = CacheModel::default();
        let now = Instant::now();
        let m = json!([{"role": "user", "content": "x"}]);
        c.account(&req("h", m.clone()), now);
        assert!(
            c.account(&req("h", m.clone()), now + Duration::from_secs(60))
                .read
                > 0
        );
        assert_eq!(
            c.account(
                &req("h", m),
                now + Duration::from_secs(60) + TTL_5M + Duration::from_secs(1)
            )
            .read,
            0
        );
    }
}
