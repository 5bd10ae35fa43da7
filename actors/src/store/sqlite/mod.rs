//! The SQLite store: one embedded file, WAL, `synchronous=FULL`, one writer thread with group
//! commit, readers on their own connections, fail-stop after any failed write.
//!
//! - [`schema`]: tables, version check, pragmas and how connections are opened.
//! - [`db`]: the portable layer's connection (`store::sql::Db`) on SQLite.
//! - [`read`]: the pool of read connections, and what a view of an older file checks first.
//!
//! The statements, the codec, how a change set is applied, the queries and the writer thread
//! are the portable layer's (`store::sql`), shared with the PostgreSQL store. The on-disk
//! format is described in `docs/storage-format.md`.

mod db;
mod read;
mod schema;

use crate::kernel::capability::Grant;
use crate::kernel::ids::{Epoch, Oid, Pid};
use crate::kernel::mailbox::{MailboxPage, MailboxQuery, Message, MessageId};
use crate::kernel::objects::ObjectSpace;
use crate::kernel::process::ProcessRow;
use crate::store::sql::Db;
use crate::store::sql::writer::{Backend, Writer, WriterHold};
use crate::store::{
    CallKey, Change, CommitTicket, Envelope, FailureWatch, InjectedFault, LiveReads, ProcessQuery, Store,
    StoreError,
};
use db::SqliteDb;
use read::ReadPool;
use rusqlite::Connection;
use std::collections::BTreeSet;
use std::path::Path;

/// The settings of the writer's connection, as SQLite reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriterPragmas {
    /// `PRAGMA journal_mode`, e.g. `wal`.
    pub journal_mode: String,
    /// `PRAGMA synchronous`: 0 off, 1 normal, 2 full, 3 extra.
    pub synchronous: i64,
    /// `PRAGMA foreign_keys`.
    pub foreign_keys: bool,
    /// `PRAGMA busy_timeout`, in milliseconds.
    pub busy_timeout_ms: i64,
    /// `PRAGMA temp_store`: 0 default, 1 file, 2 memory.
    pub temp_store: i64,
    /// `PRAGMA cache_size`: pages if positive, KiB if negative.
    pub cache_size: i64,
    /// `PRAGMA wal_autocheckpoint`, in frames.
    pub wal_autocheckpoint: i64,
    /// `SQLITE_DBCONFIG_ENABLE_QPSG`: a prepared statement keeps its plan whatever values
    /// are bound to it (so a cached statement is not prepared again on each use).
    pub stable_plans: bool,
}

/// The writer's connection.
struct SqliteBackend(SqliteDb<Connection>);

impl Backend for SqliteBackend {
    fn db(&mut self) -> &mut dyn Db {
        &mut self.0
    }

    fn close(self) {
        // Closing checkpoints the WAL into the main file; a failure here loses nothing
        // committed.
        if let Err((_, e)) = self.0.0.close() {
            tracing::warn!(error = %e, "closing the store's writer connection failed");
        }
    }
}

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
    writer: Option<Writer<SqliteBackend>>,
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
        let writer = Writer::start(SqliteBackend(SqliteDb(conn))).map_err(|e| StoreError::Open {
            path: path.display().to_string(),
            message: format!("failed to start the writer thread: {e}"),
        })?;
        Ok(SqliteStore { readers, writer: Some(writer) })
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
        if let Some(writer) = &self.writer {
            writer.close();
        }
    }

    /// Makes the next group commit fail as if its COMMIT had failed, which fail-stops the
    /// store. For tests of fail-stop; does nothing on a read-only view.
    #[doc(hidden)]
    pub fn inject_write_failure(&self) {
        if let Some(writer) = &self.writer {
            writer.inject_failure();
        }
    }

    /// How many transactions the writer has committed since this store was opened.
    #[doc(hidden)]
    pub fn commits_so_far(&self) -> u64 {
        self.writer.as_ref().map_or(0, Writer::commits)
    }

    /// Keeps the writer from starting its next group until the returned guard is dropped, so
    /// that a test can queue several submissions and see them committed as one group.
    #[doc(hidden)]
    pub fn hold_writer(&self) -> Option<WriterHold<'_>> {
        self.writer.as_ref().map(Writer::hold)
    }

    /// The writer connection's durability settings, as SQLite reports them.
    #[doc(hidden)]
    pub fn writer_pragmas(&self) -> Result<WriterPragmas, StoreError> {
        self.writer()?.run(|backend, _| pragmas(&backend.0.0).map_err(|e| StoreError::Read(e.to_string())))
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

    /// The writer; `ReadOnly` for a view.
    fn writer(&self) -> Result<&Writer<SqliteBackend>, StoreError> {
        self.writer.as_ref().ok_or(StoreError::ReadOnly)
    }
}

fn pragmas(conn: &Connection) -> rusqlite::Result<WriterPragmas> {
    Ok(WriterPragmas {
        journal_mode: conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?,
        synchronous: conn.pragma_query_value(None, "synchronous", |r| r.get(0))?,
        foreign_keys: conn.pragma_query_value(None, "foreign_keys", |r| r.get(0))?,
        busy_timeout_ms: conn.pragma_query_value(None, "busy_timeout", |r| r.get(0))?,
        temp_store: conn.pragma_query_value(None, "temp_store", |r| r.get(0))?,
        cache_size: conn.pragma_query_value(None, "cache_size", |r| r.get(0))?,
        wal_autocheckpoint: conn.pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0))?,
        stable_plans: conn.db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG)?,
    })
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        self.close();
    }
}

impl Store for SqliteStore {
    fn submit(&self, changes: Vec<Change>) -> CommitTicket {
        match &self.writer {
            Some(writer) => writer.submit(changes),
            None => CommitTicket::ready(Err(StoreError::ReadOnly)),
        }
    }

    fn begin_epoch(&self) -> Result<Epoch, StoreError> {
        self.writer()?.begin_epoch()
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

    fn live_reads(&self, pids: &[Pid]) -> Result<LiveReads, StoreError> {
        self.readers.live_reads(pids)
    }

    fn object_space(&self) -> Result<ObjectSpace, StoreError> {
        self.readers.object_space()
    }

    fn object_memory_of(&self, pids: &[Pid], oids: &[Oid]) -> Result<ObjectSpace, StoreError> {
        self.readers.object_memory_of(pids, oids)
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
            Some(writer) => writer.is_writable(),
        }
    }

    fn inject_write_failure(&self) {
        SqliteStore::inject_write_failure(self);
    }

    fn close(&self) {
        SqliteStore::close(self);
    }

    fn keyed(&self, key: &CallKey) -> Result<Option<serde_json::Value>, StoreError> {
        self.readers.keyed(key)
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
