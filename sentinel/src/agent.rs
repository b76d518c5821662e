//! The seam between a round and the process that runs the agent: what the
//! round needs from a turn (its class for the policy, its usage for the
//! report), what the daemon needs at startup (the cold-start compaction)
//! and what the idle reaper needs (idle time, compact-and-stop).
//! The `claude` driver implements it (see `driver_agent`).

use std::future::Future;
use std::time::Duration;

use crate::policy::TurnClass;

/// A turn's token usage; `None` = not known (sent as null, never 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnUsage {
    /// Full-price input only.
    pub tokens_in: Option<i64>,
    /// Cache read + cache write.
    pub tokens_cached_in: Option<i64>,
    pub tokens_out: Option<i64>,
}

/// One finished turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnResult {
    pub class: TurnClass,
    pub usage: Option<TurnUsage>,
    /// A short, secret-free description for the log.
    pub detail: String,
}

/// The process that answers turns.
pub trait Agent: Send + 'static {
    /// Run one turn: `preamble` goes to `--append-system-prompt`, `message`
    /// is the user message.
    fn run_turn(
        &mut self,
        preamble: &str,
        message: &str,
    ) -> impl Future<Output = TurnResult> + Send;
    /// [`Agent::run_turn`], calling `shown` just before `message` is
    /// written to a running agent process (remember, then print), and never
    /// when the turn cannot reach one (its process did not start or already
    /// ended). An agent that cannot tell calls it first.
    fn run_turn_showing(
        &mut self,
        preamble: &str,
        message: &str,
        shown: &(dyn Fn() + Send + Sync),
    ) -> impl Future<Output = TurnResult> + Send {
        shown();
        self.run_turn(preamble, message)
    }
    /// Before the first round: compact the session when it is big, so the
    /// first wake does not wait for it (the caller holds the turn lock).
    fn cold_start(&mut self) -> impl Future<Output = ()> + Send;
    /// Compact the session, then stop the process (idle reaping; the caller
    /// holds the turn lock).
    fn compact_and_stop(&mut self) -> impl Future<Output = ()> + Send;
    /// Stop the process (daemon shutdown).
    fn stop(&mut self) -> impl Future<Output = ()> + Send;
    /// How long a live process has been idle; `None` when none is running.
    fn idle_for(&self) -> Option<Duration>;
}
