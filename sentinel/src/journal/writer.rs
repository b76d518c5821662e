//! The journal's one writer: the daemon hands lines to [`Journal::record`],
//! which never blocks (a bounded queue; when it is full the line is dropped
//! and counted — a slow disk costs journal lines, never a round), and one
//! thread appends them to the day's file, each line one `write` on a file
//! opened for appending. The thread also starts each day file with its
//! `day` line and keeps the folder within [`Keep`].
//!
//! The handle also remembers, per message, which one-time events it has
//! written (seen, work or context, answered, passed, gave up) until the
//! room's cursor passes the message, so a message looked at again by a
//! later round is not journaled twice; at start it recalls them, and the
//! turn number, from the newest day files.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};

use hoop_api::types::{ConversationId, MessageId};

use super::retention::{self, DayFile, Keep};
use super::{Ev, Line, day_of, day_of_name, file_name, parse};
use crate::constants::{JOURNAL_QUEUE, JOURNAL_RECALL_DAYS};

const SEEN: u8 = 1;
const FATE: u8 = 2;
const ANSWERED: u8 = 4;
const PASSED: u8 = 8;
const GAVE_UP: u8 = 16;

/// The one-time event a line is, if any.
fn once_bit(ev: &Ev) -> Option<u8> {
    match ev {
        Ev::Seen { .. } => Some(SEEN),
        Ev::Work { .. } | Ev::Context { .. } => Some(FATE),
        Ev::Answered { .. } => Some(ANSWERED),
        Ev::Passed { .. } => Some(PASSED),
        Ev::GaveUp { .. } => Some(GAVE_UP),
        _ => None,
    }
}

/// Which one-time events each message above its room's cursor has had.
#[derive(Debug, Default)]
struct Told(BTreeMap<(ConversationId, MessageId), u8>);

impl Told {
    /// Note `line`; false when it is a one-time event already written.
    fn admit(&mut self, line: &Line) -> bool {
        if let (Ev::Cursor { .. }, Some(room), Some(to)) = (&line.ev, line.room, line.msg) {
            self.0.retain(|(r, id), _| *r != room || *id > to);
            return true;
        }
        let (Some(bit), Some(room), Some(id)) = (once_bit(&line.ev), line.room, line.msg) else {
            return true;
        };
        let bits = self.0.entry((room, id)).or_default();
        if *bits & bit != 0 {
            return false;
        }
        *bits |= bit;
        true
    }
}

/// What the daemon needs from the journal's past.
#[derive(Debug, Default)]
struct Recall {
    turn: u64,
    max_id: MessageId,
    told: Told,
}

fn turn_of(ev: &Ev) -> Option<u64> {
    match ev {
        Ev::Shown { turn, .. }
        | Ev::OfferedAgain { turn, .. }
        | Ev::GaveUp { turn, .. }
        | Ev::TurnStart { turn, .. }
        | Ev::TurnEnd { turn, .. } => Some(*turn),
        Ev::Answered { turn, .. } | Ev::Passed { turn, .. } => *turn,
        _ => None,
    }
}

/// The day files of `dir`, oldest first.
pub fn day_files(dir: &Path) -> Vec<(i64, PathBuf)> {
    let mut out: Vec<(i64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            day_of_name(name.to_str()?).map(|d| (d, e.path()))
        })
        .collect();
    out.sort();
    out
}

fn recall(dir: &Path) -> Recall {
    let files = day_files(dir);
    let mut r = Recall::default();
    let from = files.len().saturating_sub(JOURNAL_RECALL_DAYS);
    for (_, path) in &files[from..] {
        let Ok(f) = File::open(path) else { continue };
        for line in BufReader::new(f).split(b'\n').map_while(Result::ok) {
            let Some(l) = parse(&line) else { continue };
            r.turn = r.turn.max(turn_of(&l.ev).unwrap_or(0));
            r.max_id = r.max_id.max(l.max_id().unwrap_or(0));
            r.told.admit(&l);
        }
    }
    r
}

struct Inner {
    tx: Mutex<Option<SyncSender<Line>>>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
    dropped: Arc<AtomicU64>,
    turn: AtomicU64,
    told: Mutex<Told>,
}

