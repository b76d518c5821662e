//! `hoop read`: show the agent more of a room than its round's instructions
//! or a `hoop say` refusal did, and move the say watermark over what it
//! showed (never past a message it did not show). The round treats a
//! message as handled only when it was shown; this is how the agent gets
//! shown the rest.
//!
//! - `hoop read --home H --room R`: the unread messages (newer than the
//!   watermark, not the account's own), oldest first, at most
//!   [`READ_PAGE`]; the watermark moves to the newest one printed (to the
//!   newest message when all were printed). What is left is named with the
//!   command that shows it. With nothing unread, the newest messages are
//!   printed as context.
//! - `hoop read --home H --room R --before ID`: older history, the
//!   [`READ_PAGE`] messages before `ID`, oldest first, the account's own
//!   marked `(you)`. When the page reaches the watermark (or the start of
//!   the room), everything between is now shown and the watermark moves to
//!   the page's newest message.
//!
//! Exit codes: 0 printed; 1 any error (nothing moved).

use std::process::ExitCode;

use anyhow::Context;

use hoop_api::Client;
use hoop_api::say_seen::SaySeen;
use hoop_api::types::{ConversationId, MessageId};
use hoop_core::home::Home;

use hoop_api::send::{
    Reader, read_back, read_cmd, render_message, render_rest, retrying, unread_part,
};

/// At most this many messages are printed by one read: with bodies cut at
/// [`hoop_api::send::SHOW_BODY_CAP_CHARS`] this stays under the agent's
/// tool-output limit.
pub const READ_PAGE: u32 = 12;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The home (account) to read as.
    #[arg(long)]
    pub home: String,
    /// The conversation id.
    #[arg(long)]
    pub room: ConversationId,
    /// Show older history: the messages before this message id.
    #[arg(long)]
    pub before: Option<MessageId>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let home = Home::open(&args.home)?;
    let rt = super::runtime()?;
    let out = rt.block_on(read(&home, args.room, args.before))?;
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

async fn read(
    home: &Home,
    room: ConversationId,
    before: Option<MessageId>,
) -> anyhow::Result<String> {
    let client = Client::for_home(home).with_context(|| format!("home {:?}", home.name))?;
    let me = retrying("who am I", || client.me())
        .await
        .context("who am I")?
        .id;
    let seen_path = home.say_seen_path();
    let watermark = SaySeen::load(&seen_path).get(room);
    let advance = |to: MessageId| {
        SaySeen::advance_file(&seen_path, room, to)
            .with_context(|| format!("writing {}", seen_path.display()))
    };
    let mut out = String::new();
    if let Some(b) = before {
        let page = retrying("reading the room", || {
            client.messages(room, READ_PAGE, Some(b))
        })
        .await
        .with_context(|| format!("reading room {room}"))?;
        out.push_str(&format!(
            "room {room}: {} message(s) before #{b}, oldest first:\n",
            page.messages.len()
        ));
        for m in page.messages.iter().rev() {
            render_message(&mut out, m, me);
        }
        match page.messages.last() {
            Some(oldest) if page.has_more => out.push_str(&format!(
                "(older: {})\n",
                read_cmd(Reader::Home(&home.name), room, Some(oldest.id))
            )),
            _ => out.push_str("(this is the start of the room)\n"),
        }
        let reaches =
            !page.has_more || watermark.is_some_and(|w| page.messages.iter().any(|m| m.id <= w));
        if reaches && let Some(newest) = page.messages.first() {
            advance(newest.id)?;
        }
        return Ok(out);
    }
    let (newest_first, reached) = read_back(&client, room, watermark)
        .await
        .with_context(|| format!("reading room {room}"))?;
    let u = unread_part(&newest_first, reached, watermark, me, READ_PAGE as usize);
    if u.shown.is_empty() {
        out.push_str(&format!(
            "room {room}: nothing unread; the newest messages, oldest first:\n"
        ));
        for m in newest_first.iter().take(READ_PAGE as usize).rev() {
            render_message(&mut out, m, me);
        }
    } else {
        out.push_str(&format!(
            "room {room}: {} unread message(s), oldest first:\n",
            u.shown.len()
        ));
        for m in &u.shown {
            render_message(&mut out, m, me);
        }
        render_rest(&mut out, Reader::Home(&home.name), room, &u);
    }
    if let Some(mark) = u.mark {
        advance(mark)?;
    }
    Ok(out)
}
