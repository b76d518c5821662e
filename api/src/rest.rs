//! The REST client of a sentinel account: log in with email + fixed code,
//! cache the JWT (see [`crate::token`]), log in again before it expires and
//! once on a 401, and call every route of [`crate::routes`] with typed
//! bodies. Paths come from `routes` only.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::Method;
use reqwest::header::CONTENT_TYPE;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Mutex;

use hoop_core::clock::now_unix;
use hoop_core::home::{self, Home};
use hoop_core::limits::{FAILURE_REPORT_MAX_WAIT, FAILURE_REPORT_RETRY_POLL};

use crate::error::{Error, parse_retry_after};
use crate::headers;
use crate::routes::{self, fill, fill_task};
use crate::token::{self, CachedToken};
use crate::tolerant::Skipping;
use crate::types::*;

/// A request that has not answered after this long is a transport error
/// (the backend answers in milliseconds; an image upload is the largest body).
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(60);
/// Connecting to the backend: loopback or LAN answers at once; anything
/// slower is down.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How to reach the backend as one account. `Debug` redacts the secret.
#[derive(Clone)]
pub struct ClientConfig {
    /// e.g. `http://127.0.0.1:8080`; a trailing slash is ignored.
    pub base_url: String,
    pub email: String,
    /// The fixed one-time code (public convention `123456`).
    pub login_code: String,
    /// Sent as `X-Hoop-Agent-Secret` on every login when set.
    pub agent_secret: Option<String>,
    /// Where the JWT is cached; `None` keeps it in memory only.
    pub token_cache: Option<PathBuf>,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("base_url", &self.base_url)
            .field("email", &self.email)
            .field("login_code", &"<redacted>")
            .field(
                "agent_secret",
                &self.agent_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("token_cache", &self.token_cache)
            .finish()
    }
}

impl ClientConfig {
    /// From a home: its `config.json`, the root's `agent.env`, and its
    /// `.token.json` as the cache.
    pub fn from_home(home: &Home) -> Result<ClientConfig, Error> {
        let cfg = home.load_config()?;
        Ok(ClientConfig {
            login_code: cfg.login_code().to_string(),
            base_url: cfg.base_url,
            email: cfg.email,
            agent_secret: home::agent_secret(&home.root),
            token_cache: Some(home.token_path()),
        })
    }
}

/// Filter of `GET /v1/workrooms/tasks`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CardFilter {
    /// `me`, `any`, or a user id as text; `None` is the backend's default
    /// (`me`).
    pub assignee: Option<String>,
    pub status: Option<CardStatus>,
    pub parent_id: Option<CardId>,
    pub conversation_id: Option<ConversationId>,
    /// One card by id (with `assignee: any`: whoever it is assigned to).
    pub id: Option<CardId>,
}

impl CardFilter {
    /// The caller's own cards.
    pub fn mine() -> CardFilter {
        CardFilter {
            assignee: Some("me".into()),
            ..CardFilter::default()
        }
    }
}

/// A refused claim after a successful assign: the error names the orphan
/// (an error that already carries an id keeps its own).
fn orphaned(task_id: CardId, e: Error) -> Error {
    match e {
        Error::Orphaned { .. } => e,
        Error::NotFound { code, message } | Error::Refused { code, message, .. } => {
            Error::Orphaned {
                task_id,
                code,
                message,
            }
        }
        other => Error::Orphaned {
            task_id,
            code: other.code().unwrap_or("claim_failed").to_string(),
            message: other.to_string(),
        },
    }
}

/// Trim a base URL and check that it is http(s).
pub(crate) fn normalise_base(url: &str) -> Result<String, Error> {
    let parsed = url::Url::parse(url).map_err(|e| Error::BadUrl {
        url: url.to_string(),
        message: e.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Error::BadUrl {
            url: url.to_string(),
            message: "the scheme must be http or https".into(),
        });
    }
    Ok(url.trim_end_matches('/').to_string())
}

