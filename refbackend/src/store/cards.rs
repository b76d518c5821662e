//! Cards: assignment, visibility, claim, progress, lease and finish, with
//! the usage snapshots a card takes at its start and its end.

use super::*;

pub(super) fn status_str(s: CardStatus) -> &'static str {
    match s {
        CardStatus::Queued => "queued",
        CardStatus::Working => "working",
        CardStatus::Done => "done",
        CardStatus::Failed => "failed",
        CardStatus::Cancelled => "cancelled",
    }
}

pub(super) fn parse_status(s: &str) -> CardStatus {
    match s {
        "working" => CardStatus::Working,
        "done" => CardStatus::Done,
        "failed" => CardStatus::Failed,
        "cancelled" => CardStatus::Cancelled,
        _ => CardStatus::Queued,
    }
}

/// A card with its usage snapshots (a card from a database written before
/// cards lived under workrooms has no room: it reads as room 0, under which
/// its owner can still finish it): the one taken at its start (claim) and,
/// for a finished card, the one taken at its end; a working card's end is its
/// assignee's totals now. The cost is computed by [`rules::card_cost`].
pub(super) const CARD_SELECT: &str = "SELECT c.id, c.title, c.status, c.assignee_id, c.parent_id, \
     COALESCE(c.conversation_id, 0), c.error, c.lease_expires_at, \
     c.start_tokens_in, c.start_tokens_cached_in, c.start_tokens_out, \
     c.created_at, c.updated_at, c.creator_id, \
     COALESCE(c.end_tokens_in, CASE WHEN c.status = 'working' THEN u.tokens_in END), \
     COALESCE(c.end_tokens_cached_in, CASE WHEN c.status = 'working' THEN u.tokens_cached_in END), \
     COALESCE(c.end_tokens_out, CASE WHEN c.status = 'working' THEN u.tokens_out END), \
     c.message_id, c.result, c.result_message_id \
     FROM cards c LEFT JOIN agent_usage u ON u.user_id = c.assignee_id";

/// A card plus who created it (for permission checks).
pub(super) struct CardRow {
    card: Card,
    creator_id: Option<UserId>,
}

pub(super) fn card_row(r: &Row<'_>) -> rusqlite::Result<CardRow> {
    let status: String = r.get(2)?;
    let cost = |start: usize, end: usize| -> rusqlite::Result<Option<i64>> {
        Ok(rules::card_cost(r.get(start)?, r.get(end)?))
    };
    Ok(CardRow {
        card: Card {
            id: r.get(0)?,
            title: r.get(1)?,
            status: parse_status(&status),
            assignee_id: r.get(3)?,
            parent_id: r.get(4)?,
            conversation_id: r.get(5)?,
            message_id: r.get(17)?,
            error: r.get(6)?,
            result: r.get(18)?,
            result_message_id: r.get(19)?,
            lease_expires_at: r.get(7)?,
            tokens_in: cost(8, 14)?,
            tokens_cached_in: cost(9, 15)?,
            tokens_out: cost(10, 16)?,
            created_at: r.get(11)?,
            updated_at: r.get(12)?,
        },
        creator_id: r.get(13)?,
    })
}

/// Filters for listing cards.
#[derive(Debug, Clone, Default)]
pub struct CardFilter {
    pub assignee_id: Option<UserId>,
    pub status: Option<CardStatus>,
    pub parent_id: Option<CardId>,
    pub conversation_id: Option<ConversationId>,
    pub id: Option<CardId>,
}

pub(super) fn load_card(c: &Connection, id: CardId) -> ApiResult<CardRow> {
    c.query_row(&format!("{CARD_SELECT} WHERE c.id = ?1"), [id], card_row)
        .optional()?
        .ok_or_else(|| ApiError::not_found(format!("no card {id}")))
}

