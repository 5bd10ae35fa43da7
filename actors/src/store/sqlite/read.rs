//! Reads, each on a pooled read-only connection of its own, never the writer's.
//!
//! In WAL mode a reader sees the last transaction committed before its statement began and
//! never waits for the writer, so reads see committed data only and do not stall commits. The
//! queries themselves are the portable ones (`store::sql::read`); this pool adds what only a
//! SQLite file needs: a read-only view may open a file older than this build's schema, which
//! no writer has migrated, so each read checks first that its table or column exists.

use super::db::SqliteDb;
use super::schema;
use crate::kernel::capability::Grant;
use crate::kernel::ids::{Epoch, Oid, Pid};
use crate::kernel::mailbox::{MailboxPage, MailboxQuery, Message, MessageId};
use crate::kernel::objects::ObjectSpace;
use crate::kernel::process::ProcessRow;
use crate::store::sql::codec::{PROCESS_COLUMNS, PROCESS_COLUMNS_V4};
use crate::store::sql::read::{self as q, MailboxPlan, SEQ_MAX, UNREAD_COUNT};
use crate::store::sql::{Cell, DbError, select, writer};
use crate::store::{CallKey, Envelope, LiveReads, ProcessQuery, StoreError};
use parking_lot::Mutex;
use rusqlite::Connection;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// Idle read connections kept for reuse. More concurrent readers than this still get a
/// connection each (opened on demand); the surplus is closed after use, so the pool never
/// pins more than this many file handles and page caches while idle.
const READ_POOL_IDLE_MAX: usize = 8;

/// A failed schema probe.
fn read_error(e: rusqlite::Error) -> StoreError {
    StoreError::Read(e.to_string())
}

/// A pool of read-only connections to one file.
pub(super) struct ReadPool {
    path: PathBuf,
    /// Open new connections `immutable` (a read-only copy with no WAL; see
    /// `schema::open_immutable`).
    immutable: bool,
    idle: Mutex<Vec<Connection>>,
    /// Set once the `messages` table has been seen. Only a read-only view of a schema-1 file
    /// (which no writer has migrated yet) lacks it; such a file holds no messages.
    has_messages: AtomicBool,
    /// Set once the object memory tables have been seen. Only a read-only view of a file
    /// older than schema 3 lacks them; it is read as holding no object memory.
    has_object_memory: AtomicBool,
    /// Set once the `processes.restart` column has been seen. Only a read-only view of a
    /// file older than schema 5 lacks it; its rows read with the default restart state.
    has_restart: AtomicBool,
    /// Set once the `call_keys` table has been seen. Only a read-only view of a file older
    /// than schema 4 lacks it; it has no keys.
    has_call_keys: AtomicBool,
}

/// Whether `flag` is set, or else whether `probe` finds the table or column now (setting it).
fn exists(
    flag: &AtomicBool,
    conn: &Connection,
    probe: impl FnOnce(&Connection) -> rusqlite::Result<bool>,
) -> Result<bool, StoreError> {
    if flag.load(Ordering::Acquire) {
        return Ok(true);
    }
    let found = probe(conn).map_err(read_error)?;
    if found {
        flag.store(true, Ordering::Release);
    }
    Ok(found)
}

impl ReadPool {
    /// A pool seeded with one already-open connection.
    pub(super) fn new(path: PathBuf, first: Connection) -> ReadPool {
        ReadPool::with_mode(path, first, false)
    }

    /// A pool whose connections are opened `immutable` if `immutable` is set.
    pub(super) fn with_mode(path: PathBuf, first: Connection, immutable: bool) -> ReadPool {
        ReadPool {
            path,
            immutable,
            idle: Mutex::new(vec![first]),
            has_messages: AtomicBool::new(false),
            has_object_memory: AtomicBool::new(false),
            has_restart: AtomicBool::new(false),
            has_call_keys: AtomicBool::new(false),
        }
    }

