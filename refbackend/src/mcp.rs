//! The MCP endpoint (`routes::MCP`): Streamable HTTP, stateless, POST only,
//! one JSON response per request (no streaming), as production serves it.
//!
//! Order of checks, each before the next costs anything: an `Origin`, when
//! present, must be allow-listed (403); a bearer is required (every 401
//! carries `WWW-Authenticate`); a JWT-shaped bearer is refused (401) before any lookup; the key
//! is looked up by its SHA-256; the key's 300 calls/min window (429,
//! `Retry-After: 60`, JSON-RPC -32000); the body (cap 160 MiB); JSON-RPC.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use hoop_api::admin::AdminCreateCard;
use hoop_api::types::mcp::{self as t, *};
use hoop_api::types::{
    AssignTask, FinishTask, MessageKind, RegisterWindow, SendImage, SendMessage, TaskProgress, User,
};
use hoop_core::gates::{self, SendKind};
use hoop_core::limits;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::App;
use crate::error::{ApiError, ApiResult};
use crate::extract::body_bytes;
use crate::store::{CardFilter, gate_error, key_hash};

use crate::constants::MCP_PROTOCOL_VERSION as PROTOCOL_VERSION;
/// JSON-RPC codes (JSON-RPC 2.0 §5.1).
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

fn rpc_error(
    status: StatusCode,
    id: Value,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> Response {
    let mut err = json!({"code": code, "message": message});
    if let Some(d) = data {
        err["data"] = d;
    }
    (
        status,
        axum::Json(json!({"jsonrpc": "2.0", "id": id, "error": err})),
    )
        .into_response()
}

fn rpc_result(id: Value, result: Value) -> Response {
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// Origin first (403), then everything else; every 401 carries the
/// `WWW-Authenticate` challenge.
pub async fn handle(State(app): State<Arc<App>>, req: Request) -> Response {
    let origin = req
        .headers()
        .get(axum::http::header::ORIGIN)
        .map(|v| v.to_str().unwrap_or(""));
    if !crate::rules::origin_allowed(origin, crate::constants::MCP_ALLOWED_ORIGIN_HOSTS) {
        return ApiError::forbidden("this Origin is not allowed on /mcp").into_response();
    }
    let mut resp = handle_authorized(app, req).await;
    if resp.status() == StatusCode::UNAUTHORIZED {
        resp.headers_mut().insert(
            axum::http::header::WWW_AUTHENTICATE,
            HeaderValue::from_static(crate::constants::MCP_WWW_AUTHENTICATE),
        );
    }
    resp
}

async fn handle_authorized(app: Arc<App>, req: Request) -> Response {
    let bearer = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|s| s.trim().to_string());
    let Some(key) = bearer else {
        return ApiError::unauthorized("missing Authorization: Bearer hoopmcp_…").into_response();
    };
    // Before any lookup: a JWT is never an MCP key.
    if crate::jwt::is_jwt_shaped(&key) {
        return ApiError::unauthorized(
            "a login token (JWT) is not accepted on /mcp; use an MCP key (hoopmcp_…)",
        )
        .into_response();
    }
    if !key.starts_with(hoop_api::headers::MCP_KEY_PREFIX) {
        return ApiError::unauthorized("not an MCP key (hoopmcp_…)").into_response();
    }
    let hash = key_hash(&key);
    let now = app.clock.now();
    let user = match app.store().mcp_user(now, &hash) {
        Ok(Some(u)) => u,
        Ok(None) => {
            return ApiError::unauthorized(
                "MCP key refused: unknown, revoked or expired, or its account is inactive",
            )
            .into_response();
        }
        Err(e) => return e.into_response(),
    };
    if app.store().mcp_rate(&hash, now).is_err() {
        let mut resp = rpc_error(
            StatusCode::TOO_MANY_REQUESTS,
            Value::Null,
            limits::MCP_RATE_LIMIT_RPC_CODE,
            "rate limited: at most 300 calls per minute per key",
            Some(rate_limited_data()),
        );
        if let Ok(v) = HeaderValue::from_str(&limits::MCP_RETRY_AFTER_SECS.to_string()) {
            resp.headers_mut().insert(hoop_api::headers::RETRY_AFTER, v);
        }
        return resp;
    }
    let bytes = match body_bytes(req, &app, limits::MCP_BODY_CAP_BYTES).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let msg: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                Value::Null,
                PARSE_ERROR,
                &format!("parse error: {e}"),
                None,
            );
        }
    };
    let Some(obj) = msg.as_object() else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            INVALID_REQUEST,
            "one JSON-RPC request object per POST (no batches)",
            None,
        );
    };
    let method = obj.get("method").and_then(Value::as_str);
    let id = obj.get("id").cloned();
    let (Some(method), Some(_)) = (method, obj.get("jsonrpc")) else {
        // A response or garbage: nothing to answer but an error.
        return rpc_error(
            StatusCode::BAD_REQUEST,
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            "not a JSON-RPC 2.0 request",
            None,
        );
    };
    let Some(id) = id else {
        // A notification (e.g. notifications/initialized): accepted, no body.
        return StatusCode::ACCEPTED.into_response();
    };
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    match method {
        "initialize" => {
            let version = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or(PROTOCOL_VERSION);
            rpc_result(
                id,
                json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": {"name": "hoop-refbackend", "version": env!("CARGO_PKG_VERSION")},
                }),
            )
        }
        "ping" => rpc_result(id, json!({})),
        "tools/list" => rpc_result(id, json!({"tools": tool_list()})),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or("");
            if !TOOLS.iter().any(|(n, _, _)| *n == name) {
                return rpc_error(
                    StatusCode::OK,
                    id,
                    INVALID_PARAMS,
                    &format!("unknown tool {name:?}"),
                    None,
                );
            }
            let args = params.get("arguments").cloned().unwrap_or(json!({}));
            let result = match call_tool(&app, &user, name, args) {
                Ok(v) => json!({
                    "content": [{"type": "text", "text": v.to_string()}],
                    "structuredContent": v,
                    "isError": false,
                }),
                // A refusal is production's text (seed 002 L51: "HOOP 后端拒绝
                // (<status>):<words>", cut at 300 runes), no structured body.
                Err(e) => json!({
                    "content": [{
                        "type": "text",
                        "text": hoop_api::mcp::refusal_text(e.status.as_u16(), &e.body),
                    }],
                    "isError": true,
                }),
            };
            rpc_result(id, result)
        }
        other => rpc_error(
            StatusCode::OK,
            id,
            METHOD_NOT_FOUND,
            &format!("unknown method {other:?}"),
            None,
        ),
    }
}

