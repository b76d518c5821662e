//! The backend contract as code: wire types, the ONE route table (`routes`),
//! and the REST, WebSocket and MCP clients plus the token cache. Every other
//! crate talks to the backend through this one, so adapting to the production
//! backend is a change here alone.

pub mod admin;
pub mod error;
pub mod events;
pub mod headers;
pub mod mcp;
pub mod rest;
pub mod routes;
pub mod say_seen;
pub mod send;
pub mod token;
pub mod tolerant;
pub mod types;
pub mod ws;

pub use error::Error;
pub use mcp::{McpClient, McpConfig};
pub use rest::{CardFilter, Client, ClientConfig};
pub use ws::{WsConfig, WsConnection, WsError};
