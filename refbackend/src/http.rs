//! The router and the REST handlers. Handlers are thin: extract, call the
//! store under its lock, push WebSocket events after the commit, answer JSON.

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hoop_api::admin::AdminCreateCard;
use hoop_api::routes as r;
use hoop_api::types::{
    AssignTask, CardStatus, FinishTask, HeartbeatRequest, HeartbeatResponse, LoginRequest,
    LoginResponse, Message, MessageKind, RedeemRequest, RegisterWindow, ReinforceApply,
    ReinforceKey, SendImage, SendMessage, TaskProgress, UsageReport, User, WsEvent, codes,
};
use hoop_core::limits;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use crate::App;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, Id, JsonBody, OptJson, Q, StrId, TaskPath};
use crate::jwt::{self, Claims};
use crate::store::{self, CardFilter, Store};

type S = State<Arc<App>>;
type J<T> = axum::Json<T>;

pub fn router(app: Arc<App>) -> Router {
    let catch = tower_http::catch_panic::CatchPanicLayer::custom(|_| {
        tracing::error!("a handler panicked");
        ApiError::internal().into_response()
    });
    Router::new()
        .route(r::LOGIN, post(login))
        .route(r::ME, get(me))
        .route(r::CONVERSATIONS, get(conversations))
        .route(r::CONVERSATION_MEMBERS, get(members))
        .route(r::CONVERSATION_MESSAGES, get(read_messages))
        .route(r::CONVERSATION_TEXT, post(send_message))
        .route(r::CONVERSATION_IMAGES, post(send_image))
        .route(r::WS, get(crate::ws::upgrade))
        .route(r::HEARTBEAT, post(heartbeat))
        .route(r::PRESENCE, get(presence))
        .route(r::USAGE, post(usage))
        .route(r::TASKS, get(list_cards))
        .route(r::WORKROOM_TASKS, post(create_card))
        .route(r::WORKROOM_TASK, get(get_card))
        .route(r::WORKROOM_TASK_PROGRESS, post(progress))
        .route(r::WORKROOM_TASK_LEASE, post(lease))
        .route(r::WORKROOM_TASK_FINISH, post(finish))
        .route(r::WINDOWS, get(list_windows).post(register_window))
        .route(r::WINDOW_SYNC, post(sync_window))
        .route(r::WINDOW_REVOKE, post(revoke_window))
        .route(r::PROVISION_REDEEM, post(redeem))
        .route(r::REINFORCE_APPLICATIONS, post(reinforce_apply))
        .route(
            r::REINFORCE_AGENT_KEY,
            post(rotate_reinforce_key).delete(revoke_reinforce_key),
        )
        .route(
            r::MCP,
            post(crate::mcp::handle).layer(DefaultBodyLimit::max(limits::MCP_BODY_CAP_BYTES)),
        )
        .route(r::EVENTS, get(crate::events::stream))
        .merge(crate::admin::routes())
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limits::REST_BODY_CAP_BYTES))
        .layer(catch)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            count_request,
        ))
        .with_state(app)
}

/// Count every request (the admin stats route reports it).
async fn count_request(
    State(app): S,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    app.requests
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    next.run(req).await
}

async fn unknown_route() -> ApiError {
    ApiError::not_found("no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        codes::METHOD_NOT_ALLOWED,
        "this route does not take that method",
    )
}

// ---------------------------------------------------------------- auth

async fn login(
    State(app): S,
    headers: HeaderMap,
    JsonBody(req): JsonBody<LoginRequest>,
) -> ApiResult<J<LoginResponse>> {
    // One answer for every refusal, as production: an unsatisfied agent
    // gate simply makes the fixed code stop working (an ordinary one-time
    // code would be expected). Who takes the fixed code at all is
    // `rules::fixed_code_login`.
    let wrong = || ApiError::unauthorized("unknown email or wrong code");
    if let Some(want) = &app.agent_secret {
        let got = headers
            .get(hoop_api::headers::AGENT_SECRET)
            .map(|v| v.as_bytes())
            .unwrap_or(b"");
        if !bool::from(got.ct_eq(want.as_bytes())) {
            return Err(wrong());
        }
    }
    let user = app.store().fixed_code_user(&req.email)?.ok_or_else(wrong)?;
    let fixed_ok = bool::from(
        req.code
            .trim()
            .as_bytes()
            .ct_eq(limits::FIXED_LOGIN_CODE.as_bytes()),
    );
    if !fixed_ok {
        return Err(wrong());
    }
    let now = app.clock.now();
    let exp = now + limits::JWT_LIFETIME.as_secs() as i64;
    let token = jwt::sign(
        &app.jwt,
        &Claims {
            sub: user.id,
            iat: now,
            exp,
        },
    );
    Ok(axum::Json(LoginResponse {
        token,
        expires_at: exp,
        user,
    }))
}

async fn me(Caller(u): Caller) -> J<User> {
    axum::Json(u)
}

