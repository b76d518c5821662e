//! `hoop say` and `hoop send-image`: post as the home's account through the
//! send gates — the same `core::gates` code the sentinel and the reference
//! backend run — so an agent never posts blind over messages it has not seen.
//!
//! The watermark (`<home>/say_seen.json`, `{"<conversation id>": <message
//! id>, …}`) says up to where a room's messages were SHOWN to this account
//! (by the sentinel's instructions, a `hoop say` refusal or `hoop read`). It
//! never moves past a message nobody showed. Precisely:
//! - Before a normal send, the room is read back from the newest message
//!   until the watermark (at most [`SAY_READ_PAGES`] pages). Messages newer
//!   than the watermark and not the account's own are unread. Unread ones
//!   (without `--anyway`) are printed oldest first, at most
//!   [`SAY_GAP_WINDOW`] of them; the watermark moves to the newest printed
//!   one (to the newest message when all were printed), the rest is named
//!   with the `hoop read` command that shows it, and nothing is sent
//!   (exit 2).
//! - The send goes to production's REST text route, which runs no content
//!   gate and no gap check: this command's own `core::gates` (markdown, cap,
//!   empty) and the read above are the gates, as production's `say` does it.
//!   Like production's gap check it is two calls, not an atomic "send only
//!   if nothing changed": a message landing between them is not caught here
//!   (the sentinel's round still sees it: it is newer than what was shown).
//!   Should a backend refuse with `gap` anyway, the room is read again and
//!   shown the same way, exit 2.
//! - After a successful normal send the watermark moves to the newest
//!   message shown before it (never past a message nobody showed).
//! - `--anyway` ("I have just read them one by one") skips the local unread
//!   check.
//! - `--failure` sends a failure report (its body begins with a failure
//!   mark, no message kind is relied on): no gap check, no markdown gate (the
//!   cap and the empty check still apply), a rate limit is waited out (up to
//!   one calendar minute) rather than refused, and the watermark does not
//!   move, since nothing was read.
//! - A backend that cannot be reached is tried [`SAY_TRANSPORT_TRIES`]
//!   times with a doubling pause; before a send is tried again the room is
//!   checked for it (a send whose answer was lost is not sent twice). When
//!   it still cannot be reached the command says that nothing was sent.
//!
//! The watermark never moves backwards. Exit codes: 0 sent; 2 unread
//! messages printed or a gate refused (markdown, cap, empty, rate limit);
//! 1 any other error (the backend unreachable: nothing was sent).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};

use hoop_api::rest::{image_message, image_mime};
use hoop_api::say_seen::SaySeen;
use hoop_api::types::{
    ConversationId, Mention, Message, MessageId, MessageKind, SendImage, SendMessage, UserId,
};
use hoop_api::{Client, Error as ApiError};
use hoop_core::gates::{self, SendKind};
use hoop_core::home::Home;
use hoop_core::limits::{CHAT_READ_MAX, REST_BODY_CAP_BYTES, SAY_GAP_WINDOW, SEND_RATE_PER_MIN};

/// `expect_latest_id` of a send into a room that had no message: message
/// ids are positive, so the backend's gap check sees any message as newer.
pub const EMPTY_ROOM: MessageId = 0;
/// Exit code: unread messages were printed, or a gate refused.
pub const EXIT_GATED: u8 = 2;
/// The largest image file accepted: its base64 (4/3 larger) plus the JSON
/// around it must fit the backend's REST body cap.
pub const MAX_IMAGE_BYTES: usize = REST_BODY_CAP_BYTES / 4 * 3 - 64 * 1024;
/// Read at most this much of stdin for `-`: four bytes per character of the
/// largest body, plus one so an over-long body is caught by the cap gate.
const STDIN_CAP_BYTES: u64 = (hoop_core::limits::MAX_BODY_CHARS as u64) * 4 + 1;

/// Reading back to the watermark stops after this many pages of
/// [`CHAT_READ_MAX`] (200 messages): a room flooded beyond that is read with
/// `hoop read --before`, and the printout says so.
pub const SAY_READ_PAGES: usize = 4;
/// A printed message body is cut after this many characters (the rest
/// stays in the room): a refusal must fit the agent's tool-output limit
/// even when every unread message is maximal.
pub const SHOW_BODY_CAP_CHARS: usize = 2_000;
/// A backend that cannot be reached is tried this many times ...
pub const SAY_TRANSPORT_TRIES: u32 = 5;
/// ... pausing this long after the first failure, doubling each time
/// (0.5 + 1 + 2 + 4 = 7.5 s: a backend restart fits, a person does not
/// wait long for the verdict).
pub const SAY_RETRY_FIRST_PAUSE: Duration = Duration::from_millis(500);

