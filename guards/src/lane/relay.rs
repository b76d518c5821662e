//! The relay side of `hoop hook-status --config <spec>`: the spec file and
//! the hook payload in, at most one POST to the loopback endpoint out.
//! [`plan`] is pure; [`post`] is a blocking HTTP/1.1 request over a plain
//! `TcpStream` (no async runtime in a hook, and the endpoint is loopback
//! `http://` only, so a full HTTP client would be all start-up cost).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::signal::map_payload;
use super::store::{SPEC_VERSION, SignalPost};
use crate::limits::{LANE_BODY_MAX_BYTES, LANE_POST_TIMEOUT_MS, LANE_SPEC_MAX_BYTES};

/// The path the endpoint takes signal POSTs on.
pub const SIGNAL_PATH: &str = "/hook-status";

/// The GET path of one mission's projection: `/missions/<mission>/hook-status`.
pub fn mission_status_path(mission: &str) -> String {
    format!("/missions/{mission}{SIGNAL_PATH}")
}

/// The per-run spec file the hook command is pointed at: everything the
/// relay needs, and nothing else. Its `Debug` never shows the token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookStatusSpec {
    pub version: u32,
    /// `http://127.0.0.1:<port>` (loopback only).
    pub endpoint: String,
    pub token: String,
    pub mission_id: String,
    pub run_id: String,
}

impl std::fmt::Debug for HookStatusSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookStatusSpec")
            .field("endpoint", &self.endpoint)
            .field("mission_id", &self.mission_id)
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

/// The socket address of a loopback `http://host:port` endpoint (a trailing
/// `/` is allowed). Anything else — another scheme, a name, a non-loopback
/// address, a path — is `None`: the lane never leaves the machine.
pub fn loopback_addr(endpoint: &str) -> Option<SocketAddr> {
    let rest = endpoint.strip_prefix("http://")?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let addr: SocketAddr = rest.parse().ok()?;
    (addr.ip().is_loopback() && addr.port() != 0).then_some(addr)
}

/// What the relay will do: the address and the JSON body of its one POST,
/// or `None` (unreadable spec, unmapped or malformed payload, non-loopback
/// endpoint) — in which case it sends nothing and still exits 0.
pub fn plan(spec: &[u8], payload: &[u8], truncated: bool) -> Option<(SocketAddr, Vec<u8>)> {
    if truncated {
        return None;
    }
    let spec: HookStatusSpec = serde_json::from_slice(spec).ok()?;
    if spec.version != SPEC_VERSION {
        return None;
    }
    let addr = loopback_addr(&spec.endpoint)?;
    let (signal, detail) = map_payload(payload)?;
    let body = SignalPost {
        token: spec.token,
        mission_id: spec.mission_id,
        run_id: spec.run_id,
        signal,
        detail,
    };
    let body = serde_json::to_vec(&body).ok()?;
    (body.len() <= LANE_BODY_MAX_BYTES).then_some((addr, body))
}

/// Read the spec file, bounded.
pub fn read_spec(path: &Path) -> Option<Vec<u8>> {
    let f = std::fs::File::open(path).ok()?;
    let mut buf = Vec::new();
    f.take(LANE_SPEC_MAX_BYTES + 1).read_to_end(&mut buf).ok()?;
    (buf.len() as u64 <= LANE_SPEC_MAX_BYTES).then_some(buf)
}

/// POST `body` to the endpoint's [`SIGNAL_PATH`]; every step gives up after
/// [`LANE_POST_TIMEOUT_MS`]. Returns the HTTP status when one came back.
pub fn post(addr: SocketAddr, body: &[u8]) -> Option<u16> {
    let t = Duration::from_millis(LANE_POST_TIMEOUT_MS);
    let mut s = TcpStream::connect_timeout(&addr, t).ok()?;
    s.set_write_timeout(Some(t)).ok()?;
    s.set_read_timeout(Some(t)).ok()?;
    let head = format!(
        "POST {SIGNAL_PATH} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut answer = [0u8; 64];
    let n = s.read(&mut answer).ok()?;
    let line = std::str::from_utf8(&answer[..n]).ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(endpoint: &str) -> Vec<u8> {
        json!({"version":1,"endpoint":endpoint,"token":"t0k","missionId":"bolt","runId":"card-1"})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn only_loopback_http_endpoints() {
        let table = [
            ("http://127.0.0.1:4560", true),
            ("http://127.0.0.1:4560/", true),
            ("http://[::1]:4560", true),
            ("http://127.0.0.1:0", false),
            ("https://127.0.0.1:4560", false),
            ("http://10.0.0.1:4560", false),
            ("http://localhost:4560", false),
            ("http://127.0.0.1:4560/x", false),
            ("http://example.com", false),
            ("", false),
        ];
        for (e, ok) in table {
            assert_eq!(loopback_addr(e).is_some(), ok, "{e}");
        }
    }

    #[test]
    fn plan_posts_the_mapped_signal_and_nothing_else() {
        let payload = br#"{"hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{"command":"cat /secret"}}"#;
        let (addr, body) = plan(&spec("http://127.0.0.1:4560"), payload, false).unwrap();
        assert_eq!(addr.port(), 4560);
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body,
            json!({"token":"t0k","missionId":"bolt","runId":"card-1","signal":"tool-failed","detail":"Bash"})
        );
        let start = br#"{"hook_event_name":"SessionStart","source":"startup"}"#;
        let table: &[(&[u8], &[u8], bool)] = &[
            (&spec("http://10.1.1.1:80"), start, false),
            (b"not json", start, false),
            (
                br#"{"version":2,"endpoint":"http://127.0.0.1:1","token":"t","missionId":"m","runId":"r"}"#,
                start,
                false,
            ),
            (&spec("http://127.0.0.1:4560"), br#"{"hook_event_name":"Nope"}"#, false),
            (&spec("http://127.0.0.1:4560"), b"{", false),
            (&spec("http://127.0.0.1:4560"), start, true),
        ];
        for (s, p, truncated) in table {
            assert!(
                plan(s, p, *truncated).is_none(),
                "{}",
                String::from_utf8_lossy(p)
            );
        }
    }

    #[test]
    fn the_spec_debug_never_shows_the_token() {
        let s: HookStatusSpec = serde_json::from_slice(&spec("http://127.0.0.1:1")).unwrap();
        assert!(!format!("{s:?}").contains("t0k"));
    }

    #[test]
    fn post_to_a_closed_port_gives_up() {
        // Bind then drop: the port is closed, the connect is refused.
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        assert_eq!(post(addr, b"{}"), None);
    }
}
