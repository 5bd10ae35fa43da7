//! The runtime a session acts on: owned in this process, or reached through the owner's
//! control socket. Both answer with the same JSON.

use super::McpError;
use super::surface::{self, ToolSpec};
use crate::actors::Pid;
use crate::actors::kernel::process::ProcessRow;
use crate::actors::runtime::Runtime;
use crate::control::host::{self, ProgressSink};
use crate::control::{ControlClient, ControlError, RootRequest};
use serde_json::Value;
use std::sync::Arc;

/// Where a session's calls go.
#[derive(Clone)]
pub enum Backend {
    /// This process owns the state directory.
    Local(Arc<Runtime>),
    /// Another process owns it; calls go through its control socket.
    Remote(ControlClient),
}

impl Backend {
    /// The tools `pid` may call.
    pub async fn tools(&self, pid: Pid) -> Result<Vec<ToolSpec>, McpError> {
        match self {
            Backend::Local(_) => Ok(surface::tools_for(pid)),
            Backend::Remote(client) => Ok(client.list_tools(pid).await?),
        }
    }

    /// A tool call as `pid`: the tool's JSON answer. A control socket that fails answers
    /// `{"error": {"code": "control_…", …}}`, the same shape as a tool error.
    ///
    /// Cancel safety: as [`host::call`]; through the socket, dropping the future closes the
    /// connection, which the owner treats the same way.
    pub async fn call(&self, pid: Pid, tool: &str, args: Value, sink: Option<&ProgressSink>) -> Value {
        match self {
            Backend::Local(rt) => host::call(rt, pid, tool, args, sink).await,
            Backend::Remote(client) => match client.call(pid, tool, args, sink).await {
                Ok(answer) => answer,
                Err(e) => surface::error(e.code(), e.to_string()),
            },
        }
    }

    /// Readies `pid` for this session ([`host::attach`]).
    pub async fn attach(&self, pid: Pid) -> Result<ProcessRow, McpError> {
        match self {
            Backend::Local(rt) => Ok(host::attach(rt, pid).await?),
            Backend::Remote(client) => client.attach(pid).await.map_err(refused),
        }
    }

    /// Launches a root for this session.
    pub async fn spawn_root(&self, root: RootRequest) -> Result<Pid, McpError> {
        match self {
            Backend::Local(rt) => Ok(host::spawn_root(rt, root).await?),
            Backend::Remote(client) => client.spawn_root(root).await.map_err(refused),
        }
    }
}

fn refused(e: ControlError) -> McpError {
    match e {
        ControlError::Refused(e) => McpError::Refused(e),
        other => McpError::Control(other),
    }
}
