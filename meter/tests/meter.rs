//! The meter over real transcript lines (written by the real CLI, in
//! `tests/data/`) and generated ones: dedup, skips, discovery, incremental
//! reads, and incremental == cold as a property.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use hoop_meter::report::{self, Kind, ReportOptions};
use hoop_meter::{CollectOptions, Collected, collect};
use proptest::prelude::*;
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A config dir with `projects/<project>/<file>` copied from real captures.
fn config_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (rel, src) in files {
        let p = d.path().join("projects").join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::copy(data(src), &p).unwrap();
    }
    d
}

fn cold(dir: &Path) -> Collected {
    collect(&[dir.to_path_buf()], &CollectOptions::default()).unwrap()
}

fn warm(dir: &Path, state: &Path) -> Collected {
    collect(
        &[dir.to_path_buf()],
        &CollectOptions {
            state_path: Some(state.to_path_buf()),
            ..CollectOptions::default()
        },
    )
    .unwrap()
}

fn json(c: &Collected, kind: Kind) -> Value {
    let r = report::build(c, kind, &ReportOptions::default());
    let mut v = report::to_json(&r, c);
    v.as_object_mut().unwrap().remove("files");
    v
}

fn totals(c: &Collected) -> Value {
    json(c, Kind::Daily)["totals"].clone()
}

#[test]
fn real_tool_use_transcript_counts_each_response_once() {
    let d = config_with(&[(
        "-srv-obs-work/e9e9.jsonl",
        "transcript-sample-tool-use.jsonl",
    )]);
    let t = totals(&cold(d.path()));
    // msg_0001 is written twice (two content blocks), msg_0002 once.
    assert_eq!(t["responses"], 2);
    assert_eq!(t["input_tokens"], 2003);
    assert_eq!(t["cache_creation_input_tokens"], 400);
    assert_eq!(t["cache_read_input_tokens"], 6000);
    assert_eq!(t["output_tokens"], 14);
    // claude-opus-4-8: 2003*5 + 400*6.25 + 6000*0.5 + 14*25 per MTok.
    let want = (2003.0 * 5.0 + 400.0 * 6.25 + 6000.0 * 0.5 + 14.0 * 25.0) / 1e6;
    assert!((t["cost_usd"].as_f64().unwrap() - want).abs() < 1e-12);
}

#[test]
fn real_compaction_replay_is_not_counted_twice() {
    // After /compact the CLI appends the pre-compact chain again (same
    // message ids); then a resumed process writes more.
    let d = config_with(&[(
        "-srv-obs-work/625a.jsonl",
        "transcript-after-manual-compact.jsonl",
    )]);
    let t = totals(&cold(d.path()));
    // Unique message ids in the file: msg_0001, msg_0002, msg_0004.
    assert_eq!(t["responses"], 3);
    assert_eq!(t["input_tokens"], 1001 + 1002 + 1004);
}

#[test]
fn real_api_error_line_is_zero_and_not_an_unknown_price() {
    let d = config_with(&[("-srv-obs-work/bc11.jsonl", "transcript-api-error-401.jsonl")]);
    let v = json(&cold(d.path()), Kind::Daily);
    assert_eq!(v["totals"]["total_tokens"], 0);
    assert_eq!(v["totals"]["cost_usd"], 0.0);
    assert_eq!(
        v["warnings"],
        serde_json::json!([]),
        "<synthetic> with 0 tokens warns nothing"
    );
}

