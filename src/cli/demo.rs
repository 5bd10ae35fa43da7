//! `agentvisor demo`.

use std::path::Path;
use std::process::ExitCode;

/// Arguments of `agentvisor demo`.
#[derive(clap::Args, Debug)]
pub(crate) struct DemoArgs {}

pub(crate) async fn run(_state: &Path, _args: DemoArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
