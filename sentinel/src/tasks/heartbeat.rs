//! The heartbeat task: beat, then wait what the backend asked
//! (`next_beat_sec`), never less than 15 s. Failures are counted and logged
//! only on the 1st, 10th and 100th in a row, so a long outage does not flood
//! the log.

use std::sync::Arc;

use hoop_api::rest::Client;

use crate::config::Timings;
use crate::policy::{heartbeat_delay, log_heartbeat_failure};

/// `timings`: the wait after a failed beat, and an optional fixed cadence
/// that replaces the backend's (tests only).
pub async fn run(client: Arc<Client>, timings: Timings) {
    let mut failures: u64 = 0;
    loop {
        let wait = match client.heartbeat().await {
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
