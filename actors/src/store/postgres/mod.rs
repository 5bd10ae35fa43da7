//! The PostgreSQL store: the same tables, statements, group commit and fail-stop as the
//! SQLite store (the portable layer `store::sql`), on a PostgreSQL database named by a URL.
//!
//! - [`schema`]: tables, version check, migrations, and how a connection is opened.
//! - [`db`]: the portable layer's connection (`store::sql::Db`) on PostgreSQL.
//!
//! One runtime owns a database at a time: its writer's connection holds a session advisory
//! lock for as long as it lives, and a second opener is refused (a view opens read-only).
//!
//! The client is tokio-postgres, each connection on a current-thread runtime of its own
//! (`db.rs`), driven only inside its calls. A read is called from inside actor handlers on
//! tokio workers, and a network round trip must not stall a worker: every use of a connection
//! runs through [`off_runtime`], which moves the worker's other tasks elsewhere first
//! (`block_in_place`) on a multi-threaded runtime, and runs the call on a thread of its own on
//! a current-thread runtime. The writer is a thread of its own and needs neither.

mod db;
mod schema;

pub use db::describe_postgres_error;

use crate::kernel::capability::Grant;
use crate::kernel::ids::{Epoch, Oid, Pid};
use crate::kernel::mailbox::{MailboxPage, MailboxQuery, Message, MessageId};
use crate::kernel::objects::ObjectSpace;
use crate::kernel::process::ProcessRow;
use crate::store::sql::Db;
use crate::store::sql::codec::PROCESS_COLUMNS;
use crate::store::sql::read as q;
use crate::store::sql::writer::{self, Backend, Writer, WriterHold};
use crate::store::{
    CallKey, Change, CommitTicket, Envelope, FailureWatch, InjectedFault, ProcessQuery, Store, StoreError,
};
use db::PgDb;
use parking_lot::Mutex;
use std::collections::BTreeSet;

/// Idle read connections kept for reuse; more concurrent readers open more, closed after use.
const READ_POOL_IDLE_MAX: usize = 8;

/// Runs `f`, which blocks (on the network, or a client that drives a runtime of its own),
/// without stalling a tokio worker: on a multi-threaded runtime the worker's other tasks move
/// to another worker first (`block_in_place`); on a current-thread runtime `f` runs on a
/// thread of its own; outside a runtime it just runs. Every use of a PostgreSQL connection,
/// here and in the stores beside the kernel's, goes through it.
pub fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        Ok(_) => std::thread::scope(|scope| match scope.spawn(f).join() {
            Ok(value) => value,
            Err(panic) => std::panic::resume_unwind(panic),
        }),
        Err(_) => f(),
    }
}

/// The PostgreSQL store: the kernel's tables in one PostgreSQL database, one writer thread
/// with group commit, readers on pooled connections, fail-stop after any failed write. The
/// tables and what is durable are in `docs/storage-format.md`.
///
/// Dropping it (or [`PostgresStore::close`]) stops the writer after it has committed and
/// answered everything already submitted.
pub struct PostgresStore {
    url: String,
    idle: Mutex<Vec<PgDb>>,
    /// `None` for the read-only view.
    writer: Option<Writer<PgBackend>>,
}

/// The writer's connection; it holds the owner lock.
struct PgBackend(PgDb);

impl Backend for PgBackend {
    fn db(&mut self) -> &mut dyn Db {
        &mut self.0
    }

    fn close(self) {
        // Closing the session releases the owner lock; dropping the client closes it.
        drop(self);
    }
}

impl PostgresStore {
    /// Opens the store in the database `url` names (`postgres://user:password@host/db`,
    /// `postgresql://user@/db?host=/run/postgresql`, or libpq `key=value` pairs), creating
    /// or migrating its schema, takes the database's owner lock, and starts the writer.
    ///
    /// Fails with [`StoreError::Open`] if the server cannot be reached or another runtime
    /// owns the database, and with [`StoreError::SchemaTooNew`] if a newer build wrote it.
    pub fn open(url: &str) -> Result<PostgresStore, StoreError> {
        let (writer_db, reader) = off_runtime(|| {
            let mut writer_db = PgDb::connect(url)?;
            schema::create_schema(&mut writer_db, url)?;
            schema::take_owner_lock(&mut writer_db, url)?;
            Ok::<_, StoreError>((writer_db, PgDb::connect(url)?))
        })?;
        // Off the runtime: a backend that could not be handed to its thread is dropped here,
        // and dropping a connection's runtime inside another runtime is not allowed.
        let writer = off_runtime(|| Writer::start(PgBackend(writer_db)))
            .map_err(|e| schema::open_error(url, format!("failed to start the writer thread: {e}")))?;
        Ok(PostgresStore { url: url.to_string(), idle: Mutex::new(vec![reader]), writer: Some(writer) })
    }

    /// Opens an existing store for reading only: every write is refused with
    /// [`StoreError::ReadOnly`]. It reads what the owner has committed.
    pub fn open_read_only(url: &str) -> Result<PostgresStore, StoreError> {
        let reader = off_runtime(|| {
            let mut reader = PgDb::connect(url)?;
            schema::check_readable(&mut reader, url)?;
            Ok::<_, StoreError>(reader)
        })?;
        Ok(PostgresStore { url: url.to_string(), idle: Mutex::new(vec![reader]), writer: None })
    }

    /// Whether a live runtime owns the database `url` names (holds its owner lock), without
    /// taking it.
    pub fn owner_is_live(url: &str) -> Result<bool, StoreError> {
        off_runtime(|| {
            let mut db = PgDb::connect(url)?;
            schema::owner_is_live(&mut db, url)
        })
    }

