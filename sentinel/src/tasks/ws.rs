//! The WebSocket task: connect with auth (logging in again on every
//! connect), turn events into kicks for the cycle, and reconnect with a
//! backoff of 1 s doubling to 60 s, reset only by a connection that stayed
//! up (`policy::backoff_after_drop`). The account's own messages are dropped
//! here: the daemon never wakes for what it said itself.

use std::sync::Arc;
use std::time::Duration;

use hoop_api::rest::Client;
use hoop_api::types::{UserId, WsEvent};
use hoop_api::ws;
use tokio::sync::mpsc::UnboundedSender;

use super::Kick;
use crate::config::Timings;
use crate::policy::{backoff_after_drop, ws_backoff};
use crate::state::StatusBoard;

/// What an event means for the cycle.
pub fn kick_for(me: UserId, ev: &WsEvent) -> Option<Kick> {
    match ev {
        WsEvent::MessageNew {
            conversation_id,
            message,
        } => (message.sender_id != me).then_some(Kick::Conversation(*conversation_id)),
        WsEvent::TaskRecheck { .. } => Some(Kick::All),
        WsEvent::Hello { .. } | WsEvent::ProvisionPending {} | WsEvent::Unknown => None,
    }
}

/// Run forever (until the kick receiver is gone).
pub async fn run(
    client: Arc<Client>,
    me: UserId,
    timings: Timings,
    kicks: UnboundedSender<Kick>,
    board: StatusBoard,
) {
    let mut backoff: Option<Duration> = None;
    loop {
        match connect_once(&client).await {
            Ok(mut conn) => {
                let up_since = tokio::time::Instant::now();
                board.update(|s| s.ws_connected = true);
                tracing::info!("🔌 WS connected");
                // Anything may have happened while the socket was down.
                if kicks.send(Kick::All).is_err() {
                    return;
                }
                loop {
                    match conn.next_event().await {
                        Ok(ev) => {
                            let kick = kick_for(me, &ev);
                            log_event(&ev, kick);
                            if let Some(k) = kick
                                && kicks.send(k).is_err()
                            {
                                return;
                            }
                        }
                        Err(e) => {
                            // The status file first: whoever reads the log
                            // line finds the drop already written.
                            board.update(|s| s.ws_connected = false);
                            tracing::warn!(error = %e, "WebSocket lost");
                            break;
                        }
                    }
                }
                backoff = backoff_after_drop(backoff, up_since.elapsed(), timings.ws_stable_after);
            }
            Err(e) => tracing::warn!(error = %e, "WebSocket connect failed"),
        }
        let wait = ws_backoff(&timings, backoff);
        backoff = Some(wait);
        tracing::info!(
            secs = wait.as_secs_f64(),
            "WebSocket reconnect after backoff"
        );
        tokio::time::sleep(wait).await;
        if kicks.is_closed() {
            return;
        }
    }
}

fn log_event(ev: &WsEvent, kick: Option<Kick>) {
    match (ev, kick) {
        (WsEvent::MessageNew { message, .. }, Some(_)) => tracing::info!(
            conversation = message.conversation_id,
            message_id = message.id,
            from = %message.sender_username,
            "🔔 message.new"
        ),
        (WsEvent::MessageNew { message, .. }, None) => {
            tracing::debug!(message_id = message.id, "own message dropped")
        }
        (WsEvent::TaskRecheck { .. }, _) => tracing::info!("🔔 workroom.task.recheck: full pull"),
        (other, _) => tracing::debug!(event = ?other, "event ignored"),
    }
}

async fn connect_once(client: &Client) -> Result<ws::WsConnection, ws::WsError> {
    // Log in again on every (re)connect: a token that outlived a backend
    // restart or a revocation must not be reused.
    client.login().await?;
    tracing::debug!("logged in again for the WebSocket");
    ws::connect(client).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use hoop_api::types::{Message, MessageKind};

    fn new_msg(sender: i64) -> WsEvent {
        WsEvent::MessageNew {
            conversation_id: 3,
            message: Message {
                id: 1,
                conversation_id: 3,
                sender_id: sender,
                sender_username: "x".into(),
                body: "b".into(),
                mentions: vec![],
                kind: MessageKind::Text,
                created_at: 0,
            },
        }
    }

    #[test]
    fn events_table() {
        let cases = [
            (new_msg(1), Some(Kick::Conversation(3))),
            (new_msg(7), None),
            (
                WsEvent::TaskRecheck {
                    conversation_id: None,
                },
                Some(Kick::All),
            ),
            (WsEvent::Hello { user_id: 7 }, None),
            (WsEvent::ProvisionPending {}, None),
        ];
        for (ev, want) in cases {
            assert_eq!(kick_for(7, &ev), want, "{ev:?}");
        }
    }
}
