//! The idle reaper: a persistent agent process idle for the idle limit
//! (1,800 s by default) is compacted, then stopped, so the next wake starts
//! from a small context instead of paying for a cold cache on a big one.
//! The `/compact` runs under the turn lock, like a turn: a restart that
//! probes the lock must see it held for as long as the agent works.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::agent::Agent;
use crate::lock;

/// Should a process idle for `idle` be reaped under `limit`?
pub fn due(idle: Option<Duration>, limit: Duration) -> bool {
    idle.is_some_and(|i| i >= limit)
}

pub async fn run<A: Agent>(
    agent: Arc<tokio::sync::Mutex<A>>,
    turn_lock: &Path,
    limit: Duration,
    tick: Duration,
) {
    loop {
        tokio::time::sleep(tick).await;
        // A round holds the agent while its turn runs: never reap under it.
        let Ok(mut a) = agent.try_lock() else {
            continue;
        };
        if !due(a.idle_for(), limit) {
            continue;
        }
        // The turn lock, non-blocking: held elsewhere → try again next tick.
        let held = match lock::turn(turn_lock) {
            Ok(l) => l,
            Err(e) => {
                tracing::debug!(error = %e, "turn lock not taken; idle reaping waits");
                continue;
            }
        };
        tracing::info!(
            limit_secs = limit.as_secs(),
            "💤 agent idle: compacting, then stopping it"
        );
        a.compact_and_stop().await;
        drop(held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_table() {
        let l = Duration::from_secs(1800);
        assert!(!due(None, l));
        assert!(!due(Some(Duration::from_secs(1799)), l));
        assert!(due(Some(Duration::from_secs(1800)), l));
    }
}
