//! Patrols (SPEC §2, seed 000's timer design): a home may declare timed
//! patrols in `sentinel.json`. Each tick runs the patrol's prescan, plain
//! code that costs no model call, and [`judge`] decides:
//!
//! - exit 0 with output → wake the agent with the output as a `brief`;
//! - the declared quiet exit → skip at zero cost (one debug line);
//! - any other failure, a timeout, or exit 0 with no output → wake anyway,
//!   carrying the failure text: a broken prescan and a quiet day must never
//!   look the same.
//!
//! The patrol cursor: the prescan is given `HOOP_PATROL_CURSOR` (the
//! committed cursor file, which it reads, e.g. as its `--since`) and
//! `HOOP_PATROL_CURSOR_NEXT` (where it writes the cursor its findings reach).
//!
//! Findings are STAGED, never lost (seed 000: a round stages its cursors
//! and the next tick settles them against the run's record). A prescan's
//! findings — one per line — go into the patrol's state file with the
//! cursor they reach; each round carries the next span of them that fits
//! the brief cap and says how many more wait. A span is delivered only
//! when its round landed (the turn exited 0); the cursor moves only when
//! every staged finding was delivered. A round that did not land (a failed
//! turn, a daemon killed mid-turn: its attempt is recorded on disk before
//! the turn) offers the same span again and says so. After two replays and
//! an hour, a span is skipped, logged, and named in every brief until a
//! round lands. While findings are staged the prescan does not run: the
//! backlog goes first. Everything here is pure except the small file
//! helpers at the end.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hoop_core::limits::{
    ALERT_BODY_CAP_BYTES, BRIEF_BODY_CAP_BYTES, PATROL_PRESCAN_TIMEOUT, PATROL_STDERR_KEEP_BYTES,
    TASK_BODY_CAP_BYTES,
};

use crate::constants::{PATROL_DIGEST_SPANS, PATROL_REPLAYS};
use serde::{Deserialize, Serialize};

use crate::plan::INSTRUCTION_HEADER;

/// The three kinds of event one door takes (seed 000), with their body caps.
/// THE one definition of kinds and caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// What broke: root cause, impact, remediation.
    Alert,
    /// How would this be done: what exists, what is missing, the steps.
    Task,
    /// The body IS the instruction: read it and do what it says.
    Brief,
}

impl EventKind {
    /// The body cap in bytes.
    pub const fn cap_bytes(self) -> usize {
        match self {
            EventKind::Alert => ALERT_BODY_CAP_BYTES,
            EventKind::Task => TASK_BODY_CAP_BYTES,
            EventKind::Brief => BRIEF_BODY_CAP_BYTES,
        }
    }

    /// The question that frames a body of this kind; a brief has none (its
    /// body is the instruction, and a framing would fight it).
    pub const fn framing(self) -> Option<&'static str> {
        match self {
            EventKind::Alert => {
                Some("What broke? Find the root cause, the impact and the remediation.")
            }
            EventKind::Task => {
                Some("How would this be done? Say what exists, what is missing, and the steps.")
            }
            EventKind::Brief => None,
        }
    }
}

/// One patrol as declared in `sentinel.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatrolFile {
    /// Letters, digits, `-`, `_`, `.`; names the patrol's state directory.
    pub name: String,
    /// Seconds between ticks (the first tick comes one interval after start).
    pub interval_sec: u64,
    /// The prescan's argv (no shell; use `["sh", "-c", "…"]` for one).
    pub prescan: Vec<String>,
    /// Seconds the prescan may run (default [`PATROL_PRESCAN_TIMEOUT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_sec: Option<u64>,
    /// The exit code meaning "nothing new" (not 0: 0 means "found").
    pub quiet_exit: i32,
    /// The brief: the instruction the agent gets with the findings.
    pub brief: String,
}

/// A validated patrol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patrol {
    pub name: String,
    pub interval: Duration,
    pub prescan: Vec<String>,
    pub timeout: Duration,
    pub quiet_exit: i32,
    pub brief: String,
}

