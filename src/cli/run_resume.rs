//! `agentvisor run --resume RIG_ID`: continues a rig whose run ended early, on the spec it was
//! created from, with the live view and the summary of `run` (`RigRunner::resume` decides
//! what each seat does). An unknown rig, or one with nothing left to continue, is refused
//! from a read-only view before the directory is opened as owner, so the refusal changes
//! nothing.

use super::output::open_view;
use super::run::Reopened;
use agentvisor::agent::run::RootBudget;
use agentvisor::rig::RigId;
use agentvisor::rig::run::{ResumeError, has_work, nothing_to_resume};
use agentvisor::rig::store::SeatStore;
use std::path::Path;
use std::process::ExitCode;

pub(crate) async fn run(state: &Path, rig: &str, budget: RootBudget, json: bool) -> anyhow::Result<ExitCode> {
    let asked = rig;
    let refuse = |e: ResumeError| {
        eprintln!("agentvisor: {e} ({})", e.code());
        Ok(ExitCode::from(2))
    };
    if super::stores::seats_read_only(state)?.is_none() {
        return refuse(ResumeError::UnknownRig { rig: asked.to_string() });
    }
    let (record, seats) = {
        let store = super::stores::seats(state)?;
        let record = store.rigs()?.into_iter().find(|r| r.id.as_str() == asked);
        let seats = match &record {
            Some(record) => store.seats(&record.id)?,
            None => Vec::new(),
        };
        (record, seats)
    };
    let Some(record) = record else {
        return refuse(ResumeError::UnknownRig { rig: asked.to_string() });
    };
    let rig: RigId = record.id.clone();
    if !has_work(&open_view(state)?.rt, &seats) {
        return refuse(nothing_to_resume(&rig, &seats));
    }
    let reopened = match Reopened::open(state, &record, budget).await? {
        Ok(reopened) => reopened,
        Err(code) => return Ok(code),
    };
    let outcomes = match reopened.opened.runner.resume(&rig).await {
        Ok(outcomes) => outcomes,
        Err(e) => {
            reopened.abandon().await?;
            return refuse(e);
        }
    };
    reopened.finish(&rig, outcomes, json).await
}
