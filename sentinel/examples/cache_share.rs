//! Measure what keeping the agent process warm buys: process spawns per turn
//! and the cache-read share of input tokens over ten turns, in persistent and
//! per-turn mode, as the real `claude` CLI records them in its `result`
//! lines. The model API is the loopback stand-in, whose prompt cache is
//! computed from the bytes the CLI actually sends (see `hoop_standin::cache`).
//!
//! `HOOP_CLAUDE_BIN=… cargo run -p hoop-sentinel --example cache_share [turns]`

use std::time::Duration;

use hoop_core::home::Home;
use hoop_sentinel::driver::{Driver, DriverConfig, Outcome};
use hoop_sentinel::switches;
use hoop_standin::Standin;

struct Figures {
    spawns: u64,
    turns: u64,
    input: u64,
    cache_write: u64,
    cache_read: u64,
}

async fn run(persist: bool, turns: u64, gap: Duration, bin: &str) -> std::io::Result<Figures> {
    let standin = Standin::spawn().await?;
    let dir = tempfile::tempdir()?;
    let home = Home::new(dir.path().join("root"), "bench").map_err(std::io::Error::other)?;
    std::fs::create_dir_all(home.dir())?;
    if !persist {
        std::fs::write(home.switch_path(switches::PERSIST), "off")?;
    }
    let child_home = dir.path().join("child-home");
    std::fs::create_dir_all(&child_home)?;
    let mut cfg = DriverConfig::new(bin, home);
    cfg.env = standin.claude_env();
    cfg.env
        .push(("HOME".into(), child_home.to_string_lossy().into_owned()));
    cfg.turn_timeout = Duration::from_secs(120);
    let mut d = Driver::new(cfg);
    let mut f = Figures {
        spawns: 0,
        turns,
        input: 0,
        cache_write: 0,
        cache_read: 0,
    };
    let preamble =
        "You are the hoop sentinel of this home. Reply before working; no markdown in chat.";
    for i in 0..turns {
        if i > 0 {
            standin.advance_clock(gap);
        }
        let r = d
            .run_turn(
                preamble,
                &format!("📬 本轮指令\nround {i}: one new message in room 7"),
            )
            .await;
        if r.outcome != Outcome::Ok {
            return Err(std::io::Error::other(format!("turn {i}: {:?}", r.outcome)));
        }
        if let Some(u) = r.usage {
            f.input += u.input;
            f.cache_write += u.cache_write();
            f.cache_read += u.cache_read;
        }
    }
    f.spawns = d.spawns();
    d.stop().await;
    if let Some(dump) = std::env::var_os("CACHE_SHARE_DUMP") {
        for r in standin.requests() {
            let p = std::path::Path::new(&dump).join(format!(
                "{}-{}.json",
                if persist { "p" } else { "t" },
                r.n
            ));
            std::fs::write(p, serde_json::to_vec_pretty(&r.body).unwrap_or_default())?;
        }
    }
    if std::env::var_os("CACHE_SHARE_VERBOSE").is_some() {
        for r in standin.requests() {
            let sys = r.system_blocks();
            eprintln!(
                "#{:<2} {:?} msgs={} sys0={:?}",
                r.n,
                r.usage,
                r.messages().len(),
                sys.first().map(|s| s.chars().take(80).collect::<String>())
            );
        }
    }
    standin.shutdown().await;
    Ok(f)
}

/// Time between turns, as the stand-in's cache clock sees it: back to back,
/// and ten minutes apart (longer than the 5-minute TTL, shorter than 1 h).
const GAPS: [Duration; 2] = [Duration::ZERO, Duration::from_secs(600)];

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let bin = std::env::var("HOOP_CLAUDE_BIN")
        .map_err(|_| std::io::Error::other("set HOOP_CLAUDE_BIN to the claude CLI"))?;
    let turns: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    println!(
        "mode        gap    turns  spawns/turn  input  cache_write  cache_read  cache-read share of input"
    );
    for gap in GAPS {
        for (name, persist) in [("persistent", true), ("per-turn", false)] {
            let f = run(persist, turns, gap, &bin).await?;
            let all = f.input + f.cache_write + f.cache_read;
            println!(
                "{name:<11} {:>4}s  {:>5}  {:>11.2}  {:>5}  {:>11}  {:>10}  {:>6.1} %",
                gap.as_secs(),
                f.turns,
                f.spawns as f64 / f.turns as f64,
                f.input,
                f.cache_write,
                f.cache_read,
                100.0 * f.cache_read as f64 / all.max(1) as f64
            );
        }
    }
    Ok(())
}