/// The daemon's handle on its home's journal (cheap to clone).
#[derive(Clone, Default)]
pub struct Journal {
    inner: Option<Arc<Inner>>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("on", &self.inner.is_some())
            .field("dropped", &self.dropped())
            .finish()
    }
}

impl Journal {
    /// A journal that records nothing (tests of other parts).
    pub fn off() -> Journal {
        Journal { inner: None }
    }

    /// Open the journal in `dir` and start its writer thread.
    pub fn open(dir: PathBuf, keep: Keep) -> Journal {
        Journal::open_with(dir, keep, JOURNAL_QUEUE)
    }

    fn open_with(dir: PathBuf, keep: Keep, queue: usize) -> Journal {
        let past = recall(&dir);
        let (j, rx) = Journal::unstarted(queue, past.turn, past.told);
        let dropped = j
            .inner
            .as_ref()
            .map(|i| i.dropped.clone())
            .unwrap_or_default();
        let spawned = std::thread::Builder::new()
            .name("journal".into())
            .spawn(move || write_loop(rx, dir, keep, past.max_id, dropped));
        match spawned {
            Ok(h) => {
                if let Some(i) = &j.inner {
                    *i.worker.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "the journal's writer could not start; no journal lines this run")
            }
        }
        j
    }

    /// The handle without its writer: the caller drains the queue.
    fn unstarted(queue: usize, turn: u64, told: Told) -> (Journal, Receiver<Line>) {
        let (tx, rx) = sync_channel(queue);
        let inner = Inner {
            tx: Mutex::new(Some(tx)),
            worker: Mutex::new(None),
            dropped: Arc::new(AtomicU64::new(0)),
            turn: AtomicU64::new(turn),
            told: Mutex::new(told),
        };
        (
            Journal {
                inner: Some(Arc::new(inner)),
            },
            rx,
        )
    }

    /// Hand `line` to the writer without waiting. A one-time event already
    /// written for its message is skipped; a full queue drops the line and
    /// counts it.
    pub fn record(&self, line: Line) {
        let Some(i) = &self.inner else { return };
        if !i
            .told
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .admit(&line)
        {
            return;
        }
        let tx = i.tx.lock().unwrap_or_else(|e| e.into_inner());
        let Some(tx) = tx.as_ref() else { return };
        match tx.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                let n = i.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if n.is_power_of_two() {
                    tracing::warn!(
                        dropped = n,
                        "journal lines dropped: its writer is behind (a slow disk); rounds go on, hoop why may miss events"
                    );
                }
            }
        }
    }

    /// Record every line.
    pub fn record_all(&self, lines: impl IntoIterator<Item = Line>) {
        for l in lines {
            self.record(l);
        }
    }

    /// The next turn's number (counting on from the journal's last).
    pub fn next_turn(&self) -> u64 {
        match &self.inner {
            Some(i) => i.turn.fetch_add(1, Ordering::Relaxed) + 1,
            None => 0,
        }
    }

    /// Journal lines dropped so far (a full queue, the byte bound, a failed write).
    pub fn dropped(&self) -> u64 {
        self.inner
            .as_ref()
            .map_or(0, |i| i.dropped.load(Ordering::Relaxed))
    }

    /// Stop taking lines and wait until the writer has written the queued ones.
    pub fn close(&self) {
        let Some(i) = &self.inner else { return };
        i.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        let h = i.worker.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = h {
            let _ = h.join();
        }
    }
}

/// The folder's day files with their sizes.
fn listing(dir: &Path) -> Vec<(DayFile, PathBuf)> {
    day_files(dir)
        .into_iter()
        .map(|(day, p)| {
            let bytes = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            (DayFile { day, bytes }, p)
        })
        .collect()
}

