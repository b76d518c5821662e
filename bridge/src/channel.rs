//! `hoop bridge channel`: a stdio MCP server for Claude Code's channels
//! (≥ 2.1.80). It declares the experimental `claude/channel` capability,
//! pushes every event the watcher rings for as a
//! `notifications/claude/channel` (`params.content` the line's text,
//! `params.meta` a string map of its fields) and offers one tool, `reply`,
//! which sends through `hoop_api::send` — the same gates, gap check against
//! the watermark and unread rendering as `hoop say`.
//!
//! Pure parts: [`notification_params`] (an event as the notification's
//! params) and [`ReplyArgs`]; the rest is the rmcp shell.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hoop_api::send::{self, Payload, Reader, Sent};
use hoop_api::types::{ConversationId, Mention, SendMessage, UserId};
use hoop_api::{McpClient, McpConfig};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomNotification,
    Implementation, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, ServerNotification, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::clock::Clock;
use crate::detect::Event;
use crate::drive::{DriveConfig, drive};
use crate::watch::{KEY_REJECTED, Stop, WatchConfig, Watcher};

/// The experimental capability Claude Code looks for.
pub const CHANNEL_CAPABILITY: &str = "claude/channel";
/// The notification that puts text into the running session.
pub const CHANNEL_METHOD: &str = "notifications/claude/channel";
/// The tool that answers.
pub const REPLY_TOOL: &str = "reply";

/// What the session is told about this server.
pub const INSTRUCTIONS: &str = "Events from the hoop chat arrive as channel messages, one per \
message or card that concerns this window (meta: type, conversation_id, message_id, sender_id). \
Answer in the room with the reply tool (plain text, no markdown). If reply shows unread messages \
instead of sending, read them, then reply again (anyway=true only if you have just read them one \
by one).";

/// An event as `notifications/claude/channel` params: `content` is the
/// line without the bell, `meta` its fields as strings.
pub fn notification_params(e: &Event) -> Value {
    let mut meta = BTreeMap::new();
    meta.insert("type".to_string(), e.kind.as_str().to_string());
    if let Some(k) = e.notice {
        meta.insert("kind".into(), k.to_string());
    }
    for (k, v) in [
        ("conversation_id", e.conversation_id),
        ("message_id", e.message_id),
        ("sender_id", e.sender_id),
    ] {
        if let Some(v) = v {
            meta.insert(k.into(), v.to_string());
        }
    }
    json!({"content": crate::detect::one_line(&e.summary), "meta": meta})
}

/// The `reply` tool's arguments.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ReplyArgs {
    pub conversation_id: ConversationId,
    pub text: String,
    #[serde(default)]
    pub mentions: Vec<Mention>,
    /// "I have just read them one by one".
    #[serde(default)]
    pub anyway: bool,
}

fn reply_schema() -> JsonObject {
    let v = json!({
        "type": "object",
        "properties": {
            "conversation_id": {"type": "integer", "description": "The room (conversation_id from the channel message)."},
            "text": {"type": "string", "description": "Plain text; no markdown."},
            "mentions": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"const": "everyone"}]}},
            "anyway": {"type": "boolean", "description": "Skip the unread check: only when you have just read the unread messages one by one."}
        },
        "required": ["conversation_id", "text"]
    });
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

/// The server: the watcher's events out, replies in.
pub struct Channel {
    cfg: WatchConfig,
    clock: Arc<dyn Clock>,
    poll: Duration,
    sender: McpClient,
    seen_path: PathBuf,
}

impl Channel {
    pub fn new(
        cfg: WatchConfig,
        clock: Arc<dyn Clock>,
        poll: Duration,
        seen_path: PathBuf,
    ) -> Result<Channel, hoop_api::Error> {
        let sender = McpClient::new(McpConfig::new(
            cfg.endpoint.base_url.clone(),
            cfg.endpoint.key.clone(),
        ))?;
        Ok(Channel {
            cfg,
            clock,
            poll,
            sender,
            seen_path,
        })
    }

    fn me(&self) -> UserId {
        self.cfg.me
    }

    async fn reply(&self, a: ReplyArgs) -> CallToolResult {
        let req = send::Request {
            room: a.conversation_id,
            me: self.me(),
            anyway: a.anyway,
            failure: false,
            payload: Payload::Text(SendMessage {
                body: a.text,
                mentions: a.mentions,
            }),
            reader: Reader::Mcp,
        };
        match send::send(&self.sender, &req, &self.seen_path).await {
            Ok(Sent::Ok(m)) if m.sender_id != self.me() => {
                CallToolResult::error(vec![ContentBlock::text(wrong_sender(&m, self.me()))])
            }
            Ok(Sent::Ok(m)) => CallToolResult::success(vec![ContentBlock::text(format!(
                "sent #{} to room {}",
                m.id, m.conversation_id
            ))]),
            Ok(Sent::Gated { shown, reason }) => {
                CallToolResult::error(vec![ContentBlock::text(format!("{shown}{reason}"))])
            }
            Ok(Sent::Unreachable(e)) => CallToolResult::error(vec![ContentBlock::text(format!(
                "the backend could not be reached; NOTHING WAS SENT: {e}"
            ))]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(format!("not sent: {e}"))]),
        }
    }
}

