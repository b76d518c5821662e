//! `hoop`: one binary for the sentinel, bridge, guards, usage meter, reference
//! backend and provisioning. This file only parses, dispatches and maps errors
//! to exit codes; each subcommand lives in `cmd/`.
//!
//! Hook commands (`hoop guard …`, `hoop hook-status`) are dispatched before any
//! async runtime is built or any heavy config is read: they must answer in
//! about a millisecond and must never crash the agent session.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

#[derive(Parser)]
#[command(
    name = "hoop",
    version,
    about = "Keeps AI agent accounts on duty on a team's machines"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Hook guards for Claude Code and Cursor (read the hook payload on stdin).
    #[command(subcommand)]
    Guard(cmd::guard::Command),
    /// The reference backend: serve it, or drive a running one as an operator.
    #[command(subcommand)]
    Backend(cmd::backend::Command),
    /// The per-account daemon.
    #[command(subcommand)]
    Sentinel(cmd::sentinel::Command),
    /// The doorbell inside an interactive Claude Code or Codex window.
    #[command(subcommand)]
    Bridge(cmd::bridge::Command),
    /// A one-minute tour: backend, agent, room, sentinel, a message and its answer.
    Demo(cmd::demo::Args),
    /// Post a text message as the home's account, through the send gates.
    Say(cmd::say::Args),
    /// Post an image as the home's account, through the send gates.
    SendImage(cmd::say::ImageArgs),
    /// Show a room's unread messages (or older history) to the home's account.
    Read(cmd::read::Args),
    /// Merge hoop's hook entries into Claude Code / Cursor settings.
    #[command(subcommand)]
    Hooks(cmd::hooks::Command),
    /// Token usage from Claude Code's own transcripts.
    Usage(cmd::usage::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Hooks first: no runtime, no subscriber, no config beyond their own.
    if let Command::Guard(c) = cli.command {
        return cmd::guard::run(c);
    }
    cmd::init_tracing();
    let result = match cli.command {
        Command::Guard(_) => unreachable!("dispatched above"),
        Command::Backend(c) => cmd::backend::run(c),
        Command::Sentinel(c) => cmd::sentinel::run(c),
        Command::Bridge(c) => cmd::bridge::run(c),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Say(a) => cmd::say::run(a),
        Command::SendImage(a) => cmd::say::run_image(a),
        Command::Read(a) => cmd::read::run(a),
        Command::Hooks(c) => cmd::hooks::run(c),
        Command::Usage(a) => cmd::usage::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hoop: {e:#}");
            ExitCode::from(cmd::EXIT_FAILURE)
        }
    }
}
