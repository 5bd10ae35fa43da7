//! `agentvisor rig restore RIG_ID [MEMBER…]`: continues realized seats from their own
//! sessions (`RigRunner::restore`): a Claude Code seat with `claude --resume <its token>`, a
//! Codex seat with `codex exec resume <its thread>`, a native seat's process from its last
//! checkpointed turn. Never from a seat's source. Each restored seat prints "restored seat
//! <member> (its own session <token>)". A request that cannot be honoured (an unknown rig or
//! member, a seat that is not realized, a policy that keeps it) is refused from a read-only
//! view before the directory is opened as owner, so the refusal changes nothing.

use super::run::Reopened;
use agentvisor::agent::run::RootBudget;
use agentvisor::rig::RigId;
use agentvisor::rig::run::{RESTORE_PROMPT, RestoreError, seats_to_restore};
use agentvisor::rig::store::SeatStore;
use std::path::Path;
use std::process::ExitCode;

/// Arguments of `agentvisor rig restore`.
#[derive(clap::Args, Debug)]
pub(crate) struct RestoreArgs {
    /// The rig whose seats to restore.
    rig_id: String,
    /// The members to restore; every realized seat its restore policy allows when none is
    /// named.
    members: Vec<String>,
    /// What a restored Claude Code or Codex session is told first.
    #[arg(long, default_value = RESTORE_PROMPT)]
    prompt: String,
    /// Print the outcomes as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(state: &Path, args: RestoreArgs) -> anyhow::Result<ExitCode> {
    let refuse = |e: RestoreError| {
        eprintln!("agentvisor: {e} ({})", e.code());
        Ok(ExitCode::from(2))
    };
    let Some(store) = super::stores::seats_read_only(state)? else {
        return refuse(RestoreError::UnknownRig { rig: args.rig_id.clone() });
    };
    let (record, seats) = {
        let record = store.rigs()?.into_iter().find(|r| r.id.as_str() == args.rig_id);
        let seats = match &record {
            Some(record) => store.seats(&record.id)?,
            None => Vec::new(),
        };
        (record, seats)
    };
    let Some(record) = record else {
        return refuse(RestoreError::UnknownRig { rig: args.rig_id.clone() });
    };
    let rig: RigId = record.id.clone();
    if let Err(e) = seats_to_restore(&rig, &seats, &args.members) {
        return refuse(e);
    }
    let reopened = match Reopened::open(state, &record, RootBudget::default()).await? {
        Ok(reopened) => reopened,
        Err(code) => return Ok(code),
    };
    let outcomes = match reopened.opened.runner.restore(&rig, &args.members, &args.prompt).await {
        Ok(outcomes) => outcomes,
        Err(e) => {
            reopened.abandon().await?;
            return refuse(e);
        }
    };
    if !args.json {
        super::run::say_restored(&outcomes);
    }
    reopened.finish(&rig, outcomes, args.json).await
}
