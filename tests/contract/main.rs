//! Contract tests: the `hoop-api` clients (and `hoop say` / `hoop
//! send-image`) against the reference backend over real loopback sockets,
//! route by route and rule by rule. A rule of `docs/backend-contract.md`
//! that the client or the backend stops honouring fails a test here.

mod support;

mod auth;
mod cards;
mod mcp;
mod messages;
mod presence;
mod provision;
mod say;
mod windows;
mod ws;
