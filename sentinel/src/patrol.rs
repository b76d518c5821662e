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
//! The sentinel moves `next` over the cursor only after the round it fired
//! has landed (the turn exited 0); otherwise the next tick re-offers the
//! same findings and says so. Everything here is pure except the two small
//! file helpers at the end.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hoop_core::limits::{
    ALERT_BODY_CAP_BYTES, BRIEF_BODY_CAP_BYTES, PATROL_PRESCAN_TIMEOUT, PATROL_STDERR_KEEP_BYTES,
    TASK_BODY_CAP_BYTES,
};
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

/// The marker left where findings were cut at the brief cap.
pub const CUT_NOTE: &str = "[… cut at the brief cap: the rest of the findings was not shown]";

/// The brief's body: the declared instruction, then the findings (or the
/// failure), within [`EventKind::Brief`]'s cap. The instruction is never
/// cut (validation keeps it under half the cap); the findings are, at a
/// character boundary, with [`CUT_NOTE`].
pub fn brief_body(p: &Patrol, verdict: &Verdict) -> Option<String> {
    let cap = EventKind::Brief.cap_bytes();
    let (label, text) = match verdict {
        Verdict::Quiet => return None,
        Verdict::Found(out) => ("What the prescan found:", out.as_str()),
        Verdict::Failed(why) => (
            "THE PRESCAN FAILED. This is not a quiet day: nothing was checked. Report the failure where the brief says to report, and do what you can without the findings:",
            why.as_str(),
        ),
    };
    let mut body = format!("{}\n\n{label}\n", p.brief.trim_end());
    let room = cap.saturating_sub(body.len());
    if text.len() <= room {
        body.push_str(text);
    } else {
        let mut end = room.saturating_sub(CUT_NOTE.len() + 1);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        body.push_str(&text[..end]);
        body.push('\n');
        body.push_str(CUT_NOTE);
    }
    Some(body)
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

/// A patrol's state directory: `<home>/patrols/<name>/`.
pub fn patrol_dir(home_dir: &Path, name: &str) -> PathBuf {
    home_dir.join("patrols").join(name)
}
/// The committed cursor file (the prescan reads it).
pub const CURSOR_FILE: &str = "cursor";
/// Where the prescan writes the cursor its findings reach.
pub const CURSOR_NEXT_FILE: &str = "cursor.next";

/// After a round that landed: the proposed cursor becomes the cursor
/// (atomically), and the proposal is gone. No proposal → nothing to do.
pub fn commit_cursor(dir: &Path) -> std::io::Result<bool> {
    let next = dir.join(CURSOR_NEXT_FILE);
    let data = match std::fs::read(&next) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    hoop_core::fsutil::write_atomic(&dir.join(CURSOR_FILE), &data, Default::default())?;
    std::fs::remove_file(&next)?;
    Ok(true)
}

/// Before a tick's prescan: was a proposal left by a round that did not
/// land? It is dropped either way (the prescan proposes afresh from the
/// committed cursor).
pub fn take_leftover(dir: &Path) -> bool {
    std::fs::remove_file(dir.join(CURSOR_NEXT_FILE)).is_ok()
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
        assert_eq!(brief_body(&p, &Verdict::Quiet), None);
        let body = brief_body(&p, &Verdict::Found("ticket 7 is new\n".into())).unwrap();
        assert!(body.starts_with(&p.brief), "{body}");
        assert!(body.ends_with("ticket 7 is new\n"), "{body}");
        for kind in [EventKind::Alert, EventKind::Task] {
            assert!(
                !body.contains(kind.framing().unwrap()),
                "no framing around a brief"
            );
        }
        let failed = brief_body(&p, &Verdict::Failed("the prescan exited 1".into())).unwrap();
        assert!(failed.contains("THE PRESCAN FAILED"), "{failed}");
        assert!(failed.ends_with("the prescan exited 1"), "{failed}");
        // Over the cap: the findings are cut at a character boundary, the
        // instruction is whole, and the body fits the one cap.
        let huge = "é".repeat(BRIEF_BODY_CAP_BYTES);
        let cut = brief_body(&p, &Verdict::Found(huge)).unwrap();
        assert!(cut.len() <= EventKind::Brief.cap_bytes(), "{}", cut.len());
        assert!(cut.starts_with(&p.brief));
        assert!(cut.ends_with(CUT_NOTE));
        // Exactly at the cap: nothing cut.
        let head = brief_body(&p, &Verdict::Found(String::new()))
            .unwrap()
            .len();
        let exact = "x".repeat(BRIEF_BODY_CAP_BYTES - head);
        let whole = brief_body(&p, &Verdict::Found(exact.clone())).unwrap();
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

    #[test]
    fn the_cursor_moves_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(!commit_cursor(d).unwrap(), "no proposal, nothing moves");
        assert!(!take_leftover(d));
        std::fs::write(d.join(CURSOR_NEXT_FILE), "42").unwrap();
        // A round that did not land leaves the proposal: the next tick sees it.
        assert!(take_leftover(d));
        assert!(!d.join(CURSOR_FILE).exists(), "the cursor did not move");
        std::fs::write(d.join(CURSOR_NEXT_FILE), "43").unwrap();
        assert!(commit_cursor(d).unwrap());
        assert_eq!(std::fs::read_to_string(d.join(CURSOR_FILE)).unwrap(), "43");
        assert!(!d.join(CURSOR_NEXT_FILE).exists());
    }
}
