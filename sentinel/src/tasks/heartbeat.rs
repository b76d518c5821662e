//! The heartbeat task: beat, then wait what the backend asked
//! (`next_beat_sec`), never less than 15 s. Each beat says whether a turn is
//! running (`working`) or not (`idle`): production's heartbeats report the
//! idle state (seed 002 L57, L19 step 7). Failures are counted and logged
//! only on the 1st, 10th and 100th in a row, so a long outage does not flood
//! the log.

use std::sync::Arc;

use hoop_api::rest::Client;
use hoop_api::types::{AgentState, HeartbeatRequest};

use crate::config::Timings;
use crate::policy::{heartbeat_delay, log_heartbeat_failure};

/// What a beat reports: `working` while a turn runs, else `idle`.
pub fn beat_state(turn_running: bool) -> AgentState {
    if turn_running {
        AgentState::Working
    } else {
        AgentState::Idle
    }
}

/// The beat's body for the moment `turn_running` describes.
pub fn beat_request(turn_running: bool) -> HeartbeatRequest {
    HeartbeatRequest {
        conversation_id: None,
        state: Some(beat_state(turn_running)),
    }
}

/// `timings`: the wait after a failed beat, and an optional fixed cadence
/// that replaces the backend's (tests only). `turn_running` is asked at
/// each beat.
pub async fn run(client: Arc<Client>, timings: Timings, turn_running: impl Fn() -> bool) {
    let mut failures: u64 = 0;
    loop {
        let wait = match client.beat(&beat_request(turn_running())).await {
            Ok(r) => {
                if failures > 0 {
                    tracing::info!(after = failures, "heartbeat recovered");
                }
                failures = 0;
                timings
                    .heartbeat_every
                    .unwrap_or_else(|| heartbeat_delay(r.next_beat_sec))
            }
            Err(e) => {
                failures += 1;
                if log_heartbeat_failure(failures) {
                    tracing::warn!(consecutive = failures, error = %e, "heartbeat failed");
                }
                timings.heartbeat_retry
            }
        };
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_beat_says_working_only_while_a_turn_runs() {
        for (running, want) in [
            (true, r#"{"state":"working"}"#),
            (false, r#"{"state":"idle"}"#),
        ] {
            assert_eq!(
                serde_json::to_string(&beat_request(running)).unwrap(),
                want,
                "{running}"
            );
        }
    }
}
