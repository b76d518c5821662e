//! `hoop why` over a year of journals: 365 day files of 10,000 events each
//! (2,000 messages a day in 20 rooms, each seen, found work, shown,
//! answered and passed by the cursor), generated into a home under a
//! temporary root, then one message's story and one room's hour timed.
//! Measured, never asserted.
//!
//! `cargo run --release -p hoop-sentinel --example why_bench [-- KEEP_DIR]`
//! (with a directory, the generated root stays there, so the whole command
//! can be timed: `HOOP_ROOT=KEEP_DIR hoop why --home bench --message ID`).

use std::io::Write;
use std::time::Instant;

use hoop_sentinel::journal::story::{find_message, render_story, room_lines};
use hoop_sentinel::journal::{
    CursorRule, Ev, How, Line, ShownBy, Why, day_start_ms, file_name, now_ms,
};

const DAYS: i64 = 365;
const MESSAGES_A_DAY: i64 = 2_000;
const ROOMS: i64 = 20;

fn main() {
    let keep = std::env::args().nth(1);
    let tmp = tempfile::tempdir().unwrap();
    let root = keep
        .as_ref()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let dir = root.join("bench").join("journal");
    std::fs::create_dir_all(&dir).unwrap();
    let today = hoop_sentinel::journal::day_of(now_ms());
    let first = today - DAYS + 1;
    let started = Instant::now();
    let mut id: i64 = 1_000;
    let mut events = 0u64;
    let mut bytes = 0u64;
    for day in first..=today {
        let mut f =
            std::io::BufWriter::new(std::fs::File::create(dir.join(file_name(day))).unwrap());
        let t0 = day_start_ms(day);
        let mut put = |l: Line, f: &mut std::io::BufWriter<std::fs::File>| {
            let b = l.to_bytes();
            bytes += b.len() as u64;
            f.write_all(&b).unwrap();
        };
        put(
            Line {
                t: t0,
                room: None,
                msg: None,
                ev: Ev::Day { max_msg: id },
            },
            &mut f,
        );
        for k in 0..MESSAGES_A_DAY {
            id += 2;
            let t = t0 + k * (86_400_000 / MESSAGES_A_DAY);
            let room = id % ROOMS + 1;
            let turn = (day - first) as u64 * MESSAGES_A_DAY as u64 + k as u64;
            for ev in [
                Ev::Seen {
                    how: How::Websocket,
                    created: t / 1000,
                },
                Ev::Work { why: Why::OneToOne },
                Ev::Shown {
                    by: ShownBy::Prompt,
                    turn,
                },
                Ev::Answered {
                    by: id + 1,
                    turn: Some(turn),
                },
            ] {
                put(Line::msg(t, room, id, ev), &mut f);
            }
            put(
                Line::msg(
                    t + 1,
                    room,
                    id + 1,
                    Ev::Cursor {
                        rule: CursorRule::Settled,
                    },
                ),
                &mut f,
            );
            events += 5;
        }
        f.flush().unwrap();
    }
    eprintln!(
        "generated {DAYS} days, {events} events, {:.0} MB in {:.1} s under {}",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        root.display()
    );
    let middle = 1_000 + 2 * (MESSAGES_A_DAY * DAYS / 2) + 2;
    let newest = id;
    let never = 7; // below everything: the first day is read, then all
    let time = |what: &str, f: &dyn Fn() -> usize| {
        f(); // warm the page cache, as a second `hoop why` finds it
        let mut runs: Vec<f64> = (0..15)
            .map(|_| {
                let s = Instant::now();
                std::hint::black_box(f());
                s.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        runs.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{what}: median {:.2} ms, max {:.2} ms (15 runs)",
            runs[runs.len() / 2],
            runs[runs.len() - 1]
        );
    };
    for (what, msg) in [
        ("one message, mid-year", middle),
        ("one message, today", newest),
    ] {
        let found = find_message(&dir, msg);
        eprintln!(
            "#{msg}: {} lines from {} day file(s)\n{}",
            found.lines.len(),
            found.days_read,
            render_story(msg, &found, now_ms())
        );
        time(what, &|| find_message(&dir, msg).lines.len());
    }
    time(
        "a message the journal never saw (older than it: every day read)",
        &|| find_message(&dir, never).days_read,
    );
    time("one room, the last hour", &|| {
        room_lines(&dir, 3, now_ms() - 3_600_000).len()
    });
    if keep.is_some() {
        eprintln!(
            "kept: time the command with\n  HOOP_ROOT={} hoop why --home bench --message {middle}",
            root.display()
        );
    }
}
