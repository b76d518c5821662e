//! Presence and usage: heartbeats, who is online, the account's own usage.

use super::*;

impl Store {
    // ------------------------------------------------------------ presence, usage

    /// Agents only; a reported conversation must be one the caller is a
    /// member of (404 unknown, 403 `not_member`). A reported `state` is
    /// recorded; a beat without one keeps the last.
    pub fn heartbeat(
        &mut self,
        now: i64,
        user: UserId,
        conversation: Option<ConversationId>,
        state: Option<AgentState>,
    ) -> ApiResult<()> {
        require_agent(&self.conn, user, "send heartbeats")?;
        if let Some(conv) = conversation {
            require_member(&self.conn, conv, user)?;
        }
        self.conn.execute(
            "UPDATE users SET last_beat_at = ?1, beat_state = COALESCE(?3, beat_state) \
             WHERE id = ?2",
            rusqlite::params![now, user, state.map(AgentState::as_str)],
        )?;
        Ok(())
    }

    /// Every agent's presence, computed now from its last heartbeat.
    pub fn presence(&self, now: i64) -> ApiResult<Vec<Presence>> {
        let mut st = self.conn.prepare(
            "SELECT id, last_beat_at, beat_state FROM users WHERE is_agent = 1 ORDER BY id",
        )?;
        let v = st
            .query_map([], |r| {
                let last: Option<i64> = r.get(1)?;
                let state: Option<String> = r.get(2)?;
                Ok(Presence {
                    user_id: r.get(0)?,
                    last_beat_at: last,
                    present: rules::is_present(last, now, presence_timeout()),
                    state: state.as_deref().and_then(AgentState::from_word),
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(v)
    }

    /// The per-agent usage upsert: each reported number (0 or more)
    /// replaces the stored one, a null or negative one keeps it. Agents only.
    /// Answers the account's totals after the upsert; `card_id` is ignored
    /// (a card's cost comes from its snapshots).
    pub fn usage(&mut self, now: i64, user: UserId, req: &UsageReport) -> ApiResult<UsageReport> {
        let tx = self.conn.transaction()?;
        require_agent(&tx, user, "report usage")?;
        let stored: Option<(Option<i64>, Option<i64>, Option<i64>)> = tx
            .query_row(
                "SELECT tokens_in, tokens_cached_in, tokens_out FROM agent_usage WHERE user_id = ?1",
                [user],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let (old_in, old_cached, old_out) = stored.unwrap_or_default();
        let totals = UsageReport {
            card_id: None,
            tokens_in: rules::upsert_usage(old_in, req.tokens_in),
            tokens_cached_in: rules::upsert_usage(old_cached, req.tokens_cached_in),
            tokens_out: rules::upsert_usage(old_out, req.tokens_out),
        };
        tx.execute(
            "INSERT INTO agent_usage (user_id, tokens_in, tokens_cached_in, tokens_out, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (user_id) DO UPDATE SET \
             tokens_in = excluded.tokens_in, tokens_cached_in = excluded.tokens_cached_in, \
             tokens_out = excluded.tokens_out, updated_at = excluded.updated_at",
            params![
                user,
                totals.tokens_in,
                totals.tokens_cached_in,
                totals.tokens_out,
                now
            ],
        )?;
        tx.commit()?;
        Ok(totals)
    }
}
