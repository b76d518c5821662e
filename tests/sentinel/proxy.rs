//! A loopback TCP proxy in front of the reference backend that injects
//! garbage WebSocket frames into every upgraded connection: after the 101
//! response and after every frame the server sends. Plain HTTP passes
//! through untouched.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Garbage the sentinel must log and skip.
fn garbage() -> Vec<Vec<u8>> {
    let text = |s: &str| {
        let mut f = vec![0x81, s.len() as u8];
        f.extend_from_slice(s.as_bytes());
        f
    };
    vec![
        text("this is not json {{{"),
        text(r#"{"type":"message.new"}"#),
        text(r#"{"type":"no.such.event","x":1}"#),
        text("\u{1F4A5}\u{0}"),
        vec![0x82, 3, 0xff, 0x00, 0xfe], // a binary frame
    ]
}

pub async fn spawn(backend: std::net::SocketAddr) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(server) = TcpStream::connect(backend).await {
                    let _ = relay(client, server).await;
                }
            });
        }
    });
    addr
}

async fn relay(client: TcpStream, server: TcpStream) -> std::io::Result<()> {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let up = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut cr, &mut sw).await;
        let _ = sw.shutdown().await;
    });
    // Server → client: headers first.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = sr.read(&mut chunk).await?;
        if n == 0 {
            cw.write_all(&buf).await?;
            up.abort();
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let upgraded = buf.starts_with(b"HTTP/1.1 101");
    cw.write_all(&buf[..head_end]).await?;
    let mut rest = buf[head_end..].to_vec();
    if !upgraded {
        cw.write_all(&rest).await?;
        tokio::io::copy(&mut sr, &mut cw).await?;
        up.abort();
        return Ok(());
    }
    for g in garbage() {
        cw.write_all(&g).await?;
    }
    loop {
        // Forward every complete frame, then inject garbage after it.
        while let Some(len) = frame_len(&rest) {
            let frame: Vec<u8> = rest.drain(..len).collect();
            cw.write_all(&frame).await?;
            let opcode = frame[0] & 0x0f;
            if opcode == 0x1 {
                for g in garbage() {
                    cw.write_all(&g).await?;
                }
            }
        }
        let n = sr.read(&mut chunk).await?;
        if n == 0 {
            up.abort();
            return Ok(());
        }
        rest.extend_from_slice(&chunk[..n]);
    }
}

/// Length of the first complete server frame (unmasked) in `b`.
fn frame_len(b: &[u8]) -> Option<usize> {
    if b.len() < 2 {
        return None;
    }
    let masked = b[1] & 0x80 != 0;
    let (len, hdr) = match b[1] & 0x7f {
        126 => {
            if b.len() < 4 {
                return None;
            }
            (u16::from_be_bytes([b[2], b[3]]) as usize, 4)
        }
        127 => {
            if b.len() < 10 {
                return None;
            }
            (u64::from_be_bytes(b[2..10].try_into().ok()?) as usize, 10)
        }
        n => (n as usize, 2),
    };
    let total = hdr + if masked { 4 } else { 0 } + len;
    (b.len() >= total).then_some(total)
}
