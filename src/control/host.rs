//! What the host does on a runtime it owns, for a session acting as a process or for a
//! control-socket client: the one implementation behind both the in-process MCP server and
//! the control socket.

use super::limits::PROGRESS_INTERVAL_MS;
use super::protocol::{HostError, Progress, RootRequest};
use crate::actors::kernel::process::ProcessRow;
use crate::actors::kernel::status::{PauseReason, SignalKind, Status};
use crate::actors::runtime::Runtime;
use crate::actors::runtime::telemetry::KernelEvent;
use crate::actors::{GrantId, Pid};
use crate::images::{OTHER_PUPPET_IMAGE, PUPPET_IMAGE};
use crate::mcp::surface;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

/// Where a waiting call reports progress. Reports are advisory: a full channel drops one.
pub type ProgressSink = mpsc::Sender<Progress>;

fn report(sink: Option<&ProgressSink>, message: String) {
    if let Some(sink) = sink {
        let _ = sink.try_send(Progress { message });
    }
}

fn row_of(rt: &Runtime, pid: Pid) -> Result<Option<ProcessRow>, HostError> {
    rt.process(pid).map_err(|e| e.to_tool_error().into())
}

/// What a waiting row waits for, in words.
fn waiting_on(row: &ProcessRow) -> String {
    match &row.wait_state {
        Some(crate::actors::WaitState::Child { child_pid }) => format!("child {child_pid} to end"),
        Some(crate::actors::WaitState::Message { .. }) => "a matching message".to_string(),
        Some(other) => format!("{other:?}"),
        None => "its saved action".to_string(),
    }
}

fn is_waiting(rt: &Runtime, pid: Pid) -> Option<ProcessRow> {
    match rt.process(pid) {
        Ok(Some(row)) if row.status == Status::WaitingEvent => Some(row),
        _ => None,
    }
}

/// Makes a tool call as `pid` and answers the tool's JSON, reporting progress to `sink` while
/// the call waits.
///
/// A process that is `waiting_event` makes no calls: the kernel refuses them (`not_running`).
/// One exception is made here for a session that attached to a process whose earlier
/// session left it blocked: a `wait_child_process` or `receive_process_messages` made while
/// the saved wait is pending rejoins it. It is held, with progress reports, until the kernel
/// completes the saved action, and then runs. So a client that lost the answer of a blocking
/// wait gets it by calling the wait again: the child is terminal by then and the wait
/// answers at once. While the call itself waits (a blocking wait or receive), a report is
/// sent when the caller suspends and then every [`PROGRESS_INTERVAL_MS`].
///
/// Cancel safety: dropping the future while the call is held sends nothing to the kernel;
/// dropping it once the call was sent leaves what the kernel defines (see
/// [`surface::call`]): a blocking wait stays the caller's durable saved action.
pub async fn call(rt: &Runtime, pid: Pid, tool: &str, args: Value, sink: Option<&ProgressSink>) -> Value {
    let interval = Duration::from_millis(PROGRESS_INTERVAL_MS);
    let mut events = rt.subscribe();
    // A wait or receive rejoins an earlier blocking call's saved action: held until it completes.
    while let Some(row) = is_waiting(rt, pid).filter(|_| surface::is_waiting_tool(tool)) {
        report(
            sink,
            format!("{pid} is waiting_event for {}; this call runs once that completes", waiting_on(&row)),
        );
        if !next_change(&mut events, pid, interval).await {
            return surface::error("runtime_shutdown", "the runtime shut down while the call was held");
        }
    }
    let answer = surface::call(rt, pid, tool, args);
    tokio::pin!(answer);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    let mut listening = true;
    loop {
        tokio::select! {
            biased;
            value = &mut answer => return value,
            event = events.recv(), if listening => match event {
                Ok(KernelEvent::ProcessTransition { pid: p, to: Status::WaitingEvent, .. }) if p == pid => {
                    if let Some(row) = is_waiting(rt, pid) {
                        report(sink, format!("{pid} is waiting_event for {}", waiting_on(&row)));
                    }
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => listening = false,
            },
            _ = tick.tick() => {
                if let Some(row) = is_waiting(rt, pid) {
                    report(sink, format!("{pid} is still waiting_event for {}", waiting_on(&row)));
                }
            }
        }
    }
}

/// Waits for a transition of `pid` (or a lag, or `interval` passing, after which the caller
/// re-checks). `false` when the runtime is gone.
async fn next_change(
    events: &mut tokio::sync::broadcast::Receiver<KernelEvent>,
    pid: Pid,
    interval: Duration,
) -> bool {
    let deadline = tokio::time::sleep(interval);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(KernelEvent::ProcessTransition { pid: p, .. }) if p == pid => return true,
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => return true,
                Err(RecvError::Closed) => return false,
            },
            _ = &mut deadline => return true,
        }
    }
}