pub(crate) fn http_client() -> Result<reqwest::Client, Error> {
    reqwest::Client::builder()
        .timeout(HTTP_TIMEOUT)
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(Error::from)
}

/// The REST client. Cheap to share behind an `Arc`; one login at a time.
pub struct Client {
    cfg: ClientConfig,
    base: String,
    http: reqwest::Client,
    token: Mutex<Option<CachedToken>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("cfg", &self.cfg).finish()
    }
}

impl Client {
    pub fn new(cfg: ClientConfig) -> Result<Client, Error> {
        Ok(Client {
            base: normalise_base(&cfg.base_url)?,
            http: http_client()?,
            token: Mutex::new(None),
            cfg,
        })
    }

    /// A client for a home (see [`ClientConfig::from_home`]).
    pub fn for_home(home: &Home) -> Result<Client, Error> {
        Client::new(ClientConfig::from_home(home)?)
    }

    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    /// The base URL without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    // ------------------------------------------------------------ auth

    /// Log in now, whatever the cache says, and cache the new token.
    pub async fn login(&self) -> Result<LoginResponse, Error> {
        let mut slot = self.token.lock().await;
        let resp = self.do_login().await?;
        *slot = Some(CachedToken {
            token: resp.token.clone(),
            expires_at: resp.expires_at,
        });
        Ok(resp)
    }

    async fn do_login(&self) -> Result<LoginResponse, Error> {
        let req = LoginRequest {
            email: self.cfg.email.clone(),
            code: self.cfg.login_code.clone(),
        };
        let mut rb = self.http.post(self.url(routes::LOGIN)).json(&req);
        if let Some(secret) = &self.cfg.agent_secret {
            rb = rb.header(headers::AGENT_SECRET, secret);
        }
        let resp = rb.send().await?;
        let status = resp.status().as_u16();
        let retry = retry_after_of(&resp);
        let bytes = resp.bytes().await?;
        if !(200..300).contains(&status) {
            return Err(match Error::from_status(status, &bytes, retry) {
                Error::Unauthorized { message } => Error::LoginRefused { message },
                e => e,
            });
        }
        let login: LoginResponse = decode("login response", &bytes)?;
        tracing::debug!(user = login.user.id, "logged in");
        if let Some(path) = &self.cfg.token_cache {
            let cached = CachedToken {
                token: login.token.clone(),
                expires_at: login.expires_at,
            };
            if let Err(e) = token::store(path, &cached) {
                // The token in memory still works; the next process logs in.
                tracing::warn!(path = %path.display(), error = %e, "could not write the token cache");
            }
        }
        Ok(login)
    }

    /// A usable JWT: the one in memory, else the cached file's, else a fresh
    /// login. Expiring within the refresh margin counts as expired.
    pub async fn bearer(&self) -> Result<String, Error> {
        let mut slot = self.token.lock().await;
        let now = now_unix();
        if let Some(t) = slot.as_ref().filter(|t| t.is_fresh(now)) {
            return Ok(t.token.clone());
        }
        if let Some(t) = self
            .cfg
            .token_cache
            .as_deref()
            .and_then(token::load)
            .filter(|t| t.is_fresh(now))
        {
            let s = t.token.clone();
            *slot = Some(t);
            return Ok(s);
        }
        let login = self.do_login().await?;
        let s = login.token.clone();
        *slot = Some(CachedToken {
            token: login.token,
            expires_at: login.expires_at,
        });
        Ok(s)
    }

    /// Forget `token` (it was refused) so the next [`Client::bearer`] logs in
    /// again, unless another caller already replaced it.
    pub async fn invalidate(&self, token: &str) {
        let mut slot = self.token.lock().await;
        if slot.as_ref().is_some_and(|t| t.token == token) {
            *slot = None;
        }
        if let Some(path) = &self.cfg.token_cache
            && token::load(path).is_some_and(|t| t.token == token)
        {
            // Mark the shared cache stale rather than deleting it.
            let stale = CachedToken {
                token: token.to_string(),
                expires_at: 0,
            };
            if let Err(e) = token::store(path, &stale) {
                tracing::warn!(error = %e, "could not mark the token cache stale");
            }
        }
    }

