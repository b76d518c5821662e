//! The heartbeat task: beat, then wait what the backend asked
//! (`next_beat_sec`), never less than 15 s. Failures are counted and logged
//! only on the 1st, 10th and 100th in a row, so a long outage does not flood
//! the log.

use std::sync::Arc;

use hoop_api::rest::Client;

use crate::constants::HEARTBEAT_RETRY;
use crate::policy::{heartbeat_delay, log_heartbeat_failure};

pub async fn run(client: Arc<Client>) {
    let mut failures: u64 = 0;
    loop {
        let wait = match client.heartbeat().await {
            Ok(r) => {
                if failures > 0 {
                    tracing::info!(after = failures, "heartbeat recovered");
                }
                failures = 0;
                heartbeat_delay(r.next_beat_sec)
            }
            Err(e) => {
                failures += 1;
                if log_heartbeat_failure(failures) {
                    tracing::warn!(consecutive = failures, error = %e, "heartbeat failed");
                }
                HEARTBEAT_RETRY
            }
        };
        tokio::time::sleep(wait).await;
    }
}