/// `id`, when given, must be a message of room `cid` (production checks the
/// assign's `message_id` so); one of another room or none at all get the
/// same answer.
pub(super) fn require_room_message(
    c: &Connection,
    cid: ConversationId,
    id: Option<MessageId>,
    field: &str,
) -> ApiResult<()> {
    let Some(id) = id else { return Ok(()) };
    let found = c
        .query_row(
            "SELECT 1 FROM messages WHERE id = ?1 AND conversation_id = ?2",
            [id, cid],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    if found {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "{field} {id} is not a message of room {cid}"
        )))
    }
}

/// Only the assignee or the creator acts on a card (`action` says how, for
/// the refusal's text).
pub(super) fn require_actor(row: &CardRow, caller: UserId, action: &str) -> ApiResult<()> {
    if row.card.assignee_id == Some(caller) || row.creator_id == Some(caller) {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "only the card's assignee or creator may {action}"
        )))
    }
}

/// A card's assignee must be an agent member of the card's room. Every failure gets the same answer, so a
/// refusal does not tell who is in a room (production merges them too).
pub(super) fn require_assignable(
    c: &Connection,
    assignee: UserId,
    conv: ConversationId,
) -> ApiResult<()> {
    let agent = load_user(c, assignee)?.is_some_and(|u| u.is_agent);
    let in_room = is_member(c, conv, assignee)?;
    if agent && in_room {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "a card's assignee must be an agent member of the card's room",
        ))
    }
}

/// The cards `:viewer` may see: those assigned to them, those they created,
/// and those of the rooms they are a member of. The one visibility rule of
/// every card read.
pub(super) const CARD_VISIBLE: &str = "(c.assignee_id = :viewer OR c.creator_id = :viewer \
     OR c.conversation_id IN (SELECT conversation_id FROM members WHERE user_id = :viewer))";

/// A card `viewer` may see; any other is "no card" (404), so its existence
/// is not told either.
pub(super) fn load_visible_card(c: &Connection, id: CardId, viewer: UserId) -> ApiResult<CardRow> {
    c.query_row(
        &format!("{CARD_SELECT} WHERE c.id = :id AND {CARD_VISIBLE}"),
        rusqlite::named_params! {":id": id, ":viewer": viewer},
        card_row,
    )
    .optional()?
    .ok_or_else(|| ApiError::not_found(format!("no card {id}")))
}

/// A card of room `cid` that `viewer` may see. A card they may not see, one
/// of another room and one that does not exist get one answer, so the path
/// tells nothing about cards elsewhere (contract §6, seed 002 L75).
pub(super) fn load_visible_card_in(
    c: &Connection,
    cid: ConversationId,
    id: CardId,
    viewer: UserId,
) -> ApiResult<CardRow> {
    match load_visible_card(c, id, viewer) {
        Ok(row) if row.card.conversation_id == cid => Ok(row),
        Ok(_)
        | Err(ApiError {
            status: StatusCode::NOT_FOUND,
            ..
        }) => Err(no_card_in(cid, id)),
        Err(e) => Err(e),
    }
}

/// The one answer for a card that is not there for the caller.
pub(super) fn no_card_in(cid: ConversationId, id: CardId) -> ApiError {
    ApiError::not_found(format!("no card {id} in room {cid}"))
}

/// The usage snapshot a card takes at its start (claim): its assignee's
/// totals then (`?2` is the assignee).
pub(super) const START_SNAPSHOT: &str = "start_tokens_in = (SELECT tokens_in FROM agent_usage WHERE user_id = ?2), \
     start_tokens_cached_in = (SELECT tokens_cached_in FROM agent_usage WHERE user_id = ?2), \
     start_tokens_out = (SELECT tokens_out FROM agent_usage WHERE user_id = ?2)";

