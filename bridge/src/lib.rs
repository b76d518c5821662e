//! The bridge: a doorbell that runs inside an interactive Claude Code or Codex
//! window and prints one line per event that concerns that window.
