//! Waiting, without sleeping, until a change the runtime makes on its own has committed.
//!
//! Every helper subscribes to telemetry, then checks the committed rows, then re-checks after
//! each event. An event is published only after its change commits, and the subscription
//! exists before the first check, so no wake-up is lost. A lagged subscription just
//! re-checks; a closed one (the runtime is gone) stops waiting.

use crate::actors::Pid;
use crate::actors::kernel::status::{Status, WaitState};
use crate::actors::runtime::Runtime;
use crate::actors::runtime::calls::{CallOk, ToolError};
use crate::actors::runtime::telemetry::KernelEvent;
use crate::actors::store::ProcessQuery;
use tokio::sync::broadcast::{self, error::RecvError};

/// Waits until `done()` holds, re-checking after every kernel event.
async fn until(rt: &Runtime, mut done: impl FnMut() -> bool) {
    let mut events: broadcast::Receiver<KernelEvent> = rt.subscribe();
    while !done() {
        match events.recv().await {
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return,
        }
    }
}

/// Whether `pid` has left `runnable` (or has no row).
fn started(rt: &Runtime, pid: Pid) -> bool {
    !matches!(rt.process(pid), Ok(Some(row)) if row.status == Status::Runnable)
}

/// Waits until a just-launched process has started (its actor moves it out of `runnable`
/// right after launch, asynchronously).
pub(super) async fn until_started(rt: &Runtime, pid: Pid) {
    until(rt, || started(rt, pid)).await;
}

/// Whether `pid`'s parent is still suspended on a wait for `pid` although `pid` is terminal.
fn parent_still_waiting(rt: &Runtime, pid: Pid) -> bool {
    let Ok(Some(row)) = rt.process(pid) else { return false };
    if !row.status.is_terminal() {
        return false;
    }
    let Some(parent) = row.parent else { return false };
    matches!(
        rt.process(parent),
        Ok(Some(p)) if p.wait_state == Some(WaitState::Child { child_pid: pid })
    )
}

/// Waits until a process that just became terminal has satisfied its parent's wait on it, if
/// the parent was waiting (the parent learns of the end asynchronously).
pub(super) async fn until_parent_notified(rt: &Runtime, pid: Pid) {
    until(rt, || !parent_still_waiting(rt, pid)).await;
}

/// Whether every live process has been brought back after an open: nothing is still
/// `runnable`, and no `waiting_event` row's saved child wait names a terminal child.
fn reopened(rt: &Runtime) -> bool {
    let Ok(rows) = rt.processes(ProcessQuery { include_terminal: true, ..ProcessQuery::default() }) else {
        return true;
    };
    rows.iter().all(|row| {
        if row.status == Status::Runnable {
            return false;
        }
        // Only a `waiting_event` row re-arms its wait at open; a paused one does on resume.
        match (&row.status, &row.wait_state) {
            (Status::WaitingEvent, Some(WaitState::Child { child_pid })) => {
                !rows.iter().any(|c| c.pid == *child_pid && c.status.is_terminal())
            }
            _ => true,
        }
    })
}

/// Waits until a freshly opened runtime has restarted and re-armed what recovery left.
pub(super) async fn until_reopened(rt: &Runtime) {
    until(rt, || reopened(rt)).await;
}

/// Waits for what an answered call set in motion: a launched child starts, and a process that
/// became terminal satisfies its parent's wait on it.
pub(super) async fn after_call(rt: &Runtime, result: &Result<CallOk, ToolError>) {
    match result {
        Ok(CallOk::Spawned(l)) => until_started(rt, l.pid).await,
        Ok(CallOk::Exited(e)) => until_parent_notified(rt, e.pid).await,
        Ok(CallOk::Signalled(s)) if s.status.is_terminal() => until_parent_notified(rt, s.child_pid).await,
        _ => {}
    }
}
