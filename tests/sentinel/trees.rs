//! Nothing of a turn outlives it (issue 18 item 6): the real CLI's Bash
//! tool starts commands in process groups of their own, and a shell's
//! `cmd &` outlives the shell. A turn that times out stops the CLI's whole
//! tree, and the daemon — a child subreaper — adopts and stops what the
//! tree orphaned.

use crate::harness::*;
use hoop_standin::Reply;

/// Pids whose command line is `sleep <secs>` (each test uses odd numbers
/// of its own, so no other process matches).
fn sleeping(secs: &str) -> Vec<u32> {
    let want = format!("sleep\0{secs}\0");
    std::fs::read_dir("/proc")
        .expect("this suite reads /proc (Linux)")
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c == want.as_bytes()))
        .filter(|p| hoop_sentinel::proctree::is_live(*p))
        .collect()
}

fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    hoop_sentinel::proctree::parse_stat(pid, &stat).map(|p| p.ppid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_turn_leaves_no_process_behind() {
    let w = World::new(Opts {
        turn_timeout_sec: Some(10),
        ..Opts::default()
    })
    .await;
    // One background sleep orphaned at once (its subshell exits) in a
    // session of its own, one that is the Bash command's own child in a
    // session of its own, and a foreground one that outlasts the turn's
    // timeout. (The CLI stops its tool's process group when it gets
    // SIGTERM; `setsid` is how a command escapes that.)
    w.standin.push(Reply::bash(
        "(setsid sleep 601.17 &) ; setsid sleep 601.23 & sleep 300.31",
        "never reached",
    ));
    // The retried turn lands, and leaves an orphan of its own behind.
    w.standin.push(Reply::bash(
        format!("(setsid sleep 601.41 &) ; {}", w.say_cmd("on time now")),
        "ok",
    ));
    let mut d = w.spawn();
    d.ready().await;
    w.post("@bolt start it", false).await;
    w.until("the turn's background commands run", || async {
        !sleeping("601.17").is_empty() && !sleeping("601.23").is_empty()
    })
    .await;
    let orphan = sleeping("601.17")[0];
    // The subshell exited: its child was adopted by the daemon, not init.
    w.until("the daemon adopted the orphan", || async {
        parent(orphan) == Some(d.pid())
    })
    .await;
    // The timeout's kill stops the whole tree and the adopted orphan
    // before the turn is reported (the turn lock is still held, so nothing
    // else could have stopped them yet).
    d.wait_log("class=Timeout").await;
    for secs in ["601.17", "601.23", "300.31"] {
        assert_eq!(
            sleeping(secs),
            Vec::<u32>::new(),
            "`sleep {secs}` outlived the timed-out turn"
        );
    }
    // The home goes on: the retried round answers, and what that turn
    // orphaned is stopped once it is over.
    w.until("the answer after the timeout", || async {
        w.agent_messages()
            .await
            .iter()
            .any(|m| m.body == "on time now")
    })
    .await;
    d.wait_log("📌 cursor committed").await;
    w.until("the finished turn's orphan is stopped", || async {
        sleeping("601.41").is_empty()
    })
    .await;
    // Stopped by the daemon (the orphan keeper, or the agent's kill path
    // if the driver stopped the process after the turn).
    assert!(
        d.log_text()
            .contains("stopped processes a finished turn left behind")
            || d.log_text()
                .contains("stopped processes the agent left behind"),
        "{}",
        d.log_text()
    );
}