    // ------------------------------------------------------------ plumbing

    /// One authenticated request; on 401 log in again once and retry once.
    async fn send_raw(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<Vec<u8>>,
    ) -> Result<Vec<u8>, Error> {
        let mut retried = false;
        loop {
            let jwt = self.bearer().await?;
            let mut rb = self
                .http
                .request(method.clone(), self.url(path))
                .bearer_auth(&jwt);
            if !query.is_empty() {
                rb = rb.query(query);
            }
            if let Some(b) = &body {
                rb = rb.header(CONTENT_TYPE, "application/json").body(b.clone());
            }
            let resp = rb.send().await?;
            let status = resp.status().as_u16();
            if status == 401 && !retried {
                tracing::debug!(path, "401: logging in again");
                self.invalidate(&jwt).await;
                retried = true;
                continue;
            }
            let retry = retry_after_of(&resp);
            let bytes = resp.bytes().await?.to_vec();
            if (200..300).contains(&status) {
                return Ok(bytes);
            }
            return Err(Error::from_status(status, &bytes, retry));
        }
    }

    async fn call<T: DeserializeOwned>(
        &self,
        what: &'static str,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&(impl Serialize + ?Sized)>,
    ) -> Result<T, Error> {
        let body = body
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| Error::Decode {
                what,
                message: e.to_string(),
            })?;
        let bytes = self.send_raw(method, path, query, body).await?;
        decode(what, &bytes)
    }

    // ------------------------------------------------------------ routes

    /// `GET /v1/me`.
    pub async fn me(&self) -> Result<User, Error> {
        self.call("user", Method::GET, routes::ME, &[], NO_BODY)
            .await
    }

    /// `GET /v1/conversations`.
    pub async fn conversations(&self) -> Result<Vec<Conversation>, Error> {
        self.call::<Skipping<Conversation>>(
            "conversations",
            Method::GET,
            routes::CONVERSATIONS,
            &[],
            NO_BODY,
        )
        .await
        .map(|l| l.0)
    }

    /// `GET /v1/conversations/{id}/members`.
    pub async fn members(&self, conversation: ConversationId) -> Result<Vec<Member>, Error> {
        self.call::<Skipping<Member>>(
            "members",
            Method::GET,
            &fill(routes::CONVERSATION_MEMBERS, conversation),
            &[],
            NO_BODY,
        )
        .await
        .map(|l| l.0)
    }

    /// `GET …/messages?limit=&before=`: newest first; `before` pages back.
    pub async fn messages(
        &self,
        conversation: ConversationId,
        limit: u32,
        before: Option<MessageId>,
    ) -> Result<MessagePage, Error> {
        let mut q = vec![("limit", limit.to_string())];
        if let Some(b) = before {
            q.push(("before", b.to_string()));
        }
        self.call(
            "message page",
            Method::GET,
            &fill(routes::CONVERSATION_MESSAGES, conversation),
            &q,
            NO_BODY,
        )
        .await
    }

    /// `POST /v1/conversations/{id}/text`: production's REST send (rate
    /// limit and mention filter; the caller runs `core::gates` first).
    pub async fn send(
        &self,
        conversation: ConversationId,
        msg: &SendMessage,
    ) -> Result<Message, Error> {
        self.call(
            "sent message",
            Method::POST,
            &fill(routes::CONVERSATION_TEXT, conversation),
            &[],
            Some(msg),
        )
        .await
    }

    /// Send a failure report so that it always gets out: its body begins
    /// with a failure mark (`core::gates::as_failure_report`, so the sender
    /// recognises it without a message kind the backend may not know), the
    /// REST route has no content gate to refuse it, and a rate limit is
    /// outwaited — retried every [`FAILURE_REPORT_RETRY_POLL`] for at most
    /// [`FAILURE_REPORT_MAX_WAIT`], which covers the rest of a calendar
    /// minute. Any other error is returned at once.
    pub async fn send_failure_report(
        &self,
        conversation: ConversationId,
        msg: &SendMessage,
    ) -> Result<Message, Error> {
        let msg = SendMessage {
            body: hoop_core::gates::as_failure_report(&msg.body),
            mentions: msg.mentions.clone(),
        };
        let give_up = tokio::time::Instant::now() + FAILURE_REPORT_MAX_WAIT;
        loop {
            match self.send(conversation, &msg).await {
                Err(Error::RateLimited { retry_after, .. })
                    if tokio::time::Instant::now() + FAILURE_REPORT_RETRY_POLL <= give_up =>
                {
                    tracing::info!(
                        retry_after_s = retry_after.map(|d| d.as_secs()),
                        "failure report rate limited; waiting"
                    );
                    tokio::time::sleep(FAILURE_REPORT_RETRY_POLL).await;
                }
                r => return r,
            }
        }
    }

    /// `POST …/images`.
    pub async fn send_image(
        &self,
        conversation: ConversationId,
        img: &SendImage,
    ) -> Result<Message, Error> {
        self.call(
            "sent image",
            Method::POST,
            &fill(routes::CONVERSATION_IMAGES, conversation),
            &[],
            Some(img),
        )
        .await
    }

    /// `POST /v1/workrooms/heartbeat`.
    pub async fn heartbeat(&self) -> Result<HeartbeatResponse, Error> {
        self.beat(&HeartbeatRequest::default()).await
    }

    /// `POST /v1/workrooms/heartbeat` saying what the agent is doing
    /// (`state`) and optionally the room it works in.
    pub async fn beat(&self, req: &HeartbeatRequest) -> Result<HeartbeatResponse, Error> {
        self.call("heartbeat", Method::POST, routes::HEARTBEAT, &[], Some(req))
            .await
    }

    /// `GET /v1/workrooms/presence`.
    pub async fn presence(&self) -> Result<Vec<Presence>, Error> {
        self.call::<Skipping<Presence>>("presence", Method::GET, routes::PRESENCE, &[], NO_BODY)
            .await
            .map(|l| l.0)
    }

    /// `POST /v1/workrooms/usage` with the account's CUMULATIVE totals (the
    /// backend upserts one row per agent, `COALESCE(new, old)`, and a card's
    /// cost is the difference of the totals at its start and end — so a
    /// turn's own numbers here would be wrong). Unknown numbers stay `None`
    /// (sent as null, never 0, and they keep what was stored). The
    /// backend's answer (the stored totals) is not needed.
    pub async fn usage(&self, report: &UsageReport) -> Result<(), Error> {
        let body = serde_json::to_vec(report).map_err(|e| Error::Decode {
            what: "usage report",
            message: e.to_string(),
        })?;
        self.send_raw(Method::POST, routes::USAGE, &[], Some(body))
            .await
            .map(|_| ())
    }

    /// `GET /v1/workrooms/tasks?assignee=&status=&parent_id=&conversation_id=&id=`.
    pub async fn cards(&self, filter: &CardFilter) -> Result<Vec<Card>, Error> {
        let mut q = Vec::new();
        if let Some(a) = &filter.assignee {
            q.push(("assignee", a.clone()));
        }
        if let Some(s) = filter.status {
            q.push(("status", wire_word(&s)));
        }
        for (k, v) in [
            ("parent_id", filter.parent_id),
            ("conversation_id", filter.conversation_id),
            ("id", filter.id),
        ] {
            if let Some(v) = v {
                q.push((k, v.to_string()));
            }
        }
        self.call::<Skipping<Card>>("cards", Method::GET, routes::TASKS, &q, NO_BODY)
            .await
            .map(|l| l.0)
    }

    /// `GET /v1/workrooms/{cid}/tasks/{id}`.
    pub async fn card(&self, cid: ConversationId, id: CardId) -> Result<Card, Error> {
        let path = fill_task(routes::WORKROOM_TASK, cid, id);
        self.call("card", Method::GET, &path, &[], NO_BODY).await
    }

    /// `POST /v1/workrooms/{cid}/tasks`: assign a card in that room (queued).
    pub async fn assign_task(&self, cid: ConversationId, task: &AssignTask) -> Result<Card, Error> {
        let path = fill_task(routes::WORKROOM_TASKS, cid, "");
        self.call("card", Method::POST, &path, &[], Some(task))
            .await
    }

    /// `POST …/progress {"claim":true}`: queued → working. Never opens a
    /// lease. A second top-level working card → `agent_busy`; a card that
    /// is not queued → `not_claimable`.
    pub async fn claim_task(&self, cid: ConversationId, id: CardId) -> Result<Card, Error> {
        let body = TaskProgress {
            claim: true,
            line: None,
        };
        let path = fill_task(routes::WORKROOM_TASK_PROGRESS, cid, id);
        self.call("card", Method::POST, &path, &[], Some(&body))
            .await
    }

    /// Assign a card to the caller and claim it: production's
    /// `work_task_start`, two transactions. When the claim is refused the
    /// assigned card stays queued on the board: the error is
    /// [`Error::Orphaned`] with its id, so the caller can finish it.
    pub async fn start_task(&self, cid: ConversationId, task: &AssignTask) -> Result<Card, Error> {
        let card = self.assign_task(cid, task).await?;
        self.claim_task(cid, card.id)
            .await
            .map_err(|e| orphaned(card.id, e))
    }

    /// `POST …/progress {"line":…}`: a progress line; extends an existing
    /// lease only, and counts as a heartbeat.
    pub async fn task_progress(
        &self,
        cid: ConversationId,
        id: CardId,
        line: &str,
    ) -> Result<Card, Error> {
        let body = TaskProgress {
            claim: false,
            line: Some(line.to_string()),
        };
        let path = fill_task(routes::WORKROOM_TASK_PROGRESS, cid, id);
        self.call("card", Method::POST, &path, &[], Some(&body))
            .await
    }

    /// `POST …/lease`: renew (the only opener of a lease). A card that is not
    /// working answers 404 — never treat that as renewed.
    pub async fn renew_lease(
        &self,
        cid: ConversationId,
        id: CardId,
    ) -> Result<LeaseResponse, Error> {
        let path = fill_task(routes::WORKROOM_TASK_LEASE, cid, id);
        self.call(
            "lease",
            Method::POST,
            &path,
            &[],
            Some(&serde_json::json!({})),
        )
        .await
    }

    /// `POST …/finish`. A card already finished answers `updated: false`
    /// (not an error): nothing changed.
    pub async fn finish_task(
        &self,
        cid: ConversationId,
        id: CardId,
        finish: &FinishTask,
    ) -> Result<FinishAnswer, Error> {
        let path = fill_task(routes::WORKROOM_TASK_FINISH, cid, id);
        self.call("finish", Method::POST, &path, &[], Some(finish))
            .await
    }

    /// `POST /v1/windows`.
    pub async fn register_window(&self, w: &RegisterWindow) -> Result<RegisteredWindow, Error> {
        self.call("window", Method::POST, routes::WINDOWS, &[], Some(w))
            .await
    }

    /// `POST /v1/windows/{id}/sync`. Unknown → `NotFound{code: window_not_found}`.
    pub async fn sync_window(&self, id: &str) -> Result<WindowSync, Error> {
        self.call(
            "window sync",
            Method::POST,
            &fill(routes::WINDOW_SYNC, id),
            &[],
            Some(&serde_json::json!({})),
        )
        .await
    }

    /// `POST /v1/windows/{id}/revoke` → the window, now revoked.
    pub async fn revoke_window(&self, id: &str) -> Result<WindowInfo, Error> {
        self.call(
            "window",
            Method::POST,
            &fill(routes::WINDOW_REVOKE, id),
            &[],
            Some(&serde_json::json!({})),
        )
        .await
    }

    /// `GET /v1/windows`.
    pub async fn windows(&self) -> Result<Vec<WindowInfo>, Error> {
        self.call::<Skipping<WindowInfo>>("windows", Method::GET, routes::WINDOWS, &[], NO_BODY)
            .await
            .map(|l| l.0)
    }

    /// `POST REINFORCE_APPLICATIONS`: ask for a reinforcement account.
    pub async fn reinforce_apply(
        &self,
        req: &ReinforceApply,
    ) -> Result<ReinforceApplication, Error> {
        self.call(
            "application",
            Method::POST,
            routes::REINFORCE_APPLICATIONS,
            &[],
            Some(req),
        )
        .await
    }

    /// `POST REINFORCE_AGENT_KEY` as the approved owner: the old keys are
    /// revoked and a new one minted in one transaction.
    pub async fn rotate_reinforce_key(&self, agent: UserId) -> Result<ReinforceKey, Error> {
        self.call(
            "reinforcement key",
            Method::POST,
            &fill(routes::REINFORCE_AGENT_KEY, agent),
            &[],
            Some(&serde_json::json!({})),
        )
        .await
    }

    /// `DELETE REINFORCE_AGENT_KEY` as the approved owner: every live key
    /// of the account is revoked.
    pub async fn revoke_reinforce_key(&self, agent: UserId) -> Result<RevokedKeys, Error> {
        self.call(
            "revoked keys",
            Method::DELETE,
            &fill(routes::REINFORCE_AGENT_KEY, agent),
            &[],
            NO_BODY,
        )
        .await
    }
}