/// Check the declarations; the error names the patrol and what is wrong.
pub fn validate(files: &[PatrolFile]) -> Result<Vec<Patrol>, String> {
    let mut out: Vec<Patrol> = Vec::new();
    for f in files {
        let bad = |what: &str| Err(format!("patrol {:?}: {what}", f.name));
        let name_ok = !f.name.is_empty()
            && !f.name.starts_with('.')
            && f.name.len() <= 64
            && f.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !name_ok {
            return bad("the name must be 1-64 letters, digits, '-', '_' or '.'");
        }
        if out.iter().any(|p| p.name == f.name) {
            return bad("declared twice");
        }
        if f.interval_sec == 0 {
            return bad("interval_sec must be at least 1");
        }
        if f.timeout_sec == Some(0) {
            return bad("timeout_sec must be at least 1");
        }
        if f.prescan.first().is_none_or(|p| p.is_empty()) {
            return bad("prescan must name a command");
        }
        if !(1..=255).contains(&f.quiet_exit) {
            return bad("quiet_exit must be an exit code from 1 to 255 (0 means \"found\")");
        }
        if f.brief.trim().is_empty() {
            return bad("brief must say what to do with the findings");
        }
        if f.brief.len() > BRIEF_BODY_CAP_BYTES / 2 {
            return bad("brief is longer than half the brief cap; the findings need the rest");
        }
        out.push(Patrol {
            name: f.name.clone(),
            interval: Duration::from_secs(f.interval_sec),
            prescan: f.prescan.clone(),
            timeout: f
                .timeout_sec
                .map_or(PATROL_PRESCAN_TIMEOUT, Duration::from_secs),
            quiet_exit: f.quiet_exit,
            brief: f.brief.clone(),
        });
    }
    Ok(out)
}

/// The patrols for the `🚀` line: `patrols=inbox@1200s,deploys@300s`, or
/// `patrols=none`.
pub fn describe(patrols: &[Patrol]) -> String {
    if patrols.is_empty() {
        return "patrols=none".into();
    }
    let list: Vec<String> = patrols
        .iter()
        .map(|p| format!("{}@{}s", p.name, p.interval.as_secs()))
        .collect();
    format!("patrols={}", list.join(","))
}

/// How a prescan ended (the I/O shell fills this in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrescanRun {
    /// It exited: `code` is `None` when a signal ended it.
    Exited {
        code: Option<i32>,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
    /// It ran past its timeout and was killed.
    TimedOut { after: Duration },
    /// It could not be started.
    NotStarted(String),
}

/// What a tick does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing new: no round, no model call.
    Quiet,
    /// Findings: wake the agent with them.
    Found(String),
    /// The prescan is broken: wake the agent with the failure text.
    Failed(String),
}

/// Decide a tick from its prescan.
pub fn judge(run: &PrescanRun, quiet_exit: i32) -> Verdict {
    match run {
        PrescanRun::Exited {
            code: Some(c),
            stdout,
            ..
        } if *c == 0 => {
            let out = String::from_utf8_lossy(stdout);
            if out.trim().is_empty() {
                Verdict::Failed(format!(
                    "the prescan exited 0 but printed nothing (a quiet day is exit {quiet_exit})"
                ))
            } else {
                Verdict::Found(out.into_owned())
            }
        }
        PrescanRun::Exited { code: Some(c), .. } if *c == quiet_exit => Verdict::Quiet,
        PrescanRun::Exited {
            code,
            stdout,
            stderr,
        } => {
            let how = code.map_or_else(
                || "was killed by a signal".into(),
                |c| format!("exited {c}"),
            );
            let mut text = format!("the prescan {how}");
            let err = tail(stderr, PATROL_STDERR_KEEP_BYTES);
            if !err.trim().is_empty() {
                text.push_str("; its stderr ends with:\n");
                text.push_str(err.trim_end());
            }
            let out = tail(stdout, PATROL_STDERR_KEEP_BYTES);
            if !out.trim().is_empty() {
                text.push_str("\nits stdout ends with:\n");
                text.push_str(out.trim_end());
            }
            Verdict::Failed(text)
        }
        PrescanRun::TimedOut { after } => Verdict::Failed(format!(
            "the prescan timed out after {} s and was stopped",
            after.as_secs()
        )),
        PrescanRun::NotStarted(e) => Verdict::Failed(format!("the prescan could not start: {e}")),
    }
}

/// The last `keep` bytes of `b`, cut at a character boundary.
fn tail(b: &[u8], keep: usize) -> String {
    let s = String::from_utf8_lossy(b);
    let mut start = s.len().saturating_sub(keep);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_string()
}

/// The marker left where a text was cut at the brief cap.
pub const CUT_NOTE: &str = "[… cut at the brief cap: the rest of the findings was not shown]";

/// Room kept at the end of a findings brief for the line saying how many
/// findings wait (its longest form is well under this).
const WAITING_LINE_ROOM: usize = 100;

