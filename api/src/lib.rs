//! The backend contract as code: wire types, the ONE route table (`routes`),
//! and the REST, WebSocket and MCP clients plus the token cache. Every other
//! crate talks to the backend through this one, so adapting to the production
//! backend is a change here alone.

pub mod routes;
pub mod types;
pub mod headers;
