//! `agentvisor inspect`.

use std::path::Path;
use std::process::ExitCode;

/// Arguments of `agentvisor inspect`.
#[derive(clap::Args, Debug)]
pub(crate) struct InspectArgs {}

pub(crate) async fn run(_state: &Path, _args: InspectArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