/// Shown under `--help` of both commands.
const EXIT_HELP: &str = "Exit codes: 0 sent; 2 not sent: unread messages were printed (read them, then \
send again), or a gate refused (markdown, the 65,536-character cap, an empty body, the rate \
limit); 1 any other error.";

#[derive(clap::Args, Debug)]
#[command(after_help = EXIT_HELP)]
pub struct Args {
    /// The home (account) to post as.
    #[arg(long)]
    pub home: String,
    /// The conversation id.
    #[arg(long)]
    pub room: ConversationId,
    /// Mention a member by user id, or `everyone`. Repeatable.
    #[arg(long = "mention", value_parser = parse_mention)]
    pub mentions: Vec<Mention>,
    /// I have just read the unread messages one by one: skip the local unread check.
    #[arg(long)]
    pub anyway: bool,
    /// This is a failure report: no gap check, no markdown gate.
    #[arg(long)]
    pub failure: bool,
    /// The text; `-` reads it from stdin.
    pub text: String,
}

#[derive(clap::Args, Debug)]
#[command(after_help = EXIT_HELP)]
pub struct ImageArgs {
    /// The home (account) to post as.
    #[arg(long)]
    pub home: String,
    /// The conversation id.
    #[arg(long)]
    pub room: ConversationId,
    /// The image file (png, jpeg, gif, webp).
    #[arg(long)]
    pub file: PathBuf,
    /// A caption (plain text, same gates as a message).
    #[arg(long, default_value = "")]
    pub caption: String,
    /// I have just read the unread messages one by one: skip the local unread check.
    #[arg(long)]
    pub anyway: bool,
}

fn parse_mention(s: &str) -> Result<Mention, String> {
    if s.eq_ignore_ascii_case("everyone") {
        return Ok(Mention::EVERYONE);
    }
    s.parse::<i64>()
        .map(Mention::User)
        .map_err(|_| format!("{s:?} is neither a user id nor `everyone`"))
}

// ---------------------------------------------------------------- the gap gate

/// What a room holds newer than the watermark, as far as it is shown now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// Messages from others newer than the watermark shown now, oldest first.
    pub shown: Vec<Message>,
    /// Where the watermark may move: every message up to it was shown (or
    /// is the account's own). `None`: nothing may move.
    pub mark: Option<MessageId>,
    /// Unread messages newer than the shown ones, not shown yet.
    pub more: usize,
    /// Reading back stopped before the watermark: older unread messages
    /// may exist before the oldest one read.
    pub skipped: Option<MessageId>,
}

/// The unread part of what was read back (`newest_first`, every page read,
/// newest first; `reached` = the read reached the watermark or the start of
/// the room), showing at most `max` messages, oldest first.
pub fn unread_part(
    newest_first: &[Message],
    reached: bool,
    watermark: Option<MessageId>,
    me: UserId,
    max: usize,
) -> Unread {
    let mut unread: Vec<Message> =
        gates::unread_since(newest_first, watermark, |m| m.id, |m| m.sender_id == me)
            .into_iter()
            .cloned()
            .collect();
    unread.reverse();
    let more = unread.len().saturating_sub(max);
    unread.truncate(max);
    let newest = newest_first.first().map(|m| m.id);
    let mark = if more == 0 {
        newest
    } else {
        unread.last().map(|m| m.id)
    };
    Unread {
        shown: unread,
        mark,
        more,
        skipped: (!reached)
            .then(|| newest_first.last().map(|m| m.id))
            .flatten(),
    }
}

/// What the gap gate says about the room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GapVerdict {
    /// Send, expecting this newest id ([`EMPTY_ROOM`] when the room had no
    /// message: ids are positive, so any message at all is newer).
    Clear { expect_latest_id: MessageId },
    /// Show these and do not send.
    Unread(Unread),
}

/// The gap gate over what was read back (see [`unread_part`]).
pub fn gap_verdict(
    newest_first: &[Message],
    reached: bool,
    watermark: Option<MessageId>,
    me: UserId,
    anyway: bool,
) -> GapVerdict {
    let u = unread_part(
        newest_first,
        reached,
        watermark,
        me,
        SAY_GAP_WINDOW as usize,
    );
    if u.shown.is_empty() || anyway {
        return GapVerdict::Clear {
            expect_latest_id: newest_first.first().map_or(EMPTY_ROOM, |m| m.id),
        };
    }
    GapVerdict::Unread(u)
}