// ---------------------------------------------------------------- conversations

async fn conversations(State(app): S, Caller(u): Caller) -> ApiResult<Response> {
    Ok(axum::Json(app.store().conversations_of(u.id)?).into_response())
}

async fn members(State(app): S, Caller(u): Caller, Id(id): Id) -> ApiResult<Response> {
    Ok(axum::Json(app.store().members(u.id, id)?).into_response())
}

/// `?limit=&before=` of a message page.
#[derive(Debug, Deserialize, Default)]
pub(crate) struct PageQuery {
    limit: Option<u32>,
    pub(crate) before: Option<i64>,
}

impl PageQuery {
    /// The page size asked for, defaulted and clamped into `1..=PAGE_MAX`.
    pub(crate) fn limit(&self) -> u32 {
        self.limit
            .unwrap_or(store::PAGE_DEFAULT)
            .clamp(1, store::PAGE_MAX)
    }
}

async fn read_messages(
    State(app): S,
    Caller(u): Caller,
    Id(id): Id,
    Q(q): Q<PageQuery>,
) -> ApiResult<Response> {
    Ok(axum::Json(app.store().messages(u.id, id, q.limit(), q.before)?).into_response())
}

/// Send through the store and push `message.new` to every member.
pub(crate) fn send_and_push(
    app: &App,
    sender: i64,
    conv: i64,
    req: &SendMessage,
    kind: &MessageKind,
    image: Option<(&str, &[u8])>,
) -> ApiResult<Message> {
    let (msg, members) = app
        .store()
        .send(app.clock.now(), sender, conv, req, kind, image)?;
    app.hub.push(
        &members,
        &WsEvent::MessageNew {
            conversation_id: conv,
            message: msg.clone(),
        },
    );
    Ok(msg)
}

async fn send_message(
    State(app): S,
    Caller(u): Caller,
    Id(id): Id,
    JsonBody(req): JsonBody<SendMessage>,
) -> ApiResult<(StatusCode, J<Message>)> {
    let msg = send_and_push(&app, u.id, id, &req, &MessageKind::Text, None)?;
    Ok((StatusCode::CREATED, axum::Json(msg)))
}

pub(crate) fn send_image_as(
    app: &App,
    sender: i64,
    conv: i64,
    req: &SendImage,
) -> ApiResult<Message> {
    let bytes = Store::decode_image(&req.data_base64, &req.mime)?;
    let msg = SendMessage {
        body: req.caption.clone(),
        mentions: vec![],
    };
    send_and_push(
        app,
        sender,
        conv,
        &msg,
        &MessageKind::Image,
        Some((&req.mime, &bytes)),
    )
}

async fn send_image(
    State(app): S,
    Caller(u): Caller,
    Id(id): Id,
    JsonBody(req): JsonBody<SendImage>,
) -> ApiResult<(StatusCode, J<Message>)> {
    let msg = send_image_as(&app, u.id, id, &req)?;
    Ok((StatusCode::CREATED, axum::Json(msg)))
}

// ---------------------------------------------------------------- presence, usage

pub(crate) fn beat(
    app: &App,
    user: i64,
    conversation: Option<i64>,
) -> ApiResult<HeartbeatResponse> {
    app.store().heartbeat(app.clock.now(), user, conversation)?;
    Ok(HeartbeatResponse {
        next_beat_sec: limits::NEXT_BEAT_SECS,
    })
}

async fn heartbeat(
    State(app): S,
    Caller(u): Caller,
    OptJson(req): OptJson<HeartbeatRequest>,
) -> ApiResult<J<HeartbeatResponse>> {
    beat(&app, u.id, req.conversation_id).map(axum::Json)
}

async fn presence(State(app): S, Caller(_): Caller) -> ApiResult<Response> {
    Ok(axum::Json(app.store().presence(app.clock.now())?).into_response())
}

async fn usage(
    State(app): S,
    Caller(u): Caller,
    JsonBody(req): JsonBody<UsageReport>,
) -> ApiResult<J<UsageReport>> {
    Ok(axum::Json(app.store().usage(
        app.clock.now(),
        u.id,
        &req,
    )?))
}

// ---------------------------------------------------------------- cards

#[derive(Debug, Deserialize, Default)]
struct CardQuery {
    /// `me` (default), `any`, or a user id.
    assignee: Option<String>,
    status: Option<CardStatus>,
    parent_id: Option<i64>,
    conversation_id: Option<i64>,
    id: Option<i64>,
}

async fn list_cards(State(app): S, Caller(u): Caller, Q(q): Q<CardQuery>) -> ApiResult<Response> {
    let assignee_id = match q.assignee.as_deref() {
        None | Some("me") => Some(u.id),
        Some("any") => None,
        Some(other) => Some(
            other
                .parse::<i64>()
                .map_err(|_| ApiError::bad_request("assignee is `me`, `any` or a user id"))?,
        ),
    };
    let f = CardFilter {
        assignee_id,
        status: q.status,
        parent_id: q.parent_id,
        conversation_id: q.conversation_id,
        id: q.id,
    };
    Ok(axum::Json(app.store().list_cards(u.id, &f)?).into_response())
}

