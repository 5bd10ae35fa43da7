//! The host actions of the command line, one small function per action on a [`Runtime`] that
//! owns the state directory: `signal`, `gate`, `ungate`, `revoke`. The commands that take them
//! (`agentvisor signal PID pause|resume|cancel|terminate`, `gate`, `ungate`, `revoke`) are
//! [`run_signal`] and its siblings: they open the directory as its owner (recovering what a
//! dead owner left, as `agentvisor recover` does), apply the action, and hand the runtime
//! back with [`finish`].
//!
//! While a live runtime owns the directory these commands are sent to it through its control
//! socket ([`agentvisor::control`]): an action reaches the owner's actors, never a second
//! runtime, and is never refused for the lock. A state kept in PostgreSQL (`--store`) whose
//! owner runs elsewhere (another directory or machine) is reached the same way through the
//! database ([`agentvisor::control::database`]). Pids are resolved on a read-only view.

use super::output::{resolve_pid, short_pid};
use super::recover::{open_recovered, settle};
use agentvisor::actors::Pid;
use agentvisor::actors::kernel::ids::GrantId;
use agentvisor::actors::kernel::process::ProcessRow;
use agentvisor::actors::kernel::status::SignalKind;
use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::runtime::calls::{SignalResult, ToolError};
use agentvisor::actors::store::PostgresStore;
use agentvisor::control::protocol::Request;
use agentvisor::control::{ControlClient, ControlError, database};
use agentvisor::images::builtin_images;
use serde_json::Value;
use std::path::Path;
use std::process::ExitCode;

/// Where a live owner is reached.
enum LiveOwner {
    /// Through its control socket in the state directory.
    Socket(ControlClient),
    /// Through the PostgreSQL database its state is kept in.
    Database(String),
}

impl LiveOwner {
    /// Sends one request and returns the owner's answer.
    async fn send(&self, request: Request) -> Result<Value, ControlError> {
        match self {
            LiveOwner::Socket(client) => client.request(&request, None).await,
            LiveOwner::Database(url) => database::request(url, &request).await,
        }
    }
}

/// The live owner and a read-only view to resolve pids on, when a live runtime owns `state`
/// (or, with `--store`, the database).
async fn live_owner(state: &Path) -> anyhow::Result<Option<(LiveOwner, Runtime)>> {
    let view = || Runtime::open_read_only(state, super::stores::runtime_options(builtin_images()));
    if state.exists()
        && let Some(client) = ControlClient::connect(state).await?
    {
        return Ok(Some((LiveOwner::Socket(client), view()?)));
    }
    if let Some(url) = super::stores::url()
        && PostgresStore::owner_is_live(url)?
    {
        return Ok(Some((LiveOwner::Database(url.to_string()), view()?)));
    }
    Ok(None)
}

/// Reports what the owner answered: a line on stdout, or its refusal as the command's error.
fn answered(action: &str, pid: Pid, value: &Value) -> anyhow::Result<ExitCode> {
    if let Some(error) = value.get("error") {
        let code = error["code"].as_str().unwrap_or("refused");
        let message = error["message"].as_str().unwrap_or_default();
        anyhow::bail!("{action} {pid} refused ({code}): {message}");
    }
    let status = value.get("status").and_then(Value::as_str).unwrap_or("done");
    outln!("{action} {} (through the live runtime): {status}", short_pid(pid));
    Ok(ExitCode::SUCCESS)
}

/// Signals `pid` as the host (any process, not only a direct child).
pub(crate) async fn signal(
    rt: &Runtime,
    pid: Pid,
    signal: SignalKind,
    reason: Option<String>,
) -> Result<SignalResult, ToolError> {
    rt.signal(pid, signal, reason).await
}

/// Sets the host-only resume gate on `pid` (pausing it); no resume takes effect until
/// [`ungate`].
pub(crate) async fn gate(rt: &Runtime, pid: Pid, reason: &str) -> Result<ProcessRow, ToolError> {
    rt.set_gate(pid, reason).await
}

/// Clears the host gate of `pid`; does not resume it.
pub(crate) async fn ungate(rt: &Runtime, pid: Pid) -> Result<ProcessRow, ToolError> {
    rt.clear_gate(pid).await
}

/// Revokes `pid`'s live grants on `resource` and everything derived from them; returns every
/// revoked grant with its holder. Refused (`not_held`) when `pid` holds no live grant on it.
pub(crate) async fn revoke(rt: &Runtime, pid: Pid, resource: &str) -> Result<Vec<(GrantId, Pid)>, ToolError> {
    let grants = rt.grants_of(pid).map_err(|e| ToolError::new("store", e.to_string()))?;
    let held: Vec<GrantId> =
        grants.iter().filter(|g| g.live && g.resource == resource).map(|g| g.id).collect();
    if held.is_empty() {
        let live: Vec<&str> = grants.iter().filter(|g| g.live).map(|g| g.resource.as_str()).collect();
        return Err(ToolError::new(
            "not_held",
            format!(
                "{pid} holds no live grant on {resource:?} (its live grants: {})",
                if live.is_empty() { "none".to_string() } else { live.join(", ") }
            ),
        ));
    }
    let mut revoked = Vec::new();
    for id in held {
        revoked.extend(rt.revoke(id).await.map_err(|e| ToolError::new("revoke_failed", e.to_string()))?);
    }
    Ok(revoked)
}