    fn messages_exist(&self, conn: &Connection) -> Result<bool, StoreError> {
        exists(&self.has_messages, conn, |c| schema::has_table(c, "messages"))
    }

    fn object_memory_exists(&self, conn: &Connection) -> Result<bool, StoreError> {
        exists(&self.has_object_memory, conn, |c| schema::has_table(c, "object_meta"))
    }

    /// The process columns this file has (see `has_restart`).
    fn process_columns(&self, conn: &Connection) -> Result<&'static str, StoreError> {
        let current = exists(&self.has_restart, conn, |c| schema::has_column(c, "processes", "restart"))?;
        Ok(if current { PROCESS_COLUMNS } else { PROCESS_COLUMNS_V4 })
    }

    /// Runs `f` on an idle connection, or a fresh one if none is idle.
    fn with<T>(&self, f: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let pooled = self.idle.lock().pop();
        let conn = match pooled {
            Some(conn) => conn,
            None if self.immutable => schema::open_immutable(&self.path)?,
            None => schema::open_reader(&self.path)?,
        };
        let result = f(&conn);
        let mut idle = self.idle.lock();
        if idle.len() < READ_POOL_IDLE_MAX {
            idle.push(conn);
        }
        result
    }

    /// The current epoch.
    pub(super) fn epoch(&self) -> Result<Epoch, StoreError> {
        self.with(|conn| writer::read_epoch(&mut SqliteDb(conn)))
    }

    /// One process row.
    pub(super) fn process(&self, pid: Pid) -> Result<Option<ProcessRow>, StoreError> {
        self.with(|conn| q::process(&mut SqliteDb(conn), self.process_columns(conn)?, pid))
    }

    /// Process rows matching the query, in pid order.
    pub(super) fn processes(&self, query: ProcessQuery) -> Result<Vec<ProcessRow>, StoreError> {
        self.with(|conn| q::processes(&mut SqliteDb(conn), self.process_columns(conn)?, query))
    }

    /// SQLite's plan for a process query, one line per step (`EXPLAIN QUERY PLAN`).
    pub(super) fn processes_plan(&self, query: ProcessQuery) -> Result<Vec<String>, StoreError> {
        self.with(|conn| {
            let (sql, keys) = q::processes_sql(&SqliteDb(conn), query, self.process_columns(conn)?);
            let keys: Vec<Cell> = keys.into_iter().map(Cell::Text).collect();
            plan(conn, &[(sql, keys)])
        })
    }

    /// Every grant held by one process, in grant id order.
    pub(super) fn grants_of(&self, holder: Pid) -> Result<Vec<Grant>, StoreError> {
        self.with(|conn| q::grants_of(&mut SqliteDb(conn), holder))
    }

    /// Children, grants and unread mail of many processes (see `sql::read::live_reads`).
    pub(super) fn live_reads(&self, pids: &[Pid]) -> Result<LiveReads, StoreError> {
        self.with(|conn| q::live_reads(&mut SqliteDb(conn), self.process_columns(conn)?, pids))
    }

    /// The resident part of object memory (see `sql::read::object_space`).
    pub(super) fn object_space(&self) -> Result<ObjectSpace, StoreError> {
        self.with(|conn| {
            if !self.object_memory_exists(conn)? {
                return Ok(ObjectSpace::new());
            }
            q::object_space(&mut SqliteDb(conn))
        })
    }

    /// The memory of some processes and objects (see `sql::read::object_memory_of`).
    pub(super) fn object_memory_of(&self, pids: &[Pid], oids: &[Oid]) -> Result<ObjectSpace, StoreError> {
        self.with(|conn| {
            if !self.object_memory_exists(conn)? {
                return Ok(ObjectSpace::new());
            }
            q::object_memory_of(&mut SqliteDb(conn), pids, oids)
        })
    }

    /// One object's durable payload.
    pub(super) fn payload(&self, oid: Oid) -> Result<Option<Envelope>, StoreError> {
        self.with(|conn| {
            if !self.object_memory_exists(conn)? {
                return Ok(None);
            }
            q::payload(&mut SqliteDb(conn), oid)
        })
    }

    /// Every object with a durable payload.
    pub(super) fn payload_oids(&self) -> Result<BTreeSet<Oid>, StoreError> {
        self.with(|conn| {
            if !self.object_memory_exists(conn)? {
                return Ok(BTreeSet::new());
            }
            q::payload_oids(&mut SqliteDb(conn))
        })
    }

    /// A process's checkpoint.
    pub(super) fn checkpoint(&self, pid: Pid) -> Result<Option<Envelope>, StoreError> {
        self.with(|conn| q::checkpoint(&mut SqliteDb(conn), pid))
    }

    /// The answer recorded for a keyed call.
    pub(super) fn keyed(&self, key: &CallKey) -> Result<Option<serde_json::Value>, StoreError> {
        self.with(|conn| {
            if !exists(&self.has_call_keys, conn, |c| schema::has_table(c, "call_keys"))? {
                return Ok(None);
            }
            q::keyed(&mut SqliteDb(conn), key)
        })
    }

    /// A page of one mailbox and how many messages matched in all.
    pub(super) fn mailbox(&self, recipient: Pid, query: &MailboxQuery) -> Result<MailboxPage, StoreError> {
        self.with(|conn| {
            if !self.messages_exist(conn)? {
                return Ok(MailboxPage::default());
            }
            q::mailbox(&mut SqliteDb(conn), recipient, query)
        })
    }

    /// SQLite's plan for a mailbox read, one line per step of each statement it runs.
    pub(super) fn mailbox_plan(
        &self,
        recipient: Pid,
        query: &MailboxQuery,
    ) -> Result<Vec<String>, StoreError> {
        let plan_of = MailboxPlan::new(recipient, query);
        self.with(|conn| plan(conn, &plan_of.statements(&SqliteDb(conn))))
    }

    /// One message, from any mailbox.
    pub(super) fn message(&self, id: MessageId) -> Result<Option<Message>, StoreError> {
        self.with(|conn| {
            if !self.messages_exist(conn)? {
                return Ok(None);
            }
            q::message(&mut SqliteDb(conn), id)
        })
    }

    /// How many unacknowledged messages a mailbox holds.
    pub(super) fn unread_count(&self, recipient: Pid) -> Result<u64, StoreError> {
        self.with(|conn| {
            if !self.messages_exist(conn)? {
                return Ok(0);
            }
            q::unread_count(&mut SqliteDb(conn), recipient)
        })
    }

    /// The highest `seq` stored, 0 for none.
    pub(super) fn message_seq_max(&self) -> Result<u64, StoreError> {
        self.with(|conn| {
            if !self.messages_exist(conn)? {
                return Ok(0);
            }
            q::message_seq_max(&mut SqliteDb(conn))
        })
    }

    /// SQLite's plans for `unread_count` and `message_seq_max`, one line per step.
    pub(super) fn message_counters_plan(&self) -> Result<Vec<String>, StoreError> {
        self.with(|conn| {
            plan(
                conn,
                &[(UNREAD_COUNT.to_string(), vec![Cell::Text(String::new())]), (SEQ_MAX.to_string(), vec![])],
            )
        })
    }
}

/// SQLite's plan of each statement (`EXPLAIN QUERY PLAN`): the `detail` column of each step.
fn plan(conn: &Connection, statements: &[(String, Vec<Cell>)]) -> Result<Vec<String>, StoreError> {
    let mut lines = Vec::new();
    for (sql, params) in statements {
        let sql = format!("EXPLAIN QUERY PLAN {sql}");
        let detail = select(&mut SqliteDb(conn), &sql, &q::params(params), |r| r.text(3));
        lines.extend(detail.map_err(DbError::into_read)?);
    }
    Ok(lines)
}
