//! The seat store file's schema, its version check, and how its connection is opened.

use super::super::StoreError;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::time::Duration;

/// The schema version this build writes and reads (`PRAGMA user_version`).
pub const SEAT_STORE_SCHEMA_VERSION: i64 = 2;

/// How long a statement waits for a lock another connection to the file holds. Another
/// process (a `rig expand` beside `agentvisor run`) writes one seat at a time, in
/// milliseconds; five seconds turns a stall into a wait and a deadlock into an error.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Schema version 1. Seats are read in declaration order, which is `rowid` order: nothing is
/// ever deleted. The table checks repeat the record's invariants, so a write that slipped
/// past them is refused by SQLite too; the partial unique index makes a token one seat's.
const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS rigs (
    id            TEXT PRIMARY KEY,
    spec_path     TEXT NOT NULL,
    spec_json     TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS seats (
    rig            TEXT NOT NULL REFERENCES rigs (id),
    member         TEXT NOT NULL,
    runtime        TEXT NOT NULL,
    status         TEXT NOT NULL
        CHECK (status IN ('declared', 'resolved', 'realized', 'failed')),
    source         TEXT NULL,
    token          TEXT NULL,
    failed_step    TEXT NULL,
    error          TEXT NULL,
    stderr         TEXT NULL,
    pid            TEXT NULL,
    declared_at_ms INTEGER NOT NULL,
    updated_at_ms  INTEGER NOT NULL,
    member_json    TEXT NOT NULL,
    PRIMARY KEY (rig, member),
    CHECK ((status = 'realized') = (token IS NOT NULL)),
    CHECK (token IS NULL OR source IS NULL OR token <> source)
);
CREATE UNIQUE INDEX IF NOT EXISTS seats_token ON seats (token) WHERE token IS NOT NULL;
PRAGMA user_version = 1;
";

/// Schema version 2: a realized seat's usage (`usage_json`, the `Usage` as JSON), added to a
/// version 1 file in place; rows written before it have none.
const SCHEMA_V2: &str = "
ALTER TABLE seats ADD COLUMN usage_json TEXT NULL CHECK (usage_json IS NULL OR status = 'realized');
PRAGMA user_version = 2;
";

/// Opens (creating if needed) the file at `path` for reading and writing: WAL, `synchronous`
/// FULL, a busy timeout, the schema created on a new file. A file of a newer (or negative)
/// version is refused before anything in it changes.
pub(super) fn open(path: &Path) -> Result<Connection, StoreError> {
    let fail = |message: String| StoreError::Backend {
        message: format!("failed to open the seat store {}: {message}", path.display()),
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| fail(e.to_string()))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| fail(e.to_string()))?;
    // The version is checked before the journal mode is set: a newer file is left as it is.
    let version = user_version(&conn).map_err(|e| fail(e.to_string()))?;
    if !(0..=SEAT_STORE_SCHEMA_VERSION).contains(&version) {
        return Err(StoreError::UnsupportedSchema {
            path: path.display().to_string(),
            found: version,
            supported: SEAT_STORE_SCHEMA_VERSION,
        });
    }
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        .map_err(|e| fail(e.to_string()))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(fail(format!("journal_mode is {mode:?}, not WAL")));
    }
    // FULL: a write returns only after the WAL is fsynced.
    conn.pragma_update(None, "synchronous", "FULL").map_err(|e| fail(e.to_string()))?;
    conn.pragma_update(None, "foreign_keys", "ON").map_err(|e| fail(e.to_string()))?;
    if version < SEAT_STORE_SCHEMA_VERSION {
        // Under one write lock, the version read again: two processes creating or upgrading a
        // file at once both succeed, one after the other, and the second changes nothing.
        conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| fail(e.to_string()))?;
        let upgraded = user_version(&conn).and_then(|version| {
            let mut steps = String::new();
            if version < 1 {
                steps.push_str(SCHEMA_V1);
            }
            if version < 2 {
                steps.push_str(SCHEMA_V2);
            }
            conn.execute_batch(&steps)?;
            conn.execute_batch("COMMIT")
        });
        if let Err(e) = upgraded {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(fail(format!("failed to create or upgrade the schema: {e}")));
        }
    }
    Ok(conn)
}

/// Opens an existing file for reading only: no file is created, no pragma is set, nothing is
/// written (the journal mode stays as the owner set it). A file with no schema yet (version 0:
/// its creator has not committed it) or of a newer version is refused.
pub(super) fn open_read_only(path: &Path) -> Result<Connection, StoreError> {
    let fail = |message: String| StoreError::Backend {
        message: format!("failed to open the seat store {} read-only: {message}", path.display()),
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| fail(e.to_string()))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| fail(e.to_string()))?;
    let (conn, version) = match user_version(&conn) {
        Ok(version) => (conn, version),
        // A read-only copy with no WAL: SQLite cannot create the `-shm` index WAL mode needs,
        // and every commit is in the file itself, so it is read as immutable.
        Err(_) if !wal_beside(path) => {
            let escaped =
                path.display().to_string().replace('%', "%25").replace('?', "%3f").replace('#', "%23");
            let uri = format!("file:{escaped}?immutable=1");
            let conn = Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
                .map_err(|e| fail(e.to_string()))?;
            let version = user_version(&conn).map_err(|e| fail(e.to_string()))?;
            (conn, version)
        }
        Err(e) => return Err(fail(e.to_string())),
    };
    if version == 0 {
        return Err(fail("the seat store is being created (it has no schema yet); try again".into()));
    }
    if !(1..=SEAT_STORE_SCHEMA_VERSION).contains(&version) {
        return Err(StoreError::UnsupportedSchema {
            path: path.display().to_string(),
            found: version,
            supported: SEAT_STORE_SCHEMA_VERSION,
        });
    }
    if version == 1 {
        // A view may not upgrade the file: a temporary view (the temp schema is searched
        // before the file's) shows its seats with schema 2's columns, the usage none.
        conn.execute_batch("CREATE TEMP VIEW seats AS SELECT *, NULL AS usage_json FROM main.seats;")
            .map_err(|e| fail(format!("failed to read a version 1 file: {e}")))?;
    }
    Ok(conn)
}

/// Whether the file has a `-wal` beside it.
fn wal_beside(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    Path::new(&wal).exists()
}

fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}