/// A refused host action as the command reports it: the code and the sentence.
fn refused(action: &str, pid: Pid, e: &ToolError) -> anyhow::Error {
    anyhow::anyhow!("{action} {pid} refused ({}): {}", e.code, e.message)
}

/// Ends a refused action: the runtime was opened held, so shutting it down leaves the tree
/// exactly as it was; then the refusal is the command's error.
async fn refuse(rt: Runtime, error: anyhow::Error) -> anyhow::Result<ExitCode> {
    settle(rt, false).await?;
    Err(error)
}

/// `agentvisor signal PID SIGNAL [--reason]`.
pub(crate) async fn run_signal(
    state: &Path,
    pid: &str,
    kind: &str,
    reason: Option<String>,
) -> anyhow::Result<ExitCode> {
    let Some(kind) = SignalKind::parse(kind) else {
        anyhow::bail!("unknown signal {kind:?}: use pause, resume, cancel or terminate");
    };
    if let Some((client, view)) = live_owner(state).await? {
        let pid = resolve_pid(&view, pid)?;
        return answered(
            kind.as_str(),
            pid,
            &client.send(Request::Signal { pid, signal: kind, reason }).await?,
        );
    }
    // Opened held, so a refused signal leaves the tree exactly as it was; an accepted resume
    // then releases the hold (every recovered start and wait) and hosts the tree to its end.
    let (rt, lines) = open_recovered(state, true).await?;
    for line in lines {
        eprintln!("{line}");
    }
    let pid = match resolve_pid(&rt, pid) {
        Ok(pid) => pid,
        Err(e) => return refuse(rt, e).await,
    };
    let result = match signal(&rt, pid, kind, reason).await {
        Ok(result) => result,
        Err(e) => return refuse(rt, refused(kind.as_str(), pid, &e)).await,
    };
    if kind == SignalKind::Resume {
        rt.release_hold();
    }
    outln!(
        "{} {}: {} (generation {})",
        kind.as_str(),
        short_pid(pid),
        result.status,
        result.state_generation
    );
    settle(rt, kind == SignalKind::Resume).await
}

/// `agentvisor gate PID --reason`.
pub(crate) async fn run_gate(state: &Path, pid: &str, reason: &str) -> anyhow::Result<ExitCode> {
    if let Some((client, view)) = live_owner(state).await? {
        let pid = resolve_pid(&view, pid)?;
        return answered("gate", pid, &client.send(Request::Gate { pid, reason: reason.to_string() }).await?);
    }
    let (rt, _) = open_recovered(state, true).await?;
    let pid = match resolve_pid(&rt, pid) {
        Ok(pid) => pid,
        Err(e) => return refuse(rt, e).await,
    };
    match gate(&rt, pid, reason).await {
        Ok(row) => outln!(
            "gated {}: {} (gate: {})",
            short_pid(pid),
            row.status,
            row.host_gate.as_deref().unwrap_or("-")
        ),
        Err(e) => return refuse(rt, refused("gate", pid, &e)).await,
    }
    settle(rt, false).await
}

/// `agentvisor ungate PID`.
pub(crate) async fn run_ungate(state: &Path, pid: &str) -> anyhow::Result<ExitCode> {
    if let Some((client, view)) = live_owner(state).await? {
        let pid = resolve_pid(&view, pid)?;
        return answered("ungate", pid, &client.send(Request::Ungate { pid }).await?);
    }
    let (rt, _) = open_recovered(state, true).await?;
    let pid = match resolve_pid(&rt, pid) {
        Ok(pid) => pid,
        Err(e) => return refuse(rt, e).await,
    };
    match ungate(&rt, pid).await {
        Ok(row) => outln!(
            "ungated {}: {} (not resumed; `agentvisor signal {} resume` resumes it)",
            short_pid(pid),
            row.status,
            short_pid(pid)
        ),
        Err(e) => return refuse(rt, refused("ungate", pid, &e)).await,
    }
    settle(rt, false).await
}

/// `agentvisor revoke PID RESOURCE`.
pub(crate) async fn run_revoke(state: &Path, pid: &str, resource: &str) -> anyhow::Result<ExitCode> {
    if let Some((client, view)) = live_owner(state).await? {
        let pid = resolve_pid(&view, pid)?;
        let grants = view.grants_of(pid)?;
        let held: Vec<GrantId> =
            grants.iter().filter(|g| g.live && g.resource == resource).map(|g| g.id).collect();
        if held.is_empty() {
            anyhow::bail!("revoke {pid} refused (not_held): {pid} holds no live grant on {resource:?}");
        }
        for id in held {
            answered("revoke", pid, &client.send(Request::Revoke { grant_id: id }).await?)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (rt, _) = open_recovered(state, true).await?;
    let pid = match resolve_pid(&rt, pid) {
        Ok(pid) => pid,
        Err(e) => return refuse(rt, e).await,
    };
    match revoke(&rt, pid, resource).await {
        Ok(revoked) => {
            for (grant, holder) in &revoked {
                outln!("revoked {grant} held by {}", short_pid(*holder));
            }
        }
        Err(e) => return refuse(rt, refused("revoke", pid, &e)).await,
    }
    settle(rt, false).await
}