/// The brief's body for a failed prescan: the declared instruction, the
/// skipped spans if any, then the failure, within [`EventKind::Brief`]'s
/// cap. The instruction is never cut (validation keeps it under half the
/// cap); the failure text is, at a character boundary, with [`CUT_NOTE`].
/// `None` for a quiet verdict; findings go through [`findings_brief`].
pub fn brief_body(p: &Patrol, verdict: &Verdict, skipped: &[Skipped]) -> Option<String> {
    let cap = EventKind::Brief.cap_bytes();
    let (label, text) = match verdict {
        Verdict::Quiet => return None,
        Verdict::Found(out) => ("What the prescan found:", out.as_str()),
        Verdict::Failed(why) => (
            "THE PRESCAN FAILED. This is not a quiet day: nothing was checked. Report the failure where the brief says to report, and do what you can without the findings:",
            why.as_str(),
        ),
    };
    let mut body = format!("{}\n\n{}{label}\n", p.brief.trim_end(), digest(skipped));
    push_capped(&mut body, text, cap);
    Some(body)
}

/// Append `text` to `body` within `cap` bytes, cut at a character
/// boundary with [`CUT_NOTE`] when it does not fit.
fn push_capped(body: &mut String, text: &str, cap: usize) {
    let room = cap.saturating_sub(body.len());
    if text.len() <= room {
        body.push_str(text);
        return;
    }
    let mut end = room.saturating_sub(CUT_NOTE.len() + 1);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    body.push_str(&text[..end]);
    body.push('\n');
    body.push_str(CUT_NOTE);
}

/// The prescan's findings: one per line (a blank line is none).
pub fn findings(out: &str) -> Vec<String> {
    out.lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// The brief carrying the staged findings from `from` on: the declared
/// instruction, the skipped spans if any, then as many whole findings as
/// fit the cap — at least one, cut with [`CUT_NOTE`] if it alone is too
/// long — or exactly up to `to` when the span is fixed (a round offered
/// again carries the same findings), and how many more wait. Returns the
/// body and the end of the span it carries.
pub fn findings_brief(
    p: &Patrol,
    all: &[String],
    from: usize,
    to: Option<usize>,
    skipped: &[Skipped],
) -> (String, usize) {
    let cap = EventKind::Brief.cap_bytes();
    let n = all.len();
    let from = from.min(n);
    let head = |to: usize| {
        format!(
            "{}\n\n{}What the prescan found (findings {}–{to} of {n}, one per line):\n",
            p.brief.trim_end(),
            digest(skipped),
            from + 1,
        )
    };
    let to = match to {
        Some(t) => t.clamp(from, n),
        None => {
            // The header's length barely depends on `to`: measure with n.
            let room = cap.saturating_sub(head(n).len() + WAITING_LINE_ROOM);
            let mut used = 0;
            let mut end = from;
            while end < n && used + all[end].len() < room {
                used += all[end].len() + 1;
                end += 1;
            }
            end.max((from + 1).min(n))
        }
    };
    let mut body = head(to);
    let room = cap.saturating_sub(WAITING_LINE_ROOM);
    for f in &all[from..to] {
        if body.len() + f.len() + 1 > room {
            push_capped(&mut body, f, room);
            body.push('\n');
            break;
        }
        body.push_str(f);
        body.push('\n');
    }
    if to < n {
        body.push_str(&format!(
            "[{} more finding(s) wait for the next round of this patrol; they are not lost.]\n",
            n - to
        ));
    }
    (body, to)
}

/// The turn's user message for a patrol round: the fixed header (never a
/// leading `-`), one line naming the patrol, whether this is a re-offer,
/// then the brief body as it is — no alert or task framing around it.
pub fn patrol_message(p: &Patrol, body: &str, reoffered: bool) -> String {
    let mut s = format!(
        "{INSTRUCTION_HEADER}\nPatrol {:?}: a scheduled brief, not a chat message (there is no message to answer).\n",
        p.name
    );
    if reoffered {
        s.push_str("This is offered again: the last round of this patrol did not finish, so its findings were not marked done.\n");
    }
    s.push('\n');
    s.push_str(body);
    s
}

// ---------------------------------------------------------------- staging

/// A patrol's state (`patrols/<name>/state.json`): the staged findings and
/// the spans skipped since the last round that landed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatrolState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged: Option<Staged>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

/// One prescan run's findings, delivered span by span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Staged {
    pub findings: Vec<String>,
    /// What the prescan wrote to `cursor.next` (committed as the cursor
    /// once every finding was delivered); `None` when it wrote nothing.
    #[serde(default)]
    pub cursor_next: Option<String>,
    /// Findings `0..delivered` landed (or were skipped).
    pub delivered: usize,
    /// Unix seconds when the prescan's findings were staged.
    pub staged_at: i64,
    /// The span offered last and how its rounds went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<Attempt>,
}

