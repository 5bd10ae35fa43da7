//! Opening a session: which runtime it acts on and which process it is.

use super::McpError;
use super::backend::Backend;
use crate::actors::Pid;
use crate::actors::runtime::Runtime;
use crate::control::limits::SOCKET_APPEAR_MS;
use crate::control::{ControlClient, ControlServer, RootRequest, check_dir_owner};
use crate::images::builtin_images;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Which process a session is.
#[derive(Clone, Debug)]
pub enum Identity {
    /// A new root, launched for the session.
    NewRoot(RootRequest),
    /// An existing live process (`--as PID`).
    As(Pid),
}

/// An opened session.
pub struct Session {
    /// Where its calls go.
    pub backend: Backend,
    /// The process it acts as.
    pub pid: Pid,
    /// Set when this session owns the state directory: its control socket, stopped by
    /// [`Session::close`].
    control: Option<ControlServer>,
}

/// Opens the session on state directory `state`.
///
/// With no live owner, this process opens the store as owner (with the built-in images) and
/// listens on its control socket, so later sessions and commands attach to it. While another
/// process owns the directory, the session attaches through that owner's control socket
/// instead (waiting up to [`SOCKET_APPEAR_MS`] for an owner that is still starting).
///
/// `--as` ([`Identity::As`]) is refused unless this user owns the state directory, and for a
/// process that has no row or is terminal; see [`crate::control::host::attach`] for what
/// attaching does to a process paused by its runtime's end.
///
/// `store_url` names a PostgreSQL database that holds the state instead of the directory's
/// SQLite file (see [`RuntimeOptions::store_url`](crate::actors::runtime::RuntimeOptions::store_url)).
pub async fn open(state: &Path, store_url: Option<&str>, identity: Identity) -> Result<Session, McpError> {
    if let Identity::As(pid) = identity {
        if !state.is_dir() {
            return Err(McpError::StateDir {
                path: state.to_path_buf(),
                message: format!("it does not exist, so it holds no process {pid}"),
            });
        }
        check_dir_owner(state)?;
    }
    let state_err = |message: String| McpError::StateDir { path: state.to_path_buf(), message };
    let options = builtin_images().store_url(store_url.map(str::to_string));
    let rt = Runtime::open(state, options).await.map_err(|e| state_err(e.to_string()))?;
    let (backend, control) = if rt.is_read_only() {
        drop(rt);
        (Backend::Remote(wait_for_owner(state).await?), None)
    } else {
        let rt = Arc::new(rt);
        let control = ControlServer::start(Arc::clone(&rt))?;
        (Backend::Local(rt), Some(control))
    };
    let pid = match identity {
        Identity::NewRoot(root) => backend.spawn_root(root).await?,
        Identity::As(pid) => {
            backend.attach(pid).await?;
            pid
        }
    };
    Ok(Session { backend, pid, control })
}

/// The live owner's control socket, once it listens.
async fn wait_for_owner(state: &Path) -> Result<ControlClient, McpError> {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(SOCKET_APPEAR_MS);
    loop {
        if let Some(client) = ControlClient::connect(state).await? {
            return Ok(client);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(McpError::StateDir {
                path: state.to_path_buf(),
                message: format!(
                    "another runtime owns it but does not listen on its control socket (waited {SOCKET_APPEAR_MS} ms); stop it, or pass another --state DIR"
                ),
            });
        }
        // The owner binds its socket right after opening the store; poll at a short, fixed
        // pace within the bound above.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

impl Session {
    /// Whether this session owns the state directory.
    pub fn is_owner(&self) -> bool {
        self.control.is_some()
    }

    /// Ends the session: an owner stops its control socket and shuts the runtime down (a
    /// `running` process is paused with reason `shutdown`, waits keep their saved action).
    /// `Ok(false)` when the runtime was still in use elsewhere and could not be shut down
    /// cleanly (its rows are then recovered at the next open, as after a crash).
    pub async fn close(self) -> Result<bool, McpError> {
        let Session { backend, control, .. } = self;
        if let Some(control) = control {
            control.stop().await;
        }
        let Backend::Local(rt) = backend else { return Ok(true) };
        match Arc::try_unwrap(rt) {
            Ok(rt) => {
                rt.shutdown().await.map_err(|e| McpError::Transport(format!("failed to shut down: {e}")))?;
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }
}
