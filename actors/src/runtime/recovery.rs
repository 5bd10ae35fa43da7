//! Reopen-time recovery, and failing a subtree whose actors are gone.
//!
//! On reopen, before any actor starts, one change set:
//! - a `running` row whose generation was claimed for resume fails closed
//!   (`resume_interrupted`): its resumed execution may have completed an effect;
//! - any other `running` row (owned by an earlier epoch) becomes `paused` with reason
//!   `stale_execution`; it is never replayed;
//! - a live row whose parent is terminal (a crash in the middle of a parent's end), or whose
//!   parent this recovery ends, is killed as its parent's end would have done — rows are
//!   visited parents first, so this reaches a whole subtree.
//!
//! Waiting, paused and runnable rows are left as they are; their actors re-arm them.

use super::actor::{children_of, release_children};
use super::ids::UuidV7Ids;
use super::memory::{Memory, Stage};
use super::shared::Shared;
use super::telemetry::KernelEvent;
use crate::kernel::ids::Pid;
use crate::kernel::objects::RootViewRequest;
use crate::kernel::process::{Event, ProcessRow};
use crate::kernel::status::{FailureKind, Sender, SignalKind, Status};
use crate::store::{Change, ProcessQuery, Store, StoreError};
use std::collections::HashMap;

/// What recovery changed, for the caller's report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Rows found `running` and paused as stale executions.
    pub stale_paused: Vec<Pid>,
    /// Rows failed closed because their resume claim was outstanding.
    pub failed_closed: Vec<Pid>,
    /// Live rows under a terminal parent, killed.
    pub orphans_killed: Vec<Pid>,
    /// Live rows found (after the fixes above).
    pub live: usize,
    /// Unreleased objects whose payload did not survive: they were never checkpointed. Their
    /// OIDs, metadata and handles are intact; reading one reports `materialized: false`.
    pub unmaterialized_oids: Vec<crate::kernel::ids::Oid>,
}

/// Applies the recovery rules and returns the live rows, parents before children. A row
/// ended here releases the memory of its unmerged children, as its end would have.
pub(crate) async fn recover(
    store: &dyn Store,
    memory: &Memory,
) -> Result<(Vec<ProcessRow>, RecoveryReport), StoreError> {
    // The live rows only (an index holds them), so a reopen costs what is live, not the
    // history: a terminal row is read only as the parent of a live one.
    let mut all = store.processes(ProcessQuery::default())?;
    // Parents before children, and each decision recorded in `status`, so that a row whose
    // parent ends here (failed closed, or killed as an orphan) ends too: no live row is left
    // under a terminal parent, where no actor would ever run it.
    all.sort_by_key(|r| r.depth);
    let mut status: HashMap<Pid, Status> = all.iter().map(|r| (r.pid, r.status)).collect();
    let parents: Vec<Pid> = all.iter().filter_map(|r| r.parent).collect();
    for parent in parents {
        if !status.contains_key(&parent)
            && let Some(row) = store.process(parent)?
        {
            status.insert(parent, row.status);
        }
    }
    let mut report = RecoveryReport::default();
    let mut live = Vec::new();
    let mut ended = Vec::new();
    for mut row in all {
        let orphaned = row.parent.is_some_and(|p| status.get(&p).is_none_or(|s| s.is_terminal()));
        let event = if orphaned {
            report.orphans_killed.push(row.pid);
            Some(Event::Kill {
                signal: SignalKind::Terminate,
                reason: Some("its parent had ended before the runtime stopped".into()),
                sender: Sender::Runtime,
            })
        } else if row.status == Status::Running && row.resume_claim.is_some() {
            report.failed_closed.push(row.pid);
            Some(Event::Fail {
                kind: FailureKind::ResumeInterrupted,
                message: format!(
                    "the runtime stopped while generation {} was claimed for resume; failing closed instead of replaying a possibly completed effect",
                    row.resume_claim.unwrap_or_default()
                ),
            })
        } else if row.status == Status::Running {
            report.stale_paused.push(row.pid);
            Some(Event::RecoverStale)
        } else {
            None
        };
        if let Some(event) = event {
            row.apply(event).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            status.insert(row.pid, row.status);
            // Only an end releases the children's memory: a paused row's are not listed.
            let children = if row.status.is_terminal() { children_of(store, row.pid) } else { Vec::new() };
            ended.push((row.clone(), children));
        }
        if !row.status.is_terminal() {
            live.push(row);
        }
    }
    let (_, ticket) = memory
        .plan(store, |stage| {
            let without: Vec<&ProcessRow> =
                live.iter().filter(|r| stage.space().process(r.pid).is_none()).collect();
            for row in without {
                adopt_without_memory(stage, row);
            }
            for (row, children) in &ended {
                if row.status.is_terminal() {
                    release_children(stage, row.pid, children);
                }
                stage.push(Change::PutProcess(row.clone()));
            }
            Ok::<_, super::calls::ToolError>(())
        })
        .map_err(|e| StoreError::Corrupt(e.message))?;
    if let Some(ticket) = ticket {
        memory.finish(ticket).await?;
    }
    live.sort_by_key(|r| r.depth);
    report.live = live.len();
    Ok((live, report))
}

