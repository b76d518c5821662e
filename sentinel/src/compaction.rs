//! When the agent's context is compacted, as plain decisions over numbers.
//!
//! - Cold start: a process that starts on a session whose context is at least
//!   the `cold_compact` threshold gets `/compact` before its first turn, so a
//!   person never waits minutes for the first answer after a restart.
//! - Hot: never compact from outside; the CLI's own autocompact (ceiling
//!   `CLAUDE_CODE_AUTO_COMPACT_WINDOW`, 1,000,000 by default) is the only
//!   compaction while a process is warm.
//! - Idle exit: compact, then stop (see `Driver::compact_and_stop`).
//! - Auto-off: a ceiling below the real context kills the home — every turn
//!   starts with a compaction that cannot get the context under the ceiling,
//!   burns the turn and says nothing. [`autocompact_kills`] recognises it
//!   from what a turn showed; the driver then writes the switch file
//!   `autocompact_auto_off` (with the reason), which turns autocompact off
//!   for that home until a person removes it.

use hoop_core::fsutil::{WriteOptions, write_atomic};
use hoop_core::home::Home;

use crate::switches::AUTOCOMPACT_AUTO_OFF;

/// The CLI compacts at its effective window minus this much: it keeps up to
/// 20,000 tokens for output and starts compacting 13,000 before the rest is
/// full (read from its code; see the CLI notes on automatic compaction).
pub const AUTOCOMPACT_HEADROOM: u64 = 20_000 + 13_000;
/// Auto compactions in ONE turn from which the ceiling is taken as too low:
/// one is the ceiling doing its job, a second means the first did not help.
pub const AUTO_COMPACTS_PER_TURN_LIMIT: u32 = 2;

/// Whether a cold process must compact before its first turn.
pub fn cold_compact_due(context_tokens: Option<u64>, threshold: Option<u64>) -> bool {
    matches!((context_tokens, threshold), (Some(c), Some(t)) if c >= t)
}

/// What the driver saw around one turn, for the auto-off detector.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AutoOffEvidence {
    /// The autocompact ceiling in force (`None` = autocompact off).
    pub ceiling: Option<u64>,
    /// The context meter before the turn.
    pub context_before: Option<u64>,
    /// The turn ran out of time.
    pub timed_out: bool,
    /// The turn ended without saying anything (no text, no tool call).
    pub empty: bool,
    /// `compact_boundary` lines with `trigger: auto` during the turn.
    pub auto_compacts: u32,
    /// `compact_result: failed` status lines during the turn.
    pub compact_failures: u32,
}

/// `Some(reason)` when the evidence says the ceiling is below the real
/// context (the home would die turn after turn); `None` otherwise.
pub fn autocompact_kills(e: &AutoOffEvidence) -> Option<String> {
    let ceiling = e.ceiling?;
    let silent = e.timed_out || e.empty;
    if let Some(ctx) = e.context_before {
        if ctx >= ceiling {
            return Some(format!(
                "context {ctx} tokens is at or above the autocompact ceiling {ceiling}"
            ));
        }
        if silent && ctx.saturating_add(AUTOCOMPACT_HEADROOM) >= ceiling {
            return Some(format!(
                "a turn {} with context {ctx} tokens within {AUTOCOMPACT_HEADROOM} of the autocompact ceiling {ceiling}",
                if e.timed_out {
                    "timed out"
                } else {
                    "said nothing"
                }
            ));
        }
    }
    if e.auto_compacts >= AUTO_COMPACTS_PER_TURN_LIMIT {
        return Some(format!(
            "{} automatic compactions in one turn under the ceiling {ceiling}",
            e.auto_compacts
        ));
    }
    if silent && e.compact_failures > 0 {
        return Some(format!(
            "automatic compaction failed and the turn {} (ceiling {ceiling})",
            if e.timed_out {
                "timed out"
            } else {
                "said nothing"
            }
        ));
    }
    None
}

/// Write `autocompact_auto_off` with the reason and the time.
pub fn write_auto_off(home: &Home, reason: &str, unix_now: i64) -> std::io::Result<()> {
    let text = format!(
        "{reason}\nwritten at unix {unix_now}; remove this file to turn autocompact back on\n"
    );
    write_atomic(
        &home.switch_path(AUTOCOMPACT_AUTO_OFF),
        text.as_bytes(),
        WriteOptions::default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_compaction_table() {
        for (ctx, thr, want) in [
            (None, Some(400_000), false),
            (Some(399_999), Some(400_000), false),
            (Some(400_000), Some(400_000), true),
            (Some(450_000), Some(400_000), true),
            (Some(450_000), None, false),
        ] {
            assert_eq!(cold_compact_due(ctx, thr), want, "{ctx:?} {thr:?}");
        }
    }

    #[test]
    fn auto_off_table() {
        let base = AutoOffEvidence {
            ceiling: Some(200_000),
            ..Default::default()
        };
        let cases: Vec<(AutoOffEvidence, bool)> = vec![
            // Autocompact off: nothing to detect.
            (
                AutoOffEvidence {
                    ceiling: None,
                    context_before: Some(900_000),
                    timed_out: true,
                    auto_compacts: 5,
                    ..Default::default()
                },
                false,
            ),
            // Healthy: context well below the ceiling, turn fine.
            (
                AutoOffEvidence {
                    context_before: Some(100_000),
                    ..base.clone()
                },
                false,
            ),
            // One auto compaction is the ceiling doing its job.
            (
                AutoOffEvidence {
                    context_before: Some(150_000),
                    auto_compacts: 1,
                    ..base.clone()
                },
                false,
            ),
            // Ceiling below the real context.
            (
                AutoOffEvidence {
                    context_before: Some(450_000),
                    ..base.clone()
                },
                true,
            ),
            (
                AutoOffEvidence {
                    context_before: Some(200_000),
                    ..base.clone()
                },
                true,
            ),
            // Near the ceiling and the turn timed out / said nothing.
            (
                AutoOffEvidence {
                    context_before: Some(180_000),
                    timed_out: true,
                    ..base.clone()
                },
                true,
            ),
            (
                AutoOffEvidence {
                    context_before: Some(180_000),
                    empty: true,
                    ..base.clone()
                },
                true,
            ),
            // Far from the ceiling, a timeout is just a timeout.
            (
                AutoOffEvidence {
                    context_before: Some(50_000),
                    timed_out: true,
                    ..base.clone()
                },
                false,
            ),
            // Compacting again and again in one turn.
            (
                AutoOffEvidence {
                    context_before: None,
                    auto_compacts: 2,
                    ..base.clone()
                },
                true,
            ),
            // A failed compaction and a silent turn.
            (
                AutoOffEvidence {
                    compact_failures: 1,
                    empty: true,
                    ..base.clone()
                },
                true,
            ),
            (
                AutoOffEvidence {
                    compact_failures: 1,
                    ..base.clone()
                },
                false,
            ),
        ];
        for (e, want) in cases {
            assert_eq!(autocompact_kills(&e).is_some(), want, "{e:?}");
        }
    }

    #[test]
    fn auto_off_file_is_written_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path(), "h").unwrap();
        write_auto_off(&home, "context 450000 is above 200000", 1_700_000_000).unwrap();
        let t = std::fs::read_to_string(home.switch_path(AUTOCOMPACT_AUTO_OFF)).unwrap();
        assert!(t.contains("450000") && t.contains("1700000000"));
        assert!(crate::switches::Switches::read(&home).autocompact_auto_off);
    }
}
