//! Process trees: THE one way hoop stops a process and everything it
//! started, and the subreaper rule that lets it find what was orphaned.
//!
//! The agent CLI starts its tool commands in process groups of their own,
//! and a shell's `cmd &` outlives the shell, so signalling one process or
//! one group leaves work running (a hung build, a `tail -f`, a `hoop say`
//! that posts minutes later). [`stop_tree`] takes the whole tree below a
//! root — every process whose parent chain leads to it, whatever its group
//! — before the first signal (an orphan loses its parent, so the walk comes
//! first), sends SIGTERM, keeps walking for children born meanwhile, and
//! sends SIGKILL to what is left after the grace.
//!
//! Linux: a process that calls [`become_subreaper`] adopts the orphans of
//! its descendants instead of init, so a daemonized leftover stays findable
//! ([`adopted`]) and must be reaped by the adopter ([`reap_adopted`]); the
//! sentinel and the `hoop worker` supervisor both do. The processes a
//! program spawns itself are its OWN children ([`own`]): they are waited
//! for by whoever spawned them and never reaped or stopped as adopted.
//! macOS has no subreaper: the tree is walked (`ps`) while its root lives.
//!
//! The walk ([`tree`]) is a pure function over `(pid, ppid)` pairs; the rest
//! is a thin shell over `/proc` (or `ps`) and signals.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// How often a stop looks again while it waits for a tree to go: cheap
/// (a `/proc` walk), and far below any grace period.
pub const STOP_POLL: Duration = Duration::from_millis(50);
/// After SIGKILL a process is gone within a scheduler tick; a stop waits at
/// most this long to see it gone before it answers.
pub const KILL_SETTLE: Duration = Duration::from_secs(2);

/// One row of the process table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub pgid: u32,
    /// Exited but not yet waited for: dead for every purpose here.
    pub zombie: bool,
}

/// `root` and every process below it, parents first, from `(pid, ppid)`
/// pairs. A cycle in a racy table never loops.
pub fn tree(pairs: &[(u32, u32)], root: u32) -> Vec<u32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        for (pid, ppid) in pairs {
            if *ppid == parent && !out.contains(pid) {
                out.push(*pid);
            }
        }
        i += 1;
    }
    out
}

/// Every process of the machine this user can see: `/proc` on Linux,
/// `ps` elsewhere (macOS). Empty when neither answers.
pub fn process_table() -> Vec<Proc> {
    if let Ok(rd) = std::fs::read_dir("/proc") {
        return rd
            .filter_map(Result::ok)
            .filter_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                parse_stat(pid, &stat)
            })
            .collect();
    }
    let Ok(out) = std::process::Command::new("ps")
        .args(["-axo", "pid=,ppid=,pgid=,stat="])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(parse_ps_line)
        .collect()
}

/// `/proc/<pid>/stat`: `pid (comm) state ppid pgrp …`; comm may hold
/// spaces and parentheses, so the fields are counted after the last `)`.
pub fn parse_stat(pid: u32, stat: &str) -> Option<Proc> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    let state = f.next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgid = f.next()?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        pgid,
        zombie: state.starts_with('Z'),
    })
}

/// One line of `ps -axo pid=,ppid=,pgid=,stat=`.
pub fn parse_ps_line(line: &str) -> Option<Proc> {
    let mut f = line.split_whitespace();
    let pid = f.next()?.parse().ok()?;
    let ppid = f.next()?.parse().ok()?;
    let pgid = f.next()?.parse().ok()?;
    let stat = f.next().unwrap_or("");
    Some(Proc {
        pid,
        ppid,
        pgid,
        zombie: stat.starts_with('Z'),
    })
}

fn pid_of(p: u32) -> Option<Pid> {
    i32::try_from(p).ok().filter(|p| *p > 0).map(Pid::from_raw)
}

/// Whether `pid` is a running process (it exists and is not a zombie).
pub fn is_live(pid: u32) -> bool {
    let Some(p) = pid_of(pid) else {
        return false;
    };
    if kill(p, None).is_err() {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => parse_stat(pid, &stat).is_none_or(|p| !p.zombie),
        // No /proc: ask ps for this one process.
        Err(_) if !std::path::Path::new("/proc/self").exists() => std::process::Command::new("ps")
            .args(["-o", "stat=", "-p", &pid.to_string()])
            .output()
            .map(|o| !String::from_utf8_lossy(&o.stdout).trim().starts_with('Z'))
            .unwrap_or(true),
        // The process went between the signal and the read.
        Err(_) => false,
    }
}

/// The live processes of the tree below `root` (`root` first, if live).
pub fn live_tree(root: u32) -> Vec<u32> {
    let table = process_table();
    let pairs: Vec<(u32, u32)> = table
        .iter()
        .filter(|p| !p.zombie)
        .map(|p| (p.pid, p.ppid))
        .collect();
    tree(&pairs, root)
        .into_iter()
        .filter(|p| is_live(*p))
        .collect()
}

