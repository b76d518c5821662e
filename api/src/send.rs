//! The send path shared by `hoop say` / `hoop send-image` and the bridge
//! channel's `reply` tool, so there is one: the local gates
//! (`hoop_core::gates`), the gap check against the say watermark
//! (`say_seen`), the unread rendering, and a send that is never posted
//! twice. It runs over a [`Transport`]: the REST client of a home, or the
//! MCP client of a key.
//!
//! The watermark says up to where a room's messages were SHOWN to this
//! account; it moves only over messages that were printed (remember, then
//! print), `anyway` included:
//! - before a normal send, the room is read back from the newest message
//!   until the watermark — or, in a room without one, until the start of
//!   the room — at most [`SAY_READ_PAGES`] pages; unread ones (others'
//!   messages newer than the watermark), unless `anyway`, are rendered
//!   oldest first, at most [`SAY_GAP_WINDOW`], the watermark moves to the
//!   newest rendered one (only when the read reached the watermark or the
//!   start: otherwise older unread messages may lie below everything read,
//!   and the printout names the `--before` command that reads them), the
//!   rest is named with the command that shows it, and nothing is sent
//!   ([`Sent::Gated`]);
//! - after a successful normal send the watermark moves to the newest
//!   message read before it (not to the sent one: the read and the send
//!   are two calls, something may land between them) — only when nothing
//!   unread was skipped: after an `anyway` send over unread messages, or a
//!   read that gave up before the watermark, it stays where it was, so the
//!   skipped messages are still work for the sentinel and shown again by
//!   the next refusal or `hoop read`;
//! - a failure report (body begins with a failure mark) has no gap check
//!   and no markdown gate and leaves the watermark alone;
//! - an unreachable backend is tried [`SAY_TRANSPORT_TRIES`] times; before
//!   a send is tried again the room is checked for it.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use hoop_core::gates::{self, SendKind};
use hoop_core::limits::{CHAT_READ_MAX, SAY_GAP_WINDOW, SEND_RATE_PER_MIN};

use crate::error::Error as ApiError;
use crate::say_seen::SaySeen;
use crate::types::mcp::{self as t, ChatRead, ChatReadArgs, ChatSendImageArgs, ChatSendTextArgs};
use crate::types::{
    ConversationId, Message, MessageId, MessageKind, MessagePage, SendImage, SendMessage, UserId,
};
use crate::{Client, McpClient};

/// `expect_latest_id` of a send into a room that had no message: message
/// ids are positive, so the backend's gap check sees any message as newer.
pub const EMPTY_ROOM: MessageId = 0;
/// Reading back to the watermark stops after this many pages of
/// [`CHAT_READ_MAX`]: a room flooded beyond that is read with `--before`,
/// and the printout says so.
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

/// How the send path reaches a room.
pub trait Transport: Sync {
    /// A page newest first (`before` pages back).
    fn page(
        &self,
        room: ConversationId,
        limit: u32,
        before: Option<MessageId>,
    ) -> impl Future<Output = Result<MessagePage, ApiError>> + Send;
    /// A normal text send; `expect_latest_id` is the newest id shown.
    fn send_text(
        &self,
        room: ConversationId,
        msg: &SendMessage,
        expect_latest_id: MessageId,
    ) -> impl Future<Output = Result<Message, ApiError>> + Send;
    /// A failure report: it must get out (marked, no content gate).
    fn send_failure(
        &self,
        room: ConversationId,
        msg: &SendMessage,
    ) -> impl Future<Output = Result<Message, ApiError>> + Send;
    fn send_image(
        &self,
        room: ConversationId,
        img: &SendImage,
    ) -> impl Future<Output = Result<Message, ApiError>> + Send;
}

impl Transport for Client {
    fn page(
        &self,
        room: ConversationId,
        limit: u32,
        before: Option<MessageId>,
    ) -> impl Future<Output = Result<MessagePage, ApiError>> + Send {
        self.messages(room, limit, before)
    }
    fn send_text(
        &self,
        room: ConversationId,
        msg: &SendMessage,
        _expect_latest_id: MessageId,
    ) -> impl Future<Output = Result<Message, ApiError>> + Send {
        // Production's REST route has no gap check; the read before is it.
        self.send(room, msg)
    }
    fn send_failure(
        &self,
        room: ConversationId,
        msg: &SendMessage,
    ) -> impl Future<Output = Result<Message, ApiError>> + Send {
        self.send_failure_report(room, msg)
    }
    fn send_image(
        &self,
        room: ConversationId,
        img: &SendImage,
    ) -> impl Future<Output = Result<Message, ApiError>> + Send {
        Client::send_image(self, room, img)
    }
}

