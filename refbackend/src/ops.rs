//! What more than one surface does (REST, MCP, the operator's): a store
//! operation plus the WebSocket events it causes. Handlers call these; these
//! call the store and the hub, never a handler.

use hoop_api::types::{HeartbeatResponse, Message, MessageKind, SendImage, SendMessage, WsEvent};
use hoop_core::limits;
use serde::Deserialize;

use crate::App;
use crate::error::ApiResult;
use crate::store::{self, Store};

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

pub(crate) fn beat(
    app: &App,
    user: i64,
    conversation: Option<i64>,
    state: Option<hoop_api::types::AgentState>,
) -> ApiResult<HeartbeatResponse> {
    app.store()
        .heartbeat(app.clock.now(), user, conversation, state)?;
    Ok(HeartbeatResponse {
        next_beat_sec: limits::NEXT_BEAT_SECS,
    })
}

/// A card given to someone else rings their WebSocket with
/// `workroom.task.recheck`, so a sentinel pulls it now instead of at its
/// next alarm.
pub(crate) fn notify_assignee(app: &App, card: &hoop_api::types::Card, creator: Option<i64>) {
    if let Some(a) = card.assignee_id.filter(|a| Some(*a) != creator) {
        app.hub.push(
            &[a],
            &WsEvent::TaskRecheck {
                conversation_id: Some(card.conversation_id),
            },
        );
    }
}
