//! `hoop say` and `hoop send-image`: post as the home's account through the
//! send gates — the same `core::gates` code the sentinel and the reference
//! backend run — so an agent never posts blind over messages it has not seen.
//!
//! The watermark (`<home>/say_seen.json`, `{"<conversation id>": <message
//! id>, …}`) says up to where a room's messages were SHOWN to this account
//! (by the sentinel's instructions, a `hoop say` refusal or `hoop read`). It
//! never moves past a message nobody showed. Precisely:
//! - Before a normal send, the room is read back from the newest message
//!   until the watermark — in a room without one, until its start — at
//!   most [`SAY_READ_PAGES`] pages. Messages newer than the watermark and
//!   not the account's own are unread. Unread ones (without `--anyway`) are
//!   printed oldest first, at most [`SAY_GAP_WINDOW`] of them; the
//!   watermark moves to the newest printed one (to the newest message when
//!   all were printed; not at all when the read gave up before the
//!   watermark, and the printout names the `--before` read), the rest is
//!   named with the `hoop read` command that shows it, and nothing is sent
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
//!   message read before it (never past a message nobody showed).
//! - `--anyway` ("I have just read them one by one") skips the local unread
//!   check, and only that: the watermark does not move over the unread
//!   messages it skipped, so they stay work for the sentinel and the next
//!   plain `hoop say` prints them.
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
//! A send that posted nothing and printed nothing to read first (the
//! backend unreachable, a refusal by a gate or the backend, the rate limit)
//! is recorded in the home's `failed_sends.json` (`hoop_sentinel::ledger`):
//! the sentinel then knows the reply FAILED — the room's work is offered
//! again after its backoff — rather than that the agent chose silence.
//!
//! The watermark never moves backwards. Exit codes: 0 sent; 2 unread
//! messages printed or a gate refused (markdown, cap, empty, rate limit);
//! 1 any other error (the backend unreachable: nothing was sent).
//!
//! The send path itself (gates, gap check, rendering, the one send) is
//! `hoop_api::send`, shared with the bridge channel's `reply` tool.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};

use hoop_api::rest::{image_message, image_mime};
use hoop_api::send::{self, Payload, Reader, SAY_TRANSPORT_TRIES, Sent};
use hoop_api::types::{ConversationId, Mention, SendMessage};
use hoop_api::{Client, Error as ApiError};
use hoop_core::gates::{self, SendKind};
use hoop_core::home::Home;
use hoop_core::limits::REST_BODY_CAP_BYTES;
use hoop_sentinel::ledger::{FAILED_SENDS_FILE, FailedSends};

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
    /// Mention a member by user id or username, or `everyone`. Repeatable.
    #[arg(long = "mention")]
    pub mentions: Vec<String>,
    /// I have just read the unread messages one by one: skip the local unread
    /// check (the messages it skips stay unread: they are offered again).
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

/// `--mention` words as mentions: an id or `everyone` as is, a username
/// looked up among the room's members (asked only when a name is given).
fn resolve_mentions(
    home: &Home,
    room: ConversationId,
    words: &[String],
) -> anyhow::Result<Vec<Mention>> {
    let names: Vec<&String> = words.iter().filter(|w| parse_mention(w).is_err()).collect();
    let members = if names.is_empty() {
        Vec::new()
    } else {
        let client = Client::for_home(home).with_context(|| format!("home {:?}", home.name))?;
        super::runtime()?
            .block_on(client.members(room))
            .with_context(|| format!("reading room {room}'s members to find {}", names[0]))?
    };
    words
        .iter()
        .map(|w| match parse_mention(w) {
            Ok(m) => Ok(m),
            Err(_) => members
                .iter()
                .find(|m| m.username == w.trim_start_matches('@'))
                .map(|m| Mention::User(m.user_id))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "--mention {w:?}: no member of room {room} is named so (members: {}); \
                         give a member's username or id, or `everyone`",
                        {
                            let mut names: Vec<&str> =
                                members.iter().map(|m| m.username.as_str()).collect();
                            names.sort();
                            names.join(", ")
                        }
                    )
                }),
        })
        .collect()
}

// ---------------------------------------------------------------- the commands

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
        let why = format!("refused, nothing sent: {e}");
        if !args.failure {
            note_failed(&args.home, args.room, &why);
        }
        return Ok(gated(&why));
    }
    let home = Home::open(&args.home)?;
    let mentions = resolve_mentions(&home, args.room, &args.mentions)?;
    execute(Request {
        home,
        room: args.room,
        anyway: args.anyway,
        failure: args.failure,
        payload: Payload::Text(SendMessage {
            body: text,
            mentions,
        }),
    })
}

pub fn run_image(args: ImageArgs) -> anyhow::Result<ExitCode> {
    if !args.caption.is_empty()
        && let Err(e) = gates::check_body(&args.caption, SendKind::Normal)
    {
        let why = format!("caption refused, nothing sent: {e}");
        note_failed(&args.home, args.room, &why);
        return Ok(gated(&why));
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
        let why = format!(
            "refused, nothing sent: the image is {len} bytes; the cap is {MAX_IMAGE_BYTES}"
        );
        note_failed(&args.home, args.room, &why);
        return Ok(gated(&why));
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

/// Record in the home that a reply into `room` failed (the sentinel then
/// offers the room's work again after its backoff, instead of taking the
/// silence for a choice). Best effort: the refusal itself is what the
/// sender reads.
fn note_failed(home: &str, room: ConversationId, why: &str) {
    let Ok(home) = Home::open(home) else { return };
    let path = home.dir().join(FAILED_SENDS_FILE);
    if let Err(e) = FailedSends::record(&path, room, why, hoop_core::clock::now_unix()) {
        tracing::warn!(path = %path.display(), error = %e, "could not record the failed send");
    }
}

fn gated(msg: &str) -> ExitCode {
    eprintln!("hoop: {msg}");
    ExitCode::from(EXIT_GATED)
}

fn execute(req: Request) -> anyhow::Result<ExitCode> {
    let rt = super::runtime()?;
    let outcome = rt.block_on(async {
        let client =
            Client::for_home(&req.home).with_context(|| format!("home {:?}", req.home.name))?;
        let me = match send::retrying("who am I", || client.me()).await {
            Ok(u) => u.id,
            Err(ApiError::Transport(e)) => return Ok(Sent::Unreachable(e)),
            Err(e) => return Err(e).context("who am I"),
        };
        let r = send::Request {
            room: req.room,
            me,
            anyway: req.anyway,
            failure: req.failure,
            payload: req.payload.clone(),
            reader: Reader::Home(&req.home.name),
        };
        Ok::<_, anyhow::Error>(send::send(&client, &r, &req.home.say_seen_path()).await?)
    })?;
    if !req.failure && outcome.is_failure() {
        let why = match &outcome {
            Sent::Gated { reason, .. } => reason.clone(),
            Sent::Unreachable(e) => format!("the backend could not be reached: {e}"),
            Sent::Ok(_) => String::new(),
        };
        note_failed(&req.home.name, req.room, &why);
    }
    Ok(match outcome {
        Sent::Ok(m) => {
            println!("sent #{} to room {}", m.id, m.conversation_id);
            ExitCode::SUCCESS
        }
        Sent::Gated { shown, reason } => {
            print!("{shown}");
            gated(&reason)
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_parse() {
        assert_eq!(parse_mention("42"), Ok(Mention::User(42)));
        assert_eq!(parse_mention("everyone"), Ok(Mention::EVERYONE));
        assert!(parse_mention("@bob").is_err());
    }
}
