//! `hoop pass`: the agent leaves messages unanswered ON PURPOSE — "thanks,
//! that's all", an @everyone another member covers. Silence must be
//! possible, and it must not look like a failure: the pass is recorded in
//! the home (`passes.json`, `hoop_sentinel::ledger`), never posted, and the
//! sentinel counts a passed message as handled (SPEC §2 "What counts as
//! handled" (b)). A message left with neither a reply nor a pass is offered
//! again, at most twice.
//!
//! - `hoop pass --home H --room R --ids 12,13 "why"`: those messages.
//! - `hoop pass --home H --room R "why"`: every message of the room shown
//!   to the agent so far (up to the say watermark).
//!
//! Only a message that was shown can be passed on (the say watermark covers
//! it): a pass is a choice made after reading. Nothing goes to the backend.
//! Exit codes: 0 recorded; 1 refused or any other error (nothing recorded).

use std::process::ExitCode;

use anyhow::{Context, bail};

use hoop_api::say_seen::SaySeen;
use hoop_api::types::{ConversationId, MessageId};
use hoop_core::home::Home;
use hoop_sentinel::ledger::{PASSES_FILE, Pass, Passes};

/// A reason longer than this is cut (it is a note for the log and `hoop
/// status`, not a message).
pub const WHY_CAP_CHARS: usize = 500;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The home (account) that passes.
    #[arg(long)]
    pub home: String,
    /// The conversation id.
    #[arg(long)]
    pub room: ConversationId,
    /// The messages to pass on (comma-separated, or the option repeated);
    /// without it, every message of the room shown to you so far.
    #[arg(long, value_delimiter = ',')]
    pub ids: Vec<MessageId>,
    /// Why you leave it unanswered (kept in the home, never posted).
    pub why: String,
}

/// What to record, or why not: a pure check of the arguments against the
/// room's say watermark.
pub fn plan(
    home: &str,
    room: ConversationId,
    ids: &[MessageId],
    why: &str,
    shown: Option<MessageId>,
    now: i64,
) -> Result<Pass, String> {
    let why = why.trim();
    if why.is_empty() {
        return Err("say why you pass (one line; kept in the home, never posted)".into());
    }
    let read = format!("hoop read --home {home} --room {room}");
    let Some(shown) = shown else {
        return Err(format!(
            "nothing in room {room} was shown to you yet, so nothing can be passed on: read it first with {read}"
        ));
    };
    if let Some(id) = ids.iter().find(|id| **id <= 0) {
        return Err(format!("{id} is not a message id"));
    }
    if let Some(id) = ids.iter().find(|id| **id > shown) {
        return Err(format!(
            "message {id} was never shown to you (room {room} is shown up to #{shown}): read it first with {read}"
        ));
    }
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    Ok(Pass {
        up_to: ids.is_empty().then_some(shown),
        ids,
        why: why.chars().take(WHY_CAP_CHARS).collect(),
        at: now,
    })
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let home = Home::open(&args.home)?;
    let shown = SaySeen::load(&home.say_seen_path()).get(args.room);
    let pass = match plan(
        &home.name,
        args.room,
        &args.ids,
        &args.why,
        shown,
        hoop_core::clock::now_unix(),
    ) {
        Ok(p) => p,
        Err(e) => bail!("not passed, nothing recorded: {e}"),
    };
    let what = match pass.up_to {
        Some(u) => format!("every message up to #{u}"),
        None => pass
            .ids
            .iter()
            .map(|i| format!("#{i}"))
            .collect::<Vec<_>>()
            .join(" "),
    };
    let path = home.dir().join(PASSES_FILE);
    Passes::record(&path, args.room, pass)
        .with_context(|| format!("writing {}", path.display()))?;
    println!(
        "passed on {what} in room {}: recorded in this home, nothing posted",
        args.room
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_table() {
        // (ids, why, shown, want Ok(ids, up_to) or Err(text part), why)
        type Case = (
            &'static [i64],
            &'static str,
            Option<i64>,
            Result<(&'static [i64], Option<i64>), &'static str>,
            &'static str,
        );
        let cases: &[Case] = &[
            (
                &[12, 10, 12],
                "thanks only",
                Some(12),
                Ok((&[10, 12], None)),
                "ids, sorted once",
            ),
            (
                &[],
                "all read",
                Some(12),
                Ok((&[], Some(12))),
                "no ids: up to the watermark",
            ),
            (
                &[13],
                "x",
                Some(12),
                Err(
                    "message 13 was never shown to you (room 5 is shown up to #12): read it first with hoop read --home bolt --room 5",
                ),
                "unshown",
            ),
            (
                &[10],
                "x",
                None,
                Err("nothing in room 5 was shown to you yet"),
                "no watermark",
            ),
            (
                &[10],
                "  ",
                Some(12),
                Err("say why you pass"),
                "a reason is required",
            ),
            (&[0], "x", Some(12), Err("0 is not a message id"), "bad id"),
        ];
        for (ids, why_text, shown, want, why) in cases {
            let got = plan("bolt", 5, ids, why_text, *shown, 100);
            match (got, want) {
                (Ok(p), Ok((ids, up_to))) => {
                    assert_eq!((p.ids.as_slice(), p.up_to), (*ids, *up_to), "{why}");
                    assert_eq!(p.why, why_text.trim(), "{why}");
                }
                (Err(e), Err(part)) => assert!(e.contains(part), "{why}: {e}"),
                (got, _) => panic!("{why}: {got:?}"),
            }
        }
    }
}
