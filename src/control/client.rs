//! The typed client of a control socket.

use super::host::ProgressSink;
use super::limits::LINE_BYTES_MAX;
use super::lines::{LineError, read_line, write_json};
use super::protocol::{Line, Request, RootRequest};
use super::{ControlError, socket_path};
use crate::actors::kernel::process::ProcessRow;
use crate::actors::kernel::status::SignalKind;
use crate::actors::{GrantId, Pid};
use crate::mcp::surface::ToolSpec;
use serde_json::Value;
use std::path::{Path, PathBuf};
use tokio::io::BufReader;
use tokio::net::UnixStream;

/// A client of the control socket of a live owner. Each request opens its own connection, so
/// one client serves concurrent requests (a blocking wait beside other calls).
#[derive(Clone, Debug)]
pub struct ControlClient {
    path: PathBuf,
}

impl ControlClient {
    /// Connects to the control socket of state directory `dir`. `Ok(None)` when nothing
    /// listens there (no socket, or a stale one left by an owner that was killed).
    pub async fn connect(dir: &Path) -> Result<Option<ControlClient>, ControlError> {
        let path = socket_path(dir);
        match UnixStream::connect(&path).await {
            Ok(_) => Ok(Some(ControlClient { path })),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                Ok(None)
            }
            Err(source) => Err(ControlError::Connect { path, source }),
        }
    }

    /// The socket this client talks to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sends one request and returns its result, forwarding progress lines to `progress`.
    ///
    /// Cancel safety: dropping the future closes the connection, which withdraws the request
    /// (the owner drops a held call; a call already sent to the kernel stays applied).
    pub async fn request(
        &self,
        request: &Request,
        progress: Option<&ProgressSink>,
    ) -> Result<Value, ControlError> {
        let stream = UnixStream::connect(&self.path)
            .await
            .map_err(|source| ControlError::Connect { path: self.path.clone(), source })?;
        let (read, mut write) = stream.into_split();
        write_json(&mut write, request).await?;
        let mut reader = BufReader::new(read);
        loop {
            let bytes = match read_line(&mut reader, LINE_BYTES_MAX).await {
                Ok(Some(bytes)) => bytes,
                Ok(None) => return Err(ControlError::Closed),
                Err(LineError::TooLong { max }) => {
                    return Err(ControlError::Protocol(format!("an answer line is longer than {max} bytes")));
                }
                Err(LineError::Io(e)) => return Err(ControlError::Io(e)),
            };
            match serde_json::from_slice::<Line>(&bytes) {
                Ok(Line::Progress(p)) => {
                    if let Some(sink) = progress {
                        let _ = sink.try_send(p);
                    }
                }
                Ok(Line::Result(value)) => return Ok(value),
                Ok(Line::Error(e)) => return Err(ControlError::Refused(e)),
                Err(e) => return Err(ControlError::Protocol(e.to_string())),
            }
        }
    }

    /// The tools `pid` may call.
    pub async fn list_tools(&self, pid: Pid) -> Result<Vec<ToolSpec>, ControlError> {
        let value = self.request(&Request::ListTools { pid }, None).await?;
        serde_json::from_value(value).map_err(|e| ControlError::Protocol(e.to_string()))
    }

    /// A tool call as `pid`: the tool's JSON answer (a tool error is an answer too).
    pub async fn call(
        &self,
        pid: Pid,
        tool: &str,
        args: Value,
        progress: Option<&ProgressSink>,
    ) -> Result<Value, ControlError> {
        self.request(&Request::Call { pid, tool: tool.to_string(), args }, progress).await
    }

    /// A process's committed row.
    pub async fn process(&self, pid: Pid) -> Result<Option<ProcessRow>, ControlError> {
        let value = self.request(&Request::Process { pid }, None).await?;
        serde_json::from_value(value).map_err(|e| ControlError::Protocol(e.to_string()))
    }

    /// Readies `pid` for a session acting as it; its row.
    pub async fn attach(&self, pid: Pid) -> Result<ProcessRow, ControlError> {
        let value = self.request(&Request::Attach { pid }, None).await?;
        serde_json::from_value(value).map_err(|e| ControlError::Protocol(e.to_string()))
    }

    /// Launches a root.
    pub async fn spawn_root(&self, root: RootRequest) -> Result<Pid, ControlError> {
        let value = self.request(&Request::SpawnRoot { root }, None).await?;
        value
            .get("pid")
            .cloned()
            .and_then(|p| serde_json::from_value(p).ok())
            .ok_or_else(|| ControlError::Protocol(format!("spawn_root answered {value} without a pid")))
    }

    /// A host signal.
    pub async fn signal(
        &self,
        pid: Pid,
        signal: SignalKind,
        reason: Option<String>,
    ) -> Result<Value, ControlError> {
        self.request(&Request::Signal { pid, signal, reason }, None).await
    }

    /// Sets the host gate.
    pub async fn gate(&self, pid: Pid, reason: &str) -> Result<Value, ControlError> {
        self.request(&Request::Gate { pid, reason: reason.to_string() }, None).await
    }

    /// Clears the host gate.
    pub async fn ungate(&self, pid: Pid) -> Result<Value, ControlError> {
        self.request(&Request::Ungate { pid }, None).await
    }

    /// Revokes a grant and what was derived from it.
    pub async fn revoke(&self, grant_id: GrantId) -> Result<Value, ControlError> {
        self.request(&Request::Revoke { grant_id }, None).await
    }
}