fn args<T: DeserializeOwned>(v: Value) -> ApiResult<T> {
    let v = if v.is_null() { json!({}) } else { v };
    serde_json::from_value(v).map_err(|e| ApiError::bad_request(format!("bad arguments: {e}")))
}

fn to_value<T: serde::Serialize>(v: T) -> ApiResult<Value> {
    serde_json::to_value(v).map_err(|_| ApiError::internal())
}

#[derive(Deserialize)]
struct ConvArgs {
    conversation_id: i64,
}

fn call_tool(app: &App, user: &User, name: &str, a: Value) -> ApiResult<Value> {
    let now = app.clock.now();
    match name {
        t::CHAT_LIST => to_value(ChatList {
            conversations: app.store().conversations_of(user.id)?,
        }),
        t::CHAT_READ => {
            let a: ChatReadArgs = args(a)?;
            let limit = a
                .limit
                .unwrap_or(limits::CHAT_READ_DEFAULT)
                .clamp(limits::CHAT_READ_MIN, limits::CHAT_READ_MAX);
            let page = app
                .store()
                .messages(user.id, a.conversation_id, limit, a.before)?;
            to_value(ChatRead {
                conversation_id: a.conversation_id,
                count: page.messages.len(),
                order: "newest_first".into(),
                oldest_created_at: page.messages.last().map(|m| m.created_at),
                truncated: page.has_more,
                messages: page.messages,
            })
        }
        t::CHAT_MEMBERS => {
            let a: ConvArgs = args(a)?;
            to_value(ChatMembers {
                conversation_id: a.conversation_id,
                members: app.store().members(user.id, a.conversation_id)?,
            })
        }
        t::CHAT_SEND_TEXT => {
            let a: ChatSendTextArgs = args(a)?;
            // Production's two gates live here, not on the REST route:
            // markdown first, then the gap check (only with
            // `expect_latest_id`); `force` skips both.
            if !a.force {
                gates::check_body(&a.body, SendKind::Normal).map_err(gate_error)?;
                if let Some(expect) = a.expect_latest_id {
                    app.store().gap_check(user.id, a.conversation_id, expect)?;
                }
            }
            let req = SendMessage {
                body: a.body,
                mentions: a.mentions,
            };
            to_value(crate::ops::send_and_push(
                app,
                user.id,
                a.conversation_id,
                &req,
                &MessageKind::Text,
                None,
            )?)
        }
        t::CHAT_SEND_IMAGE => {
            let a: ChatSendImageArgs = args(a)?;
            // The caption passes the markdown gate; there is no `force`.
            if !a.caption.is_empty() {
                gates::check_body(&a.caption, SendKind::Normal).map_err(gate_error)?;
            }
            let req = SendImage {
                data_base64: a.data_base64,
                mime: a.mime,
                caption: a.caption,
            };
            to_value(crate::ops::send_image_as(
                app,
                user.id,
                a.conversation_id,
                &req,
            )?)
        }
        t::WORK_TASKS => {
            let a: WorkTasksArgs = args(a)?;
            let f = CardFilter {
                assignee_id: Some(user.id),
                status: a.status,
                ..CardFilter::default()
            };
            to_value(WorkTasks {
                cards: app.store().list_cards(user.id, &f)?,
            })
        }
        t::WORK_BEAT => to_value(crate::ops::beat(app, user.id, None, None)?),
        t::WORK_TASK_START => {
            // Production: assign (one transaction), then claim (another). A
            // refused claim leaves the queued card on the board and the
            // error carries its `task_id`; nothing is rolled back.
            let a: WorkTaskStartArgs = args(a)?;
            let req = AdminCreateCard {
                conversation_id: a.conversation_id,
                task: AssignTask {
                    title: a.title,
                    assignee_id: Some(user.id),
                    parent_id: a.parent_id,
                    message_id: a.message_id,
                },
                creator_id: None,
            };
            let card = app.store().create_card(now, Some(user.id), &req)?;
            let claimed = app
                .store()
                .claim(now, user.id, card.conversation_id, card.id)
                .map_err(|mut e| {
                    e.body.error.task_id = Some(card.id);
                    e
                })?;
            to_value(claimed)
        }
        t::WORK_TASK_TAKE => {
            let a: TaskIdArgs = args(a)?;
            let mut store = app.store();
            let cid = store.card(user.id, a.task_id)?.conversation_id;
            to_value(store.claim(now, user.id, cid, a.task_id)?)
        }
        t::WORK_TASK_PROGRESS => {
            let a: WorkTaskProgressArgs = args(a)?;
            let mut store = app.store();
            let cid = store.card(user.id, a.task_id)?.conversation_id;
            let req = TaskProgress {
                claim: false,
                line: Some(a.line),
            };
            to_value(store.progress(now, user.id, cid, a.task_id, &req)?)
        }
        t::WORK_TASK_LEASE => {
            let a: TaskIdArgs = args(a)?;
            let mut store = app.store();
            let cid = store.card(user.id, a.task_id)?.conversation_id;
            to_value(store.renew(now, user.id, cid, a.task_id)?)
        }
        t::WORK_TASK_FINISH => {
            let a: WorkTaskFinishArgs = args(a)?;
            let req = FinishTask {
                status: a.status,
                result: a.result,
                result_message_id: a.result_message_id,
                error: a.error,
            };
            let mut store = app.store();
            let cid = store.card(user.id, a.task_id)?.conversation_id;
            to_value(store.finish(now, user.id, cid, a.task_id, &req)?)
        }
        t::WINDOW_REGISTER => {
            let a: RegisterWindow = args(a)?;
            to_value(app.store().register_window(now, user.id, &a)?)
        }
        t::WINDOW_SYNC => {
            let a: WindowSyncArgs = args(a)?;
            to_value(app.store().sync_window(now, user.id, &a.window_id)?)
        }
        _ => Err(ApiError::bad_request(format!("unknown tool {name:?}"))),
    }
}

