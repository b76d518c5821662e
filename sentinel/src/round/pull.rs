//! Pull, the round's first stage (SPEC §2 steps 1–2): the conversations
//! that rang, each paged back until its cursor ([`plan::pull_step`]), and —
//! only when a fresh message from someone else starts with a failure mark
//! — its member list, which says who is an agent. A room that cannot be
//! read is skipped and backed off on its own ([`RoomBook`]); a room still
//! in its backoff waits for its own time.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use hoop_api::error::Error as ApiError;
use hoop_api::rest::Client;
use hoop_api::types::{Conversation, ConversationId, MessageId, UnixSecs, UserId};
use hoop_core::limits::PULL_PAGE;

use super::{RoundCtx, Targets};
use crate::plan::{self, Page, PullStep, Pulled, RoomBook};
use crate::state::{Cursors, Rooms};

/// One room as pulled.
#[derive(Debug, Clone)]
pub(super) struct RoomIn {
    pub conv: Conversation,
    pub cursor: Option<MessageId>,
    /// The first-sight floor of a room without a cursor.
    pub floor: Option<UnixSecs>,
    pub pulled: Pulled,
    /// Members the backend marks `is_agent` (read only when needed).
    pub agents: BTreeSet<UserId>,
    /// Messages below this id were found by paging back (not on the
    /// newest page); `None`: one page held everything.
    pub paged_below: Option<MessageId>,
}

/// What the pull stage found.
#[derive(Debug, Default)]
pub(super) struct PulledRooms {
    pub rooms: Vec<RoomIn>,
    /// Rooms that wait (a failed pull, or still in their backoff), and until when.
    pub waiting: BTreeMap<ConversationId, Instant>,
}

/// A short, stable name for why a room could not be read (the key of "log
/// once per cause and hour"; the full error goes into the log line).
fn cause_of(e: &ApiError) -> String {
    match e {
        ApiError::Unparseable { status, .. } => format!("http {status}"),
        ApiError::Refused { status, code, .. } => format!("{status} {code}"),
        ApiError::NotFound { code, .. } => format!("404 {code}"),
        ApiError::Transport(_) => "transport".into(),
        ApiError::Decode { what, .. } => format!("decoding {what}"),
        ApiError::Unauthorized { .. } => "unauthorized".into(),
        ApiError::RateLimited { .. } => "rate limited".into(),
        other => other.code().unwrap_or("other").to_string(),
    }
}

/// Record that `room` could not be read; logged once per cause and hour.
pub(super) fn room_failed(ctx: &RoundCtx, book: &mut RoomBook, room: ConversationId, e: &ApiError) {
    let cause = cause_of(e);
    let steps = &ctx.cfg.timings.failure_backoff;
    if book.read_failed(room, &cause, steps, Instant::now()) {
        tracing::warn!(
            conversation = room,
            cause,
            error = %e,
            "room could not be read; it is retried after a backoff, the other rooms go on"
        );
    }
}

/// Pull the target rooms. Floors of rooms seen for the first time are
/// fixed in `memo` (the caller saves it).
pub(super) async fn pull_rooms(
    ctx: &RoundCtx,
    targets: &Targets,
    cursors: &Cursors,
    memo: &mut Rooms,
    book: &mut RoomBook,
    now: UnixSecs,
) -> Result<PulledRooms, ApiError> {
    let convs: Vec<Conversation> = ctx.client.conversations().await?;
    let now_floor = now.saturating_sub(ctx.cfg.new_room_backlog.as_secs() as i64);
    let mut out = PulledRooms::default();
    for conv in convs.into_iter().filter(|c| targets.wants(c.id)) {
        if !book.ready(conv.id, Instant::now()) {
            if let Some(at) = book.retry_at(conv.id) {
                out.waiting.insert(conv.id, at);
            }
            continue;
        }
        let cursor = cursors.get(conv.id);
        let floor = match cursor {
            Some(_) => None,
            None => Some(memo.floor_or_fix(conv.id, now_floor).0),
        };
        let (pulled, paged_below) =
            match pull_paged(&ctx.client, conv.id, cursor, floor.unwrap_or(0)).await {
                Ok(p) => p,
                Err(e) => {
                    room_failed(ctx, book, conv.id, &e);
                    if let Some(at) = book.retry_at(conv.id) {
                        out.waiting.insert(conv.id, at);
                    }
                    continue;
                }
            };
        let agents = if plan::classify::needs_members(ctx.me.id, &pulled.fresh) {
            match ctx.client.members(conv.id).await {
                Ok(ms) => ms
                    .into_iter()
                    .filter(|m| m.is_agent)
                    .map(|m| m.user_id)
                    .collect(),
                Err(e) => {
                    // Who is an agent decides whether a failure report is
                    // work: never guess it.
                    room_failed(ctx, book, conv.id, &e);
                    if let Some(at) = book.retry_at(conv.id) {
                        out.waiting.insert(conv.id, at);
                    }
                    continue;
                }
            }
        } else {
            BTreeSet::new()
        };
        if let Some(n) = book.read_ok(conv.id) {
            tracing::info!(conversation = conv.id, failures = n, "room readable again");
        }
        if pulled.missed {
            tracing::warn!(
                conversation = conv.id,
                cursor,
                "{}: paging stopped before the cursor",
                plan::MISSED_NOTE
            );
        }
        out.rooms.push(RoomIn {
            conv,
            cursor,
            floor,
            pulled,
            agents,
            paged_below,
        });
    }
    Ok(out)
}

/// Page one room back from its newest message until [`plan::pull_step`]
/// says it is done.
pub(super) async fn pull(
    client: &Client,
    conversation: ConversationId,
    cursor: Option<MessageId>,
    floor: UnixSecs,
) -> Result<Pulled, ApiError> {
    Ok(pull_paged(client, conversation, cursor, floor).await?.0)
}

/// [`pull`], and below which id messages were found by paging back.
async fn pull_paged(
    client: &Client,
    conversation: ConversationId,
    cursor: Option<MessageId>,
    floor: UnixSecs,
) -> Result<(Pulled, Option<MessageId>), ApiError> {
    let mut pages: Vec<Page> = vec![];
    let mut before = None;
    loop {
        let p = client.messages(conversation, PULL_PAGE, before).await?;
        pages.push(Page {
            messages: p.messages,
            has_more: p.has_more,
        });
        match plan::pull_step(cursor, floor, &pages) {
            PullStep::Fetch { before: b } => before = Some(b),
            PullStep::Done(pulled) => {
                let below = match pages.as_slice() {
                    [first, _, ..] => first.messages.last().map(|m| m.id),
                    _ => None,
                };
                return Ok((pulled, below));
            }
        }
    }
}
