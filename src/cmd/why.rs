//! `hoop why`: what the sentinel did with a message, from the home's own
//! journal (`<home>/journal/`, written by the daemon; see
//! `hoop_sentinel::journal`).
//!
//! - `hoop why --home H --message ID`: the message's story in order, one
//!   line per event, ending with its present state; `--json` prints the
//!   events as the journal holds them, with the state.
//! - `hoop why --home H --room R [--since 1h]`: the room's messages with
//!   their present state, one line each; `!` marks those not answered,
//!   passed or ruled out.
//!
//! Reads only the journal (never the backend), and only the days it needs.
//! Exit codes: 0 told; 1 the journal never saw the message (what to look
//! at next is printed), or any other error.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::json;

use hoop_api::types::{ConversationId, MessageId};
use hoop_core::home::Home;
use hoop_sentinel::config::SentinelConfig;
use hoop_sentinel::journal::now_ms;
use hoop_sentinel::journal::story::{
    find_message, never_saw, present, render_room, render_state, render_story, room_lines,
};

/// `--room` looks back this far unless `--since` says otherwise.
pub const DEFAULT_SINCE: &str = "24h";

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["message", "room"])))]
pub struct Args {
    /// The home (account) whose journal to read.
    #[arg(long)]
    pub home: String,
    /// One message's story.
    #[arg(long)]
    pub message: Option<MessageId>,
    /// A room's messages and their present state.
    #[arg(long)]
    pub room: Option<ConversationId>,
    /// With --room: how far back (`90s`, `30m`, `1h`, `2d`).
    #[arg(long, default_value = DEFAULT_SINCE, requires = "room")]
    pub since: String,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// `90s`, `30m`, `1h`, `2d` as a duration.
pub fn parse_since(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration: write 90s, 30m, 1h or 2d"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{s:?} is not a duration: write 90s, 30m, 1h or 2d")),
    };
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let home = Home::open(&args.home)?;
    let dir = home.journal_dir();
    let now = now_ms();
    if let Some(id) = args.message {
        let found = find_message(&dir, id);
        if found.lines.is_empty() && found.answer_to.is_empty() {
            let alarm = SentinelConfig::load(&home.dir())
                .map(|c| c.timings.alarm)
                .unwrap_or(hoop_core::limits::CYCLE_ALARM);
            if args.json {
                println!(
                    "{}",
                    json!({"message": id, "state": "never seen", "settled": false, "events": []})
                );
            } else {
                print!("{}", never_saw(id, &home.name, found.span, alarm.as_secs()));
            }
            return Ok(ExitCode::from(1));
        }
        if args.json {
            let state = present(id, &found.lines, &found.answer_to);
            let room = found.room();
            let out = json!({
                "message": id,
                "room": room,
                "state": render_state(&state, now),
                "settled": state.is_settled(),
                "events": found.lines,
                "answer_to": found.answer_to,
            });
            println!("{}", serde_json::to_string_pretty(&out)?);
        } else {
            print!("{}", render_story(id, &found, now));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(room) = args.room else {
        bail!("say --message ID or --room R");
    };
    let since = parse_since(&args.since).map_err(anyhow::Error::msg)?;
    let since_ms = now - since.as_millis() as i64;
    let lines = room_lines(&dir, room, since_ms);
    if args.json {
        let out = hoop_sentinel::journal::story::room_states(&lines, now);
        let messages: Vec<serde_json::Value> = out
            .iter()
            .map(|(id, s)| {
                json!({"message": id, "state": render_state(s, now), "settled": s.is_settled()})
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"room": room, "since_ms": since_ms, "messages": messages})
            )
            .context("printing")?
        );
    } else {
        print!("{}", render_room(room, &lines, since_ms, now));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_table() {
        let cases: &[(&str, Result<u64, &str>)] = &[
            ("90s", Ok(90)),
            ("30m", Ok(1800)),
            ("1h", Ok(3600)),
            ("2d", Ok(172_800)),
            ("1w", Err("is not a duration")),
            ("h", Err("is not a duration")),
            ("", Err("is not a duration")),
        ];
        for (s, want) in cases {
            match (parse_since(s), want) {
                (Ok(d), Ok(secs)) => assert_eq!(d.as_secs(), *secs, "{s}"),
                (Err(e), Err(part)) => assert!(e.contains(part), "{s}: {e}"),
                (got, _) => panic!("{s}: {got:?}"),
            }
        }
    }
}