/// Apply the retention plan so that `need` more bytes fit; the folder's
/// total after it.
fn prune(dir: &Path, today: i64, keep: Keep, need: u64) -> u64 {
    let files = listing(dir);
    let plan = retention::plan(
        &files.iter().map(|(f, _)| *f).collect::<Vec<_>>(),
        today,
        keep,
        need,
    );
    let mut total = 0;
    for (f, p) in &files {
        if plan.contains(&f.day) {
            if let Err(e) = std::fs::remove_file(p) {
                tracing::warn!(path = %p.display(), error = %e, "could not remove an old journal day");
                total += f.bytes;
            }
        } else {
            total += f.bytes;
        }
    }
    total
}

fn write_loop(
    rx: Receiver<Line>,
    dir: PathBuf,
    keep: Keep,
    mut max_id: MessageId,
    dropped: Arc<AtomicU64>,
) {
    let mut cur: Option<(i64, File)> = None;
    let mut total: u64 = 0;
    // The day whose lines no longer fit under the byte bound.
    let mut full: Option<i64> = None;
    let mut warned_io = false;
    let drop_one = |why: &str, warned: &mut bool| {
        dropped.fetch_add(1, Ordering::Relaxed);
        if !*warned {
            *warned = true;
            tracing::warn!(dir = %dir.display(), why, "journal line dropped");
        }
    };
    for line in rx {
        let day = day_of(line.t);
        if cur.as_ref().is_none_or(|(d, _)| *d != day) {
            cur = None;
            full = None;
            total = prune(&dir, day, keep, 0);
            match open_day(&dir, day, line.t, max_id) {
                Ok((f, header)) => {
                    total += header;
                    cur = Some((day, f));
                }
                Err(e) => {
                    drop_one(&format!("cannot open the day file: {e}"), &mut warned_io);
                    continue;
                }
            }
        }
        let bytes = line.to_bytes();
        if total + bytes.len() as u64 > keep.max_bytes && full != Some(day) {
            total = prune(&dir, day, keep, bytes.len() as u64);
            if total + bytes.len() as u64 > keep.max_bytes {
                full = Some(day);
            }
        }
        if full == Some(day) {
            drop_one("the journal is at its byte bound", &mut warned_io);
            continue;
        }
        let Some((_, f)) = cur.as_mut() else { continue };
        match f.write_all(&bytes) {
            Ok(()) => {
                total += bytes.len() as u64;
                max_id = max_id.max(line.max_id().unwrap_or(0));
            }
            Err(e) => drop_one(&format!("write failed: {e}"), &mut warned_io),
        }
    }
}