/// `POST /v1/provision-keys/redeem`: no login; the key is the credential.
pub async fn redeem(base_url: &str, req: &RedeemRequest) -> Result<RedeemResponse, Error> {
    let base = normalise_base(base_url)?;
    let resp = http_client()?
        .post(format!("{base}{}", routes::PROVISION_REDEEM))
        .json(req)
        .send()
        .await?;
    let status = resp.status().as_u16();
    let retry = retry_after_of(&resp);
    let bytes = resp.bytes().await?;
    if !(200..300).contains(&status) {
        return Err(Error::from_status(status, &bytes, retry));
    }
    decode("redeem response", &bytes)
}

/// An image message body: the bytes base64-encoded, with their MIME type.
pub fn image_message(data: &[u8], mime: &str, caption: &str) -> SendImage {
    use base64::Engine as _;
    SendImage {
        data_base64: base64::engine::general_purpose::STANDARD.encode(data),
        mime: mime.to_string(),
        caption: caption.to_string(),
    }
}

/// The MIME type of an image file by its extension; `None` if not an image
/// type the backend takes.
pub fn image_mime(path: &std::path::Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

const NO_BODY: Option<&()> = None;

pub(crate) fn retry_after_of(resp: &reqwest::Response) -> Option<Duration> {
    resp.headers()
        .get(headers::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after)
}

pub(crate) fn decode<T: DeserializeOwned>(what: &'static str, bytes: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::Decode {
        what,
        message: e.to_string(),
    })
}

