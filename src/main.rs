//! `hoop`: one binary for the sentinel, bridge, guards, usage meter, reference
//! backend and provisioning. This file only parses, dispatches and maps errors
//! to exit codes; each subcommand lives in `cmd/`.
//!
//! Hook commands (`hoop guard …`, `hoop hook-status`, `hoop card-snapshot`)
//! and the status line are dispatched before any async runtime is built or
//! any heavy config is read: they must answer in about a millisecond (the
//! card snapshot: one loopback request) and must never crash the agent
//! session.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod cmd;
mod early;

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
    /// Leave messages unanswered on purpose: recorded in the home, never posted.
    Pass(cmd::pass::Args),
    /// What the sentinel did with a message, and why: from the home's journal.
    Why(cmd::why::Args),
    /// Merge hoop's hook entries into Claude Code / Cursor settings.
    #[command(subcommand)]
    Hooks(cmd::hooks::Command),
    /// Token usage from Claude Code's own transcripts.
    Usage(cmd::usage::Args),
    /// One-shot agents on sub-cards: spawn one, list the live ones.
    #[command(subcommand)]
    Worker(cmd::worker::Command),
    /// Every home on this machine at a glance: daemon, socket, last round, guards, unit.
    Status(cmd::status::Args),
    /// Restart sentinels one at a time through the service manager, safely.
    Restart(cmd::restart::Args),
    /// Print the shell completion script (bash, zsh or fish).
    Completions(cmd::completions::Args),
    /// Put every home of this machine in place: link, hooks, units, services.
    Install(cmd::install::Args),
    /// Check this machine: install drift, guards, secrets, clock, PATH, linger.
    Doctor(cmd::doctor::Args),
    /// Put an account on this machine (redeem a provisioning key).
    #[command(subcommand)]
    Provision(cmd::provision::Command),
    /// MCP keys of reinforcement accounts (`add-line`).
    #[command(subcommand)]
    Mcp(cmd::mcp::Command),
    /// A worker's lifecycle hook → one signal to the sentinel's loopback
    /// endpoint (reads the payload on stdin; always exits 0).
    HookStatus(cmd::hook_status::Args),
    /// The card tools' PreToolUse hook: the account's usage snapshot before
    /// a card ends or starts (reads the payload on stdin; always exits 0).
    CardSnapshot,
    /// Claude Code's status line: context fill, today's and the block's
    /// cost, pending doorbell events (reads the payload on stdin; never
    /// shows an error).
    Statusline,
}

/// `hoop guard …` parsed on its own: a hook runs on every tool call of the
/// agent, so it does not pay for building the parser of every other
/// subcommand (about a third of its start-up).
#[derive(Parser)]
#[command(name = "hoop guard", about = "Hook guards for Claude Code and Cursor")]
struct GuardCli {
    #[command(subcommand)]
    command: cmd::guard::Command,
}

/// `hoop hook-status` parsed on its own, for the same reason: it runs on
/// every lifecycle event of a worker's agent.
#[derive(Parser)]
#[command(
    name = "hoop hook-status",
    about = "A worker's lifecycle hook → one signal to the sentinel's loopback endpoint"
)]
struct HookStatusCli {
    #[command(flatten)]
    args: cmd::hook_status::Args,
}

fn main() -> ExitCode {
    // Hooks first: no runtime, no subscriber, no config beyond their own,
    // and no parser beyond their own.
    // On Linux with glibc a guard command never gets here: `early` answers
    // it before Rust's start-up. Elsewhere it is answered here, the same way.
    if let Some(code) = early::guard(std::env::args_os()) {
        return ExitCode::from(code);
    }
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "hook-status")
    {
        let args = std::iter::once("hoop hook-status".into()).chain(std::env::args_os().skip(2));
        // Even a miswired command line exits 0: exit 2 from a `Stop` hook
        // would keep the worker's agent from stopping.
        return match HookStatusCli::try_parse_from(args) {
            Ok(c) => cmd::hook_status::run(c.args),
            Err(e) => {
                let _ = e.print();
                ExitCode::SUCCESS
            }
        };
    }
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "card-snapshot")
    {
        // Any arguments are ignored: a miswired hook still exits 0.
        return cmd::card_snapshot::run();
    }
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "statusline")
    {
        return cmd::statusline::run();
    }
    let cli = Cli::parse();
    cmd::init_tracing();
    let result = match cli.command {
        Command::Guard(c) => Ok(ExitCode::from(cmd::guard::run(c))),
        Command::HookStatus(a) => Ok(cmd::hook_status::run(a)),
        Command::CardSnapshot => Ok(cmd::card_snapshot::run()),
        Command::Statusline => Ok(cmd::statusline::run()),
        Command::Backend(c) => cmd::backend::run(c),
        Command::Sentinel(c) => cmd::sentinel::run(c),
        Command::Bridge(c) => cmd::bridge::run(c),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Say(a) => cmd::say::run(a),
        Command::SendImage(a) => cmd::say::run_image(a),
        Command::Read(a) => cmd::read::run(a),
        Command::Pass(a) => cmd::pass::run(a),
        Command::Why(a) => cmd::why::run(a),
        Command::Hooks(c) => cmd::hooks::run(c),
        Command::Usage(a) => cmd::usage::run(a),
        Command::Status(a) => cmd::status::run(a),
        Command::Restart(a) => cmd::restart::run(a),
        Command::Completions(a) => cmd::completions::run(a, Cli::command()),
        Command::Install(a) => cmd::install::run(a),
        Command::Doctor(a) => cmd::doctor::run(a),
        Command::Provision(c) => cmd::provision::run(c),
        Command::Mcp(c) => cmd::mcp::run(c),
        Command::Worker(c) => cmd::worker::run(c),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // THE rendering of an error chain: each cause once, innermost
            // last (`hoop_api::error::render_chain`).
            eprintln!("hoop: {}", hoop_api::error::render_chain(e.as_ref()));
            ExitCode::from(cmd::EXIT_FAILURE)
        }
    }
}
