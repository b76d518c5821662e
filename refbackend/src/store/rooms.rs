//! Rooms and their messages: conversations, members, pages, sends and the
//! gap check.

use super::*;

pub(super) const MESSAGE_SELECT: &str = "SELECT m.id, m.conversation_id, m.sender_id, u.username, m.body, \
     m.mentions, m.kind, m.created_at FROM messages m JOIN users u ON u.id = m.sender_id";

pub(super) fn message_row(r: &Row<'_>) -> rusqlite::Result<Message> {
    let mentions: String = r.get(5)?;
    let kind: String = r.get(6)?;
    Ok(Message {
        id: r.get(0)?,
        conversation_id: r.get(1)?,
        sender_id: r.get(2)?,
        sender_username: r.get(3)?,
        body: r.get(4)?,
        mentions: serde_json::from_str(&mentions).unwrap_or_default(),
        kind: MessageKind::from_word(&kind),
        created_at: r.get(7)?,
    })
}

pub(super) fn load_members(c: &Connection, conv: ConversationId) -> ApiResult<Vec<Member>> {
    let mut st = c.prepare(
        "SELECT u.id, u.username, u.nickname, u.is_agent FROM members m \
         JOIN users u ON u.id = m.user_id WHERE m.conversation_id = ?1 ORDER BY u.id",
    )?;
    let v = st
        .query_map([conv], |r| {
            Ok(Member {
                user_id: r.get(0)?,
                username: r.get(1)?,
                nickname: r.get(2)?,
                is_agent: r.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(v)
}

pub(super) fn load_conversation(c: &Connection, id: ConversationId) -> ApiResult<Conversation> {
    Ok(c.query_row(
        "SELECT c.id, c.title, c.is_workroom, \
         (SELECT MAX(id) FROM messages WHERE conversation_id = c.id), \
         (SELECT COUNT(*) FROM members m JOIN users u ON u.id = m.user_id \
            WHERE m.conversation_id = c.id AND u.is_agent = 1) \
         FROM conversations c WHERE c.id = ?1",
        [id],
        |r| {
            Ok(Conversation {
                id: r.get(0)?,
                title: r.get(1)?,
                is_workroom: r.get(2)?,
                latest_message_id: r.get(3)?,
                ai_member_count: r.get(4)?,
            })
        },
    )?)
}
impl Store {
    // ------------------------------------------------------------ conversations

    pub fn create_conversation(
        &mut self,
        now: i64,
        req: &CreateConversation,
    ) -> ApiResult<Conversation> {
        if req.title.trim().is_empty() {
            return Err(ApiError::bad_request("a conversation needs a title"));
        }
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO conversations (title, is_workroom, created_at) VALUES (?1, ?2, ?3)",
            params![req.title, req.is_workroom, now],
        )?;
        let id = tx.last_insert_rowid();
        for uid in &req.member_ids {
            if load_user(&tx, *uid)?.is_none() {
                return Err(ApiError::not_found(format!("no user {uid}")));
            }
            tx.execute(
                "INSERT OR IGNORE INTO members (conversation_id, user_id) VALUES (?1, ?2)",
                [id, *uid],
            )?;
        }
        let conv = load_conversation(&tx, id)?;
        tx.commit()?;
        Ok(conv)
    }

    pub fn add_member(&mut self, conv: ConversationId, user: UserId) -> ApiResult<Vec<Member>> {
        let tx = self.conn.transaction()?;
        if !conversation_exists(&tx, conv)? {
            return Err(ApiError::not_found(format!("no conversation {conv}")));
        }
        if load_user(&tx, user)?.is_none() {
            return Err(ApiError::not_found(format!("no user {user}")));
        }
        tx.execute(
            "INSERT OR IGNORE INTO members (conversation_id, user_id) VALUES (?1, ?2)",
            [conv, user],
        )?;
        let members = load_members(&tx, conv)?;
        tx.commit()?;
        Ok(members)
    }

    pub fn conversations_of(&self, user: UserId) -> ApiResult<Vec<Conversation>> {
        let mut st = self.conn.prepare(
            "SELECT conversation_id FROM members WHERE user_id = ?1 ORDER BY conversation_id",
        )?;
        let ids = st
            .query_map([user], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<ConversationId>>>()?;
        ids.into_iter()
            .map(|id| load_conversation(&self.conn, id))
            .collect()
    }

    pub fn members(&self, caller: UserId, conv: ConversationId) -> ApiResult<Vec<Member>> {
        require_member(&self.conn, conv, caller)?;
        load_members(&self.conn, conv)
    }

    /// Newest first; `before` pages back; `limit` is clamped into `1..=max`.
    pub fn messages(
        &self,
        caller: UserId,
        conv: ConversationId,
        limit: u32,
        before: Option<MessageId>,
    ) -> ApiResult<MessagePage> {
        require_member(&self.conn, conv, caller)?;
        self.room_page(conv, limit, before)
    }

    /// A page of `conv` without a membership check (the operator's read):
    /// newest first, `limit` at least 1, `before` pages back.
    pub fn room_page(
        &self,
        conv: ConversationId,
        limit: u32,
        before: Option<MessageId>,
    ) -> ApiResult<MessagePage> {
        if !conversation_exists(&self.conn, conv)? {
            return Err(ApiError::not_found(format!("no conversation {conv}")));
        }
        let limit = i64::from(limit.max(1));
        let mut st = self.conn.prepare(&format!(
            "{MESSAGE_SELECT} WHERE m.conversation_id = ?1 AND (?2 IS NULL OR m.id < ?2) \
             ORDER BY m.id DESC LIMIT ?3"
        ))?;
        let mut messages = st
            .query_map(params![conv, before, limit + 1], message_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let has_more = messages.len() as i64 > limit;
        messages.truncate(limit as usize);
        Ok(MessagePage { messages, has_more })
    }

    /// Send a message as production's REST routes do: membership, the
    /// empty and length checks, the message rate limit (text only), the
    /// mention filter, one insert. No markdown gate and no gap check here:
    /// those are the MCP tool's ([`Store::gap_check`]). `kind` is `image`
    /// exactly when `image` is given; the operator surface may store any
    /// other word (e.g. `voice`) to seed a room. Returns the message and
    /// the members to notify.
    pub fn send(
        &mut self,
        now: i64,
        sender: UserId,
        conv: ConversationId,
        req: &SendMessage,
        kind: &MessageKind,
        image: Option<(&str, &[u8])>,
    ) -> ApiResult<(Message, Vec<UserId>)> {
        require_member(&self.conn, conv, sender)?;
        if image.is_some() != (*kind == MessageKind::Image) {
            return Err(ApiError::bad_request(
                "image messages are sent to the images route",
            ));
        }
        // An image may come without a caption.
        if image.is_none() || !req.body.is_empty() {
            gates::check_length(&req.body).map_err(gate_error)?;
        }
        // Only text counts against the message rate limit (production).
        let counts = *kind == MessageKind::Text;
        if counts
            && let Err(retry) = self
                .send_log
                .entry(sender)
                .or_default()
                .check(now, limits::SEND_RATE_PER_MIN)
        {
            return Err(ApiError::rate_limited(
                format!(
                    "at most {} text messages per calendar minute; retry in {retry} s",
                    limits::SEND_RATE_PER_MIN
                ),
                retry,
            ));
        }
        let tx = self.conn.transaction()?;
        let members = member_ids(&tx, conv)?;
        let mentions: Vec<Mention> = rules::filter_mentions(&req.mentions, &members);
        tx.execute(
            "INSERT INTO messages (conversation_id, sender_id, body, mentions, kind, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                conv,
                sender,
                req.body,
                serde_json::to_string(&mentions).unwrap_or_else(|_| "[]".into()),
                kind.as_str(),
                now
            ],
        )?;
        let id = tx.last_insert_rowid();
        if let Some((mime, data)) = image {
            tx.execute(
                "INSERT INTO images (message_id, mime, data) VALUES (?1, ?2, ?3)",
                params![id, mime, data],
            )?;
        }
        let msg = tx.query_row(
            &format!("{MESSAGE_SELECT} WHERE m.id = ?1"),
            [id],
            message_row,
        )?;
        tx.commit()?;
        if counts {
            self.send_log.entry(sender).or_default().record(now);
        }
        Ok((msg, members))
    }

    /// Production's gap check of `chat_send_text` (seed 002 §0.3): read the
    /// newest [`limits::GAP_CHECK_READ`] messages as the sender (membership
    /// applies) and refuse with 409 `gap` when [`gates::gap_unread`] finds
    /// any. A check that cannot read refuses the send too.
    pub fn gap_check(
        &self,
        sender: UserId,
        conv: ConversationId,
        expect_latest_id: MessageId,
    ) -> ApiResult<()> {
        let page = self.messages(sender, conv, limits::GAP_CHECK_READ, None)?;
        let unread: Vec<Message> = gates::gap_unread(
            &page.messages,
            expect_latest_id,
            |m| m.id,
            |m| m.sender_id == sender,
        )
        .into_iter()
        .cloned()
        .collect();
        if unread.is_empty() {
            return Ok(());
        }
        let mut e = ApiError::conflict(
            codes::GAP,
            format!(
                "{} message(s) you have not read since {expect_latest_id}; read them first or send with force",
                unread.len()
            ),
        );
        e.body.error.latest_id = page.messages.first().map(|m| m.id);
        e.body.error.unread_count = Some(unread.len() as u32);
        e.body.error.unread = unread;
        Err(e)
    }

    /// Decode an image payload (base64) for [`Store::send`].
    pub fn decode_image(data_base64: &str, mime: &str) -> ApiResult<Vec<u8>> {
        if !mime.starts_with("image/") {
            return Err(ApiError::bad_request("mime must be an image/… type"));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data_base64.trim())
            .map_err(|_| ApiError::bad_request("data_base64 is not valid base64"))?;
        if bytes.is_empty() {
            return Err(ApiError::bad_request("the image is empty"));
        }
        Ok(bytes)
    }
}