/// Read a room back from its newest message until the watermark, the start
/// of the room, or [`SAY_READ_PAGES`] pages. Returns the messages newest
/// first and whether the watermark (or the start) was reached. With no
/// watermark only the newest page is read (it counts as reached: the room
/// was never shown, its newest messages are what matters).
pub async fn read_back(
    client: &Client,
    room: ConversationId,
    watermark: Option<MessageId>,
) -> Result<(Vec<Message>, bool), ApiError> {
    let Some(w) = watermark else {
        let p = retrying("reading the room", || {
            client.messages(room, SAY_GAP_WINDOW, None)
        })
        .await?;
        return Ok((p.messages, true));
    };
    let mut all: Vec<Message> = vec![];
    let mut before = None;
    for _ in 0..SAY_READ_PAGES {
        let p = retrying("reading the room", || {
            client.messages(room, CHAT_READ_MAX, before)
        })
        .await?;
        let reached = !p.has_more || p.messages.iter().any(|m| m.id <= w);
        before = p.messages.last().map(|m| m.id);
        all.extend(p.messages);
        if reached || before.is_none() {
            return Ok((all, true));
        }
    }
    Ok((all, false))
}

/// Run `op`, trying again on a transport error ([`SAY_TRANSPORT_TRIES`]
/// tries, the pause doubling from [`SAY_RETRY_FIRST_PAUSE`]).
pub async fn retrying<T, F, Fut>(what: &str, mut op: F) -> Result<T, ApiError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ApiError>>,
{
    let mut pause = SAY_RETRY_FIRST_PAUSE;
    let mut tries = 1;
    loop {
        match op().await {
            Err(ApiError::Transport(e)) if tries < SAY_TRANSPORT_TRIES => {
                tracing::warn!(what, error = %e, pause_ms = pause.as_millis() as u64, "backend unreachable; trying again");
                tokio::time::sleep(pause).await;
                pause *= 2;
                tries += 1;
            }
            r => return r,
        }
    }
}

/// One message as printed: `#id @user[ (you)][ tag]: body`, continuation
/// lines indented, a long body cut.
pub fn render_message(out: &mut String, m: &Message, me: UserId) {
    let you = if m.sender_id == me { " (you)" } else { "" };
    let tag = match &m.kind {
        MessageKind::Text => String::new(),
        MessageKind::Image => " [image]".into(),
        MessageKind::Voice => " [voice]".into(),
        MessageKind::Unknown(w) => format!(" [{w}]"),
    };
    out.push_str(&format!("#{} @{}{you}{tag}:", m.id, m.sender_username));
    let body: String = m.body.chars().take(SHOW_BODY_CAP_CHARS).collect();
    let cut = m.body.chars().count().saturating_sub(SHOW_BODY_CAP_CHARS);
    let mut lines = body.lines();
    match lines.next() {
        Some(first) => out.push_str(&format!(" {first}\n")),
        None => out.push('\n'),
    }
    for l in lines {
        out.push_str(&format!("    {l}\n"));
    }
    if cut > 0 {
        out.push_str(&format!("    …({cut} more characters in the room)\n"));
    }
}

/// The `hoop read` command for a room (named in every printout that leaves
/// something unshown).
pub fn read_cmd(home: &str, room: ConversationId, before: Option<MessageId>) -> String {
    match before {
        Some(b) => format!("hoop read --home {home} --room {room} --before {b}"),
        None => format!("hoop read --home {home} --room {room}"),
    }
}

/// What is left unshown, and the command that shows it.
pub fn render_rest(out: &mut String, home: &str, room: ConversationId, u: &Unread) {
    if u.more > 0 {
        out.push_str(&format!(
            "({} more unread after these: run {} to read them)\n",
            u.more,
            read_cmd(home, room, None)
        ));
    }
    if let Some(oldest) = u.skipped {
        out.push_str(&format!(
            "(older unread messages may exist before #{oldest}; read them with {})\n",
            read_cmd(home, room, Some(oldest))
        ));
    }
}

