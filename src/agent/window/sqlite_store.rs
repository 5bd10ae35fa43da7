//! `SqliteChunkStore`: a durable [`ChunkStore`] in its own SQLite file.
//!
//! One table, `window_chunks(id BLOB PRIMARY KEY, bytes BLOB NOT NULL)`, in WAL mode with
//! `synchronous=FULL`, so a `put` that returned `Ok` survives a crash or a power loss. The
//! schema version is `PRAGMA user_version`; a file written by a newer build is refused before
//! anything in it changes.
//!
//! The table has a rowid (schema version 2): its key index holds only the ids, and the bytes
//! sit in the table's own b-tree. Version 1 kept the table `WITHOUT ROWID`, so each chunk's
//! bytes were part of its key's index cell; a chunk is larger than an index cell may keep on
//! its page, and SQLite then reads a cell's whole payload, overflow pages included, to compare
//! a key against it. Every `contains` read kilobytes per comparison, which made every
//! snapshot of a long window cost reads of much of the file. A version 1 file is rewritten to
//! version 2 in one transaction when it is opened for writing.
//!
//! Chunks are content-addressed (the id is the hash of the bytes), so a put is
//! `INSERT OR IGNORE`: an id already stored holds the same bytes. Reads return the bytes as
//! stored; [`Window::restore`](super::Window::restore) checks them against their id, so a row
//! damaged on disk is refused there rather than replayed as conversation.
//!
//! Fail-stop: after a write fails, the store refuses every later write until it is reopened,
//! because SQLite's state after a failed commit or fsync is not something to build on.

use super::id::ChunkId;
use super::store::{ChunkStore, ChunkStoreError};
use parking_lot::Mutex;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The chunk store's file name in a state directory.
pub const WINDOWS_FILE: &str = "windows.sqlite";

/// The schema version this build writes and reads (`PRAGMA user_version`).
pub const CHUNK_STORE_SCHEMA_VERSION: i64 = 2;

/// How long a statement waits for a lock another connection to the same file holds. The
/// store is one connection behind a mutex, so a wait means another process has the file open;
/// five seconds turns a transient stall into a wait and a deadlock into an error.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The table of schema version 2, written once for a new file and for the migration.
macro_rules! chunks_table {
    () => {
        "CREATE TABLE IF NOT EXISTS window_chunks (id BLOB PRIMARY KEY, bytes BLOB NOT NULL);"
    };
}

const SCHEMA_V2: &str = concat!(chunks_table!(), "PRAGMA user_version = 2;");

/// Version 1 to 2: the same rows, moved out of a `WITHOUT ROWID` table.
const MIGRATE_V1_TO_V2: &str = concat!(
    "ALTER TABLE window_chunks RENAME TO window_chunks_v1;",
    chunks_table!(),
    "INSERT INTO window_chunks (id, bytes) SELECT id, bytes FROM window_chunks_v1;",
    "DROP TABLE window_chunks_v1;",
    "PRAGMA user_version = 2;"
);

/// A [`ChunkStore`] in a SQLite file of its own. `Send + Sync`: one connection behind a mutex.
#[derive(Debug)]
pub struct SqliteChunkStore {
    path: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    conn: Connection,
    /// Set by the first failed write; every later write is refused with it.
    failed: Option<String>,
}

