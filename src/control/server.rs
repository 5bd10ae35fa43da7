//! The owner's side of the control socket.
//!
//! One task accepts connections (at most [`CONNECTIONS_MAX`] at once, only from this
//! process's own user) and serves each in its own task, one request at a time. A client that
//! closes its connection while a request is in flight withdraws it: a call still held (its
//! caller is `waiting_event`) is dropped before reaching the kernel; a call already sent
//! stays applied and only its answer is lost; a blocking wait stays the caller's saved
//! action. Sending bytes while a request is in flight breaks the protocol and closes the
//! connection the same way.

use super::host::{self, ProgressSink};
use super::limits::{CONNECTIONS_MAX, LINE_BYTES_MAX, STOP_GRACE_MS};
use super::lines::{LineError, read_line, write_json};
use super::protocol::{HostError, Line, Request};
use super::{ControlError, effective_uid, socket_path};
use crate::actors::runtime::Runtime;
use crate::mcp::surface;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::unix::OwnedWriteHalf;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

/// A listening control socket. Dropping it (or [`Self::stop`]) stops serving, ends every
/// connection and removes the socket file.
pub struct ControlServer {
    path: PathBuf,
    task: Option<JoinHandle<()>>,
    stopping: CancellationToken,
}

impl ControlServer {
    /// Listens on the control socket of `rt`'s state directory. `rt` must own it (not a
    /// read-only view). A socket file already there was left by an owner that died (this
    /// runtime holds the directory's lock), so it is replaced. Must be called within a tokio
    /// runtime.
    pub fn start(rt: Arc<Runtime>) -> Result<ControlServer, ControlError> {
        let Some(dir) = rt.state_dir().filter(|_| !rt.is_read_only()) else {
            return Err(ControlError::NotOwnerRuntime);
        };
        let path = socket_path(dir);
        let bind_err = |source| ControlError::Bind { path: path.clone(), source };
        match std::fs::remove_file(&path) {
            Ok(()) => tracing::info!(path = %path.display(), "replaced a stale control socket"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(bind_err(e)),
        }
        let listener = UnixListener::bind(&path).map_err(bind_err)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(bind_err)?;
        let stopping = CancellationToken::new();
        // A state kept in PostgreSQL is also served through the database, for host actions
        // from where this socket cannot be reached.
        let database = rt.store_url().map(|url| {
            tokio::spawn(super::database::serve(Arc::clone(&rt), url.to_string(), stopping.clone()))
        });
        let accepting = stopping.clone();
        let task = tokio::spawn(async move {
            accept_loop(listener, rt, effective_uid(), accepting).await;
            if let Some(database) = database {
                let _ = database.await;
            }
        });
        Ok(ControlServer { path, task: Some(task), stopping })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops serving and waits until every connection task has let go of the runtime (so
    /// the caller can take the runtime back and shut it down). Idle connections close at
    /// once; a request in flight gets up to [`STOP_GRACE_MS`] to write its answer.
    pub async fn stop(mut self) {
        self.stopping.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        // Ends the database half too, which runs in a task of its own.
        self.stopping.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

async fn accept_loop(listener: UnixListener, rt: Arc<Runtime>, me: u32, stopping: CancellationToken) {
    // Dropping the set (when this task ends or is aborted) aborts every connection task.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = stopping.cancelled() => {
                drop(listener);
                let drain = async { while connections.join_next().await.is_some() {} };
                let _ = tokio::time::timeout(std::time::Duration::from_millis(STOP_GRACE_MS), drain).await;
                return;
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    while connections.try_join_next().is_some() {}
                    if let Some(refusal) = refusal(&stream, me, connections.len()) {
                        connections.spawn(refuse(stream, refusal));
                    } else {
                        connections.spawn(serve(stream, rt.clone(), stopping.clone()));
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "failed to accept a control connection");
                    // Out of descriptors: let a connection end before accepting again.
                    if !connections.is_empty() {
                        let _ = connections.join_next().await;
                    } else {
                        tokio::task::yield_now().await;
                    }
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

fn refusal(stream: &UnixStream, me: u32, open: usize) -> Option<HostError> {
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == me => {}
        Ok(cred) => {
            return Some(HostError::new(
                "not_state_dir_owner",
                format!("user {} may not use the control socket of a runtime run by user {me}", cred.uid()),
            ));
        }
        Err(e) => {
            return Some(HostError::new("control_io", format!("failed to read the peer's credentials: {e}")));
        }
    }
    (open >= CONNECTIONS_MAX).then(|| {
        HostError::new(
            "too_many_connections",
            format!("{CONNECTIONS_MAX} control connections are open; try again later"),
        )
    })
}

async fn refuse(stream: UnixStream, error: HostError) {
    let (_, mut write) = stream.into_split();
    let _ = write_json(&mut write, &Line::Error(error)).await;
}

async fn serve(stream: UnixStream, rt: Arc<Runtime>, stopping: CancellationToken) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    loop {
        // Idle between requests: a stopping owner closes the connection here.
        let next = tokio::select! {
            () = stopping.cancelled() => return,
            next = read_line(&mut reader, LINE_BYTES_MAX) => next,
        };
        let bytes = match next {
            Ok(Some(bytes)) => bytes,
            Ok(None) | Err(LineError::Io(_)) => return,
            Err(LineError::TooLong { max }) => {
                let e = HostError::new("line_too_long", format!("a request line is longer than {max} bytes"));
                let _ = write_json(&mut write, &Line::Error(e)).await;
                return;
            }
        };
        let request = match serde_json::from_slice::<Request>(&bytes) {
            Ok(request) => request,
            Err(e) => {
                let e = HostError::new("invalid_request", format!("not a control request: {e}"));
                if write_json(&mut write, &Line::Error(e)).await.is_err() {
                    return;
                }
                continue;
            }
        };
        if !answer(&rt, request, &mut reader, &mut write).await {
            return;
        }
    }
}

/// Serves one request; `false` when the connection is gone (or broke the protocol).
async fn answer(
    rt: &Runtime,
    request: Request,
    reader: &mut BufReader<tokio::net::unix::OwnedReadHalf>,
    write: &mut OwnedWriteHalf,
) -> bool {
    let (sink, mut progress) = mpsc::channel(16);
    let work = handle(rt, request, sink);
    tokio::pin!(work);
    let line = loop {
        tokio::select! {
            biased;
            line = &mut work => break line,
            Some(p) = progress.recv() => {
                if write_json(write, &Line::Progress(p)).await.is_err() {
                    return false;
                }
            }
            // End of stream, an error, or bytes sent mid-request: the client is gone.
            _ = reader.fill_buf() => return false,
        }
    };
    write_json(write, &line).await.is_ok()
}

pub(super) async fn handle(rt: &Runtime, request: Request, sink: ProgressSink) -> Line {
    let result: Result<Value, HostError> = match request {
        Request::ListTools { pid } => {
            Ok(serde_json::to_value(surface::tools_for(pid)).unwrap_or(Value::Null))
        }
        Request::Call { pid, tool, args } => Ok(host::call(rt, pid, &tool, args, Some(&sink)).await),
        Request::Process { pid } => host::process(rt, pid),
        Request::Attach { pid } => {
            host::attach(rt, pid).await.map(|row| serde_json::to_value(row).unwrap_or(Value::Null))
        }
        Request::SpawnRoot { root } => host::spawn_root(rt, root).await.map(|pid| json!({ "pid": pid })),
        Request::Signal { pid, signal, reason } => host::signal(rt, pid, signal, reason).await,
        Request::Gate { pid, reason } => host::gate(rt, pid, Some(&reason)).await,
        Request::Ungate { pid } => host::gate(rt, pid, None).await,
        Request::Revoke { grant_id } => host::revoke(rt, grant_id).await,
    };
    match result {
        Ok(value) => Line::Result(value),
        Err(e) => Line::Error(e),
    }
}
