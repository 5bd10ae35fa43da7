//! The PostgreSQL store: the same tables, statements, group commit and fail-stop as the
//! SQLite store (the portable layer `store::sql`), on a PostgreSQL database named by a URL.
//!
//! - [`schema`]: tables, version check, migrations, and how a connection is opened.
//! - [`db`]: the portable layer's connection (`store::sql::Db`) on PostgreSQL.
//! - [`lease`]: the owner lease, its renewal, claims and the fence on every write.
//!
//! One runtime (a node) owns a database at a time: it holds the owner lease, renews it, and
//! every write of its writer is fenced on it. A second opener is refused while the lease runs
//! and the owner's writer session lives (a view opens read-only); when the owner dies, or its
//! lease runs out, the next opener claims the database and the old owner can write nothing
//! more.
//!
//! The client is tokio-postgres, each connection on a current-thread runtime of its own
//! (`db.rs`), driven only inside its calls. A read is called from inside actor handlers on
//! tokio workers, and a network round trip must not stall a worker: every use of a connection
//! runs through [`off_runtime`], which moves the worker's other tasks elsewhere first
//! (`block_in_place`) on a multi-threaded runtime, and runs the call on a thread of its own on
//! a current-thread runtime. The writer is a thread of its own and needs neither.

mod db;
mod lease;
mod schema;
mod shard;

pub use db::describe_postgres_error;
pub use lease::{DEFAULT_LEASE, LEASE_MIN, NodeLease, OwnerInfo};
pub use shard::{
    MAIN_SHARD, SHARD_NAME_MAX, ShardInfo, channel_name, channel_sql, check_shard_name,
    create_shard_schema_sql, shard_names, shard_url, shards, shards_holding,
};

use crate::kernel::capability::Grant;
use crate::kernel::ids::{Epoch, Oid, Pid};
use crate::kernel::mailbox::{MailboxPage, MailboxQuery, Message, MessageId};
use crate::kernel::objects::ObjectSpace;
use crate::kernel::process::ProcessRow;
use crate::store::sql::codec::PROCESS_COLUMNS;
use crate::store::sql::read as q;
use crate::store::sql::writer::{self, Backend, FenceError, Writer, WriterHold};
use crate::store::sql::{Db, Param};
use crate::store::{
    CallKey, Change, CommitTicket, Envelope, FailureWatch, InjectedFault, LiveReads, ProcessQuery, Store,
    StoreError,
};
use db::PgDb;
use parking_lot::Mutex;
use std::collections::BTreeSet;

/// The channel every commit of the store notifies (`LISTEN agentvisor_changes` to wake on
/// changes; on a shard other than the main one, its name is [`channel_sql`]'s); the payload
/// is empty.
pub const CHANGES_CHANNEL: &str = "agentvisor_changes";

/// The channel a node notifies when it ends its lease on closing (`LISTEN agentvisor_owner` to
/// claim the store as soon as it is free rather than at the next attempt; on a shard other
/// than the main one, its name is [`channel_sql`]'s); the payload is the node's name. A node that dies notifies nothing: its lease runs out, or its session ends.
pub const OWNER_CHANNEL: &str = "agentvisor_owner";

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
    /// The lease the writer holds and the thread renewing it; `None` for the view, and once
    /// closed.
    lease: Mutex<Option<(lease::Held, lease::Renewer)>>,
}

/// The writer's connection and the lease it writes under.
struct PgBackend {
    db: PgDb,
    held: lease::Held,
    url: String,
    /// Notifies the shard's [`CHANGES_CHANNEL`].
    notify_changes: String,
}

impl Backend for PgBackend {
    fn db(&mut self) -> &mut dyn Db {
        &mut self.db
    }

    fn fence(&mut self) -> Result<(), FenceError> {
        let held = &self.held;
        let updated = self
            .db
            .execute(
                lease::FENCE,
                &[Param::Text(&held.node), Param::Int(held.fence), Param::Int(held.lease_ms)],
            )
            .map_err(FenceError::Db)?;
        if updated == 1 {
            // Delivered when the group commits (once per transaction): what watchers of the
            // database (a console on another machine) wake on.
            self.db.execute_deferred(&self.notify_changes, &[]).map_err(FenceError::Db)?;
            return Ok(());
        }
        Err(FenceError::Lost(lease::lost(&mut self.db, &self.url, held)))
    }

    fn close(self) {
        drop(self);
    }
}

impl PostgresStore {
    /// Opens the store in the database `url` names (`postgres://user:password@host/db`,
    /// `postgresql://user@/db?host=/run/postgresql`, or libpq `key=value` pairs) as a node
    /// with the default name and lease ([`NodeLease::default`]); see [`Self::open_as`].
    pub fn open(url: &str) -> Result<PostgresStore, StoreError> {
        Self::open_as(url, &NodeLease::default())
    }

