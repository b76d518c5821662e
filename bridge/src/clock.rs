//! The bridge's clock: every timing rule (window sync, members cache, down
//! after 2 minutes, receipt alert) reads time through [`Clock`], so tests
//! move it instead of waiting.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Monotonic time since an arbitrary start, and wall time for receipts.
pub trait Clock: Send + Sync {
    /// Monotonic: only differences mean anything.
    fn now(&self) -> Duration;
    /// Unix seconds (stored in the pending store, survives restarts).
    fn unix(&self) -> i64;
}

/// The real clock.
#[derive(Debug, Clone)]
pub struct SystemClock(Instant);

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock(Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
    fn unix(&self) -> i64 {
        hoop_core::clock::now_unix()
    }
}

/// A clock tests move by hand (whole milliseconds).
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn advance(&self, d: Duration) {
        self.0.fetch_add(d.as_millis() as u64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
    fn unix(&self) -> i64 {
        1_700_000_000 + self.now().as_secs() as i64
    }
}
