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

use super::{RigRecord, SeatRecord, SeatStore, StoreError, known_rigs, now_ms, rig_record, transition};
use crate::agent::brain::Usage;
use crate::rig::{Member, MemberId, NativeId, RigId, RigSpec};
use parking_lot::Mutex;
use rows::{RIG_COLUMNS, SEAT_COLUMNS};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
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

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction and commits it. A backend error after
    /// the transaction began fail-stops the store; a refusal rolls back and changes nothing.
    fn write<T>(
        &self,
        what: &str,
        body: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
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
        let result = body(&tx).and_then(|value| {
            tx.commit().map_err(|e| backend(&format!("commit ({what})"), &e))?;
            Ok(value)
        });
        if let Err(error @ StoreError::Backend { .. }) = &result {
            tracing::error!(path = %self.path.display(), %error, "the seat store fail-stops");
            state.failed = Some(error.to_string());
        }
        result
    }

    /// Reads the seat, refuses an unknown one, applies `change` and writes the result back,
    /// then reads it back and checks it is what was written.
    fn update(
        &self,
        what: &str,
        rig: &RigId,
        member: &MemberId,
        change: impl FnOnce(&Transaction<'_>, &SeatRecord) -> Result<SeatRecord, StoreError>,
    ) -> Result<SeatRecord, StoreError> {
        self.write(what, |tx| {
            let Some(seat) = read_seat(tx, rig, member)? else {
                return Err(if read_rig(tx, rig)?.is_some() {
                    StoreError::UnknownSeat { rig: rig.clone(), member: member.clone() }
                } else {
                    unknown_rig(tx, rig)?
                });
            };
            let next = change(tx, &seat)?;
            tx.prepare_cached(
                "UPDATE seats SET status = ?3, token = ?4, failed_step = ?5, error = ?6, stderr = ?7, \
                 pid = ?8, updated_at_ms = ?9, usage_json = ?10 WHERE rig = ?1 AND member = ?2",
            )
            .and_then(|mut statement| {
                statement.execute(params![
                    rig.as_str(),
                    member.as_str(),
                    next.status.as_str(),
                    next.token.as_ref().map(NativeId::as_str),
                    next.failed_step,
                    next.error,
                    next.stderr,
                    next.pid,
                    rows::sql_millis(next.updated_at_ms).map_err(|e| to_sql_error(&e))?,
                    rows::usage_json(&next).map_err(|e| to_sql_error(&e))?,
                ])
            })
            .map_err(|e| backend(&format!("write seat {member} of rig {rig}"), &e))?;
            if read_seat(tx, rig, member)?.as_ref() != Some(&next) {
                return Err(StoreError::Corrupt {
                    message: format!("seat {member} of rig {rig} read back differs from what was written"),
                });
            }
            Ok(next)
        })
    }
}

fn to_sql_error(error: &StoreError) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(error.to_string().into())
}

fn read_seat(conn: &Connection, rig: &RigId, member: &MemberId) -> Result<Option<SeatRecord>, StoreError> {
    let raw = conn
        .prepare_cached(&format!("SELECT {SEAT_COLUMNS} FROM seats WHERE rig = ?1 AND member = ?2"))
        .and_then(|mut statement| {
            statement.query_row(params![rig.as_str(), member.as_str()], rows::raw_seat).optional()
        })
        .map_err(|e| backend(&format!("read seat {member} of rig {rig}"), &e))?;
    raw.map(rows::seat).transpose()
}

fn seat_holding(conn: &Connection, token: &NativeId) -> Result<Option<SeatRecord>, StoreError> {
    let raw = conn
        .prepare_cached(&format!("SELECT {SEAT_COLUMNS} FROM seats WHERE token = ?1"))
        .and_then(|mut statement| statement.query_row([token.as_str()], rows::raw_seat).optional())
        .map_err(|e| backend(&format!("look up token {token}"), &e))?;
    raw.map(rows::seat).transpose()
}

fn read_rig(conn: &Connection, rig: &RigId) -> Result<Option<RigRecord>, StoreError> {
    let raw = conn
        .prepare_cached(&format!("SELECT {RIG_COLUMNS} FROM rigs WHERE id = ?1"))
        .and_then(|mut statement| statement.query_row([rig.as_str()], rows::rig).optional())
        .map_err(|e| backend(&format!("read rig {rig}"), &e))?;
    raw.map(rows::rig_record).transpose()
}

fn read_rigs(conn: &Connection) -> Result<Vec<RigRecord>, StoreError> {
    let raw = conn
        .prepare_cached(&format!("SELECT {RIG_COLUMNS} FROM rigs ORDER BY rowid"))
        .and_then(|mut statement| statement.query_map([], rows::rig)?.collect::<Result<Vec<_>, _>>())
        .map_err(|e| backend("read the rigs", &e))?;
    raw.into_iter().map(rows::rig_record).collect()
}

fn unknown_rig(conn: &Connection, rig: &RigId) -> Result<StoreError, StoreError> {
    let rigs = read_rigs(conn)?;
    Ok(StoreError::UnknownRig { rig: rig.clone(), known: known_rigs(rigs.iter().map(|r| &r.id)) })
}