async fn create_card(
    State(app): S,
    Caller(u): Caller,
    p: TaskPath,
    JsonBody(task): JsonBody<AssignTask>,
) -> ApiResult<Response> {
    let req = AdminCreateCard {
        conversation_id: p.cid,
        task,
        creator_id: None,
    };
    let card = app.store().create_card(app.clock.now(), Some(u.id), &req)?;
    crate::admin::notify_assignee(&app, &card, Some(u.id));
    Ok((StatusCode::CREATED, axum::Json(card)).into_response())
}

async fn get_card(State(app): S, Caller(u): Caller, p: TaskPath) -> ApiResult<Response> {
    Ok(axum::Json(app.store().card_in(u.id, p.cid, p.card()?)?).into_response())
}

async fn progress(
    State(app): S,
    Caller(u): Caller,
    p: TaskPath,
    JsonBody(req): JsonBody<TaskProgress>,
) -> ApiResult<Response> {
    let card = app
        .store()
        .progress(app.clock.now(), u.id, p.cid, p.card()?, &req)?;
    Ok(axum::Json(card).into_response())
}

async fn lease(State(app): S, Caller(u): Caller, p: TaskPath) -> ApiResult<Response> {
    Ok(axum::Json(app.store().renew(app.clock.now(), u.id, p.cid, p.card()?)?).into_response())
}

async fn finish(
    State(app): S,
    Caller(u): Caller,
    p: TaskPath,
    JsonBody(req): JsonBody<FinishTask>,
) -> ApiResult<Response> {
    let answer = app
        .store()
        .finish(app.clock.now(), u.id, p.cid, p.card()?, &req)?;
    Ok(axum::Json(answer).into_response())
}

// ---------------------------------------------------------------- windows

async fn list_windows(State(app): S, Caller(u): Caller) -> ApiResult<Response> {
    Ok(axum::Json(app.store().windows(app.clock.now(), u.id)?).into_response())
}

async fn register_window(
    State(app): S,
    Caller(u): Caller,
    JsonBody(req): JsonBody<RegisterWindow>,
) -> ApiResult<Response> {
    let w = app.store().register_window(app.clock.now(), u.id, &req)?;
    Ok((StatusCode::CREATED, axum::Json(w)).into_response())
}

async fn sync_window(
    State(app): S,
    Caller(u): Caller,
    StrId(id): StrId,
    OptJson(_): OptJson<serde_json::Value>,
) -> ApiResult<Response> {
    Ok(axum::Json(app.store().sync_window(app.clock.now(), u.id, &id)?).into_response())
}

async fn revoke_window(State(app): S, Caller(u): Caller, StrId(id): StrId) -> ApiResult<Response> {
    Ok(axum::Json(app.store().revoke_window(app.clock.now(), u.id, &id)?).into_response())
}

// ---------------------------------------------------------------- provisioning

async fn redeem(State(app): S, JsonBody(req): JsonBody<RedeemRequest>) -> ApiResult<Response> {
    if hoop_core::home::Home::new(".", &req.name).is_err() {
        return Err(ApiError::bad_request(format!(
            "invalid home name {:?}: letters, digits, '-', '_' and '.'",
            req.name
        )));
    }
    let resp = app
        .store()
        .redeem(app.clock.now(), &req, app.public_base.as_deref())?;
    Ok(axum::Json(resp).into_response())
}

// ---------------------------------------------------------------- reinforcement

async fn reinforce_apply(
    State(app): S,
    Caller(u): Caller,
    JsonBody(req): JsonBody<ReinforceApply>,
) -> ApiResult<Response> {
    let a = app.store().reinforce_apply(app.clock.now(), u.id, &req)?;
    Ok((StatusCode::CREATED, axum::Json(a)).into_response())
}

async fn rotate_reinforce_key(
    State(app): S,
    Caller(u): Caller,
    Id(agent): Id,
    OptJson(_): OptJson<serde_json::Value>,
) -> ApiResult<Response> {
    let (key, expires_at) = app
        .store()
        .rotate_reinforce_key(app.clock.now(), u.id, agent)?;
    let claude_add = hoop_api::mcp::claude_add_line(app.public_base.as_deref(), &key);
    Ok(axum::Json(ReinforceKey {
        agent_id: agent,
        key,
        expires_at,
        claude_add,
    })
    .into_response())
}

async fn revoke_reinforce_key(
    State(app): S,
    Caller(u): Caller,
    Id(agent): Id,
) -> ApiResult<Response> {
    let r = app
        .store()
        .revoke_reinforce_key(app.clock.now(), u.id, agent)?;
    Ok(axum::Json(r).into_response())
}