/// Gives a live process that has no object memory (its row was written by a build before
/// object memory) a goal-only view, as a root launch would, so it can create, fork and exit
/// with a result like any other.
fn adopt_without_memory(stage: &mut Stage<'_>, row: &ProcessRow) {
    let planned = stage
        .space()
        .plan_root_view(&RootViewRequest::default())
        .and_then(|approval| stage.space().materialize_view(approval, row.pid, &mut UuidV7Ids));
    match planned {
        Ok(mut plan) => stage.apply_view(&mut plan, &row.goal),
        Err(e) => tracing::error!(pid = %row.pid, error = %e, "failed to give a process object memory"),
    }
}

/// How a subtree whose actors are gone is ended.
#[derive(Clone, Debug)]
pub(crate) enum OrphanEnd {
    /// Its actor failed (a kernel bug): `failed` with kind `panic` and this message.
    Failed(String),
    /// Its parent ended while it had no live actor: `killed` (terminate), sender the parent.
    ParentEnded(Pid),
}

impl OrphanEnd {
    fn event(&self) -> Event {
        match self {
            OrphanEnd::Failed(message) => Event::Fail { kind: FailureKind::Panic, message: message.clone() },
            OrphanEnd::ParentEnded(parent) => Event::Kill {
                signal: SignalKind::Terminate,
                reason: Some(format!("parent {parent} ended")),
                sender: Sender::Process(*parent),
            },
        }
    }
}

/// Ends `pid` and every live descendant (their actors are gone with it), deepest first, and
/// returns `pid`'s final row (or `None` if it was already terminal or unreadable).
pub(crate) async fn end_orphaned_subtree(shared: &Shared, pid: Pid, end: &OrphanEnd) -> Option<ProcessRow> {
    let mut order = vec![pid];
    let mut i = 0;
    while i < order.len() {
        let query = ProcessQuery { parent: Some(order[i]), ..ProcessQuery::default() };
        if let Ok(children) = shared.store.processes(query) {
            order.extend(children.into_iter().map(|c| c.pid));
        }
        i += 1;
    }
    let mut last = None;
    for p in order.into_iter().rev() {
        // Its actor, if the routing table still names one, went down with the failed
        // subtree (a dying supervisor takes its children without their post_stop).
        shared.registry.remove(&p);
        let Ok(Some(mut row)) = shared.store.process(p) else { continue };
        if row.status.is_terminal() {
            if p == pid {
                last = Some(row);
            }
            continue;
        }
        let from = row.status;
        if row.apply(end.event()).is_ok() && commit_end(shared, &row).await {
            shared.telemetry.publish(KernelEvent::ProcessTransition {
                pid: p,
                transition: end.event().name(),
                from,
                to: row.status,
                state_generation: row.state_generation,
                outcome: row.outcome.clone(),
            });
            if p == pid {
                last = Some(row);
            }
        }
    }
    last
}

/// Commits an orphan's end together with the release of its unmerged children's memory.
async fn commit_end(shared: &Shared, row: &ProcessRow) -> bool {
    let store = shared.store.as_ref();
    let children = children_of(store, row.pid);
    let committed = shared
        .memory
        .commit(store, |stage| {
            release_children(stage, row.pid, &children);
            stage.push(Change::PutProcess(row.clone()));
            Ok::<_, super::calls::ToolError>(())
        })
        .await;
    committed.is_ok()
}