/// Become a child subreaper (Linux): orphans of our descendants are
/// reparented to us instead of init, so they stay findable and stoppable.
/// Returns whether it took effect (false elsewhere, or when refused).
pub fn become_subreaper() -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        match nix::sys::prctl::set_child_subreaper(true) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "could not become a child subreaper; orphans go to init");
                false
            }
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        false
    }
}

// ---------------------------------------------------------------- own children

static OWN: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// A child this process spawned itself and waits for; registered for as
/// long as the guard lives, so it is never reaped or stopped as adopted.
#[derive(Debug)]
pub struct OwnChild(u32);

/// Register `pid` as an own child (right after spawning it, before any
/// await, so no reaper pass can see it unregistered).
pub fn own(pid: u32) -> OwnChild {
    OWN.lock().unwrap_or_else(|e| e.into_inner()).insert(pid);
    OwnChild(pid)
}

impl Drop for OwnChild {
    fn drop(&mut self) {
        OWN.lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.0);
    }
}

fn is_own(pid: u32) -> bool {
    OWN.lock().unwrap_or_else(|e| e.into_inner()).contains(&pid)
}

/// The decision over one child of this process: adopted or not. Own
/// children are spawned into a group of their own or registered; a child
/// left in our own group was spawned by us and is waited for by its caller
/// (`Command::output`), never adopted (orphans come from our descendants'
/// groups, which are never ours).
pub fn is_adopted(child: &Proc, me: u32, my_pgid: u32, own: &dyn Fn(u32) -> bool) -> bool {
    child.ppid == me && child.pgid != my_pgid && !own(child.pid)
}

fn my_ids() -> (u32, u32) {
    let me = std::process::id();
    let pgid = nix::unistd::getpgrp().as_raw() as u32;
    (me, pgid)
}

/// The children this process adopted as a subreaper (live and zombies).
pub fn adopted() -> Vec<Proc> {
    let (me, my_pgid) = my_ids();
    process_table()
        .into_iter()
        .filter(|p| is_adopted(p, me, my_pgid, &is_own))
        .collect()
}

/// Reap the adopted children that exited (each by its pid: an own child's
/// status is left to its owner). Returns how many were reaped.
pub fn reap_adopted() -> usize {
    use nix::sys::wait::{WaitPidFlag, waitpid};
    adopted()
        .into_iter()
        .filter(|p| p.zombie)
        .filter_map(|p| pid_of(p.pid))
        .filter(|p| waitpid(*p, Some(WaitPidFlag::WNOHANG)).is_ok())
        .count()
}

// ---------------------------------------------------------------- stopping

/// Signal every pid, and the group of each that leads one (a group member
/// reparented away from the tree still gets it).
fn signal_all(pids: &BTreeSet<u32>, sig: Signal) {
    let table = process_table();
    for pid in pids {
        let Some(p) = pid_of(*pid) else { continue };
        let _ = kill(p, sig);
        if table.iter().any(|t| t.pid == *pid && t.pgid == *pid) {
            let _ = killpg(p, sig);
        }
    }
}

/// Add the live trees of every live member (children born since the last
/// look) and answer whether any member still lives.
fn refresh(pids: &mut BTreeSet<u32>) -> bool {
    let live: Vec<u32> = pids.iter().copied().filter(|p| is_live(*p)).collect();
    if live.is_empty() {
        return false;
    }
    let table = process_table();
    let pairs: Vec<(u32, u32)> = table
        .iter()
        .filter(|p| !p.zombie)
        .map(|p| (p.pid, p.ppid))
        .collect();
    for root in live {
        pids.extend(tree(&pairs, root));
    }
    pids.iter().any(|p| is_live(*p))
}

/// Stop `roots` and every process below them: the trees are taken before
/// the first signal; SIGTERM; while they live, the walk goes on (children
/// born meanwhile join); SIGKILL to what is left after `grace`. Returns
/// whether every process is gone (a zombie counts as gone: it waits only
/// for its parent to collect it).
pub async fn stop_trees(roots: &[u32], grace: Duration) -> bool {
    let mut pids: BTreeSet<u32> = roots.iter().copied().collect();
    if !refresh(&mut pids) {
        return true;
    }
    tracing::debug!(pids = ?pids, "stopping a process tree");
    signal_all(&pids, Signal::SIGTERM);
    let deadline = tokio::time::Instant::now() + grace;
    while tokio::time::Instant::now() < deadline {
        if !refresh(&mut pids) {
            return true;
        }
        tokio::time::sleep(STOP_POLL).await;
    }
    let settle = tokio::time::Instant::now() + KILL_SETTLE;
    loop {
        // Walk again right before each SIGKILL: a child forked after the
        // last look must not escape.
        if !refresh(&mut pids) {
            return true;
        }
        signal_all(&pids, Signal::SIGKILL);
        if tokio::time::Instant::now() >= settle {
            return !refresh(&mut pids);
        }
        tokio::time::sleep(STOP_POLL).await;
    }
}

