//! Putting an account on a machine: redeem a provisioning key, one install
//! manifest (plan / apply / check), launchd and systemd units rendered from the
//! templates in `launchd/` and `systemd/`, safe restarts, status and doctor.

pub mod restart;
pub mod service;
pub mod status;
