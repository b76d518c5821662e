//! The account's usage snapshot. The backend keeps per agent the latest
//! CUMULATIVE totals (`POST /v1/workrooms/usage` is an upsert where a null
//! never overwrites) and a card's cost is its end snapshot minus its start
//! snapshot, so the sentinel reports the account's totals so far, never a
//! turn's own numbers. The totals come from the one transcript reader,
//! `hoop_meter` (each API response counted once), over the agent's config
//! dir; when they cannot be read every number is null, which keeps the
//! stored totals rather than resetting them.

use std::path::PathBuf;

use hoop_api::types::{CardId, UsageReport};
use hoop_core::transcript::Usage;

/// The report for `totals` (`None`: the reader failed). Full-price input
/// is `tokens_in`; every cache read and write is `tokens_cached_in`. A
/// number beyond `i64` is not reported (null) rather than wrapped.
pub fn snapshot(card_id: Option<CardId>, totals: Option<&Usage>) -> UsageReport {
    let num = |v: u64| i64::try_from(v).ok();
    UsageReport {
        card_id,
        tokens_in: totals.and_then(|u| num(u.input)),
        tokens_cached_in: totals.and_then(|u| num(u.cache_read.saturating_add(u.cache_write()))),
        tokens_out: totals.and_then(|u| num(u.output)),
    }
}

/// Read the account's cumulative totals (blocking: run it off the async
/// threads). `dirs` are the transcript roots of [`account_dirs`], `cache`
/// the meter's incremental state.
pub fn read_totals(
    dirs: Vec<PathBuf>,
    cache: Option<PathBuf>,
) -> Result<Usage, hoop_meter::MeterError> {
    hoop_meter::cumulative(&dirs, cache)
}

/// Every transcript root of the account: the agent CLI's config dir (from
/// the agent's environment `env`, else the inherited one) and each of the
/// home's workers' scratch HOMEs (their tokens are the account's too, and
/// production records them on the worker's card through these totals).
/// `None` when the agent's config dir cannot be known.
pub fn account_dirs(
    home: &hoop_core::home::Home,
    env: &[(String, String)],
) -> Option<Vec<PathBuf>> {
    let main = crate::context::config_dir(env, |k| std::env::var_os(k))?;
    let mut dirs = vec![main];
    dirs.extend(crate::worker::transcript_dirs(home));
    Some(dirs)
}

/// True when the transcripts hold the turn's own output: the CLI writes a
/// turn's last response to its transcript around the time it prints the
/// result line, so a snapshot read at once can miss it. `turn_out` is the
/// output the result line counted (`None`: unknown, nothing to wait for).
pub fn caught_up(before: &Usage, now: &Usage, turn_out: Option<i64>) -> bool {
    let want = turn_out.map_or(0, |t| u64::try_from(t).unwrap_or(0));
    now.output.saturating_sub(before.output) >= want
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caught_up_when_the_turns_output_is_in_the_transcripts() {
        let out = |o: u64| usage(0, 0, 0, 0, 0, o);
        // (before, now, turn's output, caught up)
        let table = [
            (out(10), out(10), None, true),
            (out(10), out(10), Some(0), true),
            (out(10), out(10), Some(-1), true),
            (out(10), out(13), Some(7), false),
            (out(10), out(17), Some(7), true),
            (out(10), out(30), Some(7), true),
            // A transcript rewritten shorter never waits forever on a wrap.
            (out(10), out(0), Some(7), false),
        ];
        for (before, now, turn, want) in table {
            assert_eq!(
                caught_up(&before, &now, turn),
                want,
                "{before:?} {now:?} {turn:?}"
            );
        }
    }

    fn usage(input: u64, w5: u64, w1: u64, wu: u64, read: u64, out: u64) -> Usage {
        Usage {
            input,
            cache_write_5m: w5,
            cache_write_1h: w1,
            cache_write_unsplit: wu,
            cache_read: read,
            output: out,
        }
    }

    #[test]
    fn what_is_reported() {
        // (totals, expected (in, cached_in, out))
        type Row = (Option<Usage>, (Option<i64>, Option<i64>, Option<i64>));
        let big = u64::MAX;
        let table: Vec<Row> = vec![
            // The reader failed: nothing is reported, the stored totals stay.
            (None, (None, None, None)),
            // A fresh account reports zeros (a known start snapshot).
            (Some(usage(0, 0, 0, 0, 0, 0)), (Some(0), Some(0), Some(0))),
            // Cache reads and writes of every TTL are the cached input.
            (Some(usage(7, 1, 2, 3, 40, 9)), (Some(7), Some(46), Some(9))),
            // Beyond i64: that number is not reported, the others are.
            (Some(usage(big, 0, 0, 0, big, 5)), (None, None, Some(5))),
        ];
        for (totals, (i, c, o)) in table {
            let r = snapshot(Some(3), totals.as_ref());
            assert_eq!(r.card_id, Some(3), "{totals:?}");
            assert_eq!(r.tokens_in, i, "in {totals:?}");
            assert_eq!(r.tokens_cached_in, c, "cached {totals:?}");
            assert_eq!(r.tokens_out, o, "out {totals:?}");
        }
    }

    /// The snapshot is the account's running total over its transcripts,
    /// not the last turn: two turns' responses both count, a copy of one
    /// response (a resumed session's history) counts once.
    #[test]
    fn totals_are_cumulative_over_the_transcripts() {
        let dir = tempfile::tempdir().unwrap();
        let proj = dir.path().join("projects/-w");
        std::fs::create_dir_all(&proj).unwrap();
        let line = |id: &str, inp: u64, read: u64, out: u64| {
            format!(
                r#"{{"type":"assistant","timestamp":"2026-12-03T10:00:00Z","sessionId":"s","requestId":"r-{id}","message":{{"id":"{id}","model":"claude-sonnet-4-5","usage":{{"input_tokens":{inp},"cache_read_input_tokens":{read},"output_tokens":{out}}}}}}}"#
            )
        };
        let cache = dir.path().join("cache.bin");
        std::fs::write(proj.join("a.jsonl"), line("m1", 10, 100, 3) + "\n").unwrap();
        let first = read_totals(vec![dir.path().into()], Some(cache.clone())).unwrap();
        let r = snapshot(None, Some(&first));
        assert_eq!(
            (r.tokens_in, r.tokens_cached_in, r.tokens_out),
            (Some(10), Some(100), Some(3))
        );
        // A second turn appends; a second file repeats the first response.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(proj.join("a.jsonl"))
            .unwrap();
        std::io::Write::write_all(&mut f, (line("m2", 5, 200, 4) + "\n").as_bytes()).unwrap();
        std::fs::write(proj.join("b.jsonl"), line("m1", 10, 100, 3) + "\n").unwrap();
        let second = read_totals(vec![dir.path().into()], Some(cache)).unwrap();
        let r = snapshot(None, Some(&second));
        assert_eq!(
            (r.tokens_in, r.tokens_cached_in, r.tokens_out),
            (Some(15), Some(300), Some(7))
        );
    }
}
