//! Connections over real sockets: a connection that never finishes its
//! request headers is closed by the server, and such connections cannot pile
//! up and keep others out; a body that stops arriving is answered 408;
//! listening beyond loopback needs an explicit yes.

use std::time::Duration;

use hoop_api::routes;
use hoop_refbackend::{Config, Error};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{Srv, WAIT};

/// Read until the server closes the connection (EOF or reset); `false` when
/// it is still open after [`WAIT`].
async fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    let read_all = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    };
    tokio::time::timeout(WAIT, read_all).await.is_ok()
}

#[tokio::test]
async fn slow_header_connections_are_closed_and_do_not_keep_others_out() {
    let cap = 4;
    let srv = Srv::start_with(Config {
        header_read_timeout: Duration::from_millis(300),
        max_connections: cap,
        ..Config::default()
    })
    .await;
    // Three times the cap: silent connections and ones that stop half-way
    // through their headers.
    let mut slow = Vec::new();
    for i in 0..cap * 3 {
        let mut s = TcpStream::connect(srv.run.addr).await.unwrap();
        if i % 2 == 1 {
            s.write_all(b"GET /v1/me HTTP/1.1\r\nHost: localhost\r\nX-Half: ")
                .await
                .unwrap();
        }
        slow.push(s);
    }
    // An ordinary request behind all of them still gets its answer.
    let r = tokio::time::timeout(WAIT, srv.get(None, routes::ME))
        .await
        .expect("answered while slow connections were open");
    assert_eq!(r.status, 401, "{}", r.body);
    // And every slow connection was closed by the server.
    for (i, s) in slow.iter_mut().enumerate() {
        assert!(
            closed_by_server(s).await,
            "slow connection {i} is still open"
        );
    }
    // The server still serves.
    let r = srv.get(None, routes::ME).await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn a_body_that_stops_arriving_is_answered_408_and_the_connection_closed() {
    let srv = Srv::start_with(Config {
        body_read_timeout: Duration::from_millis(300),
        ..Config::default()
    })
    .await;
    let bolt = srv.user("bolt", true).await;
    let token = srv.login(&bolt).await;
    let mut s = TcpStream::connect(srv.run.addr).await.unwrap();
    // Headers in full, then 10 of the 100 bytes promised, then nothing.
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"tokens_i",
        routes::USAGE
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut resp = Vec::new();
    tokio::time::timeout(WAIT, s.read_to_end(&mut resp))
        .await
        .expect("answered and closed in time")
        .unwrap();
    let text = String::from_utf8_lossy(&resp);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("did not arrive"), "{text}");
}

#[tokio::test]
async fn a_connection_that_sends_its_headers_in_time_is_served() {
    let srv = Srv::start_with(Config {
        header_read_timeout: Duration::from_secs(5),
        ..Config::default()
    })
    .await;
    let mut s = TcpStream::connect(srv.run.addr).await.unwrap();
    // In two writes: a pause between them is not a slow client.
    s.write_all(b"GET /v1/me HTTP/1.1\r\n").await.unwrap();
    tokio::task::yield_now().await;
    s.write_all(b"Host: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut resp = Vec::new();
    tokio::time::timeout(WAIT, s.read_to_end(&mut resp))
        .await
        .expect("answered in time")
        .unwrap();
    let text = String::from_utf8_lossy(&resp);
    assert!(text.starts_with("HTTP/1.1 401"), "{text}");
}

#[tokio::test]
async fn listening_beyond_loopback_needs_an_explicit_yes() {
    let any = "0.0.0.0:0".parse().unwrap();
    match hoop_refbackend::spawn(any, Config::default()).await {
        Err(Error::NotLoopback { addr }) => assert_eq!(addr, any),
        other => panic!("{other:?}"),
    }
    let run = hoop_refbackend::spawn(
        any,
        Config {
            allow_non_loopback: true,
            ..Config::default()
        },
    )
    .await
    .expect("allowed explicitly");
    assert!(run.addr.ip().is_unspecified());
    run.shutdown().await;
}
