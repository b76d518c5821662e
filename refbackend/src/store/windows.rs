//! Windows: registration, sync and revocation of an account's sessions.

use super::*;

pub(super) fn window_views(c: &Connection, user: UserId) -> ApiResult<Vec<WindowView>> {
    let mut st = c.prepare(
        "SELECT id, revoked, rooms_hint, fallback_hint, last_sync_at FROM windows \
         WHERE user_id = ?1",
    )?;
    let v = st
        .query_map([user], |r| {
            let hint: String = r.get(2)?;
            Ok(WindowView {
                window_id: r.get(0)?,
                revoked: r.get(1)?,
                rooms_hint: serde_json::from_str(&hint).unwrap_or_default(),
                fallback_hint: r.get(3)?,
                last_sync_at: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(v)
}

pub(super) fn window_not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        codes::WINDOW_NOT_FOUND,
        format!("no window {id:?} for this account; register again"),
    )
}
impl Store {
    // ------------------------------------------------------------ windows

    /// An upsert keyed by (account, installation, native session): a window
    /// registered again keeps its `window_id` and its revocation, gets the
    /// new `runtime_id`, and gains only hinted rooms it never had.
    pub fn register_window(
        &mut self,
        now: i64,
        user: UserId,
        req: &RegisterWindow,
    ) -> ApiResult<RegisteredWindow> {
        let tx = self.conn.transaction()?;
        let existing: Option<(String, String)> = tx
            .query_row(
                "SELECT id, rooms_hint FROM windows \
                 WHERE user_id = ?1 AND installation_id = ?2 AND native_session_id = ?3",
                params![user, req.installation_id, req.native_session_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let id = match existing {
            Some((id, hint)) => {
                let old: Vec<ConversationId> = serde_json::from_str(&hint).unwrap_or_default();
                let rooms = rules::merge_rooms_hint(&old, &req.rooms_hint);
                tx.execute(
                    "UPDATE windows SET runtime_id = ?1, rooms_hint = ?2 WHERE id = ?3",
                    params![
                        req.runtime_id,
                        serde_json::to_string(&rooms).unwrap_or_else(|_| "[]".into()),
                        id
                    ],
                )?;
                id
            }
            None => {
                let id = uuid::Uuid::new_v4().simple().to_string();
                tx.execute(
                    "INSERT INTO windows (id, user_id, installation_id, machine, client, \
                     native_session_id, runtime_id, rooms_hint, fallback_hint, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    params![
                        id,
                        user,
                        req.installation_id,
                        req.machine,
                        req.client,
                        req.native_session_id,
                        req.runtime_id,
                        serde_json::to_string(&req.rooms_hint).unwrap_or_else(|_| "[]".into()),
                        req.fallback_hint,
                        now
                    ],
                )?;
                id
            }
        };
        tx.commit()?;
        Ok(RegisteredWindow { window_id: id })
    }

    /// Record the sync time and answer what the window handles now.
    pub fn sync_window(&mut self, now: i64, user: UserId, id: &str) -> ApiResult<WindowSync> {
        let tx = self.conn.transaction()?;
        let n = tx.execute(
            "UPDATE windows SET last_sync_at = ?1 WHERE id = ?2 AND user_id = ?3",
            params![now, id, user],
        )?;
        if n == 0 {
            return Err(window_not_found(id));
        }
        let views = window_views(&tx, user)?;
        let me = views
            .iter()
            .find(|w| w.window_id == id)
            .cloned()
            .ok_or_else(|| window_not_found(id))?;
        let mut st = tx.prepare("SELECT conversation_id FROM members WHERE user_id = ?1")?;
        let rooms = st
            .query_map([user], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<ConversationId>>>()?;
        drop(st);
        let sync = rules::window_assignment(&me, &views, &rooms, now, presence_timeout());
        tx.commit()?;
        Ok(sync)
    }

    pub fn revoke_window(&mut self, now: i64, user: UserId, id: &str) -> ApiResult<WindowInfo> {
        let n = self.conn.execute(
            "UPDATE windows SET revoked = 1 WHERE id = ?1 AND user_id = ?2",
            params![id, user],
        )?;
        if n == 0 {
            return Err(window_not_found(id));
        }
        self.windows(now, user)?
            .into_iter()
            .find(|w| w.window_id == id)
            .ok_or_else(|| window_not_found(id))
    }

    /// The account's windows; `present` is computed now, never stored.
    pub fn windows(&self, now: i64, user: UserId) -> ApiResult<Vec<WindowInfo>> {
        let mut st = self.conn.prepare(
            "SELECT id, user_id, machine, client, revoked, last_sync_at FROM windows \
             WHERE user_id = ?1 ORDER BY created_at, id",
        )?;
        let v = st
            .query_map([user], |r| {
                let last: Option<i64> = r.get(5)?;
                Ok(WindowInfo {
                    window_id: r.get(0)?,
                    user_id: r.get(1)?,
                    machine: r.get(2)?,
                    client: r.get(3)?,
                    revoked: r.get(4)?,
                    last_sync_at: last,
                    present: rules::is_present(last, now, presence_timeout()),
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(v)
    }
}