/// The span a round carries (the run's record, written before the turn).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attempt {
    pub from: usize,
    pub to: usize,
    /// Rounds of this span that did not land.
    #[serde(default)]
    pub failed: u32,
    /// When the first of them failed.
    #[serde(default)]
    pub first_failed_at: Option<i64>,
    /// The daemon running it now (written as its turn starts, cleared when
    /// the turn is settled): found set by the next tick, the round was lost
    /// (its daemon was killed).
    #[serde(default)]
    pub running_pid: Option<u32>,
}

/// A span given up on after [`PATROL_REPLAYS`] replays and the skip wait.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skipped {
    pub from: usize,
    pub to: usize,
    pub of: usize,
    pub staged_at: i64,
    pub skipped_at: i64,
    pub rounds: u32,
}

impl Skipped {
    /// `findings 1–470 of 2000 (staged at 1760000000), after 3 rounds that did not land`.
    pub fn describe(&self) -> String {
        format!(
            "findings {}–{} of {} (staged at unix {}), after {} rounds that did not land",
            self.from + 1,
            self.to,
            self.of,
            self.staged_at,
            self.rounds
        )
    }
}

/// The skipped spans, for a brief ("until a round lands"); empty when none.
pub fn digest(skipped: &[Skipped]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "SKIPPED, NOT HANDLED: these findings of this patrol were given up on after rounds that did not land; look at them by hand:\n",
    );
    for k in skipped.iter().rev().take(PATROL_DIGEST_SPANS) {
        s.push_str(&format!("- {}\n", k.describe()));
    }
    if skipped.len() > PATROL_DIGEST_SPANS {
        s.push_str(&format!(
            "- and {} earlier span(s)\n",
            skipped.len() - PATROL_DIGEST_SPANS
        ));
    }
    s.push('\n');
    s
}

/// What a tick does with the patrol's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Nothing is staged: run the prescan.
    Prescan,
    /// Offer the span `from..to` (`to` fixed when it is offered again);
    /// `again` when an earlier round of it did not land.
    Offer {
        from: usize,
        to: Option<usize>,
        again: bool,
    },
    /// Every staged finding was delivered: commit the cursor.
    Commit,
}

/// The start of a tick, pure over the state: a round found still running
/// from another daemon (or from this one, which the caller rules out) was
/// lost and counts as a round that did not land; a span that did not land
/// after [`PATROL_REPLAYS`] replays and `skip_after` since its first
/// failure is skipped. Returns what to do and the spans skipped now.
pub fn plan_tick(st: &mut PatrolState, now: i64, skip_after: i64) -> (Next, Option<Skipped>) {
    let Some(staged) = st.staged.as_mut() else {
        return (Next::Prescan, None);
    };
    let n = staged.findings.len();
    let mut skipped_now = None;
    if let Some(a) = staged.attempt.as_mut() {
        if a.running_pid.take().is_some() {
            a.failed += 1;
            a.first_failed_at.get_or_insert(now);
        }
        let replays = a.failed.saturating_sub(1);
        let waited = a
            .first_failed_at
            .is_some_and(|t| now.saturating_sub(t) >= skip_after);
        if replays >= PATROL_REPLAYS && waited {
            let k = Skipped {
                from: a.from,
                to: a.to,
                of: n,
                staged_at: staged.staged_at,
                skipped_at: now,
                rounds: a.failed,
            };
            staged.delivered = staged.delivered.max(a.to);
            staged.attempt = None;
            st.skipped.push(k.clone());
            skipped_now = Some(k);
        }
    }
    let staged = st.staged.as_mut().expect("still staged");
    if staged.delivered >= n {
        return (Next::Commit, skipped_now);
    }
    let next = match &staged.attempt {
        Some(a) if a.from == staged.delivered => Next::Offer {
            from: a.from,
            to: Some(a.to),
            again: a.failed > 0,
        },
        _ => Next::Offer {
            from: staged.delivered,
            to: None,
            again: false,
        },
    };
    (next, skipped_now)
}

/// Record the span a round is about to carry (before its turn).
pub fn begin(st: &mut PatrolState, from: usize, to: usize, pid: u32) {
    if let Some(staged) = st.staged.as_mut() {
        let (failed, first) = match &staged.attempt {
            Some(a) if a.from == from && a.to == to => (a.failed, a.first_failed_at),
            _ => (0, None),
        };
        staged.attempt = Some(Attempt {
            from,
            to,
            failed,
            first_failed_at: first,
            running_pid: Some(pid),
        });
    }
}

