//! A reference backend: a real server on loopback (axum + SQLite or in-memory)
//! that implements the whole backend contract (`docs/backend-contract.md`)
//! with production's semantics. The tests, `hoop demo` and operators trying a
//! sentinel run against it; it reads every path from `hoop_api::routes` and
//! applies the same send gates (`hoop_core::gates`) as the CLI.
//!
//! It is a product part others may run, so it is safe to run: it listens on
//! loopback unless [`Config::allow_non_loopback`], closes connections that do
//! not send their headers within [`Config::header_read_timeout`] (or their
//! body within [`Config::body_read_timeout`]), serves at
//! most [`Config::max_connections`] at once, and enforces who may see and do
//! what (card visibility and assignment, agents-only routes, the owners of
//! reinforcement keys, inactive accounts) in `store`. An operator can arm a
//! one-shot fault inside a transaction to see that a failed write leaves
//! nothing behind.
//!
//! ```no_run
//! # async fn f() -> Result<(), hoop_refbackend::Error> {
//! let running = hoop_refbackend::spawn(
//!     "127.0.0.1:0".parse().unwrap(),
//!     hoop_refbackend::Config::default(),
//! )
//! .await?;
//! println!("{}", running.base_url());
//! running.clock().advance(16 * 60); // every JWT issued so far has expired
//! running.shutdown().await;
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::{Semaphore, watch};

mod admin;
mod clock;
pub mod constants;
mod error;
mod events;
mod extract;
mod http;
pub mod jwt;
mod mcp;
mod ops;
mod routes;
pub mod rules;
mod store;
mod streams;
mod ws;

pub use clock::{Clock, ClockError};
pub use store::key_hash;

use constants::{
    ACCEPT_ERROR_PAUSE, BODY_READ_TIMEOUT, HEADER_READ_TIMEOUT, MAX_CONNECTIONS, MAX_STREAMS,
    MAX_STREAMS_PER_ACCOUNT, SHUTDOWN_GRACE, STREAM_IDLE_TIMEOUT,
};

#[derive(Debug, Clone)]
pub struct Config {
    /// SQLite file; `None` keeps everything in memory.
    pub db: Option<PathBuf>,
    /// When set, every login must carry `X-Hoop-Agent-Secret` equal to it.
    pub agent_secret: Option<String>,
    /// Bearer token of the admin surface; `None` → a random one.
    pub admin_token: Option<String>,
    /// Listen on an address other than loopback. Off by default: the
    /// reference backend is for tests, the demo and trials on one machine.
    pub allow_non_loopback: bool,
    /// A connection whose request headers have not all arrived within this
    /// is closed (an idle keep-alive connection too).
    pub header_read_timeout: Duration,
    /// A request body that has not all arrived within this is answered 408
    /// and its connection closed.
    pub body_read_timeout: Duration,
    /// Most connections served at once; past it, new ones wait in the
    /// kernel's backlog instead of taking a file descriptor.
    pub max_connections: usize,
    /// Most WebSockets and event streams one account holds at once.
    pub max_streams_per_account: usize,
    /// Most WebSockets and event streams in total (each also holds a
    /// connection slot).
    pub max_streams: usize,
    /// An event stream with no event for this long is ended.
    pub stream_idle_timeout: Duration,
    /// The base URL written into `claude mcp add …` lines (production's
    /// `PublicBase`).
    pub public_base: PublicBase,
}

/// Which base the `claude mcp add …` lines carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PublicBase {
    /// The server's own `http://ADDR` (it knows where it listens).
    #[default]
    Listen,
    /// An address others reach it by (a proxy, a name).
    Url(String),
    /// None configured: the lines carry a placeholder, never an invented
    /// domain (seed 002 L29).
    Unset,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            db: None,
            agent_secret: None,
            admin_token: None,
            allow_non_loopback: false,
            header_read_timeout: HEADER_READ_TIMEOUT,
            body_read_timeout: BODY_READ_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            max_streams_per_account: MAX_STREAMS_PER_ACCOUNT,
            max_streams: MAX_STREAMS,
            stream_idle_timeout: STREAM_IDLE_TIMEOUT,
            public_base: PublicBase::Listen,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(
        "refusing to listen on {addr}: not a loopback address (the reference backend is \
         meant for one machine; allow it explicitly to listen beyond loopback)"
    )]
    NotLoopback { addr: SocketAddr },
    #[error("cannot open the database: {0}")]
    Db(#[from] rusqlite::Error),
}

