//! The reference backend's own rule tests: each production rule it
//! implements has a test here that fails when the rule is removed, plus the
//! bad-input tests (malformed JSON, unknown routes, oversized bodies, wrong or
//! expired tokens, unknown ids) and a bounded fuzz over every route.

mod auth;
mod bad_input;
mod bodies;
mod cards;
mod citations;
mod conn;
mod events;
mod exposure;
mod load;
mod mcp;
mod messages;
mod oracles;
mod presence_usage;
mod provision;
mod reinforce;
mod security;
mod support;
mod windows;
mod ws;
