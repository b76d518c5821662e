//! Putting an account on a machine: redeem a provisioning key, one install
//! manifest (plan / apply / check), launchd and systemd units rendered from the
//! templates in `launchd/` and `systemd/`, safe restarts, status and doctor.
//!
//! - `manifest`: the ONE install manifest, a pure function from the machine's
//!   facts, its homes and the options to the desired items.
//! - `units`: the launchd plist and the systemd user template, rendered.
//! - `install`: gather facts, observe, plan / apply / [`install::check`].
//! - `doctor`: `check` plus the machine's health (guards, secrets, clock,
//!   PATH, linger, protected folders).
//! - `record`: what `--apply` decided (manager, tools' PATH, units it owns).
//! - `service`: the one door to `launchctl` / `systemctl` / `loginctl`.

pub mod doctor;
pub mod install;
pub mod manifest;
pub mod record;
pub mod redeem;
pub mod restart;
pub mod service;
pub mod status;
pub mod units;
