//! The usage meter behind `hoop usage`: daily, session, project and 5-hour
//! block reports over Claude Code's own transcripts, read incrementally and
//! streamed so that a multi-gigabyte transcript never sits in memory.