/// How a settled round left the patrol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Its span was delivered; `commit` holds the cursor when it was the
    /// last (`Some(None)`: the prescan wrote no cursor).
    Delivered {
        from: usize,
        to: usize,
        of: usize,
        commit: Option<Option<String>>,
    },
    /// It did not land: the span is offered again.
    NotLanded { failed: u32 },
    /// A round without staged findings (a failed prescan's).
    Unstaged,
}

/// Settle the round in flight: `landed` when its turn exited 0. A landed
/// round clears the skipped spans (they were named until one landed).
pub fn settle(st: &mut PatrolState, landed: bool, now: i64) -> Settled {
    if landed {
        st.skipped.clear();
    }
    let Some(staged) = st.staged.as_mut() else {
        return Settled::Unstaged;
    };
    let Some(a) = staged.attempt.as_mut() else {
        return Settled::Unstaged;
    };
    a.running_pid = None;
    if !landed {
        a.failed += 1;
        a.first_failed_at.get_or_insert(now);
        return Settled::NotLanded { failed: a.failed };
    }
    let (from, to) = (a.from, a.to);
    staged.delivered = staged.delivered.max(to);
    staged.attempt = None;
    let of = staged.findings.len();
    let commit = (staged.delivered >= of).then(|| staged.cursor_next.clone());
    if commit.is_some() {
        st.staged = None;
    }
    Settled::Delivered {
        from,
        to,
        of,
        commit,
    }
}

/// A patrol's state directory: `<home>/patrols/<name>/`.
pub fn patrol_dir(home_dir: &Path, name: &str) -> PathBuf {
    home_dir.join("patrols").join(name)
}
/// The committed cursor file (the prescan reads it).
pub const CURSOR_FILE: &str = "cursor";
/// Where the prescan writes the cursor its findings reach.
pub const CURSOR_NEXT_FILE: &str = "cursor.next";
/// The patrol's state: staged findings, skipped spans.
pub const STATE_FILE: &str = "state.json";

