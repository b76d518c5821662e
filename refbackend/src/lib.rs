//! A reference backend: a real server on loopback (axum + SQLite or in-memory)
//! that implements the whole backend contract (`docs/backend-contract.md`)
//! with production's semantics. The tests, `hoop demo` and operators trying a
//! sentinel run against it; it reads every path from `hoop_api::routes` and
//! applies the same send gates (`hoop_core::gates`) as the CLI.
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

use tokio::sync::watch;

mod admin;
mod clock;
pub mod constants;
mod error;
mod extract;
mod http;
pub mod jwt;
mod mcp;
pub mod rules;
mod store;
mod ws;

pub use clock::Clock;
pub use store::key_hash;

use constants::SHUTDOWN_GRACE;

#[derive(Debug, Clone, Default)]
pub struct Config {
    /// SQLite file; `None` keeps everything in memory.
    pub db: Option<PathBuf>,
    /// When set, every login must carry `X-Hoop-Agent-Secret` equal to it.
    pub agent_secret: Option<String>,
    /// Bearer token of the admin surface; `None` → a random one.
    pub admin_token: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot open the database: {0}")]
    Db(#[from] rusqlite::Error),
}

/// Shared state of one server.
pub(crate) struct App {
    store: Mutex<store::Store>,
    pub(crate) clock: Clock,
    pub(crate) hub: ws::Hub,
    pub(crate) jwt: jwt::JwtKey,
    pub(crate) agent_secret: Option<String>,
    pub(crate) admin_token: String,
    pub(crate) base_url: String,
    pub(crate) shutdown: watch::Receiver<bool>,
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

/// Start a server on `addr` (port 0 = any free port).
pub async fn spawn(addr: SocketAddr, cfg: Config) -> Result<Running, Error> {
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
    let app = Arc::new(App {
        store: Mutex::new(store),
        clock: clock.clone(),
        hub: ws::Hub::default(),
        jwt: jwt::JwtKey::random(),
        agent_secret: cfg.agent_secret.filter(|s| !s.is_empty()),
        admin_token: admin_token.clone(),
        base_url: format!("http://{local}"),
        shutdown: rx.clone(),
    });
    let router = http::router(app);
    let mut stop = rx;
    let task = tokio::spawn(async move {
        let serve = axum::serve(listener, router).with_graceful_shutdown(async move {
            let _ = stop.wait_for(|s| *s).await;
        });
        if let Err(e) = serve.await {
            tracing::error!(error = %e, "reference backend stopped");
        }
    });
    tracing::info!(addr = %local, "reference backend listening");
    Ok(Running {
        addr: local,
        admin_token,
        clock,
        shutdown: tx,
        task,
    })
}