fn line(id: &str, req: Option<&str>, model: &str, ts: &str, inp: u64, out: u64) -> String {
    let req = req
        .map(|r| format!(r#","requestId":"{r}""#))
        .unwrap_or_default();
    format!(
        r#"{{"parentUuid":null,"isSidechain":false,"message":{{"id":"{id}","type":"message","role":"assistant","model":"{model}","content":[{{"type":"text","text":"x"}}],"usage":{{"input_tokens":{inp},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":{out}}}}}{req},"type":"assistant","timestamp":"{ts}","cwd":"/w","sessionId":"s1"}}"#
    )
}

fn write_project(dir: &Path, rel: &str, lines: &[String]) -> PathBuf {
    let p = dir.join("projects").join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let mut body = lines.join("\n");
    body.push('\n');
    fs::write(&p, body).unwrap();
    p
}

#[test]
fn the_largest_copy_of_a_response_wins_whatever_the_order() {
    let ts = "2026-11-01T10:00:00.000Z";
    for order in [[1u64, 250, 40], [250, 1, 40], [40, 1, 250]] {
        let d = tempfile::tempdir().unwrap();
        let lines: Vec<String> = order
            .iter()
            .map(|&o| line("m1", Some("r1"), "claude-sonnet-4-6", ts, 10, o))
            .collect();
        write_project(d.path(), "p/s.jsonl", &lines);
        let t = totals(&cold(d.path()));
        assert_eq!(t["output_tokens"], 250, "order {order:?}");
        assert_eq!(t["responses"], 1);
    }
}

fn sidechain(l: String) -> String {
    l.replace(r#""isSidechain":false"#, r#""isSidechain":true"#)
}

fn resumed(l: String, session: &str) -> String {
    l.replace(
        r#""sessionId":"s1""#,
        &format!(r#""sessionId":"{session}""#),
    )
}

#[test]
fn one_message_id_is_one_response_whatever_its_request_ids() {
    let d = tempfile::tempdir().unwrap();
    let ts = "2026-11-01T10:00:00.000Z";
    write_project(
        d.path(),
        "p/s.jsonl",
        &[
            line("m1", Some("r1"), "claude-sonnet-4-6", ts, 10, 1),
            line("m1", Some("r2"), "claude-sonnet-4-6", ts, 10, 1),
            line("m1", None, "claude-sonnet-4-6", ts, 10, 1),
            line("m2", Some("r1"), "claude-sonnet-4-6", ts, 20, 1),
        ],
    );
    let t = totals(&cold(d.path()));
    assert_eq!(t["responses"], 2);
    assert_eq!(t["input_tokens"], 30);
}

#[test]
fn sidechain_replays_with_new_request_ids_count_once() {
    // A side question replays the main chain's assistant records into a
    // sidechain, each under a new request id.
    let d = tempfile::tempdir().unwrap();
    let ts = "2026-11-01T10:00:00.000Z";
    let m = "claude-opus-4-6";
    write_project(
        d.path(),
        "p/s1.jsonl",
        &[
            line("msg_a", Some("req_a"), m, ts, 100, 5),
            line("msg_b", Some("req_b"), m, ts, 200, 7),
            sidechain(line("msg_a", Some("req_side1"), m, ts, 100, 5)),
            sidechain(line("msg_b", Some("req_side1"), m, ts, 200, 7)),
            sidechain(line("msg_side", Some("req_side1"), m, ts, 1, 1)),
        ],
    );
    write_project(
        d.path(),
        "p/s1/subagents/agent-x.jsonl",
        &[sidechain(line("msg_a", Some("req_side2"), m, ts, 100, 5))],
    );
    let t = totals(&cold(d.path()));
    assert_eq!(t["responses"], 3, "msg_a, msg_b, msg_side");
    assert_eq!(t["input_tokens"], 301);
    assert_eq!(t["output_tokens"], 13);
}

#[test]
fn a_resumed_sessions_copied_history_across_two_files_counts_once() {
    // `--resume` writes a new transcript that starts with the old session's
    // records (same message ids; the copies here carry other request ids and
    // the new session id), then goes on with new responses.
    let d = tempfile::tempdir().unwrap();
    let m = "claude-opus-4-6";
    let old: Vec<String> = (1..=3)
        .map(|i| {
            line(
                &format!("msg_{i}"),
                Some(&format!("req_{i}")),
                m,
                &format!("2026-11-01T10:0{i}:00.000Z"),
                10 * i,
                i,
            )
        })
        .collect();
    let mut new: Vec<String> = (1..=3)
        .map(|i| {
            resumed(
                line(
                    &format!("msg_{i}"),
                    Some(&format!("req_copy_{i}")),
                    m,
                    &format!("2026-11-01T10:0{i}:00.000Z"),
                    10 * i,
                    i,
                ),
                "s2",
            )
        })
        .collect();
    new.push(resumed(
        line(
            "msg_4",
            Some("req_4"),
            m,
            "2026-11-01T11:00:00.000Z",
            1000,
            9,
        ),
        "s2",
    ));
    write_project(d.path(), "p/s1.jsonl", &old);
    write_project(d.path(), "p/s2.jsonl", &new);
    let st = tempfile::tempdir().unwrap();
    let state = st.path().join("state.bin");
    for c in [
        cold(d.path()),
        warm(d.path(), &state),
        warm(d.path(), &state),
    ] {
        let t = totals(&c);
        assert_eq!(t["responses"], 4);
        assert_eq!(t["input_tokens"], 10 + 20 + 30 + 1000);
        assert_eq!(t["output_tokens"], 1 + 2 + 3 + 9);
    }
}

#[test]
fn streaming_copies_count_once_at_their_largest_wherever_it_is() {
    // One response written as growing copies, spread over three files under
    // three request ids; the largest may be in any of them.
    let ts = "2026-11-01T10:00:00.000Z";
    let m = "claude-sonnet-4-6";
    for largest_in in 0..3 {
        let d = tempfile::tempdir().unwrap();
        let st = tempfile::tempdir().unwrap();
        let state = st.path().join("state.bin");
        for f in 0..3 {
            let out = if f == largest_in { 900 } else { 10 + f as u64 };
            let req = format!("req_{f}");
            let l = line("msg_s", Some(&req), m, ts, 50, out);
            let l = if f == 0 { l } else { sidechain(l) };
            write_project(d.path(), &format!("p/f{f}.jsonl"), &[l]);
        }
        for c in [cold(d.path()), warm(d.path(), &state)] {
            let t = totals(&c);
            assert_eq!(t["responses"], 1, "largest in file {largest_in}");
            assert_eq!(t["output_tokens"], 900, "largest in file {largest_in}");
            assert_eq!(t["input_tokens"], 50, "largest in file {largest_in}");
        }
    }
}

#[test]
fn a_record_without_message_id_falls_back_to_its_request_id() {
    let d = tempfile::tempdir().unwrap();
    let ts = "2026-11-01T10:00:00.000Z";
    let m = "claude-sonnet-4-6";
    let no_id = |req: Option<&str>, inp: u64, out: u64| {
        line("-", req, m, ts, inp, out).replace(r#""id":"-","#, "")
    };
    write_project(
        d.path(),
        "p/s.jsonl",
        &[
            // Two copies of one request: once, at the larger.
            no_id(Some("req_1"), 10, 1),
            no_id(Some("req_1"), 10, 4),
            // Another request: its own response.
            no_id(Some("req_2"), 100, 1),
            // Neither id: every line is its own response.
            no_id(None, 1000, 1),
            no_id(None, 1000, 1),
        ],
    );
    let t = totals(&cold(d.path()));
    assert_eq!(t["responses"], 4);
    assert_eq!(t["input_tokens"], 10 + 100 + 2000);
    assert_eq!(t["output_tokens"], 4 + 1 + 2);
}

#[test]
fn sidechain_replays_across_files_count_once_and_nested_subagent_files_are_read() {
    let d = tempfile::tempdir().unwrap();
    let ts = "2026-11-01T10:00:00.000Z";
    write_project(
        d.path(),
        "p/s1.jsonl",
        &[line("main", Some("r0"), "claude-opus-4-6", ts, 100, 5)],
    );
    let sub = line("sub1", Some("r9"), "claude-haiku-4-5", ts, 7, 3)
        .replace(r#""isSidechain":false"#, r#""isSidechain":true"#);
    write_project(
        d.path(),
        "p/s1/subagents/agent-a.jsonl",
        std::slice::from_ref(&sub),
    );
    // The same subagent response replayed into another transcript.
    write_project(d.path(), "p/s2.jsonl", &[sub]);
    let c = cold(d.path());
    assert_eq!(c.files, 3);
    let t = totals(&c);
    assert_eq!(t["responses"], 2);
    assert_eq!(t["input_tokens"], 107);
}

#[test]
fn bad_lines_are_skipped_and_counted() {
    let d = tempfile::tempdir().unwrap();
    let ts = "2026-11-01T10:00:00.000Z";
    let good = line("m1", Some("r1"), "claude-opus-4-6", ts, 10, 1);
    let p = write_project(
        d.path(),
        "p/s.jsonl",
        &[
            good.clone(),
            "not json".into(),
            good[..good.len() / 2].to_string(), // cut mid-write
            r#"{"message":{"id":"x","usage":{"input_tokens":5,"output_tokens":1}}}"#.into(), // no timestamp
            String::new(),
        ],
    );
    // An unterminated last line that does not parse (still being written).
    fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .unwrap()
        .write_all(br#"{"message":{"id":"m9","#)
        .unwrap();
    let v = json(&cold(d.path()), Kind::Daily);
    assert_eq!(v["totals"]["responses"], 1);
    assert_eq!(v["skipped_lines"]["malformed"], 2);
    assert_eq!(v["skipped_lines"]["no_timestamp"], 1);
    assert_eq!(v["skipped_lines"]["incomplete_last_line"], 1);
}

#[test]
fn an_unknown_model_is_a_warning_and_an_unknown_cost_never_zero() {
    let d = tempfile::tempdir().unwrap();
    let ts = "2026-11-01T10:00:00.000Z";
    write_project(
        d.path(),
        "p/s.jsonl",
        &[
            line("m1", Some("r1"), "claude-opus-4-6", ts, 1_000_000, 0),
            line("m2", Some("r2"), "claude-nova-9", ts, 1000, 10),
            line("m3", Some("r3"), "claude-nova-10", ts, 5, 0),
        ],
    );
    let v = json(&cold(d.path()), Kind::Daily);
    assert_eq!(v["totals"]["cost_usd"], Value::Null);
    assert_eq!(v["totals"]["priced_cost_usd"], 5.0);
    assert_eq!(v["totals"]["unpriced_tokens"], 1015);
    assert_eq!(
        v["totals"]["unpriced_models"],
        serde_json::json!(["claude-nova-10", "claude-nova-9"])
    );
    // One line naming every unpriced model with its tokens.
    assert_eq!(v["warnings"].as_array().unwrap().len(), 1, "{v}");
    let w = v["warnings"][0].as_str().unwrap();
    assert_eq!(
        w,
        "no price for claude-nova-10 (5 tokens), claude-nova-9 (1,010 tokens): that cost is \
         UNKNOWN (shown as $…+?), not $0; add their prices to prices.json in the hoop root"
    );
    let c = cold(d.path());
    let r = report::build(&c, Kind::Daily, &ReportOptions::default());
    assert!(report::to_table(&r, &c).contains("$5.00+?"));
}

#[test]
fn reports_group_by_day_session_project_home_and_block() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("hooproot");
    let l = |id: &str, ts: &str, cwd: &str, sess: &str| {
        line(id, Some("r"), "claude-haiku-4-5", ts, 10, 1)
            .replace(r#""cwd":"/w""#, &format!(r#""cwd":"{cwd}""#))
            .replace(r#""sessionId":"s1""#, &format!(r#""sessionId":"{sess}""#))
    };
    let alice = format!("{}/alice/work", root.display());
    write_project(
        d.path(),
        "-a/s1.jsonl",
        &[
            l("a", "2026-11-01T10:15:00.000Z", &alice, "s1"),
            l("b", "2026-11-01T14:00:00.000Z", &alice, "s1"),
            l("c", "2026-11-01T15:30:00.000Z", "/elsewhere", "s2"),
            l("d", "2026-11-03T01:00:00.000Z", "/elsewhere", "s2"),
        ],
    );
    let c = cold(d.path());
    let o = ReportOptions {
        hoop_roots: vec![root],
        ..ReportOptions::default()
    };
    let keys = |k: Kind| -> Vec<(String, u64)> {
        report::build(&c, k, &o)
            .rows
            .iter()
            .map(|r| (r.key.clone(), r.sum.entries))
            .collect()
    };
    let s = |v: &[(&str, u64)]| {
        v.iter()
            .map(|(a, b)| (a.to_string(), *b))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys(Kind::Daily),
        s(&[("2026-11-01", 3), ("2026-11-03", 1)])
    );
    assert_eq!(keys(Kind::Session), s(&[("s1", 2), ("s2", 2)]));
    assert_eq!(keys(Kind::Project), s(&[("-a", 4)]));
    assert_eq!(keys(Kind::Home), s(&[("-", 2), ("alice", 2)]));
    // 10:00–15:00 holds a and b; c at 15:30 opens 15:00–20:00; d a new one.
    assert_eq!(
        keys(Kind::Blocks),
        s(&[
            ("2026-11-01T10:00:00Z", 2),
            ("2026-11-01T15:00:00Z", 1),
            ("2026-11-03T01:00:00Z", 1)
        ])
    );
    // --since/--until are inclusive UTC days.
    let o2 = ReportOptions {
        since_day: hoop_meter::timefmt::parse_day("2026-11-02"),
        until_day: hoop_meter::timefmt::parse_day("2026-11-03"),
        ..ReportOptions::default()
    };
    assert_eq!(report::build(&c, Kind::Daily, &o2).totals.entries, 1);
}

#[test]
fn cold_since_does_not_read_files_modified_before_it() {
    let d = tempfile::tempdir().unwrap();
    let ts = "2026-11-01T10:00:00.000Z";
    let p = write_project(
        d.path(),
        "p/old.jsonl",
        &[line("m1", Some("r"), "claude-haiku-4-5", ts, 1, 1)],
    );
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(old)
        .unwrap();
    write_project(
        d.path(),
        "p/new.jsonl",
        &[line("m2", Some("r"), "claude-haiku-4-5", ts, 1, 1)],
    );
    let c = collect(
        &[d.path().to_path_buf()],
        &CollectOptions {
            skip_files_before_ms: Some(2_000_000_000),
            ..CollectOptions::default()
        },
    )
    .unwrap();
    assert_eq!((c.files, c.files_read), (1, 1));
}

#[test]
fn every_config_dir_is_read() {
    let a = config_with(&[("-x/a.jsonl", "transcript-sample-tool-use.jsonl")]);
    let b = tempfile::tempdir().unwrap();
    write_project(
        b.path(),
        "-y/b.jsonl",
        &[line(
            "other",
            Some("r"),
            "claude-haiku-4-5",
            "2026-11-01T10:00:00.000Z",
            1,
            1,
        )],
    );
    let c = collect(
        &[a.path().to_path_buf(), b.path().to_path_buf()],
        &CollectOptions::default(),
    )
    .unwrap();
    assert_eq!(totals(&c)["responses"], 3);
}

#[test]
fn a_rerun_without_new_bytes_reads_nothing_and_appends_read_only_the_new_bytes() {
    let d = tempfile::tempdir().unwrap();
    let st = tempfile::tempdir().unwrap();
    let state = st.path().join("state.bin");
    let ts = "2026-11-01T10:00:00.000Z";
    let p = write_project(
        d.path(),
        "p/s.jsonl",
        &[line("m1", Some("r1"), "claude-opus-4-6", ts, 10, 1)],
    );
    write_project(
        d.path(),
        "p/t.jsonl",
        &[line("m5", Some("r5"), "claude-opus-4-6", ts, 10, 1)],
    );
    let first = warm(d.path(), &state);
    assert_eq!(first.files_read, 2);
    let again = warm(d.path(), &state);
    assert_eq!((again.files_read, again.bytes_read), (0, 0));
    assert_eq!(totals(&again), totals(&first));
    // Append a grown copy of m1 and a new response.
    let add = format!(
        "{}\n{}\n",
        line("m1", Some("r1"), "claude-opus-4-6", ts, 10, 99),
        line("m2", Some("r2"), "claude-opus-4-6", ts, 10, 1)
    );
    fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .unwrap()
        .write_all(add.as_bytes())
        .unwrap();
    let third = warm(d.path(), &state);
    assert_eq!(third.files_read, 1);
    assert_eq!(
        third.bytes_read,
        add.len() as u64,
        "only the appended bytes"
    );
    assert_eq!(totals(&third), totals(&cold(d.path())));
    assert_eq!(totals(&third)["output_tokens"], 99 + 1 + 1);
}

#[test]
fn a_shrunk_or_replaced_file_is_read_again() {
    let d = tempfile::tempdir().unwrap();
    let st = tempfile::tempdir().unwrap();
    let state = st.path().join("state.bin");
    let ts = "2026-11-01T10:00:00.000Z";
    let l1 = line("m1", Some("r1"), "claude-opus-4-6", ts, 10, 1);
    let l2 = line("m2", Some("r2"), "claude-opus-4-6", ts, 20, 1);
    let p = write_project(d.path(), "p/s.jsonl", &[l1.clone(), l2.clone()]);
    warm(d.path(), &state);
    // Shrink: only m2 remains.
    write_project(d.path(), "p/s.jsonl", std::slice::from_ref(&l2));
    let c = warm(d.path(), &state);
    assert_eq!(totals(&c), totals(&cold(d.path())));
    assert_eq!(totals(&c)["input_tokens"], 20);
    // Replace with a new file (new inode) of the same size, other content.
    let l3 = l2.replace("\"m2\"", "\"m3\"").replace(":20,", ":30,");
    assert_eq!(l3.len(), l2.len());
    let tmp = d.path().join("projects/p/.new");
    fs::write(&tmp, format!("{l3}\n")).unwrap();
    fs::rename(&tmp, &p).unwrap();
    let c = warm(d.path(), &state);
    assert_eq!(totals(&c)["input_tokens"], 30);
    // Rewritten in place, same inode, larger: the fingerprint notices.
    fs::write(&p, format!("{l1}\n{l2}\n")).unwrap();
    let c = warm(d.path(), &state);
    assert_eq!(totals(&c), totals(&cold(d.path())));
    assert_eq!(totals(&c)["input_tokens"], 30);
}

#[test]
fn a_corrupt_state_file_means_a_cold_run_with_a_warning() {
    let d = config_with(&[("-x/a.jsonl", "transcript-sample-tool-use.jsonl")]);
    let st = tempfile::tempdir().unwrap();
    let state = st.path().join("state.bin");
    fs::write(&state, b"garbage").unwrap();
    let c = warm(d.path(), &state);
    assert_eq!(totals(&c), totals(&cold(d.path())));
    assert!(
        c.warnings.iter().any(|w| w.contains("rebuilt")),
        "{:?}",
        c.warnings
    );
    // And the state was rewritten so the next run is warm.
    assert_eq!(warm(d.path(), &state).files_read, 0);
}

#[test]
fn a_usage_line_longer_than_the_cap_is_counted_not_held() {
    let d = tempfile::tempdir().unwrap();
    let ts = "2026-11-01T10:00:00.000Z";
    let big = "y".repeat(hoop_meter::scan::MAX_LINE_BYTES + 10);
    let huge = line("m1", Some("r1"), "claude-opus-4-6", ts, 10, 1)
        .replace("\"text\":\"x\"", &format!("\"text\":\"{big}\""));
    let p = write_project(
        d.path(),
        "p/s.jsonl",
        &[huge, line("m2", Some("r2"), "claude-opus-4-6", ts, 10, 1)],
    );
    drop(p);
    let v = json(&cold(d.path()), Kind::Daily);
    assert_eq!(v["skipped_lines"]["oversized"], 1, "{v}");
    assert_eq!(v["totals"]["responses"], 1);
}

// ---------------------------------------------------------------- property

#[derive(Debug, Clone)]
enum Op {
    /// Append lines to file `f`: (message n, request n, output) triples,
    /// optionally leaving the last one without newline.
    Append(usize, Vec<(u8, u8, u16)>, bool),
    /// Append garbage.
    Garbage(usize),
    /// Truncate file to a fraction of its size.
    Shrink(usize, u8),
    /// Replace the file with a fresh one (new inode).
    Replace(usize, Vec<(u8, u8, u16)>),
    Delete(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let lines = prop::collection::vec((0u8..6, 0u8..2, 1u16..500), 0..6);
    prop_oneof![
        4 => (0usize..3, lines.clone(), any::<bool>()).prop_map(|(f, l, t)| Op::Append(f, l, t)),
        1 => (0usize..3).prop_map(Op::Garbage),
        1 => (0usize..3, 0u8..100).prop_map(|(f, p)| Op::Shrink(f, p)),
        1 => (0usize..3, lines).prop_map(|(f, l)| Op::Replace(f, l)),
        1 => (0usize..3).prop_map(Op::Delete),
    ]
}

fn render(lines: &[(u8, u8, u16)]) -> String {
    lines
        .iter()
        .map(|&(m, r, o)| {
            let ts = format!("2026-11-0{}T1{}:00:00.000Z", 1 + m % 3, r);
            line(
                &format!("m{m}"),
                Some(&format!("r{r}")),
                "claude-opus-4-6",
                &ts,
                10 + m as u64,
                o as u64,
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn apply(dir: &Path, op: &Op) {
    let names = ["p/a.jsonl", "p/b/subagents/c.jsonl", "q/d.jsonl"];
    let path = |f: usize| dir.join("projects").join(names[f]);
    match op {
        Op::Append(f, lines, unterminated) => {
            let p = path(*f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            let mut body = render(lines);
            if !*unterminated && !body.is_empty() {
                body.push('\n');
            }
            fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .unwrap()
                .write_all(body.as_bytes())
                .unwrap();
        }
        Op::Garbage(f) => {
            let p = path(*f);
            if p.exists() {
                fs::OpenOptions::new()
                    .append(true)
                    .open(&p)
                    .unwrap()
                    .write_all(b"{\"usage\" nope\n")
                    .unwrap();
            }
        }
        Op::Shrink(f, pct) => {
            let p = path(*f);
            if let Ok(m) = fs::metadata(&p) {
                let f = fs::OpenOptions::new().write(true).open(&p).unwrap();
                f.set_len(m.len() * *pct as u64 / 100).unwrap();
            }
        }
        Op::Replace(f, lines) => {
            let p = path(*f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            let tmp = p.with_extension("tmp");
            fs::write(&tmp, render(lines) + "\n").unwrap();
            fs::rename(&tmp, &p).unwrap();
        }
        Op::Delete(f) => {
            let _ = fs::remove_file(path(*f));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn incremental_always_equals_cold(ops in prop::collection::vec(op(), 1..14)) {
        let d = tempfile::tempdir().unwrap();
        let st = tempfile::tempdir().unwrap();
        let state = st.path().join("state.bin");
        for o in &ops {
            apply(d.path(), o);
            let w = warm(d.path(), &state);
            let c = cold(d.path());
            for k in [Kind::Session, Kind::Daily, Kind::Blocks] {
                prop_assert_eq!(json(&w, k), json(&c, k), "after {:?}", o);
            }
        }
    }
}

#[test]
fn an_unwritable_state_is_a_warning_not_a_failure() {
    let d = config_with(&[("-x/a.jsonl", "transcript-sample-tool-use.jsonl")]);
    let st = tempfile::tempdir().unwrap();
    // The state's parent is a regular file: it cannot be created.
    let blocker = st.path().join("file");
    fs::write(&blocker, b"x").unwrap();
    let c = warm(d.path(), &blocker.join("state.bin"));
    assert_eq!(totals(&c), totals(&cold(d.path())));
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("read everything again")),
        "{:?}",
        c.warnings
    );
}
