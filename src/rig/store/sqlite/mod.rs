//! `SqliteSeatStore`: the durable [`SeatStore`], in a SQLite file of its own
//! ([`SEAT_STORE_FILE`] in the state directory).
//!
//! Two tables, `rigs` and `seats` (see `schema.rs` and `docs/storage-format.md`), in WAL mode
//! with `synchronous=FULL`, so a write that returned `Ok` survives a crash or a power loss. The
//! schema version is `PRAGMA user_version`; a file written by a newer build is refused before
//! anything in it changes.
//!
//! Several processes may have the file open at once (`agentvisor run` and a `rig expand`
//! beside it). Each write is one `BEGIN IMMEDIATE` transaction that reads the seat as it is in
//! the file, applies the state model's rule to it and writes the result, so two processes'
//! writes are ordered by SQLite's write lock and neither works from a stale copy; a lock held
//! by another process is waited for (a busy timeout), not failed at once.
//!
//! Fail-stop: once a write has failed after its transaction began, the store refuses every
//! later write until it is reopened, because SQLite's state after a failed statement, commit or
//! fsync is not something to build on. A refusal by the state model is not a failure: it
//! writes nothing and leaves the store usable. Reads keep working after a failure.

mod rows;
mod schema;

pub use schema::SEAT_STORE_SCHEMA_VERSION;

use super::rows::{self as shared, RIG_COLUMNS, SEAT_COLUMNS};
use super::sql::{SeatDb, SeatTx};
use super::{RigRecord, SeatRecord, StoreError};
use crate::rig::{MemberId, NativeId, RigId};
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::{Path, PathBuf};

/// The seat store's file name in a state directory.
pub const SEAT_STORE_FILE: &str = "rigs.sqlite";

/// A [`SeatStore`] in a SQLite file of its own. `Send + Sync`: one connection behind a mutex.
#[derive(Debug)]
pub struct SqliteSeatStore {
    path: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    conn: Connection,
    /// Set by the first failed write; every later write is refused with it.
    failed: Option<String>,
}

fn backend(what: &str, error: &rusqlite::Error) -> StoreError {
    StoreError::Backend { message: format!("failed to {what}: {error}") }
}

impl SqliteSeatStore {
    /// Opens the store at `path`, creating the file and its tables if needed.
    ///
    /// Refuses a file whose schema version is newer than [`SEAT_STORE_SCHEMA_VERSION`] (or
    /// negative) with [`StoreError::UnsupportedSchema`], without changing it.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteSeatStore, StoreError> {
        let path = path.as_ref();
        let conn = schema::open(path)?;
        Ok(SqliteSeatStore { path: path.to_path_buf(), state: Mutex::new(State { conn, failed: None }) })
    }

    /// Opens an existing store for reading only (`agentvisor rig status`): creates nothing,
    /// changes nothing in the file, and refuses every write.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<SqliteSeatStore, StoreError> {
        let path = path.as_ref();
        let conn = schema::open_read_only(path)?;
        Ok(SqliteSeatStore { path: path.to_path_buf(), state: Mutex::new(State { conn, failed: None }) })
    }

    /// Opens the store of the state directory `state` (`<state>/rigs.sqlite`), creating the
    /// directory if needed.
    pub fn open_in(state: impl AsRef<Path>) -> Result<SqliteSeatStore, StoreError> {
        let state = state.as_ref();
        std::fs::create_dir_all(state).map_err(|e| StoreError::Backend {
            message: format!("failed to create the state directory {}: {e}", state.display()),
        })?;
        SqliteSeatStore::open(state.join(SEAT_STORE_FILE))
    }

    /// The file this store is kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether an earlier write failed, so that writes are refused until reopen.
    pub fn is_fail_stopped(&self) -> bool {
        self.state.lock().failed.is_some()
    }
}

/// A SQLite connection (or transaction) as the shared seat store's rows.
struct SqliteSeatTx<'c>(&'c Connection);

impl SeatDb for SqliteSeatStore {
    fn write<T: Send>(
        &self,
        what: &str,
        body: &mut (dyn FnMut(&mut dyn SeatTx) -> Result<T, StoreError> + Send),
    ) -> Result<T, StoreError> {
        let mut state = self.state.lock();
        if let Some(message) = &state.failed {
            return Err(StoreError::FailStopped { message: message.clone() });
        }
        // Failing to begin writes nothing (another process held the lock past the timeout),
        // so it is reported without fail-stopping.
        let tx = state
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| backend(&format!("begin to {what}"), &e))?;
        let result = body(&mut SqliteSeatTx(&tx)).and_then(|value| {
            tx.commit().map_err(|e| backend(&format!("commit ({what})"), &e))?;
            Ok(value)
        });
        if let Err(error @ StoreError::Backend { .. }) = &result {
            tracing::error!(path = %self.path.display(), %error, "the seat store fail-stops");
            state.failed = Some(error.to_string());
        }
        result
    }

    fn read<T: Send>(
        &self,
        body: &mut (dyn FnMut(&mut dyn SeatTx) -> Result<T, StoreError> + Send),
    ) -> Result<T, StoreError> {
        body(&mut SqliteSeatTx(&self.state.lock().conn))
    }
}