impl Transport for McpClient {
    async fn page(
        &self,
        room: ConversationId,
        limit: u32,
        before: Option<MessageId>,
    ) -> Result<MessagePage, ApiError> {
        let r: ChatRead = self
            .call(
                t::CHAT_READ,
                &ChatReadArgs {
                    conversation_id: room,
                    limit: Some(limit.min(CHAT_READ_MAX)),
                    before,
                    with_deleted: None,
                },
            )
            .await?;
        Ok(MessagePage {
            messages: r.messages,
            has_more: r.truncated,
        })
    }
    async fn send_text(
        &self,
        room: ConversationId,
        msg: &SendMessage,
        expect_latest_id: MessageId,
    ) -> Result<Message, ApiError> {
        // The MCP tool runs production's own gates as well (markdown, and
        // the gap check against the newest 30 with expect_latest_id).
        self.call(
            t::CHAT_SEND_TEXT,
            &ChatSendTextArgs {
                conversation_id: room,
                body: msg.body.clone(),
                mentions: msg.mentions.clone(),
                expect_latest_id: Some(expect_latest_id),
                force: false,
            },
        )
        .await
    }
    async fn send_failure(
        &self,
        room: ConversationId,
        msg: &SendMessage,
    ) -> Result<Message, ApiError> {
        // `force` skips the tool's gates: bad news gets out.
        self.call(
            t::CHAT_SEND_TEXT,
            &ChatSendTextArgs {
                conversation_id: room,
                body: gates::as_failure_report(&msg.body),
                mentions: msg.mentions.clone(),
                expect_latest_id: None,
                force: true,
            },
        )
        .await
    }
    async fn send_image(&self, room: ConversationId, img: &SendImage) -> Result<Message, ApiError> {
        self.call(
            t::CHAT_SEND_IMAGE,
            &ChatSendImageArgs {
                conversation_id: room,
                data_base64: img.data_base64.clone(),
                mime: img.mime.clone(),
                caption: img.caption.clone(),
            },
        )
        .await
    }
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
    // A read that stopped before the watermark may have unread messages
    // below everything it read: no mark may cover them.
    let mark = if !reached {
        None
    } else if more == 0 {
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
    /// message: ids are positive, so any message at all is newer). After
    /// the send the watermark moves to `mark` — `None` when something
    /// unread was skipped (`anyway`, or a read that gave up before the
    /// watermark): nothing unprinted is ever covered.
    Clear {
        expect_latest_id: MessageId,
        mark: Option<MessageId>,
    },
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
            mark: if u.shown.is_empty() { u.mark } else { None },
        };
    }
    GapVerdict::Unread(u)
}

