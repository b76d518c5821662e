//! Backend reachability as the window sees it: unreachable for longer than
//! [`DOWN_AFTER`] → one `kind=down` line; the next success after it → one
//! `kind=recovered` line. Pure over the injected time.

use std::time::Duration;

use crate::constants::DOWN_AFTER;
use crate::detect::Event;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Health {
    /// When the current run of failures began.
    failing_since: Option<Duration>,
    /// The down line was printed for this run.
    announced: bool,
}

impl Health {
    /// A call failed at `now` (transport, 5xx, rate limited).
    pub fn failed(&mut self, now: Duration) -> Option<Event> {
        let since = *self.failing_since.get_or_insert(now);
        if !self.announced && now.saturating_sub(since) > DOWN_AFTER {
            self.announced = true;
            return Some(Event::notice(
                "down",
                format!(
                    "hoop backend unreachable for more than {} s; still trying",
                    DOWN_AFTER.as_secs()
                ),
            ));
        }
        None
    }

    /// A call succeeded.
    pub fn ok(&mut self) -> Option<Event> {
        self.failing_since = None;
        std::mem::take(&mut self.announced)
            .then(|| Event::notice("recovered", "hoop backend reachable again"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn down_once_then_recovered_once() {
        let s = Duration::from_secs;
        let mut h = Health::default();
        // (call at, ok?, want notice)
        let steps: &[(u64, bool, Option<&str>)] = &[
            (0, true, None),
            (5, false, None),
            (65, false, None),
            (125, false, None), // exactly 2 min: not yet more than
            (126, false, Some("down")),
            (200, false, None),
            (205, true, Some("recovered")),
            (210, true, None),
            (215, false, None),
            (300, true, None), // short outage: nothing said
        ];
        for (t, ok, want) in steps {
            let got = if *ok { h.ok() } else { h.failed(s(*t)) };
            assert_eq!(got.and_then(|e| e.notice), *want, "at {t}");
        }
    }
}