/// The patrol's state; an absent file is the empty state, an unreadable
/// one an error (never guessed: a guess would lose or repeat findings).
pub fn load_state(dir: &Path) -> Result<PatrolState, String> {
    let path = dir.join(STATE_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(PatrolState::default()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Write the patrol's state atomically.
pub fn save_state(dir: &Path, st: &PatrolState) -> std::io::Result<()> {
    hoop_core::fsutil::write_json_atomic(&dir.join(STATE_FILE), st, Default::default())
}

/// Write the committed cursor (atomically).
pub fn write_cursor(dir: &Path, cursor: &str) -> std::io::Result<()> {
    hoop_core::fsutil::write_atomic(
        &dir.join(CURSOR_FILE),
        cursor.as_bytes(),
        Default::default(),
    )
}

/// The proposal a prescan wrote, taken out of its file (read, then
/// removed: it lives on in the staged state only). `None` when absent.
pub fn take_cursor_next(dir: &Path) -> Option<String> {
    let next = dir.join(CURSOR_NEXT_FILE);
    let text = std::fs::read_to_string(&next).ok();
    let _ = std::fs::remove_file(&next);
    text
}

/// The skipped spans of every patrol of a home, for `hoop status`: one
/// line each, `<patrol>: findings …`.
pub fn skipped_lines(home_dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(home_dir.join("patrols")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut dirs: Vec<_> = rd.filter_map(Result::ok).collect();
    dirs.sort_by_key(|e| e.file_name());
    for e in dirs {
        if let Ok(st) = load_state(&e.path()) {
            for k in &st.skipped {
                out.push(format!(
                    "{}: {} skipped",
                    e.file_name().to_string_lossy(),
                    k.describe()
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patrol() -> Patrol {
        validate(&[PatrolFile {
            name: "inbox".into(),
            interval_sec: 60,
            prescan: vec!["scan".into()],
            timeout_sec: None,
            quiet_exit: 3,
            brief: "Post a one-line summary of each finding to room 1.".into(),
        }])
        .unwrap()
        .remove(0)
    }

    fn exited(code: Option<i32>, out: &str, err: &str) -> PrescanRun {
        PrescanRun::Exited {
            code,
            stdout: out.as_bytes().to_vec(),
            stderr: err.as_bytes().to_vec(),
        }
    }

    #[test]
    fn kinds_and_caps_are_one_table() {
        let table = [
            (EventKind::Alert, 4 * 1024, true),
            (EventKind::Task, 4 * 1024, true),
            (EventKind::Brief, 16 * 1024, false),
        ];
        for (kind, cap, framed) in table {
            assert_eq!(kind.cap_bytes(), cap, "{kind:?}");
            assert_eq!(kind.framing().is_some(), framed, "{kind:?}");
        }
    }

    #[test]
    fn every_prescan_outcome_has_its_verdict() {
        let table: Vec<(PrescanRun, Verdict)> = vec![
            (
                exited(Some(0), "2 new tickets\n", ""),
                Verdict::Found("2 new tickets\n".into()),
            ),
            (exited(Some(3), "", ""), Verdict::Quiet),
            (exited(Some(3), "ignored output", "noise"), Verdict::Quiet),
            (
                exited(Some(0), "  \n", ""),
                Verdict::Failed(
                    "the prescan exited 0 but printed nothing (a quiet day is exit 3)".into(),
                ),
            ),
            (
                exited(Some(1), "", "jira: 401 Unauthorized\n"),
                Verdict::Failed(
                    "the prescan exited 1; its stderr ends with:\njira: 401 Unauthorized".into(),
                ),
            ),
            (
                exited(Some(2), "partial\n", ""),
                Verdict::Failed("the prescan exited 2\nits stdout ends with:\npartial".into()),
            ),
            (
                exited(None, "", ""),
                Verdict::Failed("the prescan was killed by a signal".into()),
            ),
            (
                PrescanRun::TimedOut {
                    after: Duration::from_secs(60),
                },
                Verdict::Failed("the prescan timed out after 60 s and was stopped".into()),
            ),
            (
                PrescanRun::NotStarted("No such file or directory".into()),
                Verdict::Failed("the prescan could not start: No such file or directory".into()),
            ),
        ];
        for (run, want) in table {
            assert_eq!(judge(&run, 3), want, "{run:?}");
        }
    }

    #[test]
    fn the_brief_is_the_instruction_unframed_and_the_findings_are_capped() {
        let p = patrol();
        assert_eq!(brief_body(&p, &Verdict::Quiet, &[]), None);
        let body = brief_body(&p, &Verdict::Found("ticket 7 is new\n".into()), &[]).unwrap();
        assert!(body.starts_with(&p.brief), "{body}");
        assert!(body.ends_with("ticket 7 is new\n"), "{body}");
        for kind in [EventKind::Alert, EventKind::Task] {
            assert!(
                !body.contains(kind.framing().unwrap()),
                "no framing around a brief"
            );
        }
        let failed = brief_body(&p, &Verdict::Failed("the prescan exited 1".into()), &[]).unwrap();
        assert!(failed.contains("THE PRESCAN FAILED"), "{failed}");
        assert!(failed.ends_with("the prescan exited 1"), "{failed}");
        // Over the cap: the findings are cut at a character boundary, the
        // instruction is whole, and the body fits the one cap.
        let huge = "é".repeat(BRIEF_BODY_CAP_BYTES);
        let cut = brief_body(&p, &Verdict::Found(huge), &[]).unwrap();
        assert!(cut.len() <= EventKind::Brief.cap_bytes(), "{}", cut.len());
        assert!(cut.starts_with(&p.brief));
        assert!(cut.ends_with(CUT_NOTE));
        // Exactly at the cap: nothing cut.
        let head = brief_body(&p, &Verdict::Found(String::new()), &[])
            .unwrap()
            .len();
        let exact = "x".repeat(BRIEF_BODY_CAP_BYTES - head);
        let whole = brief_body(&p, &Verdict::Found(exact.clone()), &[]).unwrap();
        assert!(whole.ends_with(&exact) && !whole.contains(CUT_NOTE));
    }

    #[test]
    fn the_message_has_the_header_and_says_when_it_is_offered_again() {
        let p = patrol();
        let m = patrol_message(&p, "BODY", false);
        assert!(m.starts_with(INSTRUCTION_HEADER), "{m}");
        assert!(m.contains("Patrol \"inbox\""));
        assert!(m.ends_with("\n\nBODY"));
        assert!(!m.contains("offered again"));
        assert!(patrol_message(&p, "BODY", true).contains("offered again"));
    }

    #[test]
    fn declarations_are_checked() {
        let good = PatrolFile {
            name: "inbox".into(),
            interval_sec: 60,
            prescan: vec!["scan".into()],
            timeout_sec: Some(5),
            quiet_exit: 3,
            brief: "do it".into(),
        };
        assert_eq!(
            validate(std::slice::from_ref(&good)).unwrap()[0].timeout,
            Duration::from_secs(5)
        );
        let with = |f: &dyn Fn(&mut PatrolFile)| {
            let mut p = good.clone();
            f(&mut p);
            vec![p]
        };
        let table: Vec<(Vec<PatrolFile>, &str)> = vec![
            (with(&|p| p.name = "../x".into()), "the name"),
            (with(&|p| p.name = String::new()), "the name"),
            (with(&|p| p.interval_sec = 0), "interval_sec"),
            (with(&|p| p.timeout_sec = Some(0)), "timeout_sec"),
            (with(&|p| p.prescan.clear()), "prescan"),
            (with(&|p| p.quiet_exit = 0), "quiet_exit"),
            (with(&|p| p.quiet_exit = 300), "quiet_exit"),
            (with(&|p| p.brief = " ".into()), "brief"),
            (
                with(&|p| p.brief = "x".repeat(BRIEF_BODY_CAP_BYTES)),
                "brief",
            ),
            (vec![good.clone(), good.clone()], "declared twice"),
        ];
        for (files, want) in table {
            let e = validate(&files).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        assert_eq!(describe(&[]), "patrols=none");
        let two = validate(&[
            good.clone(),
            PatrolFile {
                name: "deploys".into(),
                interval_sec: 300,
                ..good
            },
        ])
        .unwrap();
        assert_eq!(describe(&two), "patrols=inbox@60s,deploys@300s");
    }

    fn many(n: usize) -> Vec<String> {
        (1..=n)
            .map(|i| format!("finding {i:04}: ticket {i} is new"))
            .collect()
    }

    /// 2,000 findings: each brief carries whole findings within the cap and
    /// says how many wait; the spans cover every finding exactly once.
    #[test]
    fn findings_are_carried_in_spans_that_cover_each_exactly_once() {
        let p = patrol();
        let all = many(2000);
        let mut from = 0;
        let mut seen = Vec::new();
        let mut rounds = 0;
        while from < all.len() {
            let (body, to) = findings_brief(&p, &all, from, None, &[]);
            assert!(body.len() <= EventKind::Brief.cap_bytes(), "{}", body.len());
            assert!(body.starts_with(&p.brief));
            assert!(to > from, "every brief carries at least one finding");
            assert!(
                body.contains(&format!("(findings {}–{to} of 2000", from + 1)),
                "{body}"
            );
            let carried: Vec<&str> = body.lines().filter(|l| l.starts_with("finding ")).collect();
            assert_eq!(carried.len(), to - from);
            seen.extend(carried.iter().map(|s| s.to_string()));
            if to < all.len() {
                assert!(
                    body.contains(&format!("[{} more finding(s) wait", all.len() - to)),
                    "{body}"
                );
            } else {
                assert!(!body.contains("more finding(s) wait"), "{body}");
            }
            from = to;
            rounds += 1;
        }
        assert_eq!(seen, all);
        assert!(rounds > 1, "2,000 findings do not fit one brief");
        // A fixed span is carried as it was (a re-offer shows the same).
        let (again, to) = findings_brief(&p, &all, 10, Some(20), &[]);
        assert_eq!(to, 20);
        assert_eq!(
            again.lines().filter(|l| l.starts_with("finding ")).count(),
            10
        );
        // One finding longer than the room is still carried, cut.
        let long = vec!["x".repeat(BRIEF_BODY_CAP_BYTES * 2), "next".into()];
        let (body, to) = findings_brief(&p, &long, 0, None, &[]);
        assert_eq!(to, 1);
        assert!(body.len() <= EventKind::Brief.cap_bytes());
        assert!(body.contains(CUT_NOTE) && body.contains("[1 more finding(s) wait"));
        assert_eq!(findings("a\n\n  \nb\r\n"), ["a", "b"]);
    }

    fn staged(n: usize) -> PatrolState {
        PatrolState {
            staged: Some(Staged {
                findings: many(n),
                cursor_next: Some("c-next\n".into()),
                delivered: 0,
                staged_at: 100,
                attempt: None,
            }),
            skipped: vec![],
        }
    }

    const HOUR: i64 = 3600;

    /// The run's record decides: a span lands only with its round; a round
    /// that did not land — or was still running when its daemon died — is
    /// offered again with the same findings; after two replays AND the
    /// skip wait the span is skipped and named until a round lands; the
    /// cursor is committed with the last span.
    #[test]
    fn staged_findings_settle_against_the_rounds_record() {
        let mut st = PatrolState::default();
        assert_eq!(plan_tick(&mut st, 0, HOUR), (Next::Prescan, None));
        assert_eq!(settle(&mut st, true, 0), Settled::Unstaged);

        let mut st = staged(3);
        assert_eq!(
            plan_tick(&mut st, 1000, HOUR).0,
            Next::Offer {
                from: 0,
                to: None,
                again: false
            }
        );
        begin(&mut st, 0, 2, 77);
        // Failed turn: offered again, the same span.
        assert_eq!(
            settle(&mut st, false, 1000),
            Settled::NotLanded { failed: 1 }
        );
        assert_eq!(
            plan_tick(&mut st, 1100, HOUR).0,
            Next::Offer {
                from: 0,
                to: Some(2),
                again: true
            }
        );
        // The daemon died mid-turn (the record still says running): one
        // more round that did not land, offered again.
        begin(&mut st, 0, 2, 78);
        assert_eq!(
            plan_tick(&mut st, 1200, HOUR).0,
            Next::Offer {
                from: 0,
                to: Some(2),
                again: true
            }
        );
        assert_eq!(
            st.staged.as_ref().unwrap().attempt.as_ref().unwrap().failed,
            2
        );
        // A third failure: two replays, but not yet an hour: still offered.
        begin(&mut st, 0, 2, 79);
        settle(&mut st, false, 1300);
        assert_eq!(
            plan_tick(&mut st, 1000 + HOUR - 1, HOUR),
            (
                Next::Offer {
                    from: 0,
                    to: Some(2),
                    again: true
                },
                None
            )
        );
        // An hour after the first failure: skipped, and named.
        let (next, skipped) = plan_tick(&mut st, 1000 + HOUR, HOUR);
        assert_eq!(
            next,
            Next::Offer {
                from: 2,
                to: None,
                again: false
            }
        );
        let k = skipped.expect("skipped now");
        assert_eq!((k.from, k.to, k.of, k.rounds), (0, 2, 3, 3));
        assert_eq!(st.skipped, vec![k.clone()]);
        assert!(
            digest(&st.skipped).contains("findings 1–2 of 3"),
            "{}",
            digest(&st.skipped)
        );
        let p = patrol();
        let (body, _) = findings_brief(
            &p,
            &st.staged.as_ref().unwrap().findings,
            2,
            None,
            &st.skipped,
        );
        assert!(
            body.contains("SKIPPED, NOT HANDLED") && body.contains("findings 1–2 of 3"),
            "{body}"
        );
        // The last span lands: delivered, cursor committed, digest cleared.
        begin(&mut st, 2, 3, 80);
        assert_eq!(
            settle(&mut st, true, 5000),
            Settled::Delivered {
                from: 2,
                to: 3,
                of: 3,
                commit: Some(Some("c-next\n".into()))
            }
        );
        assert_eq!(st, PatrolState::default());
    }

    /// Not the case it must not fire on: a span that failed twice but
    /// lands on its third round is delivered, never skipped; a span that
    /// lands with more waiting commits nothing.
    #[test]
    fn a_span_that_lands_late_is_delivered_and_nothing_is_committed_early() {
        let mut st = staged(4);
        begin(&mut st, 0, 2, 1);
        settle(&mut st, false, 0);
        begin(&mut st, 0, 2, 1);
        settle(&mut st, false, 10);
        begin(&mut st, 0, 2, 1);
        assert_eq!(
            settle(&mut st, true, 10 * HOUR),
            Settled::Delivered {
                from: 0,
                to: 2,
                of: 4,
                commit: None
            }
        );
        assert!(st.skipped.is_empty());
        assert_eq!(st.staged.as_ref().unwrap().delivered, 2);
        assert_eq!(
            plan_tick(&mut st, 10 * HOUR, HOUR).0,
            Next::Offer {
                from: 2,
                to: None,
                again: false
            }
        );
        // A prescan that wrote no cursor: everything delivered, nothing to write.
        let mut st = staged(1);
        st.staged.as_mut().unwrap().cursor_next = None;
        begin(&mut st, 0, 1, 1);
        assert_eq!(
            settle(&mut st, true, 0),
            Settled::Delivered {
                from: 0,
                to: 1,
                of: 1,
                commit: Some(None)
            }
        );
    }

    #[test]
    fn the_state_file_round_trips_and_a_bad_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(load_state(d).unwrap(), PatrolState::default());
        let mut st = staged(2);
        begin(&mut st, 0, 1, 5);
        save_state(d, &st).unwrap();
        assert_eq!(load_state(d).unwrap(), st);
        std::fs::write(d.join(STATE_FILE), "{oops").unwrap();
        assert!(load_state(d).unwrap_err().contains("state.json"));
        std::fs::write(d.join(CURSOR_NEXT_FILE), "42").unwrap();
        assert_eq!(take_cursor_next(d).as_deref(), Some("42"));
        assert!(!d.join(CURSOR_NEXT_FILE).exists());
        assert_eq!(take_cursor_next(d), None);
    }
}
