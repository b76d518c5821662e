//! `hoop guard …` answered before Rust's own start-up, on Linux with glibc.
//!
//! The guards run before every tool call of every agent, so their whole
//! process is the product's hottest path. Rust's start-up (the code that
//! calls `main`) asks glibc for the main thread's stack bounds, which makes
//! glibc read and parse `/proc/self/maps`, and installs stack-overflow
//! handlers on a signal stack: 52,000 of a static hook call's 641,000
//! instructions, a dozen system calls and 0.09 ms of its CPU, for nothing
//! a hook uses (measured with `scripts/bench-guards.sh`'s `COMPARE`).
//!
//! glibc calls each `.init_array` function with `argc`, `argv` and `envp`
//! before `main`, so a guard command is answered from there and the process
//! exits; every other command line returns and meets the normal start-up.
//! Elsewhere (macOS, musl) `main` dispatches the same commands first, through
//! the same function, so the answer never depends on which door it took.

use std::ffi::OsString;

/// `Some(exit code)` when `args` (the whole command line, program name
/// first) is a guard command, answered; `None` for any other command.
pub fn guard(mut args: impl Iterator<Item = OsString>) -> Option<u8> {
    let _program = args.next();
    if args.next().is_none_or(|a| a != "guard") {
        return None;
    }
    let rest: Vec<OsString> = args.collect();
    let command = match crate::cmd::guard::read_plain_line(&rest) {
        Some(command) => command,
        None => {
            use clap::Parser;
            let args = std::iter::once("hoop guard".into()).chain(rest);
            crate::GuardCli::parse_from(args).command
        }
    };
    Some(crate::cmd::guard::run(command))
}

#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
mod before_main {
    use std::ffi::{CStr, OsStr, OsString, c_char, c_int};
    use std::os::unix::ffi::OsStrExt;

    /// Answers a guard command and exits; returns for anything else.
    extern "C" fn guard_before_main(
        argc: c_int,
        argv: *const *const c_char,
        _envp: *const *const c_char,
    ) {
        if argv.is_null() || argc < 2 {
            return;
        }
        // SAFETY: glibc passes the process's own argv: `argc` valid,
        // NUL-terminated strings that live as long as the process.
        let arg = |i: usize| unsafe { CStr::from_ptr(*argv.add(i)) };
        // Every other command (the daemon too) returns without allocating.
        if arg(1) != c"guard" {
            return;
        }
        let args = (0..argc as usize).map(|i| OsString::from(OsStr::from_bytes(arg(i).to_bytes())));
        // As Rust's start-up would: a reader that went away is an error
        // on write, not a signal that kills the hook mid-answer.
        // SAFETY: setting a signal's disposition to ignore runs no code.
        unsafe {
            let _ = nix::sys::signal::signal(
                nix::sys::signal::Signal::SIGPIPE,
                nix::sys::signal::SigHandler::SigIgn,
            );
        }
        if let Some(code) = super::guard(args) {
            // Flushes Rust's stdout, then exits through libc.
            std::process::exit(i32::from(code));
        }
    }

    #[used]
    #[unsafe(link_section = ".init_array")]
    static GUARD_BEFORE_MAIN: extern "C" fn(c_int, *const *const c_char, *const *const c_char) =
        guard_before_main;
}
