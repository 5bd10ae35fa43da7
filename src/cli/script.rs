//! `agentvisor script`.

use std::path::Path;
use std::process::ExitCode;

/// Arguments of `agentvisor script`.
#[derive(clap::Args, Debug)]
pub(crate) struct ScriptArgs {}

pub(crate) async fn run(_state: &Path, _args: ScriptArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
