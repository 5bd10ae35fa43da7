//! `agentvisor mcp`: a Model Context Protocol server that acts as one process of the runtime
//! ([docs/mcp.md](../../docs/mcp.md)).
//!
//! One server is one process in the tree: a new root ([`root`]: goal, grants, budget) or an
//! existing live process (`--as PID`, allowed only to the user who owns the state directory).
//! [`session::open`] opens the state directory as its owner, or attaches to the live owner
//! through its control socket ([`crate::control`]); [`backend::Backend`] is the one seam
//! between the two. [`server::McpServer`] is the rmcp handler: `tools/list` is the kernel
//! tool surface ([`surface`]), `tools/call` answers each call with the tool's JSON. It is
//! served over stdio ([`stdio`], which also answers unparsable input with a JSON-RPC parse
//! error) or streamable HTTP on a loopback address ([`http`]).

pub mod backend;
pub mod http;
pub mod root;
pub mod server;
pub mod session;
pub mod stdio;
pub mod surface;

use crate::control::{ControlError, HostError};

/// Why an MCP server could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The root's configuration is wrong; the message names the flag or field.
    #[error("invalid root: {0}")]
    Root(String),
    /// `--http` names an address that is not a loopback address.
    #[error(
        "--http {addr}: only a loopback address is served (127.0.0.1, ::1 or localhost), since the server acts with a process's authority and has no authentication"
    )]
    NotLoopback {
        /// The address given.
        addr: String,
    },
    /// The state directory could not be opened.
    #[error("failed to open the state directory {path}: {message}")]
    StateDir {
        /// The directory.
        path: std::path::PathBuf,
        /// Why.
        message: String,
    },
    /// The control socket failed.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// The runtime refused what the session asked (an unknown or terminal `--as` pid, a
    /// refused root).
    #[error("{} ({})", .0.message, .0.code)]
    Refused(HostError),
    /// The transport failed.
    #[error("the MCP transport failed: {0}")]
    Transport(String),
}

impl From<HostError> for McpError {
    fn from(e: HostError) -> Self {
        McpError::Refused(e)
    }
}
