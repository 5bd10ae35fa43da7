//! Reads, each on a pooled read-only connection of its own, never the writer's.
//!
//! In WAL mode a reader sees the last transaction committed before its statement began and
//! never waits for the writer, so reads see committed data only and do not stall commits.

use super::codec::{self, GRANT_COLUMNS, OBJECT_COLUMNS, PROCESS_COLUMNS, RawGrant, RawObject, RawProcess};
use super::schema::{self, LIVE_STATUS};
use crate::kernel::capability::Grant;
use crate::kernel::ids::{Epoch, Oid, Pid};
use crate::kernel::process::ProcessRow;
use crate::store::{Envelope, ObjectRecord, ProcessQuery, StoreError};
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension};
use std::path::PathBuf;

/// Idle read connections kept for reuse. More concurrent readers than this still get a
/// connection each (opened on demand); the surplus is closed after use, so the pool never
/// pins more than this many file handles and page caches while idle.
const READ_POOL_IDLE_MAX: usize = 8;

fn read_error(e: rusqlite::Error) -> StoreError {
    StoreError::Read(e.to_string())
}

/// A pool of read-only connections to one file.
pub(super) struct ReadPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl ReadPool {
    /// A pool seeded with one already-open connection.
    pub(super) fn new(path: PathBuf, first: Connection) -> ReadPool {
        ReadPool { path, idle: Mutex::new(vec![first]) }
    }

    /// Runs `f` on an idle connection, or a fresh one if none is idle.
    fn with<T>(&self, f: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let pooled = self.idle.lock().pop();
        let conn = match pooled {
            Some(conn) => conn,
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
        let value = self.with(|conn| schema::read_epoch(conn).map_err(read_error))?;
        u64::try_from(value).map(Epoch).map_err(|_| StoreError::Corrupt(format!("epoch {value} is negative")))
    }

    /// One process row.
    pub(super) fn process(&self, pid: Pid) -> Result<Option<ProcessRow>, StoreError> {
        let sql = format!("SELECT {PROCESS_COLUMNS} FROM processes WHERE pid = ?1");
        let raw = self.with(|conn| {
            conn.prepare_cached(&sql)
                .and_then(|mut stmt| stmt.query_row([pid.to_string()], RawProcess::read).optional())
                .map_err(read_error)
        })?;
        raw.map(RawProcess::decode).transpose()
    }

    /// Process rows matching the query, in pid order.
    pub(super) fn processes(&self, query: ProcessQuery) -> Result<Vec<ProcessRow>, StoreError> {
        let (sql, parent) = processes_sql(query);
        let raws = self.with(|conn| {
            let mut stmt = conn.prepare_cached(&sql).map_err(read_error)?;
            let rows = match &parent {
                Some(parent) => stmt.query_map([parent], RawProcess::read),
                None => stmt.query_map([], RawProcess::read),
            };
            rows.and_then(|rows| rows.collect::<Result<Vec<_>, _>>()).map_err(read_error)
        })?;
        raws.into_iter().map(RawProcess::decode).collect()
    }

    /// SQLite's plan for a process query, one line per step (`EXPLAIN QUERY PLAN`).
    pub(super) fn processes_plan(&self, query: ProcessQuery) -> Result<Vec<String>, StoreError> {
        let (sql, parent) = processes_sql(query);
        let sql = format!("EXPLAIN QUERY PLAN {sql}");
        self.with(|conn| {
            let mut stmt = conn.prepare(&sql).map_err(read_error)?;
            let rows = match &parent {
                Some(parent) => stmt.query_map([parent], plan_detail),
                None => stmt.query_map([], plan_detail),
            };
            rows.and_then(|rows| rows.collect::<Result<Vec<_>, _>>()).map_err(read_error)
        })
    }

    /// Every grant held by one process, in grant id order.
    pub(super) fn grants_of(&self, holder: Pid) -> Result<Vec<Grant>, StoreError> {
        let sql = format!("SELECT {GRANT_COLUMNS} FROM grants WHERE holder = ?1 ORDER BY id");
        let raws = self.with(|conn| {
            conn.prepare_cached(&sql)
                .and_then(|mut stmt| {
                    stmt.query_map([holder.to_string()], RawGrant::read)?.collect::<Result<Vec<_>, _>>()
                })
                .map_err(read_error)
        })?;
        raws.into_iter().map(RawGrant::decode).collect()
    }

    /// One object record.
    pub(super) fn object(&self, oid: Oid) -> Result<Option<ObjectRecord>, StoreError> {
        let sql = format!("SELECT {OBJECT_COLUMNS} FROM objects WHERE oid = ?1");
        let raw = self.with(|conn| {
            conn.prepare_cached(&sql)
                .and_then(|mut stmt| stmt.query_row([oid.to_string()], RawObject::read).optional())
                .map_err(read_error)
        })?;
        raw.map(RawObject::decode).transpose()
    }

    /// A process's checkpoint.
    pub(super) fn checkpoint(&self, pid: Pid) -> Result<Option<Envelope>, StoreError> {
        let bytes: Option<Vec<u8>> = self.with(|conn| {
            conn.prepare_cached("SELECT envelope FROM checkpoints WHERE pid = ?1")
                .and_then(|mut stmt| stmt.query_row([pid.to_string()], |r| r.get(0)).optional())
                .map_err(read_error)
        })?;
        bytes.map(|b| codec::envelope(&b, &format!("the checkpoint of {pid}"))).transpose()
    }
}

/// The `detail` column of an `EXPLAIN QUERY PLAN` row.
fn plan_detail(r: &rusqlite::Row<'_>) -> rusqlite::Result<String> {
    r.get(3)
}

/// The SQL of a process query and its parent parameter, if any. Children of one parent are
/// read through `processes_parent (parent, pid)`, or the partial index `processes_live_parent`
/// when terminal rows are excluded, so such a query costs what it returns.
fn processes_sql(query: ProcessQuery) -> (String, Option<String>) {
    let mut terms: Vec<&str> = Vec::new();
    let mut parent = None;
    if let Some(p) = query.parent {
        terms.push("parent = ?1");
        parent = Some(p.to_string());
    } else if query.roots_only {
        terms.push("parent IS NULL");
    }
    if !query.include_terminal {
        terms.push(LIVE_STATUS);
    }
    let mut sql = format!("SELECT {PROCESS_COLUMNS} FROM processes");
    if !terms.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&terms.join(" AND "));
    }
    sql.push_str(" ORDER BY pid");
    if let Some(limit) = query.limit {
        // Bounded by i64::MAX, which is "all" for any real table.
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        sql.push_str(&format!(" LIMIT {limit}"));
    }
    (sql, parent)
}
