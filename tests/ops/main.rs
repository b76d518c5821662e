//! End-to-end tests of the operator's commands: `hoop status`, `hoop
//! restart`, the daemon's log as an operator reads it, and completions.
//! The real `hoop` binary, real sentinels against the reference backend
//! and the model stand-in (the sentinel suite's harness), real flocks.

mod completions;
mod errors;
mod fleet;
#[path = "../sentinel/harness.rs"]
mod harness;
mod logs;
mod machine;
mod names;
mod restart;
mod status;
#[path = "../support/unit_exec.rs"]
mod unit_exec;
