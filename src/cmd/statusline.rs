//! `hoop statusline`: Claude Code's `statusLine` command. It reads the
//! window's JSON on stdin (`transcript_path`, `model`, `context_window`, …)
//! and prints one line:
//!
//! `🧠 45,210/1M (5%) | 💰 $12.34 today · $3.21 block (2h13m left) | 🔔 2`
//!
//! - the session's context fill, by the sentinel's context meter (the last
//!   2 MB of the session's transcript) over the model's context window;
//! - today's cost (UTC day) and the active 5-hour block's, from the meter's
//!   own small state (`<hoop root>/statusline-cache.bin`, the transcripts
//!   of the last two days, read incrementally);
//! - where the window runs the bridge's Codex delivery, the doorbell events
//!   still pending a receipt.
//!
//! It never shows an error: a part that cannot be known is `—`, and a
//! failure of the whole prints the short fallback [`FALLBACK`]. It starts
//! no async runtime and installs no log subscriber (dispatched before
//! either, like the hooks).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use hoop_meter::prices::{PRICES_FILE, PriceBook};
use hoop_meter::report::{self, Kind, ReportOptions};
use hoop_meter::timefmt::day_of;
use hoop_meter::{CollectOptions, collect};

/// What is printed when nothing at all can be shown.
pub const FALLBACK: &str = "hoop: —";
/// The status line's incremental state under the hoop root.
pub const STATE_FILE: &str = "statusline-cache.bin";
/// Largest payload read (Claude Code sends a few hundred bytes).
pub const PAYLOAD_MAX: u64 = 64 * 1024;
/// The context window assumed when the payload does not give one and the
/// model id carries no `[1m]` tag (Claude Code's standard window).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;
/// The window of a model id tagged `[1m]`.
pub const LONG_CONTEXT_WINDOW: u64 = 1_000_000;
/// How far back the state reaches: yesterday and today (UTC), enough for
/// today's cost and for the 5-hour block that is active now.
pub const STATE_DAYS: i64 = 2;

const DAY_MS: i64 = 86_400_000;

/// The part of Claude Code's payload the line needs.
#[derive(Debug, Default)]
pub struct Payload {
    pub transcript_path: Option<PathBuf>,
    pub model_id: Option<String>,
    pub context_window_size: Option<u64>,
}

impl Payload {
    /// Read what is there; anything missing or malformed is absent.
    pub fn parse(raw: &[u8]) -> Payload {
        let v: serde_json::Value = serde_json::from_slice(raw).unwrap_or_default();
        Payload {
            transcript_path: v["transcript_path"].as_str().map(PathBuf::from),
            model_id: v["model"]["id"].as_str().map(str::to_string),
            context_window_size: v["context_window"]["context_window_size"].as_u64(),
        }
    }
}

/// The figures a line is made of; `None` is unknown.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Figures {
    pub context_tokens: Option<u64>,
    pub context_window: u64,
    /// Today's cost in USD; `unpriced` when part of it is unknown.
    pub today: Option<Cost>,
    pub block: Option<Cost>,
    /// Minutes left in the active block (`None`: no active block).
    pub block_left_min: Option<i64>,
    /// Pending doorbell events (`None`: this window runs no bridge store).
    pub pending: Option<usize>,
}

/// A cost, and whether some tokens in it have no price.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Cost {
    pub usd: f64,
    pub unpriced: bool,
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn window(n: u64) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1_000 && n.is_multiple_of(1_000) {
        format!("{}k", n / 1_000)
    } else {
        thousands(n)
    }
}

fn money(c: Option<Cost>) -> String {
    match c {
        None => "—".into(),
        Some(c) => format!("${:.2}{}", c.usd, if c.unpriced { "+?" } else { "" }),
    }
}

/// The line (pure).
pub fn render(f: &Figures) -> String {
    let ctx = match f.context_tokens {
        Some(t) => {
            let pct = t.saturating_mul(100) / f.context_window.max(1);
            format!("🧠 {}/{} ({pct}%)", thousands(t), window(f.context_window))
        }
        None => "🧠 —".into(),
    };
    let block = match (f.block, f.block_left_min) {
        (Some(_), Some(m)) => format!("{} block ({}h{:02}m left)", money(f.block), m / 60, m % 60),
        _ => "no active block".into(),
    };
    let mut line = format!("{ctx} | 💰 {} today · {block}", money(f.today));
    if let Some(n) = f.pending {
        line.push_str(&format!(" | 🔔 {n}"));
    }
    line
}

/// The model's context window: the payload's when it gives one, else by
/// the model id's `[1m]` tag.
pub fn context_window(p: &Payload) -> u64 {
    if let Some(n) = p.context_window_size.filter(|n| *n > 0) {
        return n;
    }
    match p.model_id.as_deref() {
        Some(id) if id.to_ascii_lowercase().contains("[1m]") => LONG_CONTEXT_WINDOW,
        _ => DEFAULT_CONTEXT_WINDOW,
    }
}