fn insert_seat(tx: &Transaction<'_>, seat: &SeatRecord) -> Result<(), StoreError> {
    let values = rows::seat_values(seat)?;
    tx.prepare_cached(&format!(
        "INSERT INTO seats ({SEAT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
    ))
    .and_then(|mut statement| statement.execute(rusqlite::params_from_iter(values.iter())))
    .map_err(|e| backend(&format!("declare seat {} of rig {}", seat.member, seat.rig), &e))?;
    if read_seat(tx, &seat.rig, &seat.member)?.as_ref() != Some(seat) {
        return Err(StoreError::Corrupt {
            message: format!(
                "seat {} of rig {} read back differs from what was written",
                seat.member, seat.rig
            ),
        });
    }
    Ok(())
}

impl SeatStore for SqliteSeatStore {
    fn create_rig(&self, spec: &RigSpec, spec_path: &str) -> Result<RigRecord, StoreError> {
        let now = now_ms();
        let record = rig_record(spec, spec_path, now)?;
        let mut seats: Vec<SeatRecord> = Vec::with_capacity(spec.members.len());
        for member in &spec.members {
            if seats.iter().any(|seat| seat.member == member.id) {
                return Err(StoreError::DuplicateMember { rig: spec.id.clone(), member: member.id.clone() });
            }
            seats.push(transition::declare(&spec.id, member, now)?);
        }
        self.write(&format!("create rig {}", spec.id), |tx| {
            if read_rig(tx, &spec.id)?.is_some() {
                return Err(StoreError::RigExists { rig: spec.id.clone() });
            }
            tx.prepare_cached(&format!("INSERT INTO rigs ({RIG_COLUMNS}) VALUES (?1, ?2, ?3, ?4)"))
                .and_then(|mut statement| {
                    statement.execute(params![
                        record.id.as_str(),
                        record.spec_path,
                        record.spec_json,
                        rows::sql_millis(record.created_at_ms).map_err(|e| to_sql_error(&e))?,
                    ])
                })
                .map_err(|e| backend(&format!("create rig {}", spec.id), &e))?;
            for seat in &seats {
                insert_seat(tx, seat)?;
            }
            Ok(record.clone())
        })
    }

    fn declare(&self, rig: &RigId, member: &Member) -> Result<SeatRecord, StoreError> {
        let seat = transition::declare(rig, member, now_ms())?;
        self.write(&format!("declare seat {} of rig {rig}", member.id), |tx| {
            if read_rig(tx, rig)?.is_none() {
                return Err(unknown_rig(tx, rig)?);
            }
            if read_seat(tx, rig, &member.id)?.is_some() {
                return Err(StoreError::DuplicateMember { rig: rig.clone(), member: member.id.clone() });
            }
            insert_seat(tx, &seat)?;
            Ok(seat.clone())
        })
    }

    fn resolve(&self, rig: &RigId, member: &MemberId) -> Result<SeatRecord, StoreError> {
        let now = now_ms();
        self.update(&format!("resolve seat {member} of rig {rig}"), rig, member, |_, seat| {
            transition::resolve(seat, now)
        })
    }

    fn realize(
        &self,
        rig: &RigId,
        member: &MemberId,
        token: &NativeId,
        pid: Option<&str>,
    ) -> Result<SeatRecord, StoreError> {
        let now = now_ms();
        self.update(&format!("realize seat {member} of rig {rig}"), rig, member, |tx, seat| {
            let holder = seat_holding(tx, token)?;
            transition::realize(seat, token, pid, holder.as_ref(), now)
        })
    }

    fn fail(
        &self,
        rig: &RigId,
        member: &MemberId,
        step: &str,
        error: &str,
        stderr: Option<&str>,
    ) -> Result<SeatRecord, StoreError> {
        let now = now_ms();
        self.update(&format!("record seat {member} of rig {rig} as failed"), rig, member, |_, seat| {
            transition::fail(seat, step, error, stderr, now)
        })
    }

    fn record_usage(&self, rig: &RigId, member: &MemberId, usage: &Usage) -> Result<SeatRecord, StoreError> {
        let now = now_ms();
        self.update(&format!("record the usage of seat {member} of rig {rig}"), rig, member, |_, seat| {
            transition::record_usage(seat, usage, now)
        })
    }

    fn seat(&self, rig: &RigId, member: &MemberId) -> Result<Option<SeatRecord>, StoreError> {
        read_seat(&self.state.lock().conn, rig, member)
    }

    fn seats(&self, rig: &RigId) -> Result<Vec<SeatRecord>, StoreError> {
        let state = self.state.lock();
        let raw = state
            .conn
            .prepare_cached(&format!("SELECT {SEAT_COLUMNS} FROM seats WHERE rig = ?1 ORDER BY rowid"))
            .and_then(|mut statement| {
                statement.query_map([rig.as_str()], rows::raw_seat)?.collect::<Result<Vec<_>, _>>()
            })
            .map_err(|e| backend(&format!("read the seats of rig {rig}"), &e))?;
        raw.into_iter().map(rows::seat).collect()
    }

    fn rigs(&self) -> Result<Vec<RigRecord>, StoreError> {
        read_rigs(&self.state.lock().conn)
    }

    fn rig(&self, id: &RigId) -> Result<Option<RigRecord>, StoreError> {
        read_rig(&self.state.lock().conn, id)
    }
}
