//! `hoop say` and `hoop send-image`: post as the home's account through the
//! send gates — the same `core::gates` code the sentinel and the reference
//! backend run — so an agent never posts blind over messages it has not seen.
//!
//! The watermark (`<home>/say_seen.json`, `{"<conversation id>": <message
//! id>, …}`) is the newest message id of a room this account has seen
//! through `hoop say`. Precisely:
//! - Before a normal send, the newest [`SAY_GAP_WINDOW`] messages are read.
//!   Those newer than the watermark and not the account's own are unread.
//!   Unread ones (without `--anyway`) are printed, the watermark moves to the
//!   newest message read, and nothing is sent (exit 2): the next `hoop say`
//!   goes through unless something new arrived meanwhile.
//! - The send goes to production's REST text route, which runs no content
//!   gate and no gap check: this command's own `core::gates` (markdown, cap,
//!   empty) and the read above are the gates, as production's `say` does it.
//!   Like production's gap check it is two calls, not an atomic "send only
//!   if nothing changed": a message landing between them is not caught.
//! - After a successful normal send the watermark moves to the sent
//!   message's id.
//! - `--anyway` ("I have just read them one by one") skips the unread check.
//! - `--failure` sends a failure report (its body begins with a failure
//!   mark, no message kind is relied on): no gap check, no markdown gate (the
//!   cap and the empty check still apply), a rate limit is waited out (up to
//!   one calendar minute) rather than refused, and the watermark does not
//!   move, since nothing was read.
//!
//! The watermark never moves backwards. Exit codes: 0 sent; 2 unread
//! messages printed or a gate refused (markdown, cap, empty, rate limit);
//! 1 any other error.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

use hoop_api::rest::{image_message, image_mime};
use hoop_api::say_seen::SaySeen;
use hoop_api::types::{
    ConversationId, Mention, Message, MessageId, MessageKind, SendImage, SendMessage, UserId,
};
use hoop_api::{Client, Error as ApiError};
use hoop_core::gates::{self, SendKind};
use hoop_core::home::Home;
use hoop_core::limits::{REST_BODY_CAP_BYTES, SAY_GAP_WINDOW, SEND_RATE_PER_MIN};

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

/// What the gap gate says about the newest messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GapVerdict {
    /// Send, expecting this newest id ([`EMPTY_ROOM`] when the room had no
    /// message: ids are positive, so any message at all is newer).
    Clear { expect_latest_id: MessageId },
    /// Show these (newest first) and do not send. `more` = unread messages
    /// older than the window may exist.
    Unread {
        unread: Vec<Message>,
        newest: MessageId,
        more: bool,
    },
}

/// The gap gate over one page of newest messages (newest first).
pub fn gap_verdict(
    newest_first: &[Message],
    has_more: bool,
    watermark: Option<MessageId>,
    me: UserId,
    anyway: bool,
) -> GapVerdict {
    let newest = newest_first.first().map(|m| m.id);
    let unread: Vec<Message> =
        gates::unread_since(newest_first, watermark, |m| m.id, |m| m.sender_id == me)
            .into_iter()
            .cloned()
            .collect();
    match newest {
        Some(newest) if !unread.is_empty() && !anyway => {
            // The window was all unread and older ones exist past it.
            let oldest_shown = newest_first.last().map(|m| m.id).unwrap_or(newest);
            let more = has_more && watermark.is_none_or(|w| w < oldest_shown);
            GapVerdict::Unread {
                unread,
                newest,
                more,
            }
        }
        _ => GapVerdict::Clear {
            expect_latest_id: newest.unwrap_or(EMPTY_ROOM),
        },
    }
}

/// The unread messages as printed: oldest first, one block each.
pub fn render_unread(room: ConversationId, newest_first: &[Message], more: bool) -> String {
    let mut out = format!(
        "{} unread message(s) in room {room} — read them, then send again \
         (or pass --anyway if you have just read them one by one):\n",
        newest_first.len()
    );
    if more {
        out.push_str(
            "(older unread messages exist beyond these; read the room before answering)\n",
        );
    }
    for m in newest_first.iter().rev() {
        let tag = match &m.kind {
            MessageKind::Text => String::new(),
            MessageKind::Image => " [image]".into(),
            MessageKind::Voice => " [voice]".into(),
            MessageKind::Unknown(w) => format!(" [{w}]"),
        };
        out.push_str(&format!("#{} @{}{tag}:", m.id, m.sender_username));
        let mut lines = m.body.lines();
        match lines.next() {
            Some(first) => out.push_str(&format!(" {first}\n")),
            None => out.push('\n'),
        }
        for l in lines {
            out.push_str(&format!("    {l}\n"));
        }
    }
    out
}

// ---------------------------------------------------------------- the commands