/// A reply that went out under another account: the MCP endpoint sends as
/// the account the machine's key belongs to, not as this window's, and says
/// nothing about it (seed 002 L21: "check sender_id after sending"; L83
/// item 3). The message is out; the window must know it was not its own.
pub fn wrong_sender(m: &hoop_api::types::Message, me: UserId) -> String {
    let who = if m.sender_username.is_empty() {
        format!("user {}", m.sender_id)
    } else {
        format!("@{} (user {})", m.sender_username, m.sender_id)
    };
    format!(
        "sent #{} to room {}, but as {who}, not as this window's account (user {me}): the key \
         this window uses belongs to another account; fix the key (or --me) before replying again",
        m.id, m.conversation_id
    )
}

/// Serve the channel on stdin/stdout until the session closes it.
pub async fn serve_stdio(ch: Channel) -> Result<(), std::io::Error> {
    use rmcp::ServiceExt;
    let running = ch
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

impl ServerHandler for Channel {
    fn get_info(&self) -> ServerConfig {
        let mut caps = ServerCapabilities::builder().enable_tools().build();
        caps.experimental = Some(BTreeMap::from([(
            CHANNEL_CAPABILITY.to_string(),
            JsonObject::new(),
        )]));
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("hoop", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult {
            tools: vec![Tool::new(
                REPLY_TOOL,
                "Send a plain-text message to a hoop room, through the send gates (unread \
                 messages are shown instead of sending).",
                reply_schema(),
            )],
            ..ListToolsResult::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != REPLY_TOOL {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {:?}", request.name),
                None,
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let a: ReplyArgs = match serde_json::from_value(args) {
            Ok(a) => a,
            Err(e) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "bad arguments, nothing sent: {e}"
                ))])
                .into());
            }
        };
        Ok(self.reply(a).await.into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer.clone();
        let cfg = self.cfg.clone();
        let clock = self.clock.clone();
        let poll = self.poll;
        tokio::spawn(async move {
            let mut w = match Watcher::new(cfg, clock) {
                Ok(w) => w,
                Err(e) => {
                    tracing::error!(error = %e, "the channel cannot watch");
                    return;
                }
            };
            let sink_peer = peer.clone();
            let push = move |events: Vec<Event>| {
                let peer = sink_peer.clone();
                async move {
                    for e in &events {
                        let n =
                            CustomNotification::new(CHANNEL_METHOD, Some(notification_params(e)));
                        if peer
                            .send_notification(ServerNotification::CustomNotification(n))
                            .await
                            .is_err()
                        {
                            return false; // the session is gone
                        }
                    }
                    true
                }
            };
            let cfg = DriveConfig { push: true, poll };
            if let Err(Stop::KeyRejected) = drive(&mut w, cfg, push).await {
                let n = CustomNotification::new(
                    CHANNEL_METHOD,
                    Some(notification_params(&Event::notice(
                        "key_rejected",
                        KEY_REJECTED,
                    ))),
                );
                let _ = peer
                    .send_notification(ServerNotification::CustomNotification(n))
                    .await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::Kind;

    #[test]
    fn notification_params_table() {
        let e = Event {
            kind: Kind::Mention,
            summary: "@ann in ops:\nhi".into(),
            conversation_id: Some(3),
            message_id: Some(9),
            sender_id: Some(2),
            notice: None,
        };
        assert_eq!(
            notification_params(&e),
            json!({"content": "@ann in ops: hi", "meta": {"type": "mention",
                "conversation_id": "3", "message_id": "9", "sender_id": "2"}})
        );
        assert_eq!(
            notification_params(&Event::notice("down", "x")),
            json!({"content": "x", "meta": {"type": "notice", "kind": "down"}})
        );
    }

    #[test]
    fn reply_args_are_strict() {
        let a: ReplyArgs = serde_json::from_value(
            json!({"conversation_id": 4, "text": "ok", "mentions": [7, "everyone"]}),
        )
        .unwrap();
        assert_eq!(a.mentions, vec![Mention::User(7), Mention::EVERYONE]);
        assert!(!a.anyway);
        assert!(serde_json::from_value::<ReplyArgs>(json!({"conversation_id": 4})).is_err());
        assert!(
            serde_json::from_value::<ReplyArgs>(
                json!({"conversation_id": 4, "text": "x", "force": true})
            )
            .is_err()
        );
    }
}
