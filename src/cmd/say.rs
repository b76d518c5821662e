//! `hoop say`.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("hoop say is not implemented yet")
}

#[derive(clap::Args)]
pub struct ImageArgs {}

pub fn run_image(_args: ImageArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("hoop send-image is not implemented yet")
}