/// A unit enum's wire word (`working`, …).
fn wire_word(v: &impl Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::{get, post};
    use axum::{Json, Router};
    use std::sync::Arc;
    use std::sync::Mutex as StdMutex;

    /// A tiny login server: every login mints token `t<n>`; only the newest
    /// token is accepted on `/v1/me` unless `refuse_all` is set.
    #[derive(Default)]
    struct Fake {
        logins: u32,
        me_calls: u32,
        secrets: Vec<Option<String>>,
        refuse_all: bool,
    }
    type S = Arc<StdMutex<Fake>>;

    fn user() -> User {
        User {
            id: 1,
            email: "a@x".into(),
            username: "a".into(),
            nickname: None,
            is_agent: true,
        }
    }

    async fn login(
        State(s): State<S>,
        h: HeaderMap,
        Json(_): Json<LoginRequest>,
    ) -> Json<LoginResponse> {
        let mut f = s.lock().unwrap();
        f.logins += 1;
        f.secrets.push(
            h.get(headers::AGENT_SECRET)
                .map(|v| v.to_str().unwrap().to_string()),
        );
        Json(LoginResponse {
            token: format!("t{}", f.logins),
            expires_at: now_unix() + 900,
            user: user(),
        })
    }

    async fn me(
        State(s): State<S>,
        h: HeaderMap,
    ) -> Result<Json<User>, (StatusCode, Json<ErrorBody>)> {
        let mut f = s.lock().unwrap();
        f.me_calls += 1;
        let want = format!("Bearer t{}", f.logins);
        let got = h.get("authorization").and_then(|v| v.to_str().ok());
        if f.refuse_all || got != Some(want.as_str()) {
            return Err((
                StatusCode::UNAUTHORIZED,
                Json(ErrorBody::new("unauthorized", "bad token")),
            ));
        }
        Ok(Json(user()))
    }

    async fn server() -> (String, S) {
        let s: S = Arc::default();
        let app = Router::new()
            .route(routes::LOGIN, post(login))
            .route(routes::ME, get(me))
            .with_state(s.clone());
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        (base, s)
    }

    fn cfg(base: &str, cache: Option<PathBuf>, secret: Option<&str>) -> ClientConfig {
        ClientConfig {
            base_url: format!("{base}/"),
            email: "a@x".into(),
            login_code: "123456".into(),
            agent_secret: secret.map(str::to_string),
            token_cache: cache,
        }
    }

    #[tokio::test]
    async fn the_cached_token_is_shared_and_reused() {
        let (base, s) = server().await;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("h/.token.json");
        Client::new(cfg(&base, Some(cache.clone()), None))
            .unwrap()
            .me()
            .await
            .unwrap();
        // A second process (a second client) reuses the file: no login.
        let b = Client::new(cfg(&base, Some(cache.clone()), None)).unwrap();
        b.me().await.unwrap();
        b.me().await.unwrap();
        assert_eq!(s.lock().unwrap().logins, 1);
        assert_eq!(token::load(&cache).unwrap().token, "t1");
    }

    #[tokio::test]
    async fn a_token_near_expiry_is_replaced_before_use() {
        let (base, s) = server().await;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join(".token.json");
        let margin = hoop_core::limits::JWT_REFRESH_MARGIN.as_secs() as i64;
        token::store(
            &cache,
            &CachedToken {
                token: "t0".into(),
                expires_at: now_unix() + margin - 1,
            },
        )
        .unwrap();
        let c = Client::new(cfg(&base, Some(cache.clone()), None)).unwrap();
        c.me().await.unwrap();
        let f = s.lock().unwrap();
        assert_eq!((f.logins, f.me_calls), (1, 1), "logged in first, no 401");
    }

    #[tokio::test]
    async fn a_401_logs_in_again_once_and_retries_once() {
        let (base, s) = server().await;
        let c = Client::new(cfg(&base, None, None)).unwrap();
        c.me().await.unwrap();
        // Someone else logs in: our token is now refused.
        s.lock().unwrap().logins += 1;
        c.me().await.unwrap();
        assert_eq!(s.lock().unwrap().logins, 3);
        // Refused whatever the token: exactly one retry, then Unauthorized.
        s.lock().unwrap().refuse_all = true;
        let before = s.lock().unwrap().me_calls;
        let e = c.me().await.unwrap_err();
        assert!(matches!(e, Error::Unauthorized { .. }), "{e:?}");
        assert_eq!(s.lock().unwrap().me_calls - before, 2);
    }

    #[tokio::test]
    async fn the_agent_secret_goes_on_login_only_when_set() {
        let (base, s) = server().await;
        Client::new(cfg(&base, None, Some("s3cr3t")))
            .unwrap()
            .login()
            .await
            .unwrap();
        Client::new(cfg(&base, None, None))
            .unwrap()
            .login()
            .await
            .unwrap();
        assert_eq!(
            s.lock().unwrap().secrets,
            vec![Some("s3cr3t".to_string()), None]
        );
    }

    #[test]
    fn image_bodies_are_base64_with_a_known_mime() {
        let m = image_message(b"\x89PNG", "image/png", "look");
        assert_eq!(m.data_base64, "iVBORw==");
        assert_eq!(
            image_mime(std::path::Path::new("a/B.JPG")),
            Some("image/jpeg")
        );
        assert_eq!(image_mime(std::path::Path::new("a.txt")), None);
        assert_eq!(image_mime(std::path::Path::new("noext")), None);
    }

    #[test]
    fn debug_never_prints_the_secret() {
        let c = cfg("http://127.0.0.1:1", None, Some("s3cr3t"));
        assert!(!format!("{c:?}").contains("s3cr3t"));
    }

    #[test]
    fn config_from_a_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path(), "bolt").unwrap();
        std::fs::create_dir_all(home.dir()).unwrap();
        std::fs::write(
            home.config_path(),
            r#"{"base_url":"http://127.0.0.1:9","email":"bolt@x"}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("agent.env"), "HOOP_AGENT_SECRET=zz\n").unwrap();
        let c = ClientConfig::from_home(&home).unwrap();
        assert_eq!(c.login_code, hoop_core::limits::FIXED_LOGIN_CODE);
        assert_eq!(c.agent_secret.as_deref(), Some("zz"));
        assert_eq!(c.token_cache, Some(home.token_path()));
        assert!(matches!(
            ClientConfig::from_home(&Home::new(dir.path(), "none").unwrap()),
            Err(Error::Config(_))
        ));
        assert!(matches!(
            Client::new(cfg("not a url", None, None)),
            Err(Error::BadUrl { .. })
        ));
    }
}

