//! Long-lived connections (WebSockets and `/v1/events` streams): at most so
//! many per account and in total, so one account — or one key at the allowed
//! connect rate — cannot fill the server's connection slots, and the
//! short requests always have slots left. A slot is a guard: it is given
//! back when the stream ends, however it ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hoop_api::types::UserId;
use tokio::sync::OwnedSemaphorePermit;

use crate::error::ApiError;

/// The stream counts; `Arc`-shared by every guard.
#[derive(Debug)]
pub struct StreamSlots {
    per_account: usize,
    total: usize,
    open: Mutex<HashMap<UserId, usize>>,
}

/// Why a stream was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamRefusal {
    /// The account already holds its share.
    Account(usize),
    /// The server holds as many streams as it takes.
    Total(usize),
}

/// The decision, pure: may a stream open for an account holding `mine`
/// while the server holds `all`?
pub fn admit(
    mine: usize,
    all: usize,
    per_account: usize,
    total: usize,
) -> Result<(), StreamRefusal> {
    if all >= total {
        Err(StreamRefusal::Total(total))
    } else if mine >= per_account {
        Err(StreamRefusal::Account(per_account))
    } else {
        Ok(())
    }
}

impl StreamRefusal {
    pub fn to_error(self) -> ApiError {
        match self {
            StreamRefusal::Account(n) => ApiError::rate_limited(
                format!(
                    "this account already has {n} open streams (WebSockets and event \
                     streams together, at most {n}); close one first"
                ),
                crate::constants::STREAM_RETRY_AFTER_SECS,
            ),
            StreamRefusal::Total(n) => ApiError::rate_limited(
                format!("the server holds {n} open streams, as many as it takes; try again later"),
                crate::constants::STREAM_RETRY_AFTER_SECS,
            ),
        }
    }
}

impl StreamSlots {
    pub fn new(per_account: usize, total: usize) -> Arc<StreamSlots> {
        Arc::new(StreamSlots {
            per_account: per_account.max(1),
            total: total.max(1),
            open: Mutex::new(HashMap::new()),
        })
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<UserId, usize>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for `user`, or why not.
    pub fn acquire(self: &Arc<Self>, user: UserId) -> Result<StreamSlot, StreamRefusal> {
        let mut open = self.open();
        let all: usize = open.values().sum();
        let mine = open.get(&user).copied().unwrap_or(0);
        admit(mine, all, self.per_account, self.total)?;
        *open.entry(user).or_default() += 1;
        Ok(StreamSlot {
            slots: self.clone(),
            user,
            _conn: None,
        })
    }

    /// Streams open now (all accounts).
    #[cfg(test)]
    fn count(&self) -> usize {
        self.open().values().sum()
    }
}

/// One open stream: its account's slot and, for a WebSocket, the
/// connection slot the upgraded connection keeps for its whole life.
#[derive(Debug)]
pub struct StreamSlot {
    slots: Arc<StreamSlots>,
    user: UserId,
    _conn: Option<OwnedSemaphorePermit>,
}

impl StreamSlot {
    /// Keep the connection's slot with this stream (a WebSocket: hyper is
    /// done with the connection at the upgrade, the socket is not).
    pub fn with_connection(mut self, permit: Option<OwnedSemaphorePermit>) -> StreamSlot {
        self._conn = permit;
        self
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open();
        if let Some(n) = open.get_mut(&self.user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.user);
            }
        }
    }
}

/// The connection's slot, handed to its requests so that an upgrade can
/// take it along (`StreamSlot::with_connection`).
#[derive(Clone, Debug, Default)]
pub struct ConnPermit(pub Arc<Mutex<Option<OwnedSemaphorePermit>>>);

impl ConnPermit {
    pub fn take(&self) -> Option<OwnedSemaphorePermit> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_table() {
        // (mine, all, per_account, total) → admitted?
        let cases = [
            ((0, 0, 2, 3), Ok(())),
            ((1, 1, 2, 3), Ok(())),
            ((2, 2, 2, 3), Err(StreamRefusal::Account(2))),
            ((0, 3, 2, 3), Err(StreamRefusal::Total(3))),
            ((1, 2, 2, 3), Ok(())),
        ];
        for ((mine, all, per, total), want) in cases {
            assert_eq!(
                admit(mine, all, per, total),
                want,
                "{mine} {all} {per} {total}"
            );
        }
    }

    #[test]
    fn a_slot_is_given_back_when_dropped() {
        let s = StreamSlots::new(1, 2);
        let a = s.acquire(1).unwrap();
        assert_eq!(s.acquire(1).unwrap_err(), StreamRefusal::Account(1));
        let b = s.acquire(2).unwrap();
        assert_eq!(s.acquire(3).unwrap_err(), StreamRefusal::Total(2));
        drop(a);
        assert_eq!(s.count(), 1);
        let _a = s.acquire(1).unwrap();
        drop(b);
        assert_eq!(s.count(), 1);
    }
}
