//! A loopback HTTP proxy in front of the reference backend that holds one
//! route's requests (never forwards them, never answers) while letting
//! every other request and WebSocket through: the way to stop a daemon
//! exactly while such a request is in flight.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct Stall {
    pub addr: std::net::SocketAddr,
    /// Requests to the held route seen so far (held or passed).
    pub seen: Arc<AtomicUsize>,
    /// While true, requests to the route are held.
    pub holding: Arc<AtomicBool>,
}

impl Stall {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Hold every `method path` request (the path without its query) until
/// `holding` is cleared (later ones pass).
pub async fn spawn(
    backend: std::net::SocketAddr,
    method: &'static str,
    path: &'static str,
) -> Stall {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let holding = Arc::new(AtomicBool::new(true));
    let (s, h) = (seen.clone(), holding.clone());
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let (s, h) = (s.clone(), h.clone());
            tokio::spawn(async move {
                if let Ok(server) = TcpStream::connect(backend).await {
                    let _ = relay(client, server, method, path, s, h).await;
                }
            });
        }
    });
    Stall {
        addr,
        seen,
        holding,
    }
}

fn content_length(head: &str) -> usize {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

async fn relay(
    client: TcpStream,
    server: TcpStream,
    method: &str,
    path: &str,
    seen: Arc<AtomicUsize>,
    holding: Arc<AtomicBool>,
) -> std::io::Result<()> {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let down = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut sr, &mut cw).await;
        let _ = cw.shutdown().await;
    });
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        // One request: its head, then its body.
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = cr.read(&mut chunk).await?;
            if n == 0 {
                down.abort();
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        if head.to_ascii_lowercase().contains("upgrade: websocket") {
            // A WebSocket: everything from here on passes untouched.
            sw.write_all(&buf).await?;
            tokio::io::copy(&mut cr, &mut sw).await?;
            down.abort();
            return Ok(());
        }
        let total = head_end + content_length(&head);
        while buf.len() < total {
            let n = cr.read(&mut chunk).await?;
            if n == 0 {
                down.abort();
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let request: Vec<u8> = buf.drain(..total).collect();
        let line = head.lines().next().unwrap_or_default();
        let mut words = line.split_whitespace();
        let (m, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let target = target.split('?').next().unwrap_or("");
        if m == method && target == path {
            seen.fetch_add(1, Ordering::SeqCst);
            if holding.load(Ordering::SeqCst) {
                // Held: never forwarded, never answered; the client waits
                // until it gives up or dies.
                let _ = tokio::io::copy(&mut cr, &mut tokio::io::sink()).await;
                down.abort();
                return Ok(());
            }
        }
        sw.write_all(&request).await?;
    }
}