    /// Opens the store in the database `url` names as the node `lease` describes: creates or
    /// migrates the schema, claims the database's owner lease, and starts the writer and the
    /// lease's renewer.
    ///
    /// Fails with [`StoreError::OwnedElsewhere`] while another node's lease runs and its
    /// writer is connected, with [`StoreError::Open`] if the server cannot be reached, and
    /// with [`StoreError::SchemaTooNew`] if a newer build wrote the database.
    pub fn open_as(url: &str, lease: &NodeLease) -> Result<PostgresStore, StoreError> {
        let (writer_db, held, reader) = off_runtime(|| {
            let mut writer_db = PgDb::connect(url)?;
            schema::create_schema(&mut writer_db, url)?;
            let held = lease::claim(&mut writer_db, url, lease)?;
            Ok::<_, StoreError>((writer_db, held, PgDb::connect(url)?))
        })?;
        let backend = PgBackend {
            db: writer_db,
            held: held.clone(),
            url: url.to_string(),
            notify_changes: format!("SELECT pg_notify({}, '')", channel_sql(CHANGES_CHANNEL)),
        };
        // Off the runtime: a backend that could not be handed to its thread is dropped here,
        // and dropping a connection's runtime inside another runtime is not allowed.
        let writer = off_runtime(|| Writer::start(backend))
            .map_err(|e| schema::open_error(url, format!("failed to start the writer thread: {e}")))?;
        let renewer = lease::Renewer::start(url, held.clone(), lease.renew_every(), writer.stopper())
            .map_err(|e| schema::open_error(url, format!("failed to start the lease thread: {e}")))?;
        Ok(PostgresStore {
            url: url.to_string(),
            idle: Mutex::new(vec![reader]),
            writer: Some(writer),
            lease: Mutex::new(Some((held, renewer))),
        })
    }

    /// Opens an existing store for reading only: every write is refused with
    /// [`StoreError::ReadOnly`]. It reads what the owner has committed.
    pub fn open_read_only(url: &str) -> Result<PostgresStore, StoreError> {
        let reader = off_runtime(|| {
            let mut reader = PgDb::connect(url)?;
            schema::check_readable(&mut reader, url)?;
            Ok::<_, StoreError>(reader)
        })?;
        Ok(PostgresStore {
            url: url.to_string(),
            idle: Mutex::new(vec![reader]),
            writer: None,
            lease: Mutex::new(None),
        })
    }

    /// The node that owns (or last owned) the database `url` names; `None` before any did.
    pub fn owner_of(url: &str) -> Result<Option<OwnerInfo>, StoreError> {
        off_runtime(|| {
            let mut db = PgDb::connect(url)?;
            lease::owner(&mut db, url)
        })
    }

    /// Whether a live runtime owns the database `url` names ([`OwnerInfo::is_live`]).
    pub fn owner_is_live(url: &str) -> Result<bool, StoreError> {
        Ok(Self::owner_of(url)?.is_some_and(|owner| owner.is_live()))
    }

    /// The owner of this store's database, read now.
    pub fn owner(&self) -> Result<Option<OwnerInfo>, StoreError> {
        let url = self.url.clone();
        self.with(move |db| lease::owner(db, &url))
    }

    /// How `url` is named in messages: with its password, if any, replaced by `***`.
    pub fn describe_url(url: &str) -> String {
        schema::redact(url)
    }

    /// Stops the writer after it has committed and answered everything already submitted,
    /// and waits for it; then ends the lease, so that a waiting node claims the database at
    /// once. Reads keep working. Idempotent.
    pub fn close(&self) {
        if let Some(writer) = &self.writer {
            off_runtime(|| writer.close());
        }
        let Some((held, mut renewer)) = self.lease.lock().take() else { return };
        off_runtime(|| renewer.stop());
        if let Err(e) = self.with(|db| lease::release(db, &held)) {
            tracing::warn!(error = %e, "ending the store's lease failed; it runs out by itself");
        }
    }

    /// Stops renewing the lease, as a node that hangs would (tests of fencing).
    #[doc(hidden)]
    pub fn stop_renewing(&self) {
        if let Some((_, renewer)) = self.lease.lock().as_mut() {
            off_runtime(|| renewer.stop());
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

    fn live_reads(&self, pids: &[Pid]) -> Result<LiveReads, StoreError> {
        self.with(|db| q::live_reads(db, PROCESS_COLUMNS, pids))
    }

    fn object_space(&self) -> Result<ObjectSpace, StoreError> {
        self.with(|db| q::object_space(db))
    }

    fn object_memory_of(&self, pids: &[Pid], oids: &[Oid]) -> Result<ObjectSpace, StoreError> {
        self.with(|db| q::object_memory_of(db, pids, oids))
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

    fn close(&self) {
        PostgresStore::close(self);
    }
}