impl SqliteChunkStore {
    /// Opens the store at `path`, creating the file and its table if needed.
    ///
    /// Refuses a file whose schema version is newer than [`CHUNK_STORE_SCHEMA_VERSION`] (or
    /// negative) without changing it.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteChunkStore, ChunkStoreError> {
        let path = path.as_ref();
        let fail = |message: String| ChunkStoreError::Backend {
            message: format!("failed to open the chunk store {}: {message}", path.display()),
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| fail(e.to_string()))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| fail(e.to_string()))?;
        // The version is checked before the journal mode is set: a newer file is left as it is.
        let version: i64 =
            conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(|e| fail(e.to_string()))?;
        if !(0..=CHUNK_STORE_SCHEMA_VERSION).contains(&version) {
            return Err(fail(format!(
                "its schema version {version} is not one this build reads (0 to \
                 {CHUNK_STORE_SCHEMA_VERSION}); open it with a newer agentvisor"
            )));
        }
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(|e| fail(e.to_string()))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(fail(format!("journal_mode is {mode:?}, not WAL")));
        }
        // FULL: a put returns only after the WAL is fsynced.
        conn.pragma_update(None, "synchronous", "FULL").map_err(|e| fail(e.to_string()))?;
        let schema = match version {
            1 => Some(("migrate the schema from version 1", MIGRATE_V1_TO_V2)),
            0 => Some(("create the schema", SCHEMA_V2)),
            _ => None,
        };
        if let Some((what, statements)) = schema {
            conn.execute_batch(&format!("BEGIN IMMEDIATE;{statements}COMMIT;"))
                .map_err(|e| fail(format!("failed to {what}: {e}")))?;
        }
        Ok(SqliteChunkStore { path: path.to_path_buf(), state: Mutex::new(State { conn, failed: None }) })
    }

    /// The file this store is kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many records are stored: chunks and the links that list them.
    pub fn record_count(&self) -> Result<u64, ChunkStoreError> {
        let state = self.state.lock();
        let count: i64 = state
            .conn
            .query_row("SELECT COUNT(*) FROM window_chunks", [], |r| r.get(0))
            .map_err(|e| backend("count the records", &e))?;
        Ok(u64::try_from(count).unwrap_or(0))
    }
}

/// Inserts every record (one already stored is left as it is: same id, same bytes) and
/// commits once; nothing is stored if any insert or the commit fails.
fn put_in_one_transaction(
    conn: &Connection,
    records: Vec<(ChunkId, Vec<u8>)>,
) -> Result<(), ChunkStoreError> {
    let Some(first) = records.first().map(|(id, _)| *id) else { return Ok(()) };
    let transaction = conn.unchecked_transaction().map_err(|e| backend(&format!("put chunk {first}"), &e))?;
    for (id, bytes) in records {
        debug_assert_eq!(ChunkId::of(&bytes), id, "a chunk is put under the hash of its bytes");
        transaction
            .prepare_cached("INSERT OR IGNORE INTO window_chunks (id, bytes) VALUES (?1, ?2)")
            .and_then(|mut statement| statement.execute(params![id.as_bytes().as_slice(), bytes]))
            .map_err(|e| backend(&format!("put chunk {id}"), &e))?;
    }
    // Dropping an uncommitted transaction rolls it back.
    transaction
        .commit()
        .map_err(|e| backend(&format!("commit chunk {first} and the records put with it"), &e))
}

fn backend(what: &str, error: &rusqlite::Error) -> ChunkStoreError {
    ChunkStoreError::Backend { message: format!("failed to {what}: {error}") }
}

impl ChunkStore for SqliteChunkStore {
    fn put(&self, id: ChunkId, bytes: Vec<u8>) -> Result<(), ChunkStoreError> {
        self.put_all(vec![(id, bytes)])
    }

    /// One transaction, so one fsync, for all of `records`.
    fn put_all(&self, records: Vec<(ChunkId, Vec<u8>)>) -> Result<(), ChunkStoreError> {
        let mut state = self.state.lock();
        if let Some(cause) = &state.failed {
            return Err(ChunkStoreError::after_failure(cause));
        }
        let written = put_in_one_transaction(&state.conn, records);
        written.inspect_err(|error| state.failed = Some(error.to_string()))
    }

    fn get(&self, id: &ChunkId) -> Result<Option<Vec<u8>>, ChunkStoreError> {
        let state = self.state.lock();
        state
            .conn
            .prepare_cached("SELECT bytes FROM window_chunks WHERE id = ?1")
            .and_then(|mut statement| {
                statement.query_row([id.as_bytes().as_slice()], |r| r.get::<_, Vec<u8>>(0)).optional()
            })
            .map_err(|e| backend(&format!("get chunk {id}"), &e))
    }

    fn contains(&self, id: &ChunkId) -> Result<bool, ChunkStoreError> {
        let state = self.state.lock();
        state
            .conn
            .prepare_cached("SELECT 1 FROM window_chunks WHERE id = ?1")
            .and_then(|mut statement| statement.exists([id.as_bytes().as_slice()]))
            .map_err(|e| backend(&format!("look up chunk {id}"), &e))
    }
}
