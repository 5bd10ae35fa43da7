//! `agentvisor rig expand RIG_ID MEMBERS.yaml`: adds members to a rig. The payload has the same
//! member shape as a rig spec (`members: [...]`, `session_source` included) and is checked
//! against the rig's seats before anything is declared. The new seats are declared in the seat
//! store; if an `agentvisor run` of the rig is live on this state directory it launches them,
//! and this command waits for them to settle; otherwise this command launches them itself.

use super::run::{open, print_summary};
use agentvisor::rig::run::SeatOutcome;
use agentvisor::rig::store::{SeatStatus, SeatStore};
use agentvisor::rig::{Member, RigId, RigSpec, parse_expansion};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `agentvisor rig expand`.
#[derive(clap::Args, Debug)]
pub(crate) struct ExpandArgs {
    /// The rig to add members to.
    rig: String,
    /// The new members (YAML: `members: [...]`).
    members: PathBuf,
}

/// How often the command looks at the seat store while a live run launches the new seats.
const SETTLE_POLL: Duration = Duration::from_millis(200);

pub(crate) async fn run(state: &Path, args: ExpandArgs) -> anyhow::Result<ExitCode> {
    let store = super::stores::seats(state)?;
    let known: Vec<RigId> = store.rigs()?.into_iter().map(|r| r.id).collect();
    let Some(record) =
        known.iter().find(|id| id.as_str() == args.rig).and_then(|id| store.rig(id).ok().flatten())
    else {
        let ids: Vec<&str> = known.iter().map(RigId::as_str).collect();
        bail!(
            "no rig {:?} in {}; the rigs there are: [{}]",
            args.rig,
            super::stores::describe(state),
            ids.join(", ")
        );
    };
    let seats = store.seats(&record.id)?;
    let current: Vec<Member> = seats.iter().filter_map(|s| s.member().ok()).collect();
    let rig = RigSpec::of_members(record.id.clone(), current.clone());
    let text = std::fs::read_to_string(&args.members)
        .with_context(|| format!("failed to read {}", args.members.display()))?;
    let members = match parse_expansion(&text, &rig) {
        Ok(members) => members,
        Err(report) => {
            eprintln!("{}: {} problems", args.members.display(), report.problems.len());
            eprintln!("{report}");
            return Ok(ExitCode::from(2));
        }
    };
    let base = Path::new(&record.spec_path).parent().map(Path::to_path_buf).unwrap_or_default();
    let all = RigSpec::of_members(record.id.clone(), current.into_iter().chain(members.clone()).collect());
    match open(state, &all, &base, Some(Path::new(&record.spec_path)), Default::default()).await {
        Ok(opened) => {
            // No live run owns the state directory: launch the new seats here.
            let outcomes = opened.runner.expand(&record.id, &members).await?;
            print_summary(record.id.as_str(), &outcomes, false)?;
            Ok(exit_code(&outcomes))
        }
        Err(e) if e.downcast_ref::<super::owner::OwnedElsewhere>().is_some() => {
            for member in &members {
                store.declare(&record.id, member)?;
            }
            eprintln!("declared {} seats; the live run of rig {} launches them", members.len(), record.id);
            let outcomes = settle(&store, &record.id, &members).await?;
            print_summary(record.id.as_str(), &outcomes, false)?;
            Ok(exit_code(&outcomes))
        }
        Err(e) => Err(e),
    }
}

/// Waits until every new seat is realized or failed, as the live run records them.
async fn settle(store: &dyn SeatStore, rig: &RigId, members: &[Member]) -> anyhow::Result<Vec<SeatOutcome>> {
    loop {
        let seats = store.seats(rig)?;
        let mine: Vec<_> = seats.into_iter().filter(|s| members.iter().any(|m| m.id == s.member)).collect();
        if mine.iter().all(|s| s.status.is_final()) {
            return Ok(mine
                .into_iter()
                .map(|s| SeatOutcome {
                    member: s.member.to_string(),
                    runtime: s.runtime.to_string(),
                    status: s.status,
                    token: s.token.map(|t| t.to_string()),
                    source: s.source.map(|t| t.to_string()),
                    pid: s.pid,
                    process_status: None,
                    result: None,
                    failed_step: s.failed_step,
                    error: s.error,
                    usage: s.usage,
                    stderr: s.stderr,
                    unrecorded_token: None,
                    restored: false,
                })
                .collect());
        }
        tokio::time::sleep(SETTLE_POLL).await;
    }
}

fn exit_code(outcomes: &[SeatOutcome]) -> ExitCode {
    if outcomes.iter().all(|o| o.status == SeatStatus::Realized) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
