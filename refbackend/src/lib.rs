//! A reference backend: a real server on loopback (axum + SQLite or in-memory)
//! that implements the whole backend contract with production's semantics. The
//! tests, `hoop demo` and operators trying a sentinel run against it.