#[cfg(test)]
mod tolerant_tests {
    use super::*;
    use axum::routing::{get, post};
    use axum::{Json, Router};
    use serde_json::json;

    /// A backend answering as production may: string ids, a null title, no
    /// AI count, one undecodable message and one undecodable conversation.
    async fn server() -> String {
        let app = Router::new()
            .route(
                routes::LOGIN,
                post(|| async {
                    Json(json!({"token": "t", "expires_at": "2999-01-01T00:00:00Z",
                        "user": {"id": "1", "email": "a@x", "username": "a", "is_agent": true}}))
                }),
            )
            .route(
                routes::CONVERSATIONS,
                get(|| async {
                    Json(json!([
                        {"id": "10", "title": null, "is_workroom": false},
                        {"id": 11, "title": "broken", "is_workroom": null},
                        {"id": 12, "title": "ok", "is_workroom": true, "ai_member_count": 1}
                    ]))
                }),
            )
            .route(
                routes::CONVERSATION_MESSAGES,
                get(|| async {
                    Json(json!({"messages": [
                        {"id": 3, "conversation_id": 10, "sender_id": 2, "body": "third",
                         "created_at": "2023-11-14T22:13:20Z"},
                        {"id": 2, "conversation_id": 10, "sender_id": {"oops": 1},
                         "body": "second", "created_at": 0},
                        {"id": "1", "conversation_id": "10", "sender_id": "2", "body": "first",
                         "created_at": 1}
                    ], "has_more": false}))
                }),
            );
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        base
    }

    /// A room with one bad message still reads: the others come through,
    /// each by its id; one bad room does not mute the list.
    #[tokio::test]
    async fn one_bad_message_or_room_costs_only_itself() {
        let base = server().await;
        let c = Client::new(ClientConfig {
            base_url: base,
            email: "a@x".into(),
            login_code: "123456".into(),
            agent_secret: None,
            token_cache: None,
        })
        .unwrap();
        let rooms = c.conversations().await.unwrap();
        let got: Vec<(i64, &str, u32)> = rooms
            .iter()
            .map(|r| (r.id, r.title.as_str(), r.ai_member_count))
            .collect();
        assert_eq!(got, [(10, "", 2), (12, "ok", 1)]);
        let page = c.messages(10, 20, None).await.unwrap();
        let got: Vec<(i64, &str)> = page
            .messages
            .iter()
            .map(|m| (m.id, m.body.as_str()))
            .collect();
        assert_eq!(got, [(3, "third"), (1, "first")]);
    }
}