/// What one send attempt ended in.
enum Sent {
    Ok(Message),
    Gated(String),
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
    })
}

async fn send(req: &Request, seen_path: &Path) -> anyhow::Result<Sent> {
    let client =
        Client::for_home(&req.home).with_context(|| format!("home {:?}", req.home.name))?;
    let room = req.room;
    let seen = SaySeen::load(seen_path);

    if !req.failure {
        let me = client.me().await.context("who am I")?;
        let page = client
            .messages(room, SAY_GAP_WINDOW, None)
            .await
            .with_context(|| format!("reading room {room}"))?;
        if let GapVerdict::Unread {
            unread,
            newest,
            more,
        } = gap_verdict(
            &page.messages,
            page.has_more,
            seen.get(room),
            me.id,
            req.anyway,
        ) {
            print!("{}", render_unread(room, &unread, more));
            advance(seen_path, room, newest)?;
            return Ok(Sent::Gated(format!(
                "not sent: {} unread message(s) printed above",
                unread.len()
            )));
        }
    }

    let result = match &req.payload {
        // Bad news must get out: the client outwaits the rate limit.
        Payload::Text(m) if req.failure => client.send_failure_report(room, m).await,
        Payload::Text(m) => client.send(room, m).await,
        Payload::Image(i) => client.send_image(room, i).await,
    };
    match result {
        Ok(m) => {
            if !req.failure {
                advance(seen_path, room, m.id)?;
            }
            Ok(Sent::Ok(m))
        }
        Err(ApiError::Gap {
            latest_id, unread, ..
        }) => {
            print!("{}", render_unread(room, &unread, false));
            advance(seen_path, room, latest_id)?;
            Ok(Sent::Gated(format!(
                "not sent: {} message(s) arrived meanwhile, printed above",
                unread.len()
            )))
        }
        Err(ApiError::RateLimited { retry_after }) => Ok(Sent::Gated(format!(
            "rate limited, nothing sent: the backend takes at most {SEND_RATE_PER_MIN} \
             messages a minute per account; retry in {} s",
            retry_after.map(|d| d.as_secs()).unwrap_or(60)
        ))),
        Err(ApiError::Refused { code, message, .. }) => Ok(Sent::Gated(format!(
            "refused by the backend ({code}), nothing sent: {message}"
        ))),
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
            GapVerdict::Unread { unread, .. } => unread.iter().map(|m| m.id).collect(),
            GapVerdict::Clear { .. } => vec![],
        }
    }

    #[test]
    fn gap_verdict_table() {
        let page = vec![msg(9, 2), msg(8, ME), msg(7, 2), msg(6, 2)];
        // (watermark, anyway, want unread ids, want clear expect)
        type Case = (Option<i64>, bool, &'static [i64], Option<i64>);
        let cases: &[Case] = &[
            (Some(9), false, &[], Some(9)),
            (Some(8), false, &[9], None),
            (Some(6), false, &[9, 7], None),
            (None, false, &[9, 7, 6], None),
            (Some(6), true, &[], Some(9)),
            (Some(20), false, &[], Some(9)),
        ];
        for (w, anyway, want, expect) in cases {
            let v = gap_verdict(&page, false, *w, ME, *anyway);
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
            gap_verdict(&own, false, Some(7), ME, false),
            GapVerdict::Clear {
                expect_latest_id: 9
            }
        );
        // An empty room: clear, and any message at all is newer than 0.
        assert_eq!(
            gap_verdict(&[], false, None, ME, false),
            GapVerdict::Clear {
                expect_latest_id: EMPTY_ROOM
            }
        );
    }

    #[test]
    fn older_unread_beyond_the_window_is_flagged() {
        let page = vec![msg(9, 2), msg(8, 2)];
        let more = |w| match gap_verdict(&page, true, w, ME, false) {
            GapVerdict::Unread { more, newest, .. } => {
                assert_eq!(newest, 9);
                more
            }
            v => panic!("{v:?}"),
        };
        assert!(more(None));
        assert!(more(Some(3)));
        assert!(!more(Some(8)));
    }

    #[test]
    fn unread_render_is_oldest_first_with_continuations() {
        let mut a = msg(7, 2);
        a.body = "line one\nline two".into();
        let out = render_unread(5, &[msg(9, 2), a], true);
        let p9 = out.find("#9 @ann: m9").unwrap();
        let p7 = out.find("#7 @ann: line one\n    line two").unwrap();
        assert!(p7 < p9, "{out}");
        assert!(out.contains("older unread"));
    }

    #[test]
    fn mentions_parse() {
        assert_eq!(parse_mention("42"), Ok(Mention::User(42)));
        assert_eq!(parse_mention("everyone"), Ok(Mention::EVERYONE));
        assert!(parse_mention("@bob").is_err());
    }
}
