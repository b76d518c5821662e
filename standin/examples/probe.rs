//! Answer one scripted reply kind and run a command against the stand-in,
//! printing the requests it saw: for reproducing what the real CLI does with
//! a given answer. `probe <kind> -- <command…>`; kinds: echo, auth, too-long,
//! overloaded, rate-limited, usage-limit, bash, big (a 450k-token context).

use hoop_standin::{Reply, Standin};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = args.first().cloned().unwrap_or_default();
    let cmd: Vec<String> = args
        .iter()
        .skip_while(|a| *a != "--")
        .skip(1)
        .cloned()
        .collect();
    let s = Standin::spawn().await?;
    let reply = match kind.as_str() {
        "auth" => Reply::auth_error(),
        "too-long" => Reply::prompt_too_long(),
        "overloaded" => Reply::overloaded(),
        "rate-limited" => Reply::rate_limited(None),
        "usage-limit" => Reply::usage_limit(4_102_444_800),
        "bash" => Reply::bash("echo probe > probe.txt", "ran it"),
        "big" => Reply::text("big context").with_usage(hoop_standin::Usage {
            input_tokens: 50_000,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 400_000,
            output_tokens: 10,
        }),
        _ => Reply::Echo,
    };
    s.push(reply);
    let Some((prog, rest)) = cmd.split_first() else {
        eprintln!("usage: probe <kind> -- <command…>");
        return Ok(());
    };
    let out = tokio::process::Command::new(prog)
        .args(rest)
        .envs(s.claude_env())
        .output()
        .await?;
    println!("rc={:?}", out.status.code());
    println!("{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    eprintln!("requests: {}", s.request_count());
    s.shutdown().await;
    Ok(())
}
