//! `agentvisor rig …`: the rig commands. `rig validate RIG.yaml` checks a rig spec and prints
//! every problem at once; `rig expand` adds members to a rig; `rig status` shows seats' state;
//! `rig restore` continues realized seats from their own sessions.
//!
//! Exit codes: 0 when the spec is valid (a one-line summary on stdout), 2 when it has problems
//! (one per line on stderr), 1 when the file cannot be read.

use agentvisor::rig::{LoadRigError, load_rig};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `agentvisor rig`.
#[derive(clap::Args, Debug)]
pub(crate) struct RigArgs {
    #[command(subcommand)]
    command: RigCommand,
}

/// The rig subcommands, one variant each.
#[derive(clap::Subcommand, Debug)]
enum RigCommand {
    /// Checks a rig spec and prints every problem found, each with its line.
    Validate(ValidateArgs),
    /// Adds members to a rig and launches them.
    Expand(super::rig_expand::ExpandArgs),
    /// Shows rigs and their seats' state.
    Status(super::rig_status::RigStatusArgs),
    /// Continues realized seats from their own sessions (never from their source).
    Restore(super::rig_restore::RestoreArgs),
}

/// Arguments of `agentvisor rig validate`.
#[derive(clap::Args, Debug)]
struct ValidateArgs {
    /// The rig spec (YAML).
    spec: PathBuf,
}

pub(crate) async fn run(state: &Path, args: RigArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        RigCommand::Validate(args) => validate(&args),
        RigCommand::Expand(args) => super::rig_expand::run(state, args).await,
        RigCommand::Status(args) => super::rig_status::run(state, args).await,
        RigCommand::Restore(args) => super::rig_restore::run(state, args).await,
    }
}

fn validate(args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    match load_rig(&args.spec) {
        Ok(rig) => {
            let count = rig.members.len();
            let noun = if count == 1 { "member" } else { "members" };
            outln!("rig {}: {count} {noun} valid", rig.id);
            Ok(ExitCode::SUCCESS)
        }
        Err(LoadRigError::Invalid { path, report }) => {
            let count = report.problems.len();
            let noun = if count == 1 { "problem" } else { "problems" };
            eprintln!("{}: {count} {noun}", path.display());
            eprintln!("{report}");
            Ok(ExitCode::from(2))
        }
        Err(e) => {
            eprintln!("agentvisor: {e}");
            Ok(ExitCode::from(1))
        }
    }
}
