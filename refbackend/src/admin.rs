//! The operator surface (`hoop_api::routes::admin`): not a production route.
//! Every handler requires the admin token. Writes go through the same store
//! operations (and gates) as the users' own requests.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hoop_api::admin::{
    AddMember, AdminCreateCard, ArmFault, ClockAdvance, ClockNow, CreateConversation,
    CreateProvisionKey, CreateUser, CreatedProvisionKey, LoginCode, MintMcpKey, MintedMcpKey,
    PostAs, Push, PushEvent, Pushed, RevokeMcpKeys, SetUserState,
};
use hoop_api::types::WsEvent;

use crate::App;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Admin, Id, JsonBody, OptJson, Q};

type S = State<Arc<App>>;

fn created<T: serde::Serialize>(v: T) -> Response {
    (StatusCode::CREATED, axum::Json(v)).into_response()
}

pub(crate) async fn stats(State(app): S, _: Admin) -> ApiResult<Response> {
    let n = app.requests.load(std::sync::atomic::Ordering::Relaxed);
    Ok(axum::Json(serde_json::json!({"requests": n})).into_response())
}

pub(crate) async fn list_users(State(app): S, _: Admin) -> ApiResult<Response> {
    Ok(axum::Json(app.store().list_users()?).into_response())
}

pub(crate) async fn create_user(
    State(app): S,
    _: Admin,
    JsonBody(req): JsonBody<CreateUser>,
) -> ApiResult<Response> {
    Ok(created(app.store().create_user(app.clock.now(), &req)?))
}

pub(crate) async fn create_conversation(
    State(app): S,
    _: Admin,
    JsonBody(req): JsonBody<CreateConversation>,
) -> ApiResult<Response> {
    Ok(created(
        app.store().create_conversation(app.clock.now(), &req)?,
    ))
}

pub(crate) async fn add_member(
    State(app): S,
    _: Admin,
    Id(conv): Id,
    JsonBody(req): JsonBody<AddMember>,
) -> ApiResult<Response> {
    Ok(axum::Json(app.store().add_member(conv, req.user_id)?).into_response())
}

/// The operator reads any room: the same page as a member's read.
pub(crate) async fn read_room(
    State(app): S,
    _: Admin,
    Id(conv): Id,
    Q(q): Q<crate::ops::PageQuery>,
) -> ApiResult<Response> {
    Ok(axum::Json(app.store().room_page(conv, q.limit(), q.before)?).into_response())
}

pub(crate) async fn post_as(
    State(app): S,
    _: Admin,
    Id(conv): Id,
    JsonBody(req): JsonBody<PostAs>,
) -> ApiResult<Response> {
    let msg = crate::ops::send_and_push(&app, req.sender_id, conv, &req.message, &req.kind, None)?;
    Ok(created(msg))
}

/// A person's one-time login code, shown to the operator once.
pub(crate) async fn issue_login_code(
    State(app): S,
    _: Admin,
    Id(user): Id,
    OptJson(_): OptJson<serde_json::Value>,
) -> ApiResult<Response> {
    let (code, expires_at) = app.store().issue_login_code(app.clock.now(), user)?;
    Ok(created(LoginCode {
        user_id: user,
        code,
        expires_at,
    }))
}

pub(crate) async fn set_user_state(
    State(app): S,
    _: Admin,
    Id(user): Id,
    JsonBody(req): JsonBody<SetUserState>,
) -> ApiResult<Response> {
    Ok(axum::Json(app.store().set_active(user, req.active)?).into_response())
}

pub(crate) async fn mint_mcp_key(
    State(app): S,
    _: Admin,
    JsonBody(req): JsonBody<MintMcpKey>,
) -> ApiResult<Response> {
    let key = app
        .store()
        .mint_mcp_key(app.clock.now(), req.user_id, req.ttl_secs)?;
    let ready_line = hoop_api::mcp::claude_add_line(app.public_base.as_deref(), &key);
    Ok(created(MintedMcpKey {
        user_id: req.user_id,
        key,
        ready_line,
    }))
}

pub(crate) async fn revoke_mcp_keys(
    State(app): S,
    _: Admin,
    JsonBody(req): JsonBody<RevokeMcpKeys>,
) -> ApiResult<Response> {
    let r = app.store().revoke_mcp_keys(app.clock.now(), req.user_id)?;
    Ok(axum::Json(r).into_response())
}

pub(crate) async fn create_provision_key(
    State(app): S,
    _: Admin,
    JsonBody(req): JsonBody<CreateProvisionKey>,
) -> ApiResult<Response> {
    let (key, expires_at) = app.store().create_provision_key(app.clock.now(), &req)?;
    Ok(created(CreatedProvisionKey {
        key,
        kind: req.kind,
        conversation_id: req.conversation_id,
        expires_at,
    }))
}

pub(crate) async fn approve_application(
    State(app): S,
    _: Admin,
    Id(id): Id,
    OptJson(_): OptJson<serde_json::Value>,
) -> ApiResult<Response> {
    Ok(axum::Json(app.store().approve(app.clock.now(), id)?).into_response())
}

pub(crate) async fn arm_fault(
    State(app): S,
    _: Admin,
    JsonBody(req): JsonBody<ArmFault>,
) -> ApiResult<Response> {
    app.store().arm_fault(req.point, req.times);
    Ok(axum::Json(req).into_response())
}

/// Every card of a room (or one card), for `hoop backend card list|show`.
pub(crate) async fn list_cards(
    State(app): S,
    _: Admin,
    axum::extract::Query(f): axum::extract::Query<hoop_api::admin::AdminCardQuery>,
) -> ApiResult<Response> {
    let filter = crate::store::CardFilter {
        conversation_id: f.conversation_id,
        id: f.id,
        ..Default::default()
    };
    Ok(axum::Json(app.store().admin_cards(&filter)?).into_response())
}

pub(crate) async fn create_card(
    State(app): S,
    _: Admin,
    JsonBody(req): JsonBody<AdminCreateCard>,
) -> ApiResult<Response> {
    let card = app.store().create_card(app.clock.now(), None, &req)?;
    crate::ops::notify_assignee(&app, &card, None);
    Ok(created(card))
}

pub(crate) async fn push(
    State(app): S,
    _: Admin,
    JsonBody(req): JsonBody<Push>,
) -> ApiResult<Response> {
    if app.store().user(req.user_id)?.is_none() {
        return Err(ApiError::not_found(format!("no user {}", req.user_id)));
    }
    let ev = match req.event {
        PushEvent::Recheck => WsEvent::TaskRecheck {
            conversation_id: req.conversation_id,
        },
        PushEvent::ProvisionPending => WsEvent::ProvisionPending {},
    };
    let delivered = app.hub.push(&[req.user_id], &ev);
    Ok(axum::Json(Pushed { delivered }).into_response())
}

pub(crate) async fn advance_clock(
    State(app): S,
    _: Admin,
    JsonBody(req): JsonBody<ClockAdvance>,
) -> ApiResult<Response> {
    let now = app
        .clock
        .try_advance(req.secs)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(axum::Json(ClockNow { now }).into_response())
}