/// Whether the server may listen on `addr`: loopback always; any other
/// address only when allowed (`Ok(true)` = allowed, and worth a warning).
pub fn check_listen_addr(addr: SocketAddr, allow_non_loopback: bool) -> Result<bool, Error> {
    if addr.ip().is_loopback() {
        Ok(false)
    } else if allow_non_loopback {
        Ok(true)
    } else {
        Err(Error::NotLoopback { addr })
    }
}

/// Shared state of one server.
pub(crate) struct App {
    store: Mutex<store::Store>,
    pub(crate) clock: Clock,
    pub(crate) hub: ws::Hub,
    pub(crate) jwt: jwt::JwtKey,
    pub(crate) agent_secret: Option<String>,
    pub(crate) admin_token: String,
    /// The base of `claude mcp add …` lines; `None` → the placeholder.
    pub(crate) public_base: Option<String>,
    /// The names a request's `Host` and `Origin` may carry
    /// (`rules::allowed_hosts`).
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) body_read_timeout: Duration,
    /// WebSockets and event streams open, per account and in total.
    pub(crate) streams: Arc<streams::StreamSlots>,
    /// An event stream with no event for this long is ended.
    pub(crate) stream_idle_timeout: Duration,
    pub(crate) shutdown: watch::Receiver<bool>,
    /// Requests answered so far (every route).
    pub(crate) requests: Arc<std::sync::atomic::AtomicU64>,
}

