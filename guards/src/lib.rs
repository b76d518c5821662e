//! Hook commands that Claude Code and Cursor run around tool calls. They must
//! answer in about a millisecond, so nothing here starts an async runtime,
//! reads config beyond its own file, or touches the network.