fn to_sql_error(error: &StoreError) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(error.to_string().into())
}

impl SeatTx for SqliteSeatTx<'_> {
    fn read_seat(&mut self, rig: &RigId, member: &MemberId) -> Result<Option<SeatRecord>, StoreError> {
        let raw = self
            .0
            .prepare_cached(&format!("SELECT {SEAT_COLUMNS} FROM seats WHERE rig = ?1 AND member = ?2"))
            .and_then(|mut statement| {
                statement.query_row(params![rig.as_str(), member.as_str()], rows::raw_seat).optional()
            })
            .map_err(|e| backend(&format!("read seat {member} of rig {rig}"), &e))?;
        raw.map(shared::seat).transpose()
    }

    fn seat_holding(&mut self, token: &NativeId) -> Result<Option<SeatRecord>, StoreError> {
        let raw = self
            .0
            .prepare_cached(&format!("SELECT {SEAT_COLUMNS} FROM seats WHERE token = ?1"))
            .and_then(|mut statement| statement.query_row([token.as_str()], rows::raw_seat).optional())
            .map_err(|e| backend(&format!("look up token {token}"), &e))?;
        raw.map(shared::seat).transpose()
    }

    fn read_seats(&mut self, rig: &RigId) -> Result<Vec<SeatRecord>, StoreError> {
        let raw = self
            .0
            .prepare_cached(&format!("SELECT {SEAT_COLUMNS} FROM seats WHERE rig = ?1 ORDER BY rowid"))
            .and_then(|mut statement| {
                statement.query_map([rig.as_str()], rows::raw_seat)?.collect::<Result<Vec<_>, _>>()
            })
            .map_err(|e| backend(&format!("read the seats of rig {rig}"), &e))?;
        raw.into_iter().map(shared::seat).collect()
    }

    fn read_rig(&mut self, rig: &RigId) -> Result<Option<RigRecord>, StoreError> {
        let raw = self
            .0
            .prepare_cached(&format!("SELECT {RIG_COLUMNS} FROM rigs WHERE id = ?1"))
            .and_then(|mut statement| statement.query_row([rig.as_str()], rows::rig).optional())
            .map_err(|e| backend(&format!("read rig {rig}"), &e))?;
        raw.map(shared::rig_record).transpose()
    }

    fn read_rigs(&mut self) -> Result<Vec<RigRecord>, StoreError> {
        let raw = self
            .0
            .prepare_cached(&format!("SELECT {RIG_COLUMNS} FROM rigs ORDER BY rowid"))
            .and_then(|mut statement| statement.query_map([], rows::rig)?.collect::<Result<Vec<_>, _>>())
            .map_err(|e| backend("read the rigs", &e))?;
        raw.into_iter().map(shared::rig_record).collect()
    }

    fn insert_rig(&mut self, record: &RigRecord) -> Result<(), StoreError> {
        let created_at = shared::sql_millis(record.created_at_ms)?;
        self.0
            .prepare_cached(&format!("INSERT INTO rigs ({RIG_COLUMNS}) VALUES (?1, ?2, ?3, ?4)"))
            .and_then(|mut statement| {
                statement.execute(params![record.id.as_str(), record.spec_path, record.spec_json, created_at])
            })
            .map_err(|e| backend(&format!("create rig {}", record.id), &e))?;
        Ok(())
    }

    fn insert_seat(&mut self, seat: &SeatRecord) -> Result<(), StoreError> {
        let values = rows::seat_values(seat)?;
        self.0
            .prepare_cached(&format!(
                "INSERT INTO seats ({SEAT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
            ))
            .and_then(|mut statement| statement.execute(rusqlite::params_from_iter(values.iter())))
            .map_err(|e| backend(&format!("declare seat {} of rig {}", seat.member, seat.rig), &e))?;
        Ok(())
    }

    fn update_seat(&mut self, next: &SeatRecord) -> Result<(), StoreError> {
        self.0
            .prepare_cached(
                "UPDATE seats SET status = ?3, token = ?4, failed_step = ?5, error = ?6, stderr = ?7, \
                 pid = ?8, updated_at_ms = ?9, usage_json = ?10 WHERE rig = ?1 AND member = ?2",
            )
            .and_then(|mut statement| {
                statement.execute(params![
                    next.rig.as_str(),
                    next.member.as_str(),
                    next.status.as_str(),
                    next.token.as_ref().map(NativeId::as_str),
                    next.failed_step,
                    next.error,
                    next.stderr,
                    next.pid,
                    shared::sql_millis(next.updated_at_ms).map_err(|e| to_sql_error(&e))?,
                    shared::usage_json(next).map_err(|e| to_sql_error(&e))?,
                ])
            })
            .map_err(|e| backend(&format!("write seat {} of rig {}", next.member, next.rig), &e))?;
        Ok(())
    }
}
