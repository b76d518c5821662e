//! The server's clock: wall time plus an offset that tests (and the operator
//! route `admin::CLOCK_ADVANCE`) move forward, so JWT expiry, presence, leases
//! and rate windows can be exercised without waiting.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// Cheap to clone; every clone shares the same offset.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    offset: Arc<AtomicI64>,
}

impl Clock {
    pub fn new() -> Clock {
        Clock::default()
    }

    /// Unix seconds as the server sees them.
    pub fn now(&self) -> i64 {
        hoop_core::clock::now_unix() + self.offset.load(Ordering::SeqCst)
    }

    /// Move the clock forward by `secs` (negative values are ignored: time
    /// never runs backwards, or ids and windows would stop making sense).
    pub fn advance(&self, secs: i64) {
        if secs > 0 {
            self.offset.fetch_add(secs, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advance_is_shared_and_monotonic() {
        let c = Clock::new();
        let d = c.clone();
        let t0 = c.now();
        d.advance(600);
        assert!(c.now() >= t0 + 600);
        let t1 = c.now();
        c.advance(-1000);
        assert!(c.now() >= t1);
    }
}