    /// How `url` is named in messages: with its password, if any, replaced by `***`.
    pub fn describe_url(url: &str) -> String {
        schema::redact(url)
    }

    /// Stops the writer after it has committed and answered everything already submitted,
    /// and waits for it; the owner lock is released. Reads keep working. Idempotent.
    pub fn close(&self) {
        if let Some(writer) = &self.writer {
            off_runtime(|| writer.close());
        }
    }

    /// How many transactions the writer has committed since this store was opened.
    #[doc(hidden)]
    pub fn commits_so_far(&self) -> u64 {
        self.writer.as_ref().map_or(0, Writer::commits)
    }

    /// Keeps the writer from starting its next group until the returned guard is dropped.
    #[doc(hidden)]
    pub fn hold_writer(&self) -> Option<WriterHold<'_>> {
        self.writer.as_ref().map(Writer::hold)
    }

    /// The writer; `ReadOnly` for a view.
    fn writer(&self) -> Result<&Writer<PgBackend>, StoreError> {
        self.writer.as_ref().ok_or(StoreError::ReadOnly)
    }

    /// Runs `f` on an idle connection, or a new one if none is idle, off the runtime. A read
    /// that fails because its pooled connection had died (the server restarted, or ended the
    /// session) is run once more on a new connection: reads change nothing.
    fn with<T: Send>(
        &self,
        f: impl Fn(&mut PgDb) -> Result<T, StoreError> + Send + Sync,
    ) -> Result<T, StoreError> {
        off_runtime(|| {
            let pooled = self.idle.lock().pop();
            let Some(mut db) = pooled else { return self.on_new_connection(&f) };
            let result = f(&mut db);
            // A failed read on a pooled connection: if the connection is dead, the failure
            // was the connection's, not the read's, and a new connection answers it.
            if result.is_err() && !db.is_alive() {
                return self.on_new_connection(&f);
            }
            if !db.is_closed() {
                self.put_back(db);
            }
            result
        })
    }

    fn on_new_connection<T>(&self, f: &impl Fn(&mut PgDb) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut db = PgDb::connect(&self.url)?;
        let result = f(&mut db);
        if !db.is_closed() {
            self.put_back(db);
        }
        result
    }

    /// Keeps a connection for the next read, up to [`READ_POOL_IDLE_MAX`].
    fn put_back(&self, db: PgDb) {
        let mut idle = self.idle.lock();
        if idle.len() < READ_POOL_IDLE_MAX {
            idle.push(db);
        }
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        self.close();
        // Closing a client blocks on the network too.
        let idle = std::mem::take(&mut *self.idle.lock());
        off_runtime(move || drop(idle));
    }
}

impl Store for PostgresStore {
    fn submit(&self, changes: Vec<Change>) -> CommitTicket {
        match &self.writer {
            Some(writer) => writer.submit(changes),
            None => CommitTicket::ready(Err(StoreError::ReadOnly)),
        }
    }

    fn begin_epoch(&self) -> Result<Epoch, StoreError> {
        let writer = self.writer()?;
        off_runtime(|| writer.begin_epoch())
    }

    fn epoch(&self) -> Result<Epoch, StoreError> {
        self.with(|db| writer::read_epoch(db))
    }

    fn process(&self, pid: Pid) -> Result<Option<ProcessRow>, StoreError> {
        self.with(|db| q::process(db, PROCESS_COLUMNS, pid))
    }

    fn processes(&self, query: ProcessQuery) -> Result<Vec<ProcessRow>, StoreError> {
        self.with(|db| q::processes(db, PROCESS_COLUMNS, query))
    }

    fn grants_of(&self, holder: Pid) -> Result<Vec<Grant>, StoreError> {
        self.with(|db| q::grants_of(db, holder))
    }

    fn object_space(&self) -> Result<ObjectSpace, StoreError> {
        self.with(|db| q::object_space(db))
    }

    fn payload(&self, oid: Oid) -> Result<Option<Envelope>, StoreError> {
        self.with(|db| q::payload(db, oid))
    }

    fn payload_oids(&self) -> Result<BTreeSet<Oid>, StoreError> {
        self.with(|db| q::payload_oids(db))
    }

    fn checkpoint(&self, pid: Pid) -> Result<Option<Envelope>, StoreError> {
        self.with(|db| q::checkpoint(db, pid))
    }

    fn mailbox(&self, recipient: Pid, query: &MailboxQuery) -> Result<MailboxPage, StoreError> {
        self.with(|db| q::mailbox(db, recipient, query))
    }

    fn message(&self, id: MessageId) -> Result<Option<Message>, StoreError> {
        self.with(|db| q::message(db, id))
    }

    fn unread_count(&self, recipient: Pid) -> Result<u64, StoreError> {
        self.with(|db| q::unread_count(db, recipient))
    }

    fn message_seq_max(&self) -> Result<u64, StoreError> {
        self.with(|db| q::message_seq_max(db))
    }

    fn is_writable(&self) -> bool {
        self.writer.as_ref().is_some_and(Writer::is_writable)
    }

    fn keyed(&self, key: &CallKey) -> Result<Option<serde_json::Value>, StoreError> {
        self.with(|db| q::keyed(db, key))
    }

    fn failures(&self) -> Option<FailureWatch> {
        self.writer.as_ref().map(Writer::failures)
    }

    fn inject_fault_after(
        &self,
        commits: u64,
        fault: InjectedFault,
    ) -> Option<tokio::sync::oneshot::Receiver<()>> {
        self.writer.as_ref().map(|w| w.arm_fault(commits, fault))
    }

    fn inject_write_failure(&self) {
        if let Some(writer) = &self.writer {
            writer.inject_failure();
        }
    }
}