/// (name, description, input schema properties + required).
type ToolSpec = (&'static str, &'static str, fn() -> Value);

const TOOLS: &[ToolSpec] = &[
    (t::CHAT_LIST, "Conversations you are a member of.", || {
        schema(json!({}), &[])
    }),
    (
        t::CHAT_READ,
        "Messages of a conversation, newest first (limit 1-50, default 20; before pages back; with_deleted defaults to true).",
        || {
            schema(
                json!({"conversation_id": int(), "limit": int(), "before": int(), "with_deleted": {"type": "boolean"}}),
                &["conversation_id"],
            )
        },
    ),
    (t::CHAT_MEMBERS, "Members of a conversation.", || {
        schema(json!({"conversation_id": int()}), &["conversation_id"])
    }),
    (
        t::CHAT_SEND_TEXT,
        "Send plain text (no markdown). expect_latest_id: newest id you have read (checked against the newest 30); force: skip the markdown and unread checks.",
        || {
            schema(
                json!({
                    "conversation_id": int(), "body": {"type": "string"},
                    "mentions": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"const": "everyone"}]}},
                    "expect_latest_id": int(), "force": {"type": "boolean"}
                }),
                &["conversation_id", "body"],
            )
        },
    ),
    (
        t::CHAT_SEND_IMAGE,
        "Send an image (base64) with an optional caption.",
        || {
            schema(
                json!({
                    "conversation_id": int(), "data_base64": {"type": "string"}, "mime": {"type": "string"},
                    "caption": {"type": "string"}
                }),
                &["conversation_id", "data_base64", "mime"],
            )
        },
    ),
    (t::WORK_TASKS, "Your work cards, newest first.", || {
        schema(
            json!({"status": {"enum": ["queued", "working", "done", "failed", "cancelled"]}}),
            &[],
        )
    }),
    (t::WORK_BEAT, "Heartbeat; answers next_beat_sec.", || {
        schema(json!({}), &[])
    }),
    (
        t::WORK_TASK_START,
        "Put work on a card in a room and claim it: assigned to you, then claimed. If the claim is refused the card stays queued and the error carries its task_id: finish it.",
        || {
            schema(
                json!({"conversation_id": int(), "title": {"type": "string"}, "message_id": int(), "parent_id": int()}),
                &["conversation_id", "title"],
            )
        },
    ),
    (t::WORK_TASK_TAKE, "Claim a queued card.", || {
        schema(json!({"task_id": int()}), &["task_id"])
    }),
    (
        t::WORK_TASK_PROGRESS,
        "A progress line on a working card (extends an existing lease; counts as a heartbeat).",
        || {
            schema(
                json!({"task_id": int(), "line": {"type": "string"}}),
                &["task_id", "line"],
            )
        },
    ),
    (
        t::WORK_TASK_LEASE,
        "Renew the lease of a working card (5 min); renew again after renew_after_sec.",
        || schema(json!({"task_id": int()}), &["task_id"]),
    ),
    (
        t::WORK_TASK_FINISH,
        "Finish a card: done, failed (with error) or cancelled, with its result; live sub-cards are cancelled. A card already finished answers updated:false.",
        || {
            schema(
                json!({"task_id": int(), "status": {"enum": ["done", "failed", "cancelled"]}, "result": {"type": "string"}, "result_message_id": int(), "error": {"type": "string"}}),
                &["task_id", "status"],
            )
        },
    ),
    (
        t::WINDOW_REGISTER,
        "Register this interactive window.",
        || {
            schema(
                json!({
                    "installation_id": {"type": "string"}, "machine": {"type": "string"}, "client": {"type": "string"},
                    "native_session_id": {"type": "string"}, "runtime_id": {"type": "string"},
                    "rooms_hint": {"type": "array", "items": {"type": "integer"}}, "fallback_hint": {"type": "boolean"}
                }),
                &[
                    "installation_id",
                    "machine",
                    "client",
                    "native_session_id",
                    "runtime_id",
                ],
            )
        },
    ),
    (
        t::WINDOW_SYNC,
        "Sync a window: which rooms it handles now (mode rooms|fallback|none).",
        || schema(json!({"window_id": {"type": "string"}}), &["window_id"]),
    ),
];

fn int() -> Value {
    json!({"type": "integer"})
}

fn schema(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

fn tool_list() -> Vec<Value> {
    TOOLS
        .iter()
        .map(|(name, desc, s)| json!({"name": name, "description": desc, "inputSchema": s()}))
        .collect()
}

/// The `data` of the MCP 429: the contract error body with the wait.
fn rate_limited_data() -> Value {
    let mut eb = hoop_api::types::ErrorBody::new(
        hoop_api::types::codes::RATE_LIMITED,
        "at most 300 calls per minute per key",
    );
    eb.error.retry_after_sec = Some(limits::MCP_RETRY_AFTER_SECS);
    serde_json::to_value(eb).unwrap_or(Value::Null)
}