/// The snapshot a card takes at its end: its assignee's totals then, for a
/// card that was working (a card cancelled while queued never started).
pub(super) const END_SNAPSHOT: &str = "end_tokens_in = CASE WHEN status = 'working' THEN \
       (SELECT u.tokens_in FROM agent_usage u WHERE u.user_id = cards.assignee_id) END, \
     end_tokens_cached_in = CASE WHEN status = 'working' THEN \
       (SELECT u.tokens_cached_in FROM agent_usage u WHERE u.user_id = cards.assignee_id) END, \
     end_tokens_out = CASE WHEN status = 'working' THEN \
       (SELECT u.tokens_out FROM agent_usage u WHERE u.user_id = cards.assignee_id) END";

impl Store {
    // ------------------------------------------------------------ cards

    /// Assign a card in room `req.conversation_id` (one transaction).
    /// `creator` is the calling user; `None` is the operator.
    pub fn create_card(
        &mut self,
        now: i64,
        creator: Option<UserId>,
        req: &AdminCreateCard,
    ) -> ApiResult<Card> {
        let (conv, c) = (req.conversation_id, &req.task);
        if c.title.trim().is_empty() {
            return Err(ApiError::bad_request("a card needs a title"));
        }
        let tx = self.conn.transaction()?;
        // An unknown assignee is refused by `require_assignable` with the
        // same answer as a non-member: no answer tells who exists.
        if !conversation_exists(&tx, conv)? {
            return Err(ApiError::not_found(format!("no conversation {conv}")));
        }
        // A user assigns cards only in rooms they are in; the operator
        // (`creator` None) anywhere. Nobody assigns to a human or outside
        // the card's room.
        if let Some(caller) = creator {
            require_member(&tx, conv, caller)?;
        }
        if let Some(a) = c.assignee_id {
            require_assignable(&tx, a, conv)?;
        }
        require_room_message(&tx, conv, c.message_id, "message_id")?;
        if let Some(parent) = c.parent_id {
            // A parent the caller may not see reads as missing.
            let p = match creator {
                Some(caller) => {
                    let p = load_visible_card(&tx, parent, caller)?;
                    require_actor(&p, caller, "add sub-cards to it")?;
                    p
                }
                None => load_card(&tx, parent)?,
            };
            if p.card.conversation_id != conv {
                return Err(ApiError::bad_request(format!(
                    "card {parent} lives in room {}; its sub-cards live there too",
                    p.card.conversation_id
                )));
            }
            if !p.card.status.is_live() {
                return Err(ApiError::conflict(
                    codes::INVALID_TRANSITION,
                    format!("card {parent} is finished; it takes no sub-cards"),
                ));
            }
            let live: i64 = tx.query_row(
                "SELECT COUNT(*) FROM cards WHERE parent_id = ?1 \
                 AND status IN ('queued', 'working')",
                [parent],
                |r| r.get(0),
            )?;
            if live >= limits::MAX_LIVE_SUBCARDS as i64 {
                return Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    codes::TOO_MANY_SUBCARDS,
                    format!(
                        "card {parent} already has {live} live sub-cards (at most {})",
                        limits::MAX_LIVE_SUBCARDS
                    ),
                ));
            }
        }
        let creator = creator.or(req.creator_id);
        tx.execute(
            "INSERT INTO cards (title, status, assignee_id, creator_id, parent_id, \
             conversation_id, message_id, created_at, updated_at) \
             VALUES (?1, 'queued', ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
            params![
                c.title,
                c.assignee_id,
                creator,
                c.parent_id,
                conv,
                c.message_id,
                now
            ],
        )?;
        let id = tx.last_insert_rowid();
        let card = load_card(&tx, id)?.card;
        tx.commit()?;
        Ok(card)
    }

    /// The cards `viewer` may see that match `f`, newest first.
    pub fn list_cards(&self, viewer: UserId, f: &CardFilter) -> ApiResult<Vec<Card>> {
        self.query_cards(Some(viewer), f)
    }

    /// Every card that matches `f`, whoever may see it (the operator
    /// surface), newest first.
    pub fn admin_cards(&self, f: &CardFilter) -> ApiResult<Vec<Card>> {
        self.query_cards(None, f)
    }

    fn query_cards(&self, viewer: Option<UserId>, f: &CardFilter) -> ApiResult<Vec<Card>> {
        let mut st = self.conn.prepare(&format!(
            "{CARD_SELECT} WHERE (:viewer IS NULL OR {CARD_VISIBLE}) \
             AND (:assignee IS NULL OR c.assignee_id = :assignee) \
             AND (:status IS NULL OR c.status = :status) \
             AND (:parent IS NULL OR c.parent_id = :parent) \
             AND (:conv IS NULL OR c.conversation_id = :conv) \
             AND (:id IS NULL OR c.id = :id) ORDER BY c.id DESC"
        ))?;
        let v = st
            .query_map(
                rusqlite::named_params! {
                    ":viewer": viewer,
                    ":assignee": f.assignee_id,
                    ":status": f.status.map(status_str),
                    ":parent": f.parent_id,
                    ":conv": f.conversation_id,
                    ":id": f.id,
                },
                |r| card_row(r).map(|c| c.card),
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(v)
    }

    /// One card, if `viewer` may see it (else 404).
    pub fn card(&self, viewer: UserId, id: CardId) -> ApiResult<Card> {
        Ok(load_visible_card(&self.conn, id, viewer)?.card)
    }

    /// One card of room `cid`, if `viewer` may see it (else 404).
    pub fn card_in(&self, viewer: UserId, cid: ConversationId, id: CardId) -> ApiResult<Card> {
        Ok(load_visible_card_in(&self.conn, cid, id, viewer)?.card)
    }

    /// queued → working. Never opens a lease. One top-level working card
    /// per agent; an unassigned card is assigned to the claimer.
    pub fn claim(
        &mut self,
        now: i64,
        caller: UserId,
        cid: ConversationId,
        id: CardId,
    ) -> ApiResult<Card> {
        let tx = self.conn.transaction()?;
        let row = load_visible_card_in(&tx, cid, id, caller)?;
        require_agent(&tx, caller, "work cards")?;
        if row.card.assignee_id.is_some() {
            require_actor(&row, caller, "change it")?;
        } else {
            // The card becomes the claimer's: one who may see it (above)
            // and may be its assignee.
            require_assignable(&tx, caller, row.card.conversation_id)?;
        }
        let to = rules::claim(row.card.status).map_err(|r| refusal(r, "claim"))?;
        let assignee = row.card.assignee_id.unwrap_or(caller);
        if row.card.parent_id.is_none() {
            let working: Option<CardId> = tx
                .query_row(
                    "SELECT id FROM cards WHERE assignee_id = ?1 AND parent_id IS NULL \
                     AND status = 'working' LIMIT 1",
                    [assignee],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(other) = working {
                return Err(ApiError::conflict(
                    codes::AGENT_BUSY,
                    format!("card {other} is already working; finish it first"),
                ));
            }
        }
        tx.execute(
            &format!(
                "UPDATE cards SET status = ?1, assignee_id = ?2, updated_at = ?3, \
                 {START_SNAPSHOT} WHERE id = ?4"
            ),
            params![status_str(to), assignee, now, id],
        )?;
        let card = load_card(&tx, id)?.card;
        tx.commit()?;
        Ok(card)
    }

    /// `…/progress`: `{"claim":true}` claims; otherwise a progress line,
    /// which extends an existing lease (never opens one) and, from an
    /// agent, counts as a heartbeat.
    pub fn progress(
        &mut self,
        now: i64,
        caller: UserId,
        cid: ConversationId,
        id: CardId,
        req: &TaskProgress,
    ) -> ApiResult<Card> {
        if req.claim {
            return self.claim(now, caller, cid, id);
        }
        let Some(line) = req.line.as_deref().filter(|l| !l.trim().is_empty()) else {
            return Err(ApiError::bad_request(
                "progress takes {\"claim\":true} or a non-empty line",
            ));
        };
        let tx = self.conn.transaction()?;
        let row = load_visible_card_in(&tx, cid, id, caller)?;
        require_actor(&row, caller, "change it")?;
        if row.card.status != CardStatus::Working {
            return Err(ApiError::conflict(
                codes::NOT_WORKING,
                "progress is reported on working cards only",
            ));
        }
        let lease = rules::progress_lease(
            row.card.lease_expires_at,
            now,
            limits::LEASE_DURATION.as_secs() as i64,
        );
        tx.execute(
            "INSERT INTO card_notes (card_id, author_id, note, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![id, caller, line, now],
        )?;
        tx.execute(
            "UPDATE cards SET lease_expires_at = ?1, updated_at = ?2 WHERE id = ?3",
            params![lease, now, id],
        )?;
        tx.execute(
            "UPDATE users SET last_beat_at = ?1 WHERE id = ?2 AND is_agent = 1",
            [now, caller],
        )?;
        let card = load_card(&tx, id)?.card;
        tx.commit()?;
        Ok(card)
    }

    /// Renew: the only opener of a lease. A card that is not working → 404.
    pub fn renew(
        &mut self,
        now: i64,
        caller: UserId,
        cid: ConversationId,
        id: CardId,
    ) -> ApiResult<LeaseResponse> {
        let tx = self.conn.transaction()?;
        let row = load_visible_card_in(&tx, cid, id, caller)?;
        require_actor(&row, caller, "change it")?;
        let until = rules::renew(
            row.card.status,
            now,
            limits::LEASE_DURATION.as_secs() as i64,
        )
        .map_err(|r| refusal(r, "renew"))?;
        tx.execute(
            "UPDATE cards SET lease_expires_at = ?1, updated_at = ?2 WHERE id = ?3",
            params![until, now, id],
        )?;
        tx.commit()?;
        Ok(LeaseResponse {
            lease_expires_at: until,
            renew_after_sec: limits::RENEW_AFTER_SECS,
        })
    }

    /// Finish a card and, in the same transaction, cancel every live
    /// descendant. A card already finished answers `updated: false` and
    /// changes nothing.
    pub fn finish(
        &mut self,
        now: i64,
        caller: UserId,
        cid: ConversationId,
        id: CardId,
        req: &FinishTask,
    ) -> ApiResult<FinishAnswer> {
        let tx = self.conn.transaction()?;
        let row = load_visible_card_in(&tx, cid, id, caller)?;
        require_actor(&row, caller, "change it")?;
        let to = match rules::finish(row.card.status, req.status, req.error.as_deref())
            .map_err(|r| refusal(r, "this finish"))?
        {
            rules::Finish::Move(to) => to,
            rules::Finish::Unchanged => {
                return Ok(FinishAnswer {
                    updated: false,
                    task: None,
                });
            }
        };
        require_room_message(&tx, cid, req.result_message_id, "result_message_id")?;
        let error = if to == CardStatus::Failed {
            req.error.clone()
        } else {
            None
        };
        tx.execute(
            &format!(
                "UPDATE cards SET {END_SNAPSHOT}, status = ?1, error = ?2, result = ?3, \
                 result_message_id = ?4, lease_expires_at = NULL, updated_at = ?5 WHERE id = ?6"
            ),
            params![
                status_str(to),
                error,
                req.result,
                req.result_message_id,
                now,
                id
            ],
        )?;
        tx.execute(
            &format!(
                "WITH RECURSIVE d(id) AS ( \
                   SELECT id FROM cards WHERE parent_id = ?1 \
                   UNION SELECT c.id FROM cards c JOIN d ON c.parent_id = d.id) \
                 UPDATE cards SET {END_SNAPSHOT}, status = 'cancelled', \
                 lease_expires_at = NULL, updated_at = ?2 \
                 WHERE id IN (SELECT id FROM d) AND status IN ('queued', 'working')"
            ),
            params![id, now],
        )?;
        let card = load_card(&tx, id)?.card;
        tx.commit()?;
        Ok(FinishAnswer {
            updated: true,
            task: Some(card),
        })
    }
}
