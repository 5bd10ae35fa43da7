//! The SQLite store: one embedded file, WAL, `synchronous=FULL`, one writer thread with group
//! commit, readers on their own connections, fail-stop after any failed write.
//!
//! - [`schema`]: tables, version check, pragmas and how connections are opened.
//! - [`codec`]: kernel types to and from column values.
//! - [`apply`]: one change set as portable SQL, with its preconditions.
//! - [`writer`]: the writer thread, group commit and fail-stop.
//! - [`read`]: the pool of read connections and the queries, mailbox reads included.
//!
//! The on-disk format is described in `docs/storage-format.md`.

mod apply;
mod codec;
mod read;
mod schema;
mod writer;

use crate::kernel::capability::Grant;
use crate::kernel::ids::{Epoch, Oid, Pid};
use crate::kernel::mailbox::{MailboxPage, MailboxQuery, Message, MessageId};
use crate::kernel::objects::ObjectSpace;
use crate::kernel::process::ProcessRow;
use crate::store::{
    CallKey, Change, CommitTicket, Envelope, FailureWatch, InjectedFault, ProcessQuery, Store, StoreError,
};
use parking_lot::{Mutex, MutexGuard, RwLock};
use read::ReadPool;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, SyncSender};
use std::thread::JoinHandle;
use writer::{Request, Shared, WriterPragmas};

/// Requests that may wait for the writer at once. A submitter finding the queue full blocks
/// until the writer takes a group out (backpressure instead of unbounded memory). Each group
/// takes up to `GROUP_COMMIT_CHANGES_MAX` changes, so a full queue drains in a few commits.
const SUBMIT_QUEUE_MAX: usize = 4096;

/// The SQLite store: one embedded file in WAL mode with `synchronous=FULL`, one writer thread
/// that folds concurrent change sets into one transaction (group commit), readers on pooled
/// read-only connections, and fail-stop after any failed write. The file format, what is
/// durable, and the commit semantics are in `docs/storage-format.md`.
///
/// Dropping it (or [`SqliteStore::close`]) stops the writer after it has committed and
/// answered everything already submitted.
pub struct SqliteStore {
    readers: ReadPool,
    /// `None` for the read-only view.
    writer: Option<Writer>,
}

struct Writer {
    /// `None` once closed.
    requests: RwLock<Option<SyncSender<Request>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    shared: Arc<Shared>,
}

/// Keeps the writer from starting its next group while held; see
/// [`SqliteStore::hold_writer`].
#[doc(hidden)]
#[must_use = "the writer is held only while this guard lives"]
pub struct WriterHold<'a> {
    _guard: MutexGuard<'a, ()>,
}

impl SqliteStore {
    /// Opens the store at `path` (normally `<state_dir>/agentvisor.db`), creating the file and
    /// its schema if needed, and starts the writer thread.
    ///
    /// Fails with [`StoreError::SchemaTooNew`] if a newer build wrote the file, and with
    /// [`StoreError::Open`] if it cannot be opened as a store.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let conn = schema::open_writer(path)?;
        let readers = ReadPool::new(path.to_path_buf(), schema::open_reader(path)?);
        let shared = Arc::new(Shared::default());
        let (requests, receiver) = mpsc::sync_channel(SUBMIT_QUEUE_MAX);
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("agentvisor-store-writer".to_string())
            .spawn(move || writer::run(conn, receiver, &thread_shared))
            .map_err(|e| StoreError::Open {
                path: path.display().to_string(),
                message: format!("failed to start the writer thread: {e}"),
            })?;
        Ok(SqliteStore {
            readers,
            writer: Some(Writer {
                requests: RwLock::new(Some(requests)),
                thread: Mutex::new(Some(thread)),
                shared,
            }),
        })
    }

    /// Opens an existing store for reading only: every write is refused with
    /// [`StoreError::ReadOnly`]. For a second opener beside the runtime that owns the state
    /// directory; it reads what the owner has committed and never changes anything.
    pub fn open_read_only(path: &Path) -> Result<SqliteStore, StoreError> {
        let conn = schema::open_reader(path)?;
        match schema::check_readable(&conn, path) {
            Ok(()) => Ok(SqliteStore { readers: ReadPool::new(path.to_path_buf(), conn), writer: None }),
            // A WAL file cannot be read without its `-shm` index, which a read-only copy
            // lacks and cannot create. With no `-wal` beside it either, the database file
            // holds every commit, and nothing can write there: read it as immutable.
            Err(StoreError::Open { .. }) if schema::is_read_only_copy(path) => {
                let conn = schema::open_immutable(path)?;
                schema::check_readable(&conn, path)?;
                Ok(SqliteStore { readers: ReadPool::with_mode(path.to_path_buf(), conn, true), writer: None })
            }
            Err(e) => Err(e),
        }
    }

    /// Stops the writer after it has committed and answered everything already submitted,
    /// and waits for it. Later submissions resolve [`StoreError::Closed`]. Reads keep working.
    /// Idempotent.
    pub fn close(&self) {
        let Some(writer) = &self.writer else { return };
        // Dropping the only sender ends the writer's loop once the queue is empty.
        drop(writer.requests.write().take());
        let thread = writer.thread.lock().take();
        if let Some(thread) = thread
            && thread.join().is_err()
        {
            tracing::error!("the store's writer thread panicked");
        }
    }

    /// Makes the next group commit fail as if its COMMIT had failed, which fail-stops the
    /// store. For tests of fail-stop; does nothing on a read-only view.
    #[doc(hidden)]
    pub fn inject_write_failure(&self) {
        if let Some(writer) = &self.writer {
            writer.shared.inject_failure();
        }
    }

    /// How many transactions the writer has committed since this store was opened.
    #[doc(hidden)]
    pub fn commits_so_far(&self) -> u64 {
        self.writer.as_ref().map_or(0, |w| w.shared.commits())
    }

    /// Keeps the writer from starting its next group until the returned guard is dropped, so
    /// that a test can queue several submissions and see them committed as one group.
    #[doc(hidden)]
    pub fn hold_writer(&self) -> Option<WriterHold<'_>> {
        self.writer.as_ref().map(|w| WriterHold { _guard: w.shared.gate.lock() })
    }

    /// The writer connection's durability settings, as SQLite reports them.
    #[doc(hidden)]
    pub fn writer_pragmas(&self) -> Result<WriterPragmas, StoreError> {
        let (reply, answer) = mpsc::channel();
        self.send(Request::Pragmas { reply })?;
        answer.recv().map_err(|_| StoreError::Closed)?
    }

    /// SQLite's plan for a process query, one line per step (`EXPLAIN QUERY PLAN`); for
    /// tests that guard which index a query uses.
    #[doc(hidden)]
    pub fn processes_plan(&self, query: ProcessQuery) -> Result<Vec<String>, StoreError> {
        self.readers.processes_plan(query)
    }

    /// SQLite's plan for a mailbox read, one line per step of each statement the read runs
    /// (`EXPLAIN QUERY PLAN`); for tests that guard which index drives each filter.
    #[doc(hidden)]
    pub fn mailbox_plan(&self, recipient: Pid, query: &MailboxQuery) -> Result<Vec<String>, StoreError> {
        self.readers.mailbox_plan(recipient, query)
    }

    /// SQLite's plans for `unread_count` and `message_seq_max`, one line per step.
    #[doc(hidden)]
    pub fn message_counters_plan(&self) -> Result<Vec<String>, StoreError> {
        self.readers.message_counters_plan()
    }

    /// Sends a request to the writer; `Closed` if there is none any more.
    fn send(&self, request: Request) -> Result<(), StoreError> {
        let writer = self.writer.as_ref().ok_or(StoreError::ReadOnly)?;
        let requests = writer.requests.read();
        let sender = requests.as_ref().ok_or(StoreError::Closed)?;
        sender.send(request).map_err(|_| StoreError::Closed)
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        self.close();
    }
}

