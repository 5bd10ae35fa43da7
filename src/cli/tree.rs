//! `agentvisor tree`.

use std::path::Path;
use std::process::ExitCode;

/// Arguments of `agentvisor tree`.
#[derive(clap::Args, Debug)]
pub(crate) struct TreeArgs {}

pub(crate) async fn run(_state: &Path, _args: TreeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
