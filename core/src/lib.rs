//! Pure shared rules used by every other crate: the one mention rule, the send
//! gates, caps and constants, atomic file writes, the clock and the transcript
//! usage reader. It exists so that each of these rules is written once — the
//! old scripts kept three copies of some gates and they drifted apart.
//!
//! Nothing here does network I/O or starts an async runtime; file I/O is
//! limited to the atomic-write helper and the streaming transcript reader.

pub mod clock;
pub mod fsutil;
pub mod gates;
pub mod home;
pub mod limits;
pub mod mention;
pub mod transcript;
