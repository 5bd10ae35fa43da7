//! `agentvisor ps`.

use std::path::Path;
use std::process::ExitCode;

/// Arguments of `agentvisor ps`.
#[derive(clap::Args, Debug)]
pub(crate) struct PsArgs {}

pub(crate) async fn run(_state: &Path, _args: PsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
