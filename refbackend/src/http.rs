//! The REST handlers. Handlers are thin: extract, call the
//! store under its lock, push WebSocket events after the commit, answer JSON.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hoop_api::admin::AdminCreateCard;
use hoop_api::types::{
    AssignTask, CardStatus, FinishTask, HeartbeatRequest, HeartbeatResponse, LoginRequest,
    LoginResponse, Message, MessageKind, RedeemRequest, RegisterWindow, ReinforceApply,
    ReinforceKey, SendImage, SendMessage, TaskProgress, UsageReport, User,
};
use hoop_core::limits;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use crate::App;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, Id, JsonBody, OptJson, PreAuthJson, Q, StrId, TaskPath};
use crate::jwt::{self, Claims};
use crate::ops;
use crate::store::CardFilter;

type S = State<Arc<App>>;
type J<T> = axum::Json<T>;

// ---------------------------------------------------------------- auth

pub(crate) async fn login(
    State(app): S,
    headers: HeaderMap,
    PreAuthJson(req): PreAuthJson<LoginRequest>,
) -> ApiResult<J<LoginResponse>> {
    // One answer for every refusal, as production: an unsatisfied agent
    // gate simply makes the fixed code stop working (an ordinary one-time
    // code would be expected). Who takes the fixed code at all is
    // `rules::fixed_code_login`; a person takes the one-time code the
    // operator issued (`Store::login_user`).
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
    let now = app.clock.now();
    let user = app
        .store()
        .login_user(now, &req.email, &req.code)?
        .ok_or_else(wrong)?;
    let exp = now + limits::JWT_LIFETIME.as_secs() as i64;
    let token = jwt::sign(
        &app.jwt,
        &Claims {
            sub: user.id,
            iat: now,
            exp,
            nbf: None,
        },
    );
    Ok(axum::Json(LoginResponse {
        token,
        expires_at: exp,
        user,
    }))
}

pub(crate) async fn me(Caller(u): Caller) -> J<User> {
    axum::Json(u)
}

// ---------------------------------------------------------------- conversations

pub(crate) async fn conversations(State(app): S, Caller(u): Caller) -> ApiResult<Response> {
    Ok(axum::Json(app.store().conversations_of(u.id)?).into_response())
}

pub(crate) async fn members(State(app): S, Caller(u): Caller, Id(id): Id) -> ApiResult<Response> {
    Ok(axum::Json(app.store().members(u.id, id)?).into_response())
}

pub(crate) async fn read_messages(
    State(app): S,
    Caller(u): Caller,
    Id(id): Id,
    Q(q): Q<ops::PageQuery>,
) -> ApiResult<Response> {
    Ok(axum::Json(app.store().messages(u.id, id, q.limit(), q.before)?).into_response())
}

pub(crate) async fn send_message(
    State(app): S,
    Caller(u): Caller,
    Id(id): Id,
    JsonBody(req): JsonBody<SendMessage>,
) -> ApiResult<(StatusCode, J<Message>)> {
    let msg = ops::send_and_push(&app, u.id, id, &req, &MessageKind::Text, None)?;
    Ok((StatusCode::CREATED, axum::Json(msg)))
}

pub(crate) async fn send_image(
    State(app): S,
    Caller(u): Caller,
    Id(id): Id,
    JsonBody(req): JsonBody<SendImage>,
) -> ApiResult<(StatusCode, J<Message>)> {
    let msg = ops::send_image_as(&app, u.id, id, &req)?;
    Ok((StatusCode::CREATED, axum::Json(msg)))
}

// ---------------------------------------------------------------- presence, usage

pub(crate) async fn heartbeat(
    State(app): S,
    Caller(u): Caller,
    OptJson(req): OptJson<HeartbeatRequest>,
) -> ApiResult<J<HeartbeatResponse>> {
    ops::beat(&app, u.id, req.conversation_id, req.state).map(axum::Json)
}

pub(crate) async fn presence(State(app): S, Caller(_): Caller) -> ApiResult<Response> {
    Ok(axum::Json(app.store().presence(app.clock.now())?).into_response())
}

pub(crate) async fn usage(
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
pub(crate) struct CardQuery {
    /// `me` (default), `any`, or a user id.
    assignee: Option<String>,
    status: Option<CardStatus>,
    parent_id: Option<i64>,
    conversation_id: Option<i64>,
    id: Option<i64>,
}

pub(crate) async fn list_cards(
    State(app): S,
    Caller(u): Caller,
    Q(q): Q<CardQuery>,
) -> ApiResult<Response> {
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

pub(crate) async fn create_card(
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
    ops::notify_assignee(&app, &card, Some(u.id));
    Ok((StatusCode::CREATED, axum::Json(card)).into_response())
}

pub(crate) async fn get_card(State(app): S, Caller(u): Caller, p: TaskPath) -> ApiResult<Response> {
    Ok(axum::Json(app.store().card_in(u.id, p.cid, p.card()?)?).into_response())
}

pub(crate) async fn progress(
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

pub(crate) async fn lease(State(app): S, Caller(u): Caller, p: TaskPath) -> ApiResult<Response> {
    Ok(axum::Json(app.store().renew(app.clock.now(), u.id, p.cid, p.card()?)?).into_response())
}

pub(crate) async fn finish(
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

pub(crate) async fn list_windows(State(app): S, Caller(u): Caller) -> ApiResult<Response> {
    Ok(axum::Json(app.store().windows(app.clock.now(), u.id)?).into_response())
}

pub(crate) async fn register_window(
    State(app): S,
    Caller(u): Caller,
    JsonBody(req): JsonBody<RegisterWindow>,
) -> ApiResult<Response> {
    let w = app.store().register_window(app.clock.now(), u.id, &req)?;
    Ok((StatusCode::CREATED, axum::Json(w)).into_response())
}

pub(crate) async fn sync_window(
    State(app): S,
    Caller(u): Caller,
    StrId(id): StrId,
    OptJson(_): OptJson<serde_json::Value>,
) -> ApiResult<Response> {
    Ok(axum::Json(app.store().sync_window(app.clock.now(), u.id, &id)?).into_response())
}

pub(crate) async fn revoke_window(
    State(app): S,
    Caller(u): Caller,
    StrId(id): StrId,
) -> ApiResult<Response> {
    Ok(axum::Json(app.store().revoke_window(app.clock.now(), u.id, &id)?).into_response())
}

// ---------------------------------------------------------------- provisioning

pub(crate) async fn redeem(
    State(app): S,
    PreAuthJson(req): PreAuthJson<RedeemRequest>,
) -> ApiResult<Response> {
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

pub(crate) async fn reinforce_apply(
    State(app): S,
    Caller(u): Caller,
    JsonBody(req): JsonBody<ReinforceApply>,
) -> ApiResult<Response> {
    let a = app.store().reinforce_apply(app.clock.now(), u.id, &req)?;
    Ok((StatusCode::CREATED, axum::Json(a)).into_response())
}

pub(crate) async fn rotate_reinforce_key(
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

pub(crate) async fn revoke_reinforce_key(
    State(app): S,
    Caller(u): Caller,
    Id(agent): Id,
) -> ApiResult<Response> {
    let r = app
        .store()
        .revoke_reinforce_key(app.clock.now(), u.id, agent)?;
    Ok(axum::Json(r).into_response())
}
