//! The hook-status lane (seed 001): an optional, NON-AUTHORITATIVE
//! observability lane for workers. A worker's agent CLI fires lifecycle
//! hooks; `hoop hook-status` turns each into one coarse [`Signal`] and POSTs
//! it to the sentinel's loopback endpoint, which writes it into a projection
//! file. Signals never change card state: the card on the backend is the
//! truth, and a hook can simply never fire (killed process, old CLI).
//!
//! - [`signal`]: payload → closed signal enum + scrubbed, bounded detail;
//! - [`store`]: registration (token hash only), the endpoint's one write
//!   ([`record_signal`]) and the re-reading view ([`latest_signals`]);
//! - [`install`]: spec file + lifecycle hooks in the worker's scratch HOME;
//! - [`relay`]: the hook command's pure plan and its one loopback POST.
//!
//! Layout: `<runtime>/hook-status/<mission>/<run>.json`, where the runtime
//! dir is the hoop root ([`runtime_dir`]), the mission is the home's name and
//! the run is the worker's card id; `<runtime>/hook-status/<mission>/port`
//! records the lane's port for good (every start of the sentinel serves it
//! again, so a worker's address survives restarts) and
//! `<runtime>/hook-status/<mission>/endpoint` holds the address while the
//! home's sentinel serves it. A run's projection is removed a while after
//! its end signal ([`store::sweep`]).

pub mod install;
pub mod relay;
pub mod signal;
pub mod store;

use std::path::{Path, PathBuf};

use hoop_core::home::Home;

pub use install::{Agent, InstallError, Installed, install_lifecycle_hooks};
pub use relay::{HookStatusSpec, SIGNAL_PATH, mission_status_path};
pub use signal::{Signal, map_payload};
pub use store::{
    NON_AUTHORITATIVE, Rejection, RunLane, RunView, SignalPost, SignalRecord, lane_address,
    latest_signals, publish_endpoint, record_signal, recorded_port, register_run, sweep,
    unpublish_endpoint,
};

/// The runtime dir of a home's lane: the hoop root the home lives under
/// (the mission id is the home's name).
pub fn runtime_dir(home: &Home) -> PathBuf {
    home.root.clone()
}

/// What one `hoop hook-status` run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayOutcome {
    /// Nothing to send: unreadable spec, unmapped or malformed payload.
    Nothing,
    /// Sent; the endpoint answered with this status.
    Sent(u16),
    /// The endpoint did not answer in time (or refused the connection).
    Unreachable,
}

/// The whole relay: read the spec, map the payload, POST at most once.
/// Never fails: the caller exits 0 whatever this returns.
pub fn relay(spec_path: &Path, payload: &[u8], truncated: bool) -> RelayOutcome {
    let Some(spec) = relay::read_spec(spec_path) else {
        return RelayOutcome::Nothing;
    };
    match relay::plan(&spec, payload, truncated) {
        None => RelayOutcome::Nothing,
        Some((addr, body)) => match relay::post(addr, &body) {
            Some(status) => RelayOutcome::Sent(status),
            None => RelayOutcome::Unreachable,
        },
    }
}
