//! The server's clock: wall time plus an offset that tests (and the operator
//! route `admin::CLOCK_ADVANCE`) move forward, so JWT expiry, presence, leases
//! and rate windows can be exercised without waiting.
//!
//! The clock never passes [`CLOCK_MAX_UNIX`]: every time the server derives
//! from "now" (a JWT's expiry, a lease's end, a rate window) is a small sum
//! over it, so bounding "now" keeps all of them far from `i64`'s limits. An
//! advance that would pass the bound is refused and moves nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::constants::CLOCK_MAX_UNIX;

/// Cheap to clone; every clone shares the same offset.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    offset: Arc<AtomicI64>,
}

/// Why a clock move was refused; the clock did not move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    #[error("the clock only moves forward")]
    Backwards,
    #[error("moving the clock by {secs} s would pass {CLOCK_MAX_UNIX} (the year 9999)")]
    PastTheEnd { secs: i64 },
}

/// The offset after moving `offset` by `secs` from wall time `wall`, or why
/// not: negative moves are refused, and so is any move whose sum overflows
/// or ends past [`CLOCK_MAX_UNIX`].
pub fn advanced_offset(wall: i64, offset: i64, secs: i64) -> Result<i64, ClockError> {
    if secs < 0 {
        return Err(ClockError::Backwards);
    }
    let past = ClockError::PastTheEnd { secs };
    let next = offset.checked_add(secs).ok_or(past)?;
    match wall.checked_add(next) {
        Some(now) if now <= CLOCK_MAX_UNIX => Ok(next),
        _ => Err(past),
    }
}

impl Clock {
    pub fn new() -> Clock {
        Clock::default()
    }

    /// Unix seconds as the server sees them.
    pub fn now(&self) -> i64 {
        hoop_core::clock::now_unix().saturating_add(self.offset.load(Ordering::SeqCst))
    }

    /// Move the clock forward by `secs`; answers the new "now". A negative
    /// move, or one past [`CLOCK_MAX_UNIX`], is refused and moves nothing.
    pub fn try_advance(&self, secs: i64) -> Result<i64, ClockError> {
        let wall = hoop_core::clock::now_unix();
        let mut refused = None;
        let updated =
            self.offset.fetch_update(
                Ordering::SeqCst,
                Ordering::SeqCst,
                |off| match advanced_offset(wall, off, secs) {
                    Ok(next) => Some(next),
                    Err(e) => {
                        refused = Some(e);
                        None
                    }
                },
            );
        match (updated, refused) {
            (Ok(_), _) => Ok(self.now()),
            (Err(_), Some(e)) => Err(e),
            (Err(_), None) => Err(ClockError::PastTheEnd { secs }),
        }
    }

    /// [`Clock::try_advance`] for tests that move by small, valid amounts:
    /// a refused move leaves the clock where it was.
    pub fn advance(&self, secs: i64) {
        if let Err(e) = self.try_advance(secs) {
            tracing::warn!(error = %e, "clock move refused");
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

    #[test]
    fn advanced_offset_table() {
        let wall = 1_800_000_000;
        let room = CLOCK_MAX_UNIX - wall;
        let cases: &[(i64, i64, Result<i64, ClockError>)] = &[
            (0, 0, Ok(0)),
            (0, 60, Ok(60)),
            (100, 60, Ok(160)),
            (0, -1, Err(ClockError::Backwards)),
            (0, room, Ok(room)),
            (0, room + 1, Err(ClockError::PastTheEnd { secs: room + 1 })),
            (1, room, Err(ClockError::PastTheEnd { secs: room })),
            (0, i64::MAX, Err(ClockError::PastTheEnd { secs: i64::MAX })),
            (
                room,
                i64::MAX,
                Err(ClockError::PastTheEnd { secs: i64::MAX }),
            ),
            (i64::MAX, 1, Err(ClockError::PastTheEnd { secs: 1 })),
        ];
        for (offset, secs, want) in cases {
            assert_eq!(
                advanced_offset(wall, *offset, *secs),
                *want,
                "offset {offset} + {secs}"
            );
        }
    }

    #[test]
    fn a_refused_advance_moves_nothing() {
        let c = Clock::new();
        c.advance(3600);
        let before = c.now();
        assert_eq!(
            c.try_advance(i64::MAX),
            Err(ClockError::PastTheEnd { secs: i64::MAX })
        );
        let after = c.now();
        assert!(after >= before && after - before < 60, "{before} → {after}");
        assert!(c.try_advance(60).unwrap() >= before + 60);
    }
}