/// The unread messages as a refusal prints them: oldest first, one block each.
pub fn render_unread(home: &str, room: ConversationId, u: &Unread, me: UserId) -> String {
    let mut out = format!(
        "{} unread message(s) in room {room} — read them, then send again \
         (or pass --anyway if you have just read them one by one):\n",
        u.shown.len()
    );
    for m in &u.shown {
        render_message(&mut out, m, me);
    }
    render_rest(&mut out, home, room, u);
    out.push_str(&format!(
        "(more of the room: {} for unread messages, --before ID for older history)\n",
        read_cmd(home, room, None)
    ));
    out
}

// ---------------------------------------------------------------- the commands

/// What one send attempt ended in.
enum Sent {
    Ok(Message),
    Gated(String),
    /// The backend could not be reached: nothing was sent.
    Unreachable(String),
}

/// The body to send or the image to send.
enum Payload {
    Text(SendMessage),
    Image(SendImage),
}

struct Request {
    home: Home,
    room: ConversationId,
    anyway: bool,
    failure: bool,
    payload: Payload,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let text = if args.text == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .take(STDIN_CAP_BYTES)
            .read_to_end(&mut buf)
            .context("reading the text from stdin")?;
        let s = String::from_utf8(buf).context("the text on stdin is not UTF-8")?;
        s.trim_end_matches(['\n', '\r']).to_string()
    } else {
        args.text
    };
    let kind = if args.failure {
        SendKind::Failure
    } else {
        SendKind::Normal
    };
    if let Err(e) = gates::check_body(&text, kind) {
        return Ok(gated(&format!("refused, nothing sent: {e}")));
    }
    let home = Home::open(&args.home)?;
    execute(Request {
        home,
        room: args.room,
        anyway: args.anyway,
        failure: args.failure,
        payload: Payload::Text(SendMessage {
            body: text,
            mentions: args.mentions,
        }),
    })
}

