//! The routes: which handler answers which path and method, and the layers
//! every request goes through. Only this module names the handler modules.

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hoop_api::routes as r;
use hoop_api::types::codes;
use hoop_core::limits;

use crate::App;
use crate::error::ApiError;
use crate::{admin, events, http, mcp, rules, ws};

type S = State<Arc<App>>;

pub fn router(app: Arc<App>) -> Router {
    let catch = tower_http::catch_panic::CatchPanicLayer::custom(|_| {
        tracing::error!("a handler panicked");
        ApiError::internal().into_response()
    });
    Router::new()
        .route(r::LOGIN, post(http::login))
        .route(r::ME, get(http::me))
        .route(r::CONVERSATIONS, get(http::conversations))
        .route(r::CONVERSATION_MEMBERS, get(http::members))
        .route(r::CONVERSATION_MESSAGES, get(http::read_messages))
        .route(r::CONVERSATION_TEXT, post(http::send_message))
        .route(r::CONVERSATION_IMAGES, post(http::send_image))
        .route(r::WS, get(ws::upgrade))
        .route(r::HEARTBEAT, post(http::heartbeat))
        .route(r::PRESENCE, get(http::presence))
        .route(r::USAGE, post(http::usage))
        .route(r::TASKS, get(http::list_cards))
        .route(r::WORKROOM_TASKS, post(http::create_card))
        .route(r::WORKROOM_TASK, get(http::get_card))
        .route(r::WORKROOM_TASK_PROGRESS, post(http::progress))
        .route(r::WORKROOM_TASK_LEASE, post(http::lease))
        .route(r::WORKROOM_TASK_FINISH, post(http::finish))
        .route(
            r::WINDOWS,
            get(http::list_windows).post(http::register_window),
        )
        .route(r::WINDOW_SYNC, post(http::sync_window))
        .route(r::WINDOW_REVOKE, post(http::revoke_window))
        .route(r::PROVISION_REDEEM, post(http::redeem))
        .route(r::REINFORCE_APPLICATIONS, post(http::reinforce_apply))
        .route(
            r::REINFORCE_AGENT_KEY,
            post(http::rotate_reinforce_key).delete(http::revoke_reinforce_key),
        )
        .route(
            r::MCP,
            post(mcp::handle).layer(DefaultBodyLimit::max(limits::MCP_BODY_CAP_BYTES)),
        )
        .route(r::EVENTS, get(events::stream))
        .merge(admin_routes())
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limits::REST_BODY_CAP_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            check_host_and_origin,
        ))
        .layer(catch)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            count_request,
        ))
        .with_state(app)
}

/// Every route, REST, WebSocket, events and `/mcp` alike: a `Host` or an
/// `Origin` that is not a name of this server is refused (403) before any
/// handler runs, so a web page the operator visits cannot reach the server
/// through a name that resolves to loopback (DNS rebinding) or from another
/// site.
async fn check_host_and_origin(
    State(app): S,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match host_or_origin_refusal(&app, req.headers()) {
        Some(refused) => refused.into_response(),
        None => next.run(req).await,
    }
}

/// Why `headers` are refused by [`check_host_and_origin`], if they are.
fn host_or_origin_refusal(app: &App, headers: &axum::http::HeaderMap) -> Option<ApiError> {
    let header = |name| headers.get(name).map(|v| v.to_str().unwrap_or(""));
    let allowed = || app.allowed_hosts.join(", ");
    if let Some(host) = header(axum::http::header::HOST)
        && !rules::host_allowed(Some(host), &app.allowed_hosts)
    {
        return Some(ApiError::forbidden(format!(
            "Host {host:?} is not a name of this server ({}); use one of them, or start it \
             with --public-base naming the URL its clients use",
            allowed()
        )));
    }
    let hosts: Vec<&str> = app.allowed_hosts.iter().map(String::as_str).collect();
    if let Some(origin) = header(axum::http::header::ORIGIN)
        && !rules::origin_allowed(Some(origin), &hosts)
    {
        return Some(ApiError::forbidden(format!(
            "Origin {origin:?} is not allowed: only pages served from this server's names ({}) \
             may call it",
            allowed()
        )));
    }
    None
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

/// The operator surface (`hoop_api::routes::admin`).
fn admin_routes() -> Router<Arc<App>> {
    use hoop_api::routes::admin as r;
    Router::new()
        .route(r::USERS, get(admin::list_users).post(admin::create_user))
        .route(r::CONVERSATIONS, post(admin::create_conversation))
        .route(r::CONVERSATION_MEMBERS, post(admin::add_member))
        .route(
            r::CONVERSATION_MESSAGES,
            get(admin::read_room).post(admin::post_as),
        )
        .route(r::USER_STATE, post(admin::set_user_state))
        .route(r::USER_LOGIN_CODE, post(admin::issue_login_code))
        .route(r::MCP_KEYS, post(admin::mint_mcp_key))
        .route(r::MCP_KEYS_REVOKE, post(admin::revoke_mcp_keys))
        .route(r::PROVISION_KEYS, post(admin::create_provision_key))
        .route(r::REINFORCE_APPROVE, post(admin::approve_application))
        .route(r::FAULTS, post(admin::arm_fault))
        .route(r::CARDS, get(admin::list_cards).post(admin::create_card))
        .route(r::PUSH, post(admin::push))
        .route(r::CLOCK_ADVANCE, post(admin::advance_clock))
        .route(r::STATS, get(admin::stats))
}