/// [`stop_trees`] for one root.
pub async fn stop_tree(root: u32, grace: Duration) -> bool {
    stop_trees(&[root], grace).await
}

/// Stop every live adopted child (and its tree) that `keep` does not
/// name, then reap them. Returns the pids stopped.
pub async fn stop_adopted(keep: fn(u32) -> bool, grace: Duration) -> Vec<u32> {
    let roots: Vec<u32> = adopted()
        .into_iter()
        .filter(|p| !p.zombie && !keep(p.pid))
        .map(|p| p.pid)
        .collect();
    if roots.is_empty() {
        return roots;
    }
    stop_trees(&roots, grace).await;
    reap_adopted();
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_table() {
        // 10 → 11 → 12 (its own group, as the CLI's Bash), 10 → 13; 20 apart.
        let pairs = [(11, 10), (12, 11), (13, 10), (20, 1), (21, 20)];
        assert_eq!(tree(&pairs, 10), [10, 11, 13, 12]);
        assert_eq!(tree(&pairs, 12), [12]);
        assert_eq!(tree(&pairs, 99), [99]);
        // A cycle in a racy table never loops.
        assert_eq!(tree(&[(1, 2), (2, 1)], 1), [1, 2]);
    }

    #[test]
    fn stat_and_ps_lines_parse() {
        let rows = [
            (
                "42 (sleep) S 7 42 42 0 -1",
                Some((7, 42, false)),
                "a plain line",
            ),
            (
                "42 (a (b) c) Z 7 9 9 0",
                Some((7, 9, true)),
                "comm with spaces and parentheses, a zombie",
            ),
            ("42 (x)", None, "cut short"),
            ("garbage", None, "no comm"),
        ];
        for (line, want, why) in rows {
            let got = parse_stat(42, line).map(|p| (p.ppid, p.pgid, p.zombie));
            assert_eq!(got, want, "{why}");
        }
        assert_eq!(
            parse_ps_line("  501   1 501 Ss"),
            Some(Proc {
                pid: 501,
                ppid: 1,
                pgid: 501,
                zombie: false
            })
        );
        assert_eq!(parse_ps_line(" 77 5 5 Z+").map(|p| p.zombie), Some(true));
        assert_eq!(parse_ps_line("PID PPID"), None);
    }

    #[test]
    fn adopted_is_a_child_outside_our_group_that_we_did_not_spawn() {
        let me = 100;
        let my_pgid = 90;
        let own = |p: u32| p == 103;
        let p = |pid, ppid, pgid| Proc {
            pid,
            ppid,
            pgid,
            zombie: false,
        };
        let rows = [
            (p(101, 100, 555), true, "an orphan of a descendant's group"),
            (
                p(102, 100, 90),
                false,
                "spawned in our own group (ps, hostname)",
            ),
            (p(103, 100, 103), false, "an own child in its own group"),
            (p(104, 7, 555), false, "someone else's child"),
        ];
        for (child, want, why) in rows {
            assert_eq!(is_adopted(&child, me, my_pgid, &own), want, "{why}");
        }
    }

    #[test]
    fn an_own_child_is_registered_while_its_guard_lives() {
        let g = own(4_000_000);
        assert!(is_own(4_000_000));
        drop(g);
        assert!(!is_own(4_000_000));
    }

    /// A shell that is not a group leader, with a child in a group of its
    /// own and a grandchild: the walk reaches all of them.
    #[tokio::test]
    async fn a_live_tree_is_stopped_whole_whatever_the_groups() {
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "sleep 31 & (set -m; sleep 32 & wait) & sleep 33; wait",
            ])
            .spawn()
            .unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while live_tree(pid).len() < 5 {
            assert!(std::time::Instant::now() < deadline, "{:?}", live_tree(pid));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let procs = live_tree(pid);
        assert!(stop_tree(pid, Duration::from_secs(5)).await);
        let _ = child.wait();
        for p in procs {
            assert!(!is_live(p), "{p} survived");
        }
    }

    /// A process that ignores SIGTERM is killed after the grace.
    #[tokio::test]
    async fn a_process_that_ignores_sigterm_is_killed_after_the_grace() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; sleep 34 & wait"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while live_tree(pid).len() < 2 {
            assert!(std::time::Instant::now() < deadline);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let procs = live_tree(pid);
        assert!(stop_tree(pid, Duration::from_millis(300)).await);
        let _ = child.wait();
        for p in procs {
            assert!(!is_live(p), "{p} survived");
        }
    }
}