pub fn run_image(args: ImageArgs) -> anyhow::Result<ExitCode> {
    if !args.caption.is_empty()
        && let Err(e) = gates::check_body(&args.caption, SendKind::Normal)
    {
        return Ok(gated(&format!("caption refused, nothing sent: {e}")));
    }
    let Some(mime) = image_mime(&args.file) else {
        bail!(
            "{}: not an image type the backend takes (png, jpeg, gif, webp)",
            args.file.display()
        );
    };
    let len = std::fs::metadata(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?
        .len();
    if len as usize > MAX_IMAGE_BYTES {
        return Ok(gated(&format!(
            "refused, nothing sent: the image is {len} bytes; the cap is {MAX_IMAGE_BYTES}"
        )));
    }
    let data =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let home = Home::open(&args.home)?;
    execute(Request {
        home,
        room: args.room,
        anyway: args.anyway,
        failure: false,
        payload: Payload::Image(image_message(&data, mime, &args.caption)),
    })
}

fn gated(msg: &str) -> ExitCode {
    eprintln!("hoop: {msg}");
    ExitCode::from(EXIT_GATED)
}

fn execute(req: Request) -> anyhow::Result<ExitCode> {
    let rt = super::runtime()?;
    let seen_path = req.home.say_seen_path();
    let outcome = rt.block_on(send(&req, &seen_path))?;
    Ok(match outcome {
        Sent::Ok(m) => {
            println!("sent #{} to room {}", m.id, m.conversation_id);
            ExitCode::SUCCESS
        }
        Sent::Gated(msg) => gated(&msg),
        Sent::Unreachable(e) => {
            eprintln!(
                "hoop: the backend could not be reached after {SAY_TRANSPORT_TRIES} tries; \
                 NOTHING WAS SENT to room {}: {e}",
                req.room
            );
            ExitCode::from(super::EXIT_FAILURE)
        }
    })
}

/// Read the room back to the watermark and print what is unread; the
/// watermark moves only over what was printed.
async fn show_unread(
    client: &Client,
    req: &Request,
    seen_path: &Path,
    me: UserId,
    anyway: bool,
    what: &str,
) -> anyhow::Result<Result<MessageId, Sent>> {
    let room = req.room;
    let seen = SaySeen::load(seen_path);
    let (page, reached) = match read_back(client, room, seen.get(room)).await {
        Ok(p) => p,
        Err(ApiError::Transport(e)) => return Ok(Err(Sent::Unreachable(e))),
        Err(e) => return Err(e).with_context(|| format!("reading room {room}")),
    };
    match gap_verdict(&page, reached, seen.get(room), me, anyway) {
        GapVerdict::Unread(u) => {
            print!("{}", render_unread(&req.home.name, room, &u, me));
            if let Some(mark) = u.mark {
                advance(seen_path, room, mark)?;
            }
            Ok(Err(Sent::Gated(format!(
                "not sent: {} {what}, printed above",
                u.shown.len()
            ))))
        }
        GapVerdict::Clear { expect_latest_id } => Ok(Ok(expect_latest_id)),
    }
}

/// After a transport error on a send: did it land anyway (its answer lost)?
/// Looks for the account's own message with the same body (as sent: a
/// failure report carries its mark) and kind newer than `after`.
async fn landed(client: &Client, req: &Request, me: UserId, after: MessageId) -> Option<Message> {
    let (body, kind) = match &req.payload {
        Payload::Text(m) if req.failure => (gates::as_failure_report(&m.body), MessageKind::Text),
        Payload::Text(m) => (m.body.clone(), MessageKind::Text),
        Payload::Image(i) => (i.caption.clone(), MessageKind::Image),
    };
    let page = client.messages(req.room, SAY_GAP_WINDOW, None).await.ok()?;
    page.messages
        .into_iter()
        .find(|m| m.id > after && m.sender_id == me && m.kind == kind && m.body == body)
}

async fn send(req: &Request, seen_path: &Path) -> anyhow::Result<Sent> {
    let client =
        Client::for_home(&req.home).with_context(|| format!("home {:?}", req.home.name))?;
    let room = req.room;
    let me = match retrying("who am I", || client.me()).await {
        Ok(u) => u.id,
        Err(ApiError::Transport(e)) => return Ok(Sent::Unreachable(e)),
        Err(e) => return Err(e).context("who am I"),
    };

    // The newest id before the send: what a landed copy must be newer than.
    let baseline = if req.failure {
        client
            .messages(room, 1, None)
            .await
            .ok()
            .and_then(|p| p.messages.first().map(|m| m.id))
    } else {
        match show_unread(&client, req, seen_path, me, req.anyway, "unread message(s)").await? {
            Ok(newest) => Some(newest),
            Err(sent) => return Ok(sent),
        }
    };

    let attempt = || async {
        match &req.payload {
            // Bad news must get out: the client outwaits the rate limit.
            Payload::Text(m) if req.failure => client.send_failure_report(room, m).await,
            Payload::Text(m) => client.send(room, m).await,
            Payload::Image(i) => client.send_image(room, i).await,
        }
    };
    // A try after the first looks for a copy that landed although its
    // answer was lost, so a send is never posted twice.
    let first = std::cell::Cell::new(true);
    let result = retrying("sending", || async {
        if !first.replace(false)
            && let Some(after) = baseline
            && let Some(m) = landed(&client, req, me, after).await
        {
            return Ok(m);
        }
        attempt().await
    })
    .await;
    match result {
        Ok(m) => {
            // Up to what was shown, not to the sent message: without an
            // atomic gap check something may have landed in between.
            if !req.failure
                && let Some(shown) = baseline
            {
                advance(seen_path, room, shown)?;
            }
            Ok(Sent::Ok(m))
        }
        Err(ApiError::Gap { .. }) => {
            // Something arrived between the read and the send: show it the
            // same way (read back to the watermark), never past it.
            match show_unread(
                &client,
                req,
                seen_path,
                me,
                false,
                "message(s) arrived meanwhile",
            )
            .await?
            {
                Err(sent) => Ok(sent),
                Ok(_) => Ok(Sent::Gated(
                    "not sent: a message arrived meanwhile; send again".into(),
                )),
            }
        }
        Err(ApiError::RateLimited { retry_after }) => Ok(Sent::Gated(format!(
            "rate limited, nothing sent: the backend takes at most {SEND_RATE_PER_MIN} \
             messages a minute per account; retry in {} s",
            retry_after.map(|d| d.as_secs()).unwrap_or(60)
        ))),
        Err(ApiError::Refused { code, message, .. }) => Ok(Sent::Gated(format!(
            "refused by the backend ({code}), nothing sent: {message}"
        ))),
        Err(ApiError::Transport(e)) => Ok(Sent::Unreachable(e)),
        Err(e) => Err(e).context("sending"),
    }
}

fn advance(path: &Path, room: ConversationId, to: MessageId) -> anyhow::Result<()> {
    SaySeen::advance_file(path, room, to).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: UserId = 1;

    fn msg(id: MessageId, sender: UserId) -> Message {
        Message {
            id,
            conversation_id: 5,
            sender_id: sender,
            sender_username: if sender == ME {
                "me".into()
            } else {
                "ann".into()
            },
            body: format!("m{id}"),
            mentions: vec![],
            kind: MessageKind::Text,
            created_at: 0,
        }
    }

    fn ids(v: &GapVerdict) -> Vec<MessageId> {
        match v {
            GapVerdict::Unread(u) => u.shown.iter().map(|m| m.id).collect(),
            GapVerdict::Clear { .. } => vec![],
        }
    }

    #[test]
    fn gap_verdict_table() {
        let page = vec![msg(9, 2), msg(8, ME), msg(7, 2), msg(6, 2)];
        // (watermark, anyway, want unread ids oldest first, want clear expect)
        type Case = (Option<i64>, bool, &'static [i64], Option<i64>);
        let cases: &[Case] = &[
            (Some(9), false, &[], Some(9)),
            (Some(8), false, &[9], None),
            (Some(6), false, &[7, 9], None),
            (None, false, &[6, 7, 9], None),
            (Some(6), true, &[], Some(9)),
            (Some(20), false, &[], Some(9)),
        ];
        for (w, anyway, want, expect) in cases {
            let v = gap_verdict(&page, true, *w, ME, *anyway);
            assert_eq!(ids(&v), *want, "{w:?} {anyway}");
            if want.is_empty() {
                assert_eq!(
                    v,
                    GapVerdict::Clear {
                        expect_latest_id: expect.unwrap()
                    }
                );
            }
        }
        // Only my own messages since the watermark: clear.
        let own = vec![msg(9, ME), msg(8, ME), msg(7, 2)];
        assert_eq!(
            gap_verdict(&own, true, Some(7), ME, false),
            GapVerdict::Clear {
                expect_latest_id: 9
            }
        );
        // An empty room: clear, and any message at all is newer than 0.
        assert_eq!(
            gap_verdict(&[], true, None, ME, false),
            GapVerdict::Clear {
                expect_latest_id: EMPTY_ROOM
            }
        );
    }

    #[test]
    fn the_watermark_never_moves_past_a_message_not_shown() {
        // 20 unread after the watermark 100; 8 are shown, oldest first.
        let newest_first: Vec<Message> = (101..=120).rev().map(|i| msg(i, 2)).collect();
        let u = unread_part(&newest_first, true, Some(100), ME, 8);
        assert_eq!(
            u.shown.iter().map(|m| m.id).collect::<Vec<_>>(),
            (101..=108).collect::<Vec<_>>()
        );
        assert_eq!(u.mark, Some(108), "only up to the newest shown");
        assert_eq!(u.more, 12);
        assert_eq!(u.skipped, None);
        let text = render_unread("bolt", 5, &u, ME);
        assert!(
            text.contains("12 more unread after these: run hoop read --home bolt --room 5"),
            "{text}"
        );
        // All fit: the mark goes to the newest message read, own ones included.
        let mut mixed = newest_first[..3].to_vec();
        mixed.insert(0, msg(121, ME));
        let u = unread_part(&mixed, true, Some(117), ME, 8);
        assert_eq!((u.mark, u.more), (Some(121), 0));
        // Reading back gave up before the watermark: said, with the command.
        let u = unread_part(&newest_first[..5], false, Some(100), ME, 8);
        assert_eq!(u.skipped, Some(116));
        let text = render_unread("bolt", 5, &u, ME);
        assert!(
            text.contains("hoop read --home bolt --room 5 --before 116"),
            "{text}"
        );
    }

    #[test]
    fn unread_render_is_oldest_first_with_continuations_and_cut() {
        let mut a = msg(7, 2);
        a.body = "line one\nline two".into();
        let mut long = msg(9, 2);
        long.body = "x".repeat(SHOW_BODY_CAP_CHARS + 3);
        let u = Unread {
            shown: vec![a, long],
            mark: Some(9),
            more: 0,
            skipped: None,
        };
        let out = render_unread("h", 5, &u, ME);
        let p9 = out.find("#9 @ann: x").unwrap();
        let p7 = out.find("#7 @ann: line one\n    line two").unwrap();
        assert!(p7 < p9, "{out}");
        assert!(out.contains("…(3 more characters in the room)"), "{out}");
        let mut own = String::new();
        render_message(&mut own, &msg(3, ME), ME);
        assert_eq!(own, "#3 @me (you): m3\n");
    }

    #[test]
    fn mentions_parse() {
        assert_eq!(parse_mention("42"), Ok(Mention::User(42)));
        assert_eq!(parse_mention("everyone"), Ok(Mention::EVERYONE));
        assert!(parse_mention("@bob").is_err());
    }
}