/// Doorbell events waiting for their receipt in the bridge's store under
/// `root` (`None` when this machine runs no bridge store). The bridge
/// exposes no count of its own yet; its store's listing is the one reader.
pub fn pending_events(root: &Path) -> Option<usize> {
    let bridge = root.join("bridge");
    if !bridge.join("codex").is_dir() {
        return None;
    }
    hoop_bridge::codex::Store::new(&bridge)
        .pending()
        .ok()
        .map(|p| p.len())
}

/// Today's and the active block's costs from the status line's state.
fn costs(root: Option<&Path>, now_ms: i64) -> Option<(Cost, Option<(Cost, i64)>)> {
    let dirs = super::usage::usage_dirs(root).ok()?;
    let today = day_of(now_ms);
    let opts = CollectOptions {
        state_path: root.map(|r| r.join(STATE_FILE)),
        only_files_since_ms: Some((today - (STATE_DAYS - 1)) * DAY_MS),
        threads: 1,
        ..CollectOptions::default()
    };
    let c = collect(&dirs, &opts).ok()?;
    let prices = root
        .map(|r| PriceBook::load(&r.join(PRICES_FILE)).unwrap_or_default())
        .unwrap_or_default();
    let ropts = ReportOptions {
        since_day: Some(today),
        until_day: Some(today),
        now_ms,
        prices,
        ..ReportOptions::default()
    };
    let cost = |s: &report::Sum| Cost {
        usd: s.priced_cost(),
        unpriced: s.unpriced_tokens > 0,
    };
    let day = report::build(&c, Kind::Daily, &ropts);
    let blocks = report::build(
        &c,
        Kind::Blocks,
        &ReportOptions {
            since_day: None,
            until_day: None,
            ..ropts
        },
    );
    let active = blocks.rows.iter().find(|r| {
        r.extra
            .iter()
            .any(|(k, v)| *k == "active" && v == &serde_json::json!(true))
    });
    let block = active.and_then(|r| {
        let end = r
            .extra
            .iter()
            .find(|(k, _)| *k == "end")
            .and_then(|(_, v)| v.as_str())
            .and_then(hoop_meter::timefmt::parse_ts_ms)?;
        Some((cost(&r.sum), (end - now_ms).max(0) / 60_000))
    });
    Some((cost(&day.totals), block))
}

/// Every figure, each on its own: one that fails is unknown.
fn figures(payload: &Payload, root: Option<&Path>, now_ms: i64) -> Figures {
    let context_tokens = payload.transcript_path.as_deref().and_then(|p| {
        hoop_core::transcript::context_tokens_from_tail(
            p,
            hoop_core::limits::CONTEXT_METER_TAIL_BYTES,
        )
        .ok()
        .flatten()
    });
    let (today, block) = match costs(root, now_ms) {
        Some((t, b)) => (Some(t), b),
        None => (None, None),
    };
    Figures {
        context_tokens,
        context_window: context_window(payload),
        today,
        block: block.map(|(c, _)| c),
        block_left_min: block.map(|(_, m)| m),
        pending: root.and_then(pending_events),
    }
}

pub fn run() -> ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    let line = std::panic::catch_unwind(|| {
        let mut raw = Vec::new();
        let _ = std::io::stdin().take(PAYLOAD_MAX).read_to_end(&mut raw);
        let payload = Payload::parse(&raw);
        let root = hoop_core::home::root().ok();
        render(&figures(
            &payload,
            root.as_deref(),
            hoop_core::clock::now_unix() * 1000,
        ))
    })
    .unwrap_or_else(|_| FALLBACK.to_string());
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_a_table() {
        let full = Figures {
            context_tokens: Some(45_210),
            context_window: 1_000_000,
            today: Some(Cost {
                usd: 12.344,
                unpriced: false,
            }),
            block: Some(Cost {
                usd: 3.2,
                unpriced: true,
            }),
            block_left_min: Some(133),
            pending: Some(2),
        };
        let cases = [
            (
                full.clone(),
                "🧠 45,210/1M (4%) | 💰 $12.34 today · $3.20+? block (2h13m left) | 🔔 2",
            ),
            (
                Figures {
                    pending: None,
                    block: None,
                    block_left_min: None,
                    context_window: 200_000,
                    ..full.clone()
                },
                "🧠 45,210/200k (22%) | 💰 $12.34 today · no active block",
            ),
            (
                Figures {
                    context_window: 200_000,
                    ..Figures::default()
                },
                "🧠 — | 💰 — today · no active block",
            ),
        ];
        for (f, want) in cases {
            assert_eq!(render(&f), want, "{f:?}");
        }
    }

    #[test]
    fn the_window_comes_from_the_payload_else_the_model_tag() {
        let p = |s: &str| Payload::parse(s.as_bytes());
        let cases = [
            (
                r#"{"context_window":{"context_window_size":500000}}"#,
                500_000,
            ),
            (r#"{"model":{"id":"claude-opus-4-8[1m]"}}"#, 1_000_000),
            (r#"{"model":{"id":"claude-opus-4-8"}}"#, 200_000),
            (r#"{"context_window":{"context_window_size":0}}"#, 200_000),
            ("{}", 200_000),
            ("not json", 200_000),
        ];
        for (json, want) in cases {
            assert_eq!(context_window(&p(json)), want, "{json}");
        }
    }
}