/// Whether a row runs a host-driven image: its program does nothing by itself, every call
/// comes from the host (an MCP session, a scenario).
fn host_driven(row: &ProcessRow) -> bool {
    row.image.0 == PUPPET_IMAGE || row.image.0 == OTHER_PUPPET_IMAGE
}

/// Readies `pid` for a session acting as it and returns its row.
///
/// Refuses a process with no row (`unknown_process`) or a terminal one (`process_terminal`).
/// A host-driven process paused because its runtime went away — a clean shutdown
/// (`pause_reason: shutdown`) or a crash (`stale_execution`) — is resumed: its program is the
/// session, so the session attaching is what continues it. Any other pause (a signal, a host
/// gate) is left as it is, and the session's calls are held by the kernel until a resume.
pub async fn attach(rt: &Runtime, pid: Pid) -> Result<ProcessRow, HostError> {
    let row = row_of(rt, pid)?.ok_or_else(|| {
        HostError::new("unknown_process", format!("no process {pid} in this state directory"))
    })?;
    if row.status.is_terminal() {
        return Err(HostError::new(
            crate::actors::kernel::codes::PROCESS_TERMINAL,
            format!("{pid} is {}: a session can act only as a live process", row.status),
        ));
    }
    let stopped_by_runtime =
        matches!(row.pause_reason, Some(PauseReason::Shutdown | PauseReason::StaleExecution { .. }));
    if row.status == Status::Paused && stopped_by_runtime && host_driven(&row) && row.host_gate.is_none() {
        rt.signal(pid, SignalKind::Resume, Some("a session attached to it".into())).await?;
        return row_of(rt, pid)?
            .ok_or_else(|| HostError::new("unknown_process", format!("no process {pid}")));
    }
    Ok(row)
}

/// Launches a root and waits until it has started.
pub async fn spawn_root(rt: &Runtime, mut root: RootRequest) -> Result<Pid, HostError> {
    /// Keyed launches one at a time: two with one key must not both find it unused.
    static KEYED: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let mut events = rt.subscribe();
    let launched = match root.launch_key.take() {
        Some(key) => {
            let _one_at_a_time = KEYED.lock().await;
            rt.spawn_root_keyed(root.into(), key).await
        }
        None => rt.spawn_root(root.into()).await,
    };
    let pid = launched.map_err(|e| HostError::from(e.to_tool_error()))?;
    // Its actor moves it out of `runnable` right after launch, asynchronously.
    while matches!(row_of(rt, pid)?, Some(row) if row.status == Status::Runnable) {
        match events.recv().await {
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => break,
        }
    }
    Ok(pid)
}

/// A host signal; the result as JSON.
pub async fn signal(
    rt: &Runtime,
    pid: Pid,
    signal: SignalKind,
    reason: Option<String>,
) -> Result<Value, HostError> {
    let result = rt.signal(pid, signal, reason).await?;
    Ok(serde_json::to_value(result).unwrap_or(Value::Null))
}

/// Sets (`Some(reason)`) or clears (`None`) the host gate; the row as JSON.
pub async fn gate(rt: &Runtime, pid: Pid, reason: Option<&str>) -> Result<Value, HostError> {
    let row = match reason {
        Some(reason) => rt.set_gate(pid, reason).await?,
        None => rt.clear_gate(pid).await?,
    };
    Ok(serde_json::to_value(row).unwrap_or(Value::Null))
}

/// Revokes a grant and what was derived from it.
pub async fn revoke(rt: &Runtime, grant: GrantId) -> Result<Value, HostError> {
    let revoked = rt.revoke(grant).await.map_err(|e| HostError::from(e.to_tool_error()))?;
    let revoked: Vec<Value> =
        revoked.iter().map(|(grant_id, holder)| json!({ "grant_id": grant_id, "holder": holder })).collect();
    Ok(json!({ "revoked": revoked }))
}

/// A process's row as JSON (`null` if there is none).
pub fn process(rt: &Runtime, pid: Pid) -> Result<Value, HostError> {
    Ok(serde_json::to_value(row_of(rt, pid)?).unwrap_or(Value::Null))
}
