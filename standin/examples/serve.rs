//! Run the stand-in in the foreground and print its base URL, for pointing a
//! `claude` CLI at it by hand: `cargo run -p hoop-standin --example serve`.

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let s = hoop_standin::Standin::spawn().await?;
    println!("{}", s.base_url());
    tokio::signal::ctrl_c().await?;
    for r in s.requests() {
        eprintln!("#{} {} usage={:?}", r.n, r.path, r.usage);
    }
    s.shutdown().await;
    Ok(())
}
