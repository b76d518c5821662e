//! Accounts and their keys: users, logins' lookups, MCP keys, provisioning
//! keys and their redemption, reinforcement applications and keys.

use super::*;
use subtle::ConstantTimeEq;

/// SHA-256 hex of a key: the only form in which keys are stored.
pub fn key_hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Mint one MCP key for `user` inside the caller's transaction: stored only
/// as its SHA-256, living `ttl_secs` (default and clamp: `rules::key_expiry`).
pub(super) fn insert_mcp_key(
    c: &Connection,
    now: i64,
    user: UserId,
    ttl_secs: Option<i64>,
) -> ApiResult<(String, i64)> {
    let key = new_key(hoop_api::headers::MCP_KEY_PREFIX);
    let expires = rules::key_expiry(
        now,
        ttl_secs,
        constants::MCP_KEY_DEFAULT_TTL_SECS,
        constants::MCP_KEY_MAX_TTL_SECS,
    );
    c.execute(
        "INSERT INTO mcp_keys (key_sha256, user_id, created_at, expires_at) \
         VALUES (?1, ?2, ?3, ?4)",
        params![key_hash(&key), user, now, expires],
    )?;
    Ok((key, expires))
}

/// Soft-revoke every live MCP key of `user` inside the caller's
/// transaction; returns how many.
pub(super) fn revoke_live_keys(c: &Connection, now: i64, user: UserId) -> ApiResult<u32> {
    let n = c.execute(
        "UPDATE mcp_keys SET revoked_at = ?1 WHERE user_id = ?2 AND revoked_at IS NULL",
        params![now, user],
    )?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

/// Create an agent account inside the caller's transaction (redeem,
/// approval): `username` is the name asked for, the email is derived from it
/// under [`constants::AGENT_EMAIL_DOMAIN`]. A taken name → 409 `conflict`.
pub(super) fn insert_agent(
    c: &Connection,
    now: i64,
    username: &str,
    nickname: Option<&str>,
    fixed_otp: bool,
    owner: Option<UserId>,
) -> ApiResult<User> {
    let email = format!("{username}@{}", constants::AGENT_EMAIL_DOMAIN);
    let id = insert_unique(
        c,
        "INSERT INTO users (email, username, nickname, is_agent, fixed_otp, active, owner_id, \
         created_at) VALUES (?1, ?2, ?3, 1, ?4, 1, ?5, ?6)",
        params![email, username, nickname, fixed_otp, owner, now],
        || format!("an account named {username:?} exists; choose another name"),
    )?;
    load_user(c, id)?.ok_or_else(ApiError::internal)
}

/// The caller must be the approved owner of the reinforcement account
/// `agent` (production: the applicant of its approved application).
pub(super) fn require_owner(c: &Connection, caller: UserId, agent: UserId) -> ApiResult<()> {
    let owner: Option<Option<UserId>> = c
        .query_row(
            "SELECT owner_id FROM users WHERE id = ?1 AND is_agent = 1",
            [agent],
            |r| r.get(0),
        )
        .optional()?;
    match owner {
        None => Err(ApiError::not_found(format!("no agent account {agent}"))),
        Some(Some(o)) if o == caller => Ok(()),
        Some(_) => Err(ApiError::forbidden(
            "only the approved owner of this reinforcement account manages its key",
        )),
    }
}

pub(super) fn application_row(r: &Row<'_>) -> rusqlite::Result<ReinforceApplication> {
    Ok(ReinforceApplication {
        id: r.get(0)?,
        applicant_id: r.get(1)?,
        name: r.get(2)?,
        nickname: r.get(3)?,
        status: r.get(4)?,
        agent_id: r.get(5)?,
    })
}

pub(super) const APPLICATION_COLS: &str = "id, applicant_id, name, nickname, status, agent_id";
impl Store {
    // ------------------------------------------------------------ users

    pub fn create_user(&mut self, now: i64, req: &CreateUser) -> ApiResult<User> {
        let email = req.email.trim();
        let username = req.username.trim();
        if email.is_empty() || username.is_empty() {
            return Err(ApiError::bad_request("email and username are required"));
        }
        let tx = self.conn.transaction()?;
        let id = insert_unique(
            &tx,
            "INSERT INTO users (email, username, nickname, is_agent, fixed_otp, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            params![email, username, req.nickname, req.is_agent, now],
            || "a user with this email or username exists".into(),
        )?;
        let user = load_user(&tx, id)?.ok_or_else(ApiError::internal)?;
        tx.commit()?;
        Ok(user)
    }

    pub fn list_users(&self) -> ApiResult<Vec<User>> {
        let mut st = self
            .conn
            .prepare(&format!("SELECT {USER_COLS} FROM users ORDER BY id"))?;
        let v = st
            .query_map([], user_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(v)
    }

    pub fn user(&self, id: UserId) -> ApiResult<Option<User>> {
        load_user(&self.conn, id)
    }

    /// The account `email` names when `code` logs it in: the fixed code for
    /// an account that takes it (`rules::fixed_code_login`), else the
    /// one-time code the operator issued it (consumed here, counted when
    /// wrong); `None` otherwise, whatever the reason.
    pub fn login_user(&mut self, now: i64, email: &str, code: &str) -> ApiResult<Option<User>> {
        let tx = self.conn.transaction()?;
        let row = tx
            .query_row(
                &format!("SELECT {USER_COLS}, fixed_otp, active FROM users WHERE email = ?1"),
                [email.trim()],
                |r| Ok((user_row(r)?, r.get::<_, bool>(5)?, r.get::<_, bool>(6)?)),
            )
            .optional()?;
        let Some((user, fixed_otp, active)) = row.filter(|(_, _, active)| *active) else {
            return Ok(None);
        };
        let code = code.trim();
        if rules::fixed_code_login(user.is_agent, fixed_otp, active)
            && bool::from(code.as_bytes().ct_eq(limits::FIXED_LOGIN_CODE.as_bytes()))
        {
            return Ok(Some(user));
        }
        // A one-time code: used once, void when expired or after too many
        // wrong tries.
        let issued: Option<(String, i64, i64)> = tx
            .query_row(
                "SELECT code_sha256, expires_at, tries FROM login_codes WHERE user_id = ?1",
                [user.id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let Some((hash, expires_at, tries)) = issued else {
            return Ok(None);
        };
        let right = bool::from(key_hash(code).as_bytes().ct_eq(hash.as_bytes()));
        let ok = right && now < expires_at;
        if ok || now >= expires_at || tries + 1 >= constants::LOGIN_CODE_MAX_TRIES {
            tx.execute("DELETE FROM login_codes WHERE user_id = ?1", [user.id])?;
        } else {
            tx.execute(
                "UPDATE login_codes SET tries = tries + 1 WHERE user_id = ?1",
                [user.id],
            )?;
        }
        tx.commit()?;
        Ok(ok.then_some(user))
    }

    /// Issue `user`'s one-time login code (replacing an earlier one): only
    /// for an active person; agents log in with their fixed code or an MCP
    /// key. Returns the code (stored only as its SHA-256) and its expiry.
    pub fn issue_login_code(&mut self, now: i64, user: UserId) -> ApiResult<(String, i64)> {
        let u = load_user(&self.conn, user)?
            .ok_or_else(|| ApiError::not_found(format!("no user {user}")))?;
        if u.is_agent {
            return Err(ApiError::bad_request(format!(
                "{} is an agent account: it logs in with its fixed code or an MCP key \
                 (hoop backend key mint --user {}); one-time codes are for people",
                u.username, u.username
            )));
        }
        if !is_active(&self.conn, user)? {
            return Err(ApiError::bad_request(format!(
                "{} is disabled; enable it first (hoop backend user enable --user {})",
                u.username, u.username
            )));
        }
        let code = format!(
            "{:0width$}",
            rand::random::<u64>() % 10u64.pow(constants::LOGIN_CODE_DIGITS),
            width = constants::LOGIN_CODE_DIGITS as usize
        );
        let expires_at = now.saturating_add(constants::LOGIN_CODE_TTL_SECS);
        self.conn.execute(
            "INSERT INTO login_codes (user_id, code_sha256, expires_at, tries) \
             VALUES (?1, ?2, ?3, 0) ON CONFLICT(user_id) DO UPDATE SET \
             code_sha256 = excluded.code_sha256, expires_at = excluded.expires_at, tries = 0",
            params![user, key_hash(&code), expires_at],
        )?;
        Ok((code, expires_at))
    }

    /// The account behind a token, when it is still active.
    pub fn active_user(&self, id: UserId) -> ApiResult<Option<User>> {
        if is_active(&self.conn, id)? {
            load_user(&self.conn, id)
        } else {
            Ok(None)
        }
    }

    /// Make an account active or inactive. Nothing else changes: an
    /// inactive account's keys stay stored and work again once it is
    /// active, as production's Verify reads the account's state on every
    /// call.
    pub fn set_active(&mut self, user: UserId, active: bool) -> ApiResult<UserState> {
        let n = self.conn.execute(
            "UPDATE users SET active = ?1 WHERE id = ?2",
            params![active, user],
        )?;
        if n == 0 {
            return Err(ApiError::not_found(format!("no user {user}")));
        }
        Ok(UserState {
            user_id: user,
            active,
        })
    }

    // ------------------------------------------------------------ keys

    /// Mint an MCP key; only its SHA-256 is stored. Returns the key itself.
    /// Only an active agent account can have one (seed 002 L7 §0.2).
    pub fn mint_mcp_key(
        &mut self,
        now: i64,
        user: UserId,
        ttl_secs: Option<i64>,
    ) -> ApiResult<String> {
        let tx = self.conn.transaction()?;
        if load_user(&tx, user)?.is_none() {
            return Err(ApiError::not_found(format!("no user {user}")));
        }
        require_agent(&tx, user, "can have MCP keys")?;
        if !is_active(&tx, user)? {
            return Err(ApiError::forbidden(
                "the account is inactive: no key can be minted for it",
            ));
        }
        let (key, _) = insert_mcp_key(&tx, now, user, ttl_secs)?;
        tx.commit()?;
        Ok(key)
    }

    /// Soft-revoke every live MCP key of `user`.
    pub fn revoke_mcp_keys(&mut self, now: i64, user: UserId) -> ApiResult<RevokedKeys> {
        let tx = self.conn.transaction()?;
        if load_user(&tx, user)?.is_none() {
            return Err(ApiError::not_found(format!("no user {user}")));
        }
        let revoked = revoke_live_keys(&tx, now, user)?;
        tx.commit()?;
        Ok(RevokedKeys {
            user_id: user,
            revoked,
        })
    }

    /// The user an MCP key belongs to (looked up by its hash), or `None`
    /// when the key is unknown, revoked or expired (30 s of clock skew
    /// allowed) or its account is inactive: one and the same refusal
    /// (seed 002 L7 §0.2, L83 item 7).
    pub fn mcp_user(&self, now: i64, key_sha256: &str) -> ApiResult<Option<User>> {
        let row: Option<(UserId, i64, Option<i64>, Option<i64>)> = self
            .conn
            .query_row(
                "SELECT user_id, created_at, expires_at, revoked_at FROM mcp_keys \
                 WHERE key_sha256 = ?1",
                [key_sha256],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let Some((id, created, expires, revoked)) = row else {
            return Ok(None);
        };
        let expires = expires.unwrap_or_else(|| {
            rules::key_expiry(
                created,
                None,
                constants::MCP_KEY_DEFAULT_TTL_SECS,
                constants::MCP_KEY_MAX_TTL_SECS,
            )
        });
        if revoked.is_some() || !rules::key_live(expires, now, constants::MCP_BEARER_SKEW_SECS) {
            return Ok(None);
        }
        self.active_user(id)
    }

    /// Count one MCP call against the key's window; `Err` = over the limit.
    pub fn mcp_rate(&mut self, key_sha256: &str, now: i64) -> Result<(), u64> {
        let w = self.mcp_log.entry(key_sha256.to_string()).or_default();
        w.check(now, limits::MCP_CALLS_PER_MIN)?;
        w.record(now);
        Ok(())
    }

    /// An admin-created provisioning key (seed 002 L31): names no account
    /// (redeeming creates one), lives 7 days unless asked otherwise, at
    /// most 90 days. Returns the key and its expiry.
    pub fn create_provision_key(
        &mut self,
        now: i64,
        req: &CreateProvisionKey,
    ) -> ApiResult<(String, i64)> {
        let tx = self.conn.transaction()?;
        if let Some(c) = req.conversation_id
            && !conversation_exists(&tx, c)?
        {
            return Err(ApiError::not_found(format!("no conversation {c}")));
        }
        let key = new_key(PROVISION_KEY_PREFIX);
        let kind = match req.kind {
            ProvisionKind::Sentinel => "sentinel",
            ProvisionKind::Reinforcement => "reinforcement",
        };
        let expires = rules::key_expiry(
            now,
            req.ttl_secs,
            constants::PROVISION_KEY_DEFAULT_TTL_SECS,
            constants::PROVISION_KEY_MAX_TTL_SECS,
        );
        tx.execute(
            "INSERT INTO provisioning_keys (key_sha256, kind, conversation_id, created_at, \
             expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![key_hash(&key), kind, req.conversation_id, now, expires],
        )?;
        tx.commit()?;
        Ok((key, expires))
    }

    /// Redeem in ONE transaction, as production (seed 002 L31): take the
    /// key, create a NEW agent account (`is_agent`, and `fixed_otp` for a
    /// sentinel), join the room (the request's, else the key's), mint the
    /// MCP key (reinforcement), record the installation. Any failure rolls
    /// all of it back and the key stays usable.
    pub fn redeem(
        &mut self,
        now: i64,
        req: &RedeemRequest,
        public_base: Option<&str>,
    ) -> ApiResult<RedeemResponse> {
        let tx = self.conn.transaction()?;
        let hash = key_hash(req.key.trim());
        let row: Option<(String, Option<ConversationId>, i64, Option<i64>)> = tx
            .query_row(
                "SELECT kind, conversation_id, expires_at, redeemed_at FROM provisioning_keys \
                 WHERE key_sha256 = ?1",
                [&hash],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let usable = row
            .as_ref()
            .is_some_and(|(_, _, expires, redeemed)| redeemed.is_none() && now < *expires);
        let Some((kind, key_conv, _, _)) = row.filter(|_| usable) else {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                codes::KEY_INVALID,
                "unknown, expired or already redeemed provisioning key",
            ));
        };
        // Before anything is written: a refusal here spends nothing.
        let conv = rules::redeem_room(key_conv, req.conversation_id).map_err(|asked| {
            let minted = key_conv.map_or("no room".to_string(), |c| format!("room {c}"));
            ApiError::forbidden(format!(
                "this provisioning key joins only the room it was created for ({minted}), not \
                 room {asked}; redeem it without conversation_id, or ask the operator for a key \
                 for room {asked} (hoop backend provision-key create --room {asked})"
            ))
        })?;
        let reinforcement = kind == "reinforcement";
        let user = insert_agent(&tx, now, &req.name, None, !reinforcement, None)?;
        tx.execute(
            "UPDATE provisioning_keys SET redeemed_at = ?1, user_id = ?2 WHERE key_sha256 = ?3",
            params![now, user.id, hash],
        )?;
        if let Some(c) = conv {
            if !conversation_exists(&tx, c)? {
                return Err(ApiError::not_found(format!("no conversation {c}")));
            }
            tx.execute(
                "INSERT OR IGNORE INTO members (conversation_id, user_id) VALUES (?1, ?2)",
                [c, user.id],
            )?;
        }
        let (fixed_code, mcp_key, ready_line) = if reinforcement {
            let (key, _) = insert_mcp_key(&tx, now, user.id, None)?;
            let line = hoop_api::mcp::claude_add_line(public_base, &key);
            (None, Some(key), Some(line))
        } else {
            (Some(limits::FIXED_LOGIN_CODE.to_string()), None, None)
        };
        let machine = req.machine.clone().unwrap_or_default();
        insert_unique(
            &tx,
            "INSERT INTO installations (user_id, machine, name, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![user.id, machine, req.name, now],
            || {
                format!(
                    "a home named {:?} is already installed on this machine",
                    req.name
                )
            },
        )?;
        trip(&mut self.faults, FaultPoint::RedeemBeforeCommit)?;
        tx.commit()?;
        Ok(RedeemResponse {
            user,
            kind,
            fixed_code,
            mcp_key,
            ready_line,
            conversation_id: conv,
        })
    }

    // ------------------------------------------------------------ reinforcement

    /// An application for a reinforcement account (seed 002 L29): the name
    /// must match production's rule and gets `_aid`; one pending
    /// application per person (409 `conflict` for a second).
    pub fn reinforce_apply(
        &mut self,
        now: i64,
        applicant: UserId,
        req: &ReinforceApply,
    ) -> ApiResult<ReinforceApplication> {
        let name = rules::reinforcement_name(&req.name).map_err(ApiError::bad_request)?;
        let tx = self.conn.transaction()?;
        let id = insert_unique(
            &tx,
            "INSERT INTO reinforce_applications (applicant_id, name, nickname, status, created_at) \
             VALUES (?1, ?2, ?3, 'pending', ?4)",
            params![applicant, name, req.nickname, now],
            || "you already have a pending application".into(),
        )?;
        let app = tx.query_row(
            &format!("SELECT {APPLICATION_COLS} FROM reinforce_applications WHERE id = ?1"),
            [id],
            application_row,
        )?;
        tx.commit()?;
        Ok(app)
    }

    /// Approve in ONE transaction (seed 002 L29): the pending row, the new
    /// account (`is_agent`, no fixed code, owned by the applicant), the
    /// status. A name taken while it waited → 409 `conflict`, nothing
    /// written, the application still pending.
    pub fn approve(&mut self, now: i64, id: i64) -> ApiResult<ApprovedApplication> {
        let tx = self.conn.transaction()?;
        let app = tx
            .query_row(
                &format!("SELECT {APPLICATION_COLS} FROM reinforce_applications WHERE id = ?1"),
                [id],
                application_row,
            )
            .optional()?
            .ok_or_else(|| ApiError::not_found(format!("no application {id}")))?;
        if app.status != "pending" {
            return Err(ApiError::conflict(
                codes::CONFLICT,
                format!("application {id} is {}", app.status),
            ));
        }
        let agent = insert_agent(
            &tx,
            now,
            &app.name,
            app.nickname.as_deref(),
            false,
            Some(app.applicant_id),
        )?;
        tx.execute(
            "UPDATE reinforce_applications SET status = 'approved', agent_id = ?1 WHERE id = ?2",
            params![agent.id, id],
        )?;
        tx.commit()?;
        Ok(ApprovedApplication {
            application: ReinforceApplication {
                status: "approved".into(),
                agent_id: Some(agent.id),
                ..app
            },
            agent,
        })
    }

    /// The owner's key rotation (seed 002 L29): revoke the live keys and
    /// mint a new one (90 days) in ONE transaction; a failure leaves the
    /// old keys working. Returns the key and its expiry.
    pub fn rotate_reinforce_key(
        &mut self,
        now: i64,
        caller: UserId,
        agent: UserId,
    ) -> ApiResult<(String, i64)> {
        let tx = self.conn.transaction()?;
        require_owner(&tx, caller, agent)?;
        if !is_active(&tx, agent)? {
            return Err(ApiError::forbidden(
                "the account is inactive: no key can be minted for it",
            ));
        }
        revoke_live_keys(&tx, now, agent)?;
        let minted = insert_mcp_key(&tx, now, agent, None)?;
        trip(&mut self.faults, FaultPoint::RotateBeforeCommit)?;
        tx.commit()?;
        Ok(minted)
    }

    /// The owner revokes every live key of the account.
    pub fn revoke_reinforce_key(
        &mut self,
        now: i64,
        caller: UserId,
        agent: UserId,
    ) -> ApiResult<RevokedKeys> {
        let tx = self.conn.transaction()?;
        require_owner(&tx, caller, agent)?;
        let revoked = revoke_live_keys(&tx, now, agent)?;
        tx.commit()?;
        Ok(RevokedKeys {
            user_id: agent,
            revoked,
        })
    }
}