/// Read a room back from its newest message until the watermark, the start
/// of the room, or [`SAY_READ_PAGES`] pages. Returns the messages newest
/// first and whether the watermark (or the start) was reached. A room with
/// no watermark was never shown: it is read back to its start like any
/// other (never "the newest page is all there is").
pub async fn read_back<T: Transport>(
    client: &T,
    room: ConversationId,
    watermark: Option<MessageId>,
) -> Result<(Vec<Message>, bool), ApiError> {
    let mut all: Vec<Message> = vec![];
    let mut before = None;
    for _ in 0..SAY_READ_PAGES {
        let p = retrying("reading the room", || {
            client.page(room, CHAT_READ_MAX, before)
        })
        .await?;
        let reached =
            !p.has_more || watermark.is_some_and(|w| p.messages.iter().any(|m| m.id <= w));
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

/// How the reader of a printout reads more: `hoop read` for a home, the
/// `chat_read` tool for a window on an MCP key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader<'a> {
    Home(&'a str),
    Mcp,
}

/// The command that reads a room (named in every printout that leaves
/// something unshown).
pub fn read_cmd(reader: Reader<'_>, room: ConversationId, before: Option<MessageId>) -> String {
    match (reader, before) {
        (Reader::Home(home), Some(b)) => {
            format!("hoop read --home {home} --room {room} --before {b}")
        }
        (Reader::Home(home), None) => format!("hoop read --home {home} --room {room}"),
        (Reader::Mcp, Some(b)) => format!("chat_read conversation_id={room} before={b}"),
        (Reader::Mcp, None) => format!("chat_read conversation_id={room}"),
    }
}

/// What is left unshown, and the command that shows it.
pub fn render_rest(out: &mut String, reader: Reader<'_>, room: ConversationId, u: &Unread) {
    if u.more > 0 {
        out.push_str(&format!(
            "({} more unread after these: run {} to read them)\n",
            u.more,
            read_cmd(reader, room, None)
        ));
    }
    if let Some(oldest) = u.skipped {
        out.push_str(&format!(
            "(older unread messages may exist before #{oldest}; read them with {})\n",
            read_cmd(reader, room, Some(oldest))
        ));
    }
}

/// The unread messages as a refusal prints them: oldest first, one block each.
pub fn render_unread(reader: Reader<'_>, room: ConversationId, u: &Unread, me: UserId) -> String {
    let mut out = format!(
        "{} unread message(s) in room {room} — read them, then send again:\n",
        u.shown.len()
    );
    for m in &u.shown {
        render_message(&mut out, m, me);
    }
    render_rest(&mut out, reader, room, u);
    out.push_str(&format!(
        "(more of the room: {} for unread messages, --before ID for older history)\n",
        read_cmd(reader, room, None)
    ));
    out
}

// ---------------------------------------------------------------- the send

/// What to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    Text(SendMessage),
    Image(SendImage),
}

/// One send through the gates.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub room: ConversationId,
    /// The account's id (its own messages are never unread).
    pub me: UserId,
    /// "I have just read them one by one": skip the local unread check.
    pub anyway: bool,
    /// A failure report (text only).
    pub failure: bool,
    pub payload: Payload,
    /// How a printout tells the reader to read more.
    pub reader: Reader<'a>,
}

/// What one send ended in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    Ok(Message),
    /// Not sent: `shown` is what to put before the reader (the unread
    /// messages, possibly nothing), `reason` says why.
    Gated {
        shown: String,
        reason: String,
    },
    /// The backend could not be reached: nothing was sent.
    Unreachable(String),
}

impl Sent {
    /// A reply that failed: nothing was posted and nothing was printed for
    /// the sender to read first (the backend unreachable, a refusal by a
    /// gate or the backend, the rate limit). A refusal that printed unread
    /// messages is not a failure: the sender reads them and sends again.
    pub fn is_failure(&self) -> bool {
        match self {
            Sent::Ok(_) => false,
            Sent::Gated { shown, .. } => shown.is_empty(),
            Sent::Unreachable(_) => true,
        }
    }
}