/// Open (create) a day's file for appending; a new file starts with its
/// `day` line. Returns the bytes written.
fn open_day(dir: &Path, day: i64, t: i64, max_id: MessageId) -> std::io::Result<(File, u64)> {
    std::fs::create_dir_all(dir)?;
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(file_name(day)))?;
    if f.metadata()?.len() > 0 {
        return Ok((f, 0));
    }
    let header = Line {
        t,
        room: None,
        msg: None,
        ev: Ev::Day { max_msg: max_id },
    }
    .to_bytes();
    f.write_all(&header)?;
    Ok((f, header.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::super::{CursorRule, How, Why, day_start_ms};
    use super::*;

    fn seen(t: i64, room: i64, id: i64) -> Line {
        Line::msg(
            t,
            room,
            id,
            Ev::Seen {
                how: How::Websocket,
                created: t / 1000,
            },
        )
    }

    fn read(path: &Path) -> Vec<Line> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| parse(l.as_bytes()).unwrap())
            .collect()
    }

    #[test]
    fn a_full_queue_drops_and_counts_and_never_waits() {
        let (j, rx) = Journal::unstarted(2, 0, Told::default());
        for id in 1..=5 {
            j.record(seen(1, 3, id));
        }
        assert_eq!(j.dropped(), 3);
        let got: Vec<i64> = rx.try_iter().filter_map(|l| l.msg).collect();
        assert_eq!(got, vec![1, 2]);
        // Not full: nothing dropped.
        j.record(seen(1, 3, 6));
        assert_eq!(j.dropped(), 3);
    }

    #[test]
    fn one_time_events_once_until_the_cursor_passes() {
        let (j, rx) = Journal::unstarted(100, 0, Told::default());
        let work = |id| Line::msg(1, 3, id, Ev::Work { why: Why::OneToOne });
        let shown = |id| {
            Line::msg(
                1,
                3,
                id,
                Ev::Shown {
                    by: super::super::ShownBy::Prompt,
                    turn: 1,
                },
            )
        };
        j.record(seen(1, 3, 10));
        j.record(work(10));
        j.record(shown(10));
        j.record(seen(1, 3, 10)); // looked at again: not twice
        j.record(work(10));
        j.record(shown(10)); // shown again in a later turn: a new event
        j.record(seen(1, 4, 10)); // another room's message 10
        j.record(Line::msg(
            1,
            3,
            10,
            Ev::Cursor {
                rule: CursorRule::Settled,
            },
        ));
        j.record(seen(1, 3, 10)); // the cursor passed it: forgotten
        let got: Vec<(i64, &str)> = rx
            .try_iter()
            .map(|l| (l.room.unwrap(), l.ev.name()))
            .collect();
        assert_eq!(
            got,
            vec![
                (3, "seen"),
                (3, "work"),
                (3, "shown"),
                (3, "shown"),
                (4, "seen"),
                (3, "cursor"),
                (3, "seen")
            ]
        );
    }

    #[test]
    fn writes_day_files_with_their_day_line_and_recalls_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let jdir = dir.path().join("journal");
        let d0 = 20_000;
        let j = Journal::open(jdir.clone(), Keep::default());
        assert_eq!(j.next_turn(), 1);
        j.record(seen(day_start_ms(d0) + 5, 3, 10));
        j.record(Line::msg(
            day_start_ms(d0) + 6,
            3,
            10,
            Ev::Answered {
                by: 11,
                turn: Some(1),
            },
        ));
        j.record(seen(day_start_ms(d0 + 1) + 1, 3, 12));
        j.close();
        let files = day_files(&jdir);
        assert_eq!(
            files.iter().map(|(d, _)| *d).collect::<Vec<_>>(),
            vec![d0, d0 + 1]
        );
        let first = read(&files[0].1);
        assert_eq!(first[0].ev, Ev::Day { max_msg: 0 });
        assert_eq!(first.len(), 3);
        let second = read(&files[1].1);
        // The answer #11 counts: the next day starts above it.
        assert_eq!(second[0].ev, Ev::Day { max_msg: 11 });
        // A new start counts turns on and does not write #10's answer twice.
        let j = Journal::open(jdir.clone(), Keep::default());
        assert_eq!(j.next_turn(), 2);
        j.record(Line::msg(
            day_start_ms(d0 + 1) + 2,
            3,
            10,
            Ev::Answered {
                by: 11,
                turn: Some(1),
            },
        ));
        j.record(seen(day_start_ms(d0 + 1) + 3, 3, 13));
        j.close();
        let second = read(&day_files(&jdir)[1].1);
        let msgs: Vec<Option<i64>> = second.iter().map(|l| l.msg).collect();
        assert_eq!(msgs, vec![None, Some(12), Some(13)]);
    }

    #[test]
    fn the_byte_bound_drops_old_days_then_lines() {
        let dir = tempfile::tempdir().unwrap();
        let jdir = dir.path().join("journal");
        std::fs::create_dir_all(&jdir).unwrap();
        let d0 = 20_000;
        std::fs::write(jdir.join(file_name(d0 - 1)), vec![b'x'; 300]).unwrap();
        let keep = Keep {
            days: 30,
            max_bytes: 400,
        };
        let j = Journal::open(jdir.clone(), keep);
        for i in 0..10 {
            j.record(seen(day_start_ms(d0) + i, 3, 100 + i));
        }
        j.close();
        // Yesterday went to make room; today filled up to the bound and the
        // rest was dropped and counted.
        let files = day_files(&jdir);
        assert_eq!(files.len(), 1);
        let size = std::fs::metadata(&files[0].1).unwrap().len();
        assert!(size <= 400, "{size}");
        let written = read(&files[0].1).len() as u64 - 1;
        assert!(written > 0 && written < 10);
        assert_eq!(j.dropped(), 10 - written);
    }
}