impl Store for SqliteStore {
    fn submit(&self, changes: Vec<Change>) -> CommitTicket {
        let Some(writer) = &self.writer else {
            return CommitTicket::ready(Err(StoreError::ReadOnly));
        };
        if let Some(cause) = writer.shared.stopped() {
            return CommitTicket::ready(Err(StoreError::FailStopped { cause }));
        }
        let (reply, ticket) = CommitTicket::channel();
        match self.send(Request::Commit { changes, reply }) {
            Ok(()) => ticket,
            Err(e) => CommitTicket::ready(Err(e)),
        }
    }

    fn begin_epoch(&self) -> Result<Epoch, StoreError> {
        let (reply, answer) = mpsc::channel();
        self.send(Request::BeginEpoch { reply })?;
        answer.recv().map_err(|_| StoreError::Closed)?
    }

    fn epoch(&self) -> Result<Epoch, StoreError> {
        self.readers.epoch()
    }

    fn process(&self, pid: Pid) -> Result<Option<ProcessRow>, StoreError> {
        self.readers.process(pid)
    }

    fn processes(&self, query: ProcessQuery) -> Result<Vec<ProcessRow>, StoreError> {
        self.readers.processes(query)
    }

    fn grants_of(&self, holder: Pid) -> Result<Vec<Grant>, StoreError> {
        self.readers.grants_of(holder)
    }

    fn object_space(&self) -> Result<ObjectSpace, StoreError> {
        self.readers.object_space()
    }

    fn payload(&self, oid: Oid) -> Result<Option<Envelope>, StoreError> {
        self.readers.payload(oid)
    }

    fn payload_oids(&self) -> Result<BTreeSet<Oid>, StoreError> {
        self.readers.payload_oids()
    }

    fn checkpoint(&self, pid: Pid) -> Result<Option<Envelope>, StoreError> {
        self.readers.checkpoint(pid)
    }

    fn is_writable(&self) -> bool {
        match &self.writer {
            None => false,
            Some(writer) => writer.shared.stopped().is_none() && writer.requests.read().is_some(),
        }
    }

    fn inject_write_failure(&self) {
        SqliteStore::inject_write_failure(self);
    }

    fn keyed(&self, key: &CallKey) -> Result<Option<serde_json::Value>, StoreError> {
        self.readers.keyed(key)
    }

    fn failures(&self) -> Option<FailureWatch> {
        self.writer.as_ref().map(|w| w.shared.failures())
    }

    fn inject_fault_after(
        &self,
        commits: u64,
        fault: InjectedFault,
    ) -> Option<tokio::sync::oneshot::Receiver<()>> {
        self.writer.as_ref().map(|w| w.shared.arm_fault(commits, fault))
    }

    fn mailbox(&self, recipient: Pid, query: &MailboxQuery) -> Result<MailboxPage, StoreError> {
        self.readers.mailbox(recipient, query)
    }

    fn message(&self, id: MessageId) -> Result<Option<Message>, StoreError> {
        self.readers.message(id)
    }

    fn unread_count(&self, recipient: Pid) -> Result<u64, StoreError> {
        self.readers.unread_count(recipient)
    }

    fn message_seq_max(&self) -> Result<u64, StoreError> {
        self.readers.message_seq_max()
    }
}
