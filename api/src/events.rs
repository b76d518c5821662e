//! The push stream client (`routes::EVENTS`, Server-Sent Events) and the one
//! SSE parser of the crate (the MCP client reads an `text/event-stream`
//! answer with it too). The stream is optional on a backend: a 404/405 on
//! connect is [`Error::NotFound`]/[`Error::Refused`], and the caller falls
//! back to polling.

use std::time::Duration;

use crate::error::Error;
use crate::rest::{CONNECT_TIMEOUT, normalise_base};
use crate::routes;
use crate::types::WsEvent;

/// An incremental SSE parser: feed bytes as they come, get the `data` of
/// each complete event (multi-line data joined with `\n`); comments (a
/// keep-alive) are reported as `None` so a caller can tell the stream is
/// alive.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// The items completed by `bytes`: `Some(data)` per event, `None` per
    /// comment line.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Option<String>> {
        self.buf.push_str(&String::from_utf8_lossy(bytes));
        let mut out = vec![];
        while let Some(i) = self.buf.find('\n') {
            let line: String = self.buf.drain(..=i).collect();
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if self.has_data {
                    out.push(Some(std::mem::take(&mut self.data)));
                    self.has_data = false;
                }
            } else if line.starts_with(':') {
                out.push(None);
            } else if let Some(d) = line.strip_prefix("data:") {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(d.strip_prefix(' ').unwrap_or(d));
                self.has_data = true;
            }
        }
        out
    }

    /// The event still open at the end of a body, if any.
    pub fn finish(&mut self) -> Option<String> {
        let _ = self.feed(b"\n");
        self.has_data.then(|| {
            self.has_data = false;
            std::mem::take(&mut self.data)
        })
    }
}

/// What the stream delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Event(WsEvent),
    /// A keep-alive: the stream is up.
    Alive,
}

/// One open event stream for an MCP key. `Debug` shows no key.
pub struct EventStream {
    resp: reqwest::Response,
    parser: SseParser,
    queue: std::collections::VecDeque<Item>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

impl EventStream {
    /// Connect (`GET routes::EVENTS` with the key as bearer).
    pub async fn connect(base_url: &str, key: &str) -> Result<EventStream, Error> {
        let url = format!("{}{}", normalise_base(base_url)?, routes::EVENTS);
        // No total timeout: the stream lives as long as it is kept alive;
        // a quiet stream is the caller's `next_within`.
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()?;
        let resp = http
            .get(url)
            .bearer_auth(key)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let bytes = resp.bytes().await.unwrap_or_default();
            return Err(Error::from_status(status, &bytes, None));
        }
        Ok(EventStream {
            resp,
            parser: SseParser::default(),
            queue: Default::default(),
        })
    }

    /// The next item, or `Ok(None)` when the server closed the stream.
    /// Unknown event payloads are skipped, never an error.
    pub async fn next(&mut self) -> Result<Option<Item>, Error> {
        loop {
            if let Some(i) = self.queue.pop_front() {
                return Ok(Some(i));
            }
            let Some(chunk) = self.resp.chunk().await? else {
                return Ok(None);
            };
            for it in self.parser.feed(&chunk) {
                match it {
                    None => self.queue.push_back(Item::Alive),
                    Some(d) => match serde_json::from_str::<WsEvent>(&d) {
                        Ok(WsEvent::Unknown) | Err(_) => self.queue.push_back(Item::Alive),
                        Ok(e) => self.queue.push_back(Item::Event(e)),
                    },
                }
            }
        }
    }

    /// [`EventStream::next`] bounded by `quiet`: `Err(Transport)` when
    /// nothing at all (not even a keep-alive) came within it.
    pub async fn next_within(&mut self, quiet: Duration) -> Result<Option<Item>, Error> {
        match tokio::time::timeout(quiet, self.next()).await {
            Ok(r) => r,
            Err(_) => Err(Error::Transport("the event stream went quiet".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_parser_table() {
        // (chunks, want items)
        let cases: &[(&[&str], &[Option<&str>])] = &[
            (&["data: a\n\n"], &[Some("a")]),
            (&["da", "ta: a\n", "\n"], &[Some("a")]),
            (&["data: a\ndata: b\n\n"], &[Some("a\nb")]),
            (&[": keep-alive\n\n"], &[None]),
            (&["event: x\ndata:{}\r\n\r\n"], &[Some("{}")]),
            (&["data: a\n\ndata: b\n\n"], &[Some("a"), Some("b")]),
            (&["\n\n"], &[]),
        ];
        for (chunks, want) in cases {
            let mut p = SseParser::default();
            let got: Vec<Option<String>> =
                chunks.iter().flat_map(|c| p.feed(c.as_bytes())).collect();
            let want: Vec<Option<String>> = want.iter().map(|w| w.map(str::to_string)).collect();
            assert_eq!(got, want, "{chunks:?}");
        }
        let mut p = SseParser::default();
        assert!(p.feed(b"data: tail").is_empty());
        assert_eq!(p.finish().as_deref(), Some("tail"));
    }
}