/// Why the send path itself failed (refusals are [`Sent::Gated`]).
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("{what}: {source}")]
    Api {
        what: &'static str,
        #[source]
        source: ApiError,
    },
    #[error("writing the watermark {path}: {source}")]
    Watermark {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn advance(path: &Path, room: ConversationId, to: MessageId) -> Result<(), SendError> {
    SaySeen::advance_file(path, room, to).map_err(|source| SendError::Watermark {
        path: path.to_path_buf(),
        source,
    })
}

/// The local gate on the text (markdown, cap, empty; a failure report only
/// cap and empty). `Err` is the refusal in words.
pub fn check_payload(req: &Request<'_>) -> Result<(), String> {
    let (text, kind) = match &req.payload {
        Payload::Text(m) if req.failure => (&m.body, SendKind::Failure),
        Payload::Text(m) => (&m.body, SendKind::Normal),
        Payload::Image(i) if i.caption.is_empty() => return Ok(()),
        Payload::Image(i) => (&i.caption, SendKind::Normal),
    };
    gates::check_body(text, kind).map_err(|e| format!("refused, nothing sent: {e}"))
}

/// Where a send that the gap gate let through stands: the newest id read
/// before it, and where the watermark may move after it.
#[derive(Debug, Clone, Copy)]
struct Cleared {
    expect_latest_id: MessageId,
    mark: Option<MessageId>,
}

/// Read the room back to the watermark and render what is unread; the
/// watermark moves only over what was rendered (before the caller prints
/// it: remember, then print).
async fn show_unread<T: Transport>(
    client: &T,
    req: &Request<'_>,
    seen_path: &Path,
    anyway: bool,
    what: &str,
) -> Result<Result<Cleared, Sent>, SendError> {
    let room = req.room;
    let seen = SaySeen::load(seen_path);
    let (page, reached) = match read_back(client, room, seen.get(room)).await {
        Ok(p) => p,
        Err(ApiError::Transport(e)) => return Ok(Err(Sent::Unreachable(e))),
        Err(source) => {
            return Err(SendError::Api {
                what: "reading the room",
                source,
            });
        }
    };
    match gap_verdict(&page, reached, seen.get(room), req.me, anyway) {
        GapVerdict::Unread(u) => {
            let shown = render_unread(req.reader, room, &u, req.me);
            if let Some(mark) = u.mark {
                advance(seen_path, room, mark)?;
            }
            Ok(Err(Sent::Gated {
                shown,
                reason: format!("not sent: {} {what}, printed above", u.shown.len()),
            }))
        }
        GapVerdict::Clear {
            expect_latest_id,
            mark,
        } => Ok(Ok(Cleared {
            expect_latest_id,
            mark,
        })),
    }
}

/// After a transport error on a send: did it land anyway (its answer lost)?
/// Looks for the account's own message with the same body (as sent: a
/// failure report carries its mark) and kind newer than `after`.
async fn landed<T: Transport>(client: &T, req: &Request<'_>, after: MessageId) -> Option<Message> {
    let (body, kind) = match &req.payload {
        Payload::Text(m) if req.failure => (gates::as_failure_report(&m.body), MessageKind::Text),
        Payload::Text(m) => (m.body.clone(), MessageKind::Text),
        Payload::Image(i) => (i.caption.clone(), MessageKind::Image),
    };
    let page = client.page(req.room, SAY_GAP_WINDOW, None).await.ok()?;
    page.messages
        .into_iter()
        .find(|m| m.id > after && m.sender_id == req.me && m.kind == kind && m.body == body)
}

/// Send through the gates: the local gate ([`check_payload`]), the unread
/// check against the watermark, then the one send.
pub async fn send<T: Transport>(
    client: &T,
    req: &Request<'_>,
    seen_path: &Path,
) -> Result<Sent, SendError> {
    if let Err(reason) = check_payload(req) {
        return Ok(Sent::Gated {
            shown: String::new(),
            reason,
        });
    }
    let room = req.room;
    // The newest id before the send: what a landed copy must be newer than;
    // and where the watermark may move after a normal send.
    let (baseline, mark) = if req.failure {
        let newest = client
            .page(room, 1, None)
            .await
            .ok()
            .and_then(|p| p.messages.first().map(|m| m.id));
        (newest, None)
    } else {
        match show_unread(client, req, seen_path, req.anyway, "unread message(s)").await? {
            Ok(c) => (Some(c.expect_latest_id), c.mark),
            Err(sent) => return Ok(sent),
        }
    };
    let attempt = || async {
        match &req.payload {
            Payload::Text(m) if req.failure => client.send_failure(room, m).await,
            Payload::Text(m) => {
                client
                    .send_text(room, m, baseline.unwrap_or(EMPTY_ROOM))
                    .await
            }
            Payload::Image(i) => client.send_image(room, i).await,
        }
    };
    // A try after the first looks for a copy that landed although its
    // answer was lost, so a send is never posted twice.
    let first = std::sync::atomic::AtomicBool::new(true);
    let result = retrying("sending", || async {
        if !first.swap(false, std::sync::atomic::Ordering::SeqCst)
            && let Some(after) = baseline
            && let Some(m) = landed(client, req, after).await
        {
            return Ok(m);
        }
        attempt().await
    })
    .await;
    match result {
        Ok(m) => {
            // Up to what was read, not to the sent message: without an
            // atomic gap check something may have landed in between. And
            // only when nothing unread was skipped (`mark`).
            if !req.failure
                && let Some(to) = mark
            {
                advance(seen_path, room, to)?;
            }
            Ok(Sent::Ok(m))
        }
        Err(ApiError::Gap { .. }) => {
            // Something arrived between the read and the send: show it the
            // same way (read back to the watermark), never past it.
            match show_unread(
                client,
                req,
                seen_path,
                false,
                "message(s) arrived meanwhile",
            )
            .await?
            {
                Err(sent) => Ok(sent),
                Ok(_) => Ok(Sent::Gated {
                    shown: String::new(),
                    reason: "not sent: a message arrived meanwhile; send again".into(),
                }),
            }
        }
        Err(ApiError::RateLimited { retry_after, .. }) => Ok(Sent::Gated {
            shown: String::new(),
            reason: format!(
                "rate limited, nothing sent: the backend takes at most {SEND_RATE_PER_MIN} \
                 messages a minute per account; retry in {} s",
                retry_after.map(|d| d.as_secs()).unwrap_or(60)
            ),
        }),
        Err(ApiError::Refused { code, message, .. }) => Ok(Sent::Gated {
            shown: String::new(),
            reason: format!("refused by the backend ({code}), nothing sent: {message}"),
        }),
        Err(ApiError::Transport(e)) => Ok(Sent::Unreachable(e)),
        Err(source) => Err(SendError::Api {
            what: "sending",
            source,
        }),
    }
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
        // (watermark, anyway, reached, want unread ids oldest first,
        //  want Clear(expect, mark) when nothing is shown, why)
        type Case = (
            Option<i64>,
            bool,
            bool,
            &'static [i64],
            Option<(i64, Option<i64>)>,
            &'static str,
        );
        let cases: &[Case] = &[
            (Some(9), false, true, &[], Some((9, Some(9))), "all read"),
            (Some(8), false, true, &[9], None, "one unread"),
            (
                Some(6),
                false,
                true,
                &[7, 9],
                None,
                "two unread, own skipped",
            ),
            (
                None,
                false,
                true,
                &[6, 7, 9],
                None,
                "no watermark: all unread",
            ),
            (
                Some(6),
                true,
                true,
                &[],
                Some((9, None)),
                "anyway: sent, but the mark never covers 7 and 9",
            ),
            (
                Some(8),
                true,
                true,
                &[],
                Some((9, None)),
                "anyway over one unread: the mark stays",
            ),
            (
                Some(9),
                true,
                true,
                &[],
                Some((9, Some(9))),
                "anyway with nothing unread: as a normal send",
            ),
            (Some(20), false, true, &[], Some((9, Some(9))), "mark ahead"),
            (
                Some(9),
                false,
                false,
                &[],
                Some((9, None)),
                "the read gave up: nothing below it may be covered",
            ),
        ];
        for (w, anyway, reached, want, clear, why) in cases {
            let v = gap_verdict(&page, *reached, *w, ME, *anyway);
            assert_eq!(ids(&v), *want, "{why}");
            if let Some((expect, mark)) = clear {
                assert_eq!(
                    v,
                    GapVerdict::Clear {
                        expect_latest_id: *expect,
                        mark: *mark,
                    },
                    "{why}"
                );
            }
        }
        // Only my own messages since the watermark: clear, mark to the newest.
        let own = vec![msg(9, ME), msg(8, ME), msg(7, 2)];
        assert_eq!(
            gap_verdict(&own, true, Some(7), ME, false),
            GapVerdict::Clear {
                expect_latest_id: 9,
                mark: Some(9),
            }
        );
        // An empty room: clear, and any message at all is newer than 0.
        assert_eq!(
            gap_verdict(&[], true, None, ME, false),
            GapVerdict::Clear {
                expect_latest_id: EMPTY_ROOM,
                mark: None,
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
        let text = render_unread(Reader::Home("bolt"), 5, &u, ME);
        assert!(
            text.contains("12 more unread after these: run hoop read --home bolt --room 5"),
            "{text}"
        );
        // All fit: the mark goes to the newest message read, own ones included.
        let mut mixed = newest_first[..3].to_vec();
        mixed.insert(0, msg(121, ME));
        let u = unread_part(&mixed, true, Some(117), ME, 8);
        assert_eq!((u.mark, u.more), (Some(121), 0));
        // Reading back gave up before the watermark: said, with the command,
        // and the mark does not move (101..115 were never printed).
        let u = unread_part(&newest_first[..5], false, Some(100), ME, 8);
        assert_eq!(u.skipped, Some(116));
        assert_eq!(u.mark, None, "no mark over the gap below the read");
        let text = render_unread(Reader::Home("bolt"), 5, &u, ME);
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
        let out = render_unread(Reader::Home("h"), 5, &u, ME);
        let p9 = out.find("#9 @ann: x").unwrap();
        let p7 = out.find("#7 @ann: line one\n    line two").unwrap();
        assert!(p7 < p9, "{out}");
        assert!(out.contains("…(3 more characters in the room)"), "{out}");
        let mut own = String::new();
        render_message(&mut own, &msg(3, ME), ME);
        assert_eq!(own, "#3 @me (you): m3\n");
    }
}
