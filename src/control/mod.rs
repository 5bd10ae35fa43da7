//! The control socket: how other commands reach the live runtime that owns a state
//! directory ([docs/control.md](../../docs/control.md)).
//!
//! Every command that owns a state directory (`run`, `agent`, `demo`, `mcp`) starts a
//! [`ControlServer`] on `DIR/control.sock` (mode 0600; only the directory owner's user is
//! served). A [`ControlClient`] sends [`Request`]s as JSON lines: list a process's tools, call
//! a tool as a process (blocking calls report progress and answer when ready), read a row,
//! attach a session to a process, launch a root, and the host actions signal, gate, ungate
//! and revoke. [`host`] is what the owner does for each, shared with the in-process MCP
//! server.

mod client;
pub mod database;
pub mod host;
pub mod limits;
pub mod lines;
pub mod protocol;
mod server;

pub use client::ControlClient;
pub use protocol::{HostError, Line, Progress, Request, RootRequest};
pub use server::ControlServer;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The socket's file name inside a state directory.
pub const SOCKET_FILE: &str = "control.sock";

/// The control socket of state directory `dir`.
pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join(SOCKET_FILE)
}

/// Why the control socket could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// Connecting to the socket failed.
    #[error("failed to connect to the control socket {path}: {source}")]
    Connect {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The socket could not be created.
    #[error("failed to listen on the control socket {path}: {source}")]
    Bind {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The runtime is not the owner of a state directory.
    #[error("only a runtime that owns a state directory listens on a control socket")]
    NotOwnerRuntime,
    /// The connection ended before the answer.
    #[error(
        "the runtime owning the state directory closed the control connection before answering (did it exit?)"
    )]
    Closed,
    /// The other side sent something that is not the protocol.
    #[error("the control socket answered something that is not the protocol: {0}")]
    Protocol(String),
    /// The owner refused the request.
    #[error("the owner refused the request: {0}")]
    Refused(HostError),
    /// The state directory belongs to another user.
    #[error(
        "{path} belongs to user {owner}, not to this user ({me}): only the user who owns a state directory may act as its processes"
    )]
    NotDirOwner {
        /// The state directory.
        path: PathBuf,
        /// Its owner's uid.
        owner: u32,
        /// This process's effective uid.
        me: u32,
    },
    /// Reading or writing the connection failed.
    #[error("the control connection failed: {0}")]
    Io(#[from] std::io::Error),
    /// The database that carries host requests for a state kept in PostgreSQL failed.
    #[error("the database carrying host requests failed: {0}")]
    Database(String),
    /// The runtime owning a state kept in PostgreSQL did not answer a host request in time.
    #[error(
        "the runtime that owns the database did not answer within {waited_ms} ms (is it still running, and does it serve host requests?)"
    )]
    NoAnswer {
        /// How long the request waited.
        waited_ms: u64,
    },
}

impl ControlError {
    /// A stable snake_case code.
    pub fn code(&self) -> &str {
        match self {
            ControlError::Connect { .. } => "control_connect_failed",
            ControlError::Bind { .. } => "control_bind_failed",
            ControlError::NotOwnerRuntime => "not_owner_runtime",
            ControlError::Closed => "control_closed",
            ControlError::Protocol(_) => "control_protocol",
            ControlError::Refused(e) => &e.code,
            ControlError::NotDirOwner { .. } => "not_state_dir_owner",
            ControlError::Io(_) => "control_io",
            ControlError::Database(_) => "control_database",
            ControlError::NoAnswer { .. } => "owner_did_not_answer",
        }
    }
}

/// This process's effective user id.
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Refuses unless this process's effective user owns the state directory `dir`: only that
/// user may hand out a process's identity (`mcp --as`) or act through its control socket.
pub fn check_dir_owner(dir: &Path) -> Result<(), ControlError> {
    let meta = std::fs::metadata(dir)?;
    let me = effective_uid();
    if meta.uid() != me {
        return Err(ControlError::NotDirOwner { path: dir.to_path_buf(), owner: meta.uid(), me });
    }
    Ok(())
}
