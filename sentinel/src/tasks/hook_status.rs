//! The hook-status endpoint (seed 001): a loopback HTTP listener the
//! sentinel serves for its home's workers. `POST /hook-status` records one
//! signal through [`hoop_guards::lane::record_signal`] — its ONLY write, the
//! run's projection file, atomically; `GET /missions/<home>/hook-status`
//! re-reads the projection from disk and never shows a token or its hash.
//!
//! Answers never tell whether another run exists: an unknown run, another
//! home, a stale registration and a wrong token all get the same 403 and
//! body. An unsafe id or a body that is not a signal is a 400, a body over
//! the cap a 413. Signals never change card state.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hoop_guards::lane::{self, Rejection, SignalPost};
use hoop_guards::limits::LANE_BODY_MAX_BYTES;

/// What the handlers share.
struct Endpoint {
    runtime: PathBuf,
    mission: String,
    /// One write at a time: two signals of one run must not interleave
    /// their read-modify-write.
    write: tokio::sync::Mutex<()>,
}

/// The router (public for the suites, which serve it on their own listener).
pub fn router(runtime: PathBuf, mission: String) -> Router {
    let ep = Arc::new(Endpoint {
        runtime,
        mission,
        write: tokio::sync::Mutex::new(()),
    });
    Router::new()
        .route(lane::SIGNAL_PATH, post(record))
        .route("/missions/{mission}/hook-status", get(show))
        .layer(DefaultBodyLimit::max(LANE_BODY_MAX_BYTES))
        .with_state(ep)
}

fn answer(status: StatusCode, what: &'static str) -> Response {
    (status, axum::Json(serde_json::json!({ "status": what }))).into_response()
}

async fn record(State(ep): State<Arc<Endpoint>>, body: Bytes) -> Response {
    let Ok(post) = serde_json::from_slice::<SignalPost>(&body) else {
        return answer(StatusCode::BAD_REQUEST, "not a signal");
    };
    if post.mission_id != ep.mission && lane::store::is_safe_id(&post.mission_id) {
        return answer(StatusCode::FORBIDDEN, "rejected");
    }
    let _one = ep.write.lock().await;
    let runtime = ep.runtime.clone();
    let now = hoop_core::clock::now_unix();
    let signal = post.signal;
    let run = post.run_id.clone();
    let r = tokio::task::spawn_blocking(move || lane::record_signal(&runtime, &post, now)).await;
    match r {
        Ok(Ok(())) => {
            tracing::debug!(run, %signal, "hook-status signal recorded");
            answer(StatusCode::OK, "recorded")
        }
        Ok(Err(Rejection::BadId)) => answer(StatusCode::BAD_REQUEST, "unsafe id"),
        Ok(Err(Rejection::Io)) | Err(_) => {
            answer(StatusCode::INTERNAL_SERVER_ERROR, "not recorded")
        }
        Ok(Err(why)) => {
            tracing::debug!(%why, "hook-status signal rejected");
            answer(StatusCode::FORBIDDEN, "rejected")
        }
    }
}

async fn show(State(ep): State<Arc<Endpoint>>, Path(mission): Path<String>) -> Response {
    if mission != ep.mission {
        return answer(StatusCode::NOT_FOUND, "no such mission");
    }
    let runtime = ep.runtime.clone();
    match tokio::task::spawn_blocking(move || lane::latest_signals(&runtime, &mission)).await {
        Ok(runs) => axum::Json(serde_json::json!({
            "nonAuthoritative": true,
            "runs": runs,
        }))
        .into_response(),
        Err(_) => answer(StatusCode::INTERNAL_SERVER_ERROR, "unreadable"),
    }
}

/// Bind the lane's recorded port on `127.0.0.1` (loopback only) — a
/// worker's spec holds the address from its spawn, so the lane must stay
/// where it was — or, the first time (or when that port is taken), any
/// free port, recorded for the next start; then publish the address for
/// the home's workers. `None` (logged) when either fails: the workers then
/// run without a lane.
pub async fn bind(
    runtime: &std::path::Path,
    mission: &str,
) -> Option<(tokio::net::TcpListener, SocketAddr)> {
    let recorded = lane::recorded_port(runtime, mission);
    let mut listener = None;
    if let Some(port) = recorded {
        match tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await {
            Ok(l) => listener = Some(l),
            Err(e) => tracing::warn!(
                port,
                error = %e,
                "hook-status: the lane's recorded port is taken; serving on a new one (workers started before keep no lane)"
            ),
        }
    }
    let listener = match listener {
        Some(l) => l,
        None => match tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "hook-status endpoint not served; workers run without a lane");
                return None;
            }
        },
    };
    let addr = listener.local_addr().ok()?;
    if let Err(e) = lane::publish_endpoint(runtime, mission, addr) {
        tracing::warn!(error = %e, "hook-status endpoint not published; workers run without a lane");
        return None;
    }
    Some((listener, addr))
}

/// How often the projections are swept: half the keep time, within
/// bounds (a second at least; at most every [`SWEEP_EVERY_MAX`]).
pub fn sweep_every(keep: Duration) -> Duration {
    (keep / 2).clamp(Duration::from_secs(1), SWEEP_EVERY_MAX)
}

/// Serve the endpoint until the task is aborted; every [`sweep_every`]
/// remove the projections of runs that ended more than `keep` ago.
pub async fn run(
    listener: tokio::net::TcpListener,
    runtime: PathBuf,
    mission: String,
    keep: Duration,
) {
    let sweeper = {
        let (runtime, mission) = (runtime.clone(), mission.clone());
        async move {
            let keep_secs = i64::try_from(keep.as_secs()).unwrap_or(i64::MAX);
            loop {
                tokio::time::sleep(sweep_every(keep)).await;
                let (rt, m) = (runtime.clone(), mission.clone());
                let now = hoop_core::clock::now_unix();
                if let Ok(gone) =
                    tokio::task::spawn_blocking(move || lane::sweep(&rt, &m, now, keep_secs)).await
                    && !gone.is_empty()
                {
                    tracing::debug!(runs = ?gone, "hook-status projections removed after their end");
                }
            }
        }
    };
    tokio::select! {
        r = axum::serve(listener, router(runtime, mission)) => {
            if let Err(e) = r {
                tracing::warn!(error = %e, "hook-status endpoint stopped");
            }
        }
        _ = sweeper => {}
    }
}

/// The longest time between two sweeps of the projections.
pub const SWEEP_EVERY_MAX: Duration = Duration::from_secs(600);