impl App {
    /// The store, even after a panic elsewhere poisoned the lock (every write
    /// is one transaction, so the data is consistent either way).
    pub(crate) fn store(&self) -> MutexGuard<'_, store::Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A server running in this process.
pub struct Running {
    pub addr: SocketAddr,
    /// Bearer token of the admin surface (`hoop_api::routes::admin`).
    pub admin_token: String,
    clock: Clock,
    requests: Arc<std::sync::atomic::AtomicU64>,
    /// The most connections (upgraded ones included) held at once so far.
    peak_connections: Arc<std::sync::atomic::AtomicUsize>,
    shutdown: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Running {
    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The server's clock; advancing it moves JWT expiry, presence, leases
    /// and rate windows.
    pub fn clock(&self) -> Clock {
        self.clock.clone()
    }

    /// How many requests the server has answered so far (every route,
    /// admin ones included).
    pub fn requests(&self) -> u64 {
        self.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The most connections served at once so far, WebSockets included
    /// (each keeps its connection slot for its life): never above
    /// [`Config::max_connections`].
    pub fn peak_connections(&self) -> usize {
        self.peak_connections
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Graceful stop: WebSocket connections get a close frame, in-flight
    /// requests finish, then the listener is gone.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let mut task = self.task;
        if tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
            .await
            .is_err()
        {
            task.abort();
        }
    }
}

/// Start a server on `addr` (port 0 = any free port). Only a loopback
/// address unless `cfg.allow_non_loopback`.
pub async fn spawn(addr: SocketAddr, cfg: Config) -> Result<Running, Error> {
    if check_listen_addr(addr, cfg.allow_non_loopback)? {
        tracing::warn!(
            %addr,
            "the reference backend listens beyond loopback: anyone who reaches this address can \
             try it; it has no TLS"
        );
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| Error::Bind { addr, source })?;
    let store = store::Store::open(cfg.db.as_deref())?;
    let admin_token = cfg
        .admin_token
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| hex::encode(rand::random::<[u8; 32]>()));
    let (tx, rx) = watch::channel(false);
    let clock = Clock::new();
    let public_base = match cfg.public_base {
        PublicBase::Listen => Some(format!("http://{local}")),
        PublicBase::Url(u) => Some(u),
        PublicBase::Unset => None,
    };
    let requests = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let app = Arc::new(App {
        store: Mutex::new(store),
        clock: clock.clone(),
        hub: ws::Hub::default(),
        jwt: jwt::JwtKey::random(),
        agent_secret: cfg.agent_secret.filter(|s| !s.is_empty()),
        admin_token: admin_token.clone(),
        allowed_hosts: rules::allowed_hosts(local, public_base.as_deref()),
        public_base,
        body_read_timeout: cfg.body_read_timeout,
        streams: streams::StreamSlots::new(cfg.max_streams_per_account, cfg.max_streams),
        stream_idle_timeout: cfg.stream_idle_timeout,
        shutdown: rx.clone(),
        requests: requests.clone(),
    });
    let router = routes::router(app);
    let peak_connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let limits = ConnLimits {
        header_read_timeout: cfg.header_read_timeout,
        max_connections: cfg.max_connections.max(1),
        peak: peak_connections.clone(),
    };
    let task = tokio::spawn(serve(listener, router, limits, rx));
    tracing::info!(addr = %local, "reference backend listening");
    Ok(Running {
        addr: local,
        admin_token,
        clock,
        requests,
        peak_connections,
        shutdown: tx,
        task,
    })
}

#[derive(Debug, Clone)]
struct ConnLimits {
    header_read_timeout: Duration,
    max_connections: usize,
    /// The most slots held at once so far ([`Running::peak_connections`]).
    peak: Arc<std::sync::atomic::AtomicUsize>,
}

/// The accept loop: HTTP/1.1 with upgrades (WebSocket), a header-read
/// timeout on every connection, at most `max_connections` served at once.
/// On stop: no more accepts, each connection finishes its request and
/// closes, then the loop returns.
async fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    limits: ConnLimits,
    mut stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    loop {
        // A free slot first: at the cap, connections wait in the kernel's
        // backlog rather than holding descriptors here.
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = stop.wait_for(|s| *s) => break,
        };
        let held = limits.max_connections - slots.available_permits();
        limits
            .peak
            .fetch_max(held, std::sync::atomic::Ordering::Relaxed);
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.wait_for(|s| *s) => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of descriptors or a similar passing fault: pause rather
                // than spin, then try again.
                tracing::warn!(error = %e, "accept failed");
                tokio::select! {
                    _ = tokio::time::sleep(ACCEPT_ERROR_PAUSE) => continue,
                    _ = stop.wait_for(|s| *s) => break,
                }
            }
        };
        let _ = stream.set_nodelay(true);
        // The slot travels with the connection's requests: a WebSocket
        // upgrade takes it along for the socket's life (hyper is done with
        // the connection at the upgrade); otherwise it is given back when
        // the connection closes.
        let holder = streams::ConnPermit(Arc::new(Mutex::new(Some(permit))));
        let carried = holder.clone();
        let service = tower::ServiceExt::map_request(
            router.clone(),
            move |mut req: hyper::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(carried.clone());
                req
            },
        );
        let conn = builder
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
            .with_upgrades();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let _holder = holder;
            tokio::pin!(conn);
            let done = tokio::select! {
                r = conn.as_mut() => Some(r),
                _ = stop.wait_for(|s| *s) => None,
            };
            let result = match done {
                Some(r) => r,
                None => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "connection closed");
            }
        });
    }
    // Every connection lets go of its slot when it is done.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        let cases: &[(&str, bool, Option<bool>)] = &[
            ("127.0.0.1:0", false, Some(false)),
            ("127.0.0.2:8080", false, Some(false)),
            ("[::1]:0", false, Some(false)),
            ("127.0.0.1:0", true, Some(false)),
            ("0.0.0.0:0", false, None),
            ("[::]:0", false, None),
            ("192.168.1.20:8080", false, None),
            ("0.0.0.0:0", true, Some(true)),
            ("192.168.1.20:8080", true, Some(true)),
        ];
        for (addr, allow, want) in cases {
            let addr: SocketAddr = addr.parse().unwrap();
            let got = check_listen_addr(addr, *allow).ok();
            assert_eq!(got, *want, "{addr} allow={allow}");
        }
    }
}
