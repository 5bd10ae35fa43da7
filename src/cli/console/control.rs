//! Host actions from the page (`POST /api/control/{pid}`, only with `--control`). Each runs
//! the command line's own host action — `agentvisor signal PID pause|resume|cancel|terminate`,
//! `gate PID --reason`, `ungate PID` — on the same state directory, so it takes the same path
//! (a live owner's control socket, or the directory opened as owner) and is refused in the
//! same words. The answer carries the command's exit status and output.

use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

/// What the page asks for.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ControlRequest {
    /// `pause`, `resume`, `cancel`, `terminate`, `gate` or `ungate`.
    pub(crate) action: String,
    /// Why (recorded with a signal; required by `gate`).
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// Why a host action from the page did not happen.
#[derive(Debug)]
pub(crate) enum ControlFailure {
    /// The request names no action the console knows, or lacks a reason `gate` needs.
    BadRequest(String),
    /// The command could not be run.
    Internal(String),
    /// The command ran and refused: `{ok: false, code, stdout, stderr}`.
    Refused(Value),
}

/// The command line of a host action, or a refusal naming what to fix.
fn command_line(pid: &str, request: &ControlRequest) -> Result<Vec<String>, String> {
    let reason = request.reason.clone().filter(|r| !r.trim().is_empty());
    let mut args = match request.action.as_str() {
        "pause" | "resume" | "cancel" | "terminate" => {
            vec!["signal".to_string(), pid.to_string(), request.action.clone()]
        }
        "gate" => vec!["gate".to_string(), pid.to_string()],
        "ungate" => vec!["ungate".to_string(), pid.to_string()],
        other => {
            return Err(format!(
                "unknown action {other:?}: use pause, resume, cancel, terminate, gate or ungate"
            ));
        }
    };
    match (request.action.as_str(), reason) {
        ("gate", None) => return Err("gate needs a reason".to_string()),
        ("ungate", _) => {}
        (_, Some(reason)) => args.extend(["--reason".to_string(), reason]),
        (_, None) => {}
    }
    Ok(args)
}

/// Runs the host action and answers `{ok, code, stdout, stderr, running}`. A resume that the
/// command goes on to host (no live owner: it becomes the owner and runs the tree to its end)
/// answers after its first line, with `running: true`; the command is left to finish.
pub(crate) async fn act(state: &Path, pid: &str, request: &ControlRequest) -> Result<Value, ControlFailure> {
    let args = command_line(pid, request).map_err(ControlFailure::BadRequest)?;
    let exe = std::env::current_exe()
        .map_err(|e| ControlFailure::Internal(format!("cannot find the agentvisor binary: {e}")))?;
    let mut child = Command::new(exe)
        .arg("--state")
        .arg(state)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false)
        .spawn()
        .map_err(|e| ControlFailure::Internal(format!("cannot run agentvisor {}: {e}", args.join(" "))))?;
    let piped = || ControlFailure::Internal("the command's output is not piped".into());
    let mut stdout = BufReader::new(child.stdout.take().ok_or_else(piped)?);
    let mut stderr = child.stderr.take().ok_or_else(piped)?;
    let errors = tokio::spawn(async move {
        let mut err = String::new();
        let _ = stderr.read_to_string(&mut err).await;
        err
    });
    let mut first = String::new();
    let read = stdout.read_line(&mut first).await.unwrap_or(0);
    let hosts = request.action == "resume";
    let mut rest = String::new();
    let finished = if read == 0 || !hosts {
        let _ = stdout.read_to_string(&mut rest).await;
        Some(child.wait().await)
    } else {
        child.try_wait().transpose()
    };
    let Some(status) = finished else {
        // Still going: a resume it now hosts. Reap it when it ends.
        tokio::spawn(async move {
            let mut sink = Vec::new();
            let _ = stdout.read_to_end(&mut sink).await;
            let _ = child.wait().await;
        });
        return Ok(json!({ "ok": true, "running": true, "stdout": first.trim_end(), "stderr": "" }));
    };
    let status = status.map_err(|e| ControlFailure::Internal(e.to_string()))?;
    let err = errors.await.unwrap_or_default();
    let answer = json!({
        "ok": status.success(),
        "code": status.code(),
        "running": false,
        "stdout": format!("{first}{rest}").trim_end(),
        "stderr": err.trim_end(),
    });
    if status.success() { Ok(answer) } else { Err(ControlFailure::Refused(answer)) }
}
