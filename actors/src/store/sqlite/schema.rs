//! The file's schema, its version check, and how each kind of connection is opened.
//!
//! Everything SQLite-specific about setup lives here (pragmas, `sqlite_master`, open flags);
//! the statements elsewhere are portable SQL. `docs/storage-format.md` describes the result.

use crate::limits;
use crate::store::sql::read::RESIDENT_INDEXES;
use crate::store::{SCHEMA_VERSION, StoreError};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::path::Path;
use std::time::Duration;

/// How long a connection waits for a lock held by another connection before failing.
/// Readers in WAL mode almost never wait; the writer only waits if another process writes,
/// which the runtime's state-directory lock rules out. Five seconds turns a transient stall
/// into a wait and a real deadlock into an error instead of a hang.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The tables and indexes of schema version 1.
const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS processes (
    pid              TEXT PRIMARY KEY,
    parent           TEXT NULL,
    depth            INTEGER NOT NULL,
    image            TEXT NOT NULL,
    cwd              TEXT NOT NULL,
    goal             TEXT NOT NULL,
    status           TEXT NOT NULL,
    wait_state       TEXT NULL,
    pause_reason     TEXT NULL,
    host_gate        TEXT NULL,
    outcome          TEXT NULL,
    result_oid       TEXT NULL,
    state_generation INTEGER NOT NULL,
    epoch            INTEGER NULL,
    resume_claim     INTEGER NULL,
    started          INTEGER NOT NULL,
    account          TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS processes_parent ON processes (parent, pid);
CREATE INDEX IF NOT EXISTS processes_live_parent ON processes (parent, pid)
    WHERE status NOT IN ('exited', 'failed', 'killed');
CREATE TABLE IF NOT EXISTS grants (
    id           TEXT PRIMARY KEY,
    holder       TEXT NOT NULL,
    resource     TEXT NOT NULL,
    rights       INTEGER NOT NULL,
    constraints  TEXT NOT NULL,
    delegable    INTEGER NOT NULL,
    live         INTEGER NOT NULL,
    derived_from TEXT NULL
);
CREATE INDEX IF NOT EXISTS grants_holder ON grants (holder, id);
CREATE INDEX IF NOT EXISTS grants_derived_from ON grants (derived_from, id);
CREATE TABLE IF NOT EXISTS objects (
    oid        TEXT PRIMARY KEY,
    owner_kind TEXT NOT NULL,
    owner_pid  TEXT NULL,
    kind       TEXT NOT NULL,
    payload    BLOB NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    pid      TEXT PRIMARY KEY,
    envelope BLOB NOT NULL
);
";

/// What schema version 2 adds: mailboxes. Each index serves one filter of a mailbox read (see
/// `read::MailboxPlan`); `messages_seq` answers `message_seq_max` from the end of an index.
const SCHEMA_V2: &str = "
CREATE TABLE IF NOT EXISTS messages (
    message_id     TEXT PRIMARY KEY,
    recipient      TEXT NOT NULL,
    seq            INTEGER NOT NULL,
    sender_kind    TEXT NOT NULL,
    sender_pid     TEXT NULL,
    kind           TEXT NOT NULL,
    channel        TEXT NULL,
    correlation_id TEXT NULL,
    reply_to       TEXT NULL,
    body           TEXT NOT NULL,
    payload        TEXT NULL,
    labels         TEXT NOT NULL,
    acked          INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_unread ON messages (recipient, acked, seq);
CREATE INDEX IF NOT EXISTS messages_channel ON messages (recipient, channel, seq);
CREATE INDEX IF NOT EXISTS messages_correlation ON messages (recipient, correlation_id, seq);
CREATE INDEX IF NOT EXISTS messages_sender ON messages (recipient, sender_kind, sender_pid, seq);
CREATE INDEX IF NOT EXISTS messages_reply_to ON messages (recipient, reply_to);
CREATE INDEX IF NOT EXISTS messages_seq ON messages (seq);
";

/// What schema version 3 changes: object memory. Object metadata, handles, names, roots and
/// per-process memory each get a table, and durable payloads a table of their own; the v1
/// `objects` table is carried over and dropped.
///
/// The only rows a v2 build wrote to `objects` are `process_result` objects owned by their
/// process's result, with a JSON payload. Each row becomes object metadata (no labels, not
/// ephemeral, not released) and, if it has a payload, a payload row. The owner kind and
/// reference carry over word for word (`process`, `process_result` and `host` mean the same in
/// both versions); the kind is `process_result` for a result's object and `data` otherwise,
/// since the v1 `kind` column was free text. An empty `objects` table (a fresh file) copies
/// nothing.
const SCHEMA_V3: &str = "
CREATE TABLE IF NOT EXISTS object_meta (
    oid        TEXT PRIMARY KEY,
    owner_kind TEXT NOT NULL,
    owner_ref  TEXT NULL,
    kind       TEXT NOT NULL,
    labels     TEXT NOT NULL,
    ephemeral  INTEGER NOT NULL,
    released   INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS object_handles (
    holder    TEXT NOT NULL,
    oid       TEXT NOT NULL,
    rights    INTEGER NOT NULL,
    ephemeral INTEGER NOT NULL,
    PRIMARY KEY (holder, oid)
);
CREATE INDEX IF NOT EXISTS object_handles_oid ON object_handles (oid, holder);
CREATE TABLE IF NOT EXISTS object_names (
    pid  TEXT NOT NULL,
    name TEXT NOT NULL,
    oid  TEXT NOT NULL,
    PRIMARY KEY (pid, name)
);
CREATE TABLE IF NOT EXISTS object_roots (
    pid TEXT NOT NULL,
    oid TEXT NOT NULL,
    PRIMARY KEY (pid, oid)
);
CREATE TABLE IF NOT EXISTS object_memory (
    pid        TEXT PRIMARY KEY,
    goal       TEXT NULL,
    clearance  TEXT NULL,
    context    TEXT NOT NULL,
    skills     TEXT NOT NULL,
    collection TEXT NULL
);
CREATE TABLE IF NOT EXISTS object_payloads (
    oid      TEXT PRIMARY KEY,
    envelope BLOB NOT NULL
);
INSERT INTO object_meta (oid, owner_kind, owner_ref, kind, labels, ephemeral, released)
    SELECT oid, owner_kind, owner_pid,
           CASE WHEN owner_kind = 'process_result' THEN 'process_result' ELSE 'data' END,
           '[]', 0, 0
    FROM objects;
INSERT INTO object_payloads (oid, envelope)
    SELECT oid, payload FROM objects WHERE payload IS NOT NULL;
DROP TABLE objects;
";

/// What schema version 4 adds: the answers of keyed calls (idempotency keys), one row per
/// caller, kind and key, written once.
const SCHEMA_V4: &str = "
CREATE TABLE IF NOT EXISTS call_keys (
    caller   TEXT NOT NULL,
    kind     TEXT NOT NULL,
    call_key TEXT NOT NULL,
    answer   TEXT NOT NULL,
    PRIMARY KEY (caller, kind, call_key)
);
";

/// What schema version 5 adds: a process's restart state (policy and launch spec as a child,
/// supervision and restart history as a parent), JSON, NULL for the default.
const SCHEMA_V5: &str = "
ALTER TABLE processes ADD COLUMN restart TEXT NULL;
";

/// What schema version 6 adds: the indexes that let a reopen and every read-only view read
/// what is live without scanning the history, written beside the queries that use them.
const SCHEMA_V6: &str = RESIDENT_INDEXES;

/// What schema version 7 changes: the object-memory tables keyed by text are rebuilt `WITHOUT
/// ROWID`, so each row lives in its key's B-tree and a write touches one page fewer (a rowid
/// table keeps its text key in a separate index). A spawn's commit writes object memory's rows
/// for the child's memory and goal: five pages fewer of some twenty. Payloads keep their rowid
/// table: their rows are large. Each table is copied into its new form, the old one (with its
/// indexes) dropped and the new one renamed; the indexes are made again (the resident ones by
/// [`RESIDENT_INDEXES`], the step's second batch).
const SCHEMA_V7: &str = "
CREATE TABLE object_meta_v7 (
    oid        TEXT PRIMARY KEY,
    owner_kind TEXT NOT NULL,
    owner_ref  TEXT NULL,
    kind       TEXT NOT NULL,
    labels     TEXT NOT NULL,
    ephemeral  INTEGER NOT NULL,
    released   INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO object_meta_v7 (oid, owner_kind, owner_ref, kind, labels, ephemeral, released)
    SELECT oid, owner_kind, owner_ref, kind, labels, ephemeral, released FROM object_meta;
DROP TABLE object_meta;
ALTER TABLE object_meta_v7 RENAME TO object_meta;
CREATE TABLE object_handles_v7 (
    holder    TEXT NOT NULL,
    oid       TEXT NOT NULL,
    rights    INTEGER NOT NULL,
    ephemeral INTEGER NOT NULL,
    PRIMARY KEY (holder, oid)
) WITHOUT ROWID;
INSERT INTO object_handles_v7 (holder, oid, rights, ephemeral)
    SELECT holder, oid, rights, ephemeral FROM object_handles;
DROP TABLE object_handles;
ALTER TABLE object_handles_v7 RENAME TO object_handles;
CREATE INDEX object_handles_oid ON object_handles (oid, holder);
CREATE TABLE object_names_v7 (
    pid  TEXT NOT NULL,
    name TEXT NOT NULL,
    oid  TEXT NOT NULL,
    PRIMARY KEY (pid, name)
) WITHOUT ROWID;
INSERT INTO object_names_v7 (pid, name, oid) SELECT pid, name, oid FROM object_names;
DROP TABLE object_names;
ALTER TABLE object_names_v7 RENAME TO object_names;
CREATE TABLE object_roots_v7 (
    pid TEXT NOT NULL,
    oid TEXT NOT NULL,
    PRIMARY KEY (pid, oid)
) WITHOUT ROWID;
INSERT INTO object_roots_v7 (pid, oid) SELECT pid, oid FROM object_roots;
DROP TABLE object_roots;
ALTER TABLE object_roots_v7 RENAME TO object_roots;
CREATE TABLE object_memory_v7 (
    pid        TEXT PRIMARY KEY,
    goal       TEXT NULL,
    clearance  TEXT NULL,
    context    TEXT NOT NULL,
    skills     TEXT NOT NULL,
    collection TEXT NULL
) WITHOUT ROWID;
INSERT INTO object_memory_v7 (pid, goal, clearance, context, skills, collection)
    SELECT pid, goal, clearance, context, skills, collection FROM object_memory;
DROP TABLE object_memory;
ALTER TABLE object_memory_v7 RENAME TO object_memory;
";

/// The migration steps: `MIGRATIONS[i]` takes a file from version `i` to version `i + 1`
/// (version 0 being an empty file), its batches run in order. Sized by [`SCHEMA_VERSION`], so
/// bumping the version without adding its step does not compile. Every step is DDL, plus the
/// statements that carry rows from a table it replaces into their new home, and runs inside
/// the open transaction together with the version bump.
const MIGRATIONS: [&[&str]; SCHEMA_VERSION as usize] = [
    &[SCHEMA_V1],
    &[SCHEMA_V2],
    &[SCHEMA_V3],
    &[SCHEMA_V4],
    &[SCHEMA_V5],
    &[SCHEMA_V6],
    &[SCHEMA_V7, RESIDENT_INDEXES],
];

fn open_error(path: &Path, message: impl std::fmt::Display) -> StoreError {
    StoreError::Open { path: path.display().to_string(), message: message.to_string() }
}

/// The writer connection's page cache, in KiB.
const WRITER_CACHE_KIB: i64 = 32 * 1024;

/// Opens (creating if needed) the writer's connection: checks the schema version, sets WAL and
/// `synchronous=FULL`, and creates the schema.
pub(super) fn open_writer(path: &Path) -> Result<Connection, StoreError> {
    let flags =
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = open_connection(path, path, flags)?;
    // Refuse a newer file before changing anything in it, journal mode included.
    check_version(&conn, path)?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        .map_err(|e| open_error(path, e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(open_error(path, format!("journal_mode is {mode:?}, not WAL")));
    }
    // FULL: a commit returns only after the WAL is fsynced, so an acknowledged commit
    // survives power loss. The setting is per connection, and only this one writes.
    conn.pragma_update(None, "synchronous", "FULL").map_err(|e| open_error(path, e))?;
    // The store declares no foreign keys: references (parent pids, grant sources, owners) are
    // the kernel's rules, and the store records what it is given exactly as the in-memory
    // store does. Set explicitly so the bundled build's default does not matter.
    conn.pragma_update(None, "foreign_keys", "OFF").map_err(|e| open_error(path, e))?;
    // Each change set of a group runs under a savepoint, whose rollback journal SQLite
    // otherwise writes to a temporary file (created, written and closed again for every
    // group); in memory it is a few pages per change set.
    conn.pragma_update(None, "temp_store", "MEMORY").map_err(|e| open_error(path, e))?;
    // A group's dirty pages stay in the writer's cache until its commit: with SQLite's default
    // (2 MiB) a group of a hundred spawns spilled pages to the WAL in mid-transaction and read
    // them back. The cache holds only pages used, so a small state costs no more.
    conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB).map_err(|e| open_error(path, e))?;
    conn.pragma_update(None, "wal_autocheckpoint", limits::WAL_CHECKPOINT_PAGES)
        .map_err(|e| open_error(path, e))?;
    create_schema(&conn).map_err(|e| match e {
        SchemaError::Sql(e) => open_error(path, e),
        SchemaError::Refused(e) => e,
    })?;
    Ok(conn)
}

/// Opens a connection that can only read (a reader of the pool, or the read-only view).
pub(super) fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    open_connection(path, path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
}

/// Opens `target` (a path or a URI) with `flags`, as every connection of the store is set up:
/// the busy timeout, and stable plans. The bundled SQLite is built with STAT4, under which a
/// statement whose parameter meets an index is re-prepared (parsed and planned again) every
/// time the parameter is bound anew, cached or not: listing one parent's children, or one
/// mailbox, paid a parse and a plan each time. With the query planner stability guarantee a
/// cached statement keeps its plan; the store's plans never depend on a parameter's value (its
/// partial indexes are chosen by literal predicates, and `INDEXED BY` where SQLite needs
/// telling).
fn open_connection(
    target: impl AsRef<Path>,
    path: &Path,
    flags: OpenFlags,
) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(target.as_ref(), flags).map_err(|e| open_error(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| open_error(path, e))?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map_err(|e| open_error(path, e))?;
    Ok(conn)
}

/// Whether `path` has no `-wal` file beside it. A database that SQLite could not open
/// read-only and that has no WAL is a read-only copy: opening WAL mode needs the `-shm`
/// index, which a read-only location lacks and cannot create, while every commit is in the
/// file itself (a WAL is removed only after it was checkpointed into the file).
pub(super) fn is_read_only_copy(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    !Path::new(&wal).exists()
}

/// Opens a read-only copy (see [`is_read_only_copy`]) as `immutable`: SQLite reads the file
/// without locks or a WAL index, trusting that nothing changes it.
pub(super) fn open_immutable(path: &Path) -> Result<Connection, StoreError> {
    // A URI: the characters that end or escape its path part are percent-encoded.
    let escaped = path.display().to_string().replace('%', "%25").replace('?', "%3f").replace('#', "%23");
    let uri = format!("file:{escaped}?immutable=1");
    open_connection(
        uri,
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
    )
}

/// Checks that a file opened read-only is an agentvisor store this build can read.
pub(super) fn check_readable(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    match check_version(conn, path)? {
        Some(_) => Ok(()),
        None if has_no_tables(conn).map_err(|e| open_error(path, e))? => {
            Err(StoreError::BeingCreated { path: path.display().to_string() })
        }
        None => Err(open_error(path, "not an agentvisor store: it has no schema version")),
    }
}

/// The file's schema version, if it has one, refusing versions this build does not know.
fn check_version(conn: &Connection, path: &Path) -> Result<Option<u32>, StoreError> {
    let found = stored_version(conn).map_err(|e| open_error(path, e))?;
    match found {
        None => Ok(None),
        Some(v) if v > i64::from(SCHEMA_VERSION) => Err(StoreError::SchemaTooNew {
            found: u32::try_from(v).unwrap_or(u32::MAX),
            supported: SCHEMA_VERSION,
        }),
        Some(v) if v < 1 => Err(open_error(path, format!("unknown schema version {v}"))),
        Some(v) => Ok(Some(u32::try_from(v).expect("1 <= v <= SCHEMA_VERSION fits a u32"))),
    }
}

/// Whether the file has a table of this name.
pub(super) fn has_table(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?1")?
        .query_row([name], |r| r.get::<_, String>(0))
        .optional()?
        .is_some())
}

/// Whether `table` has `column` (a file older than the schema that added it lacks it).
pub(super) fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("SELECT name FROM pragma_table_info(?1) WHERE name = ?2")?
        .query_row([table, column], |r| r.get::<_, String>(0))
        .optional()?
        .is_some())
}

/// Whether the file has no table at all (an empty file, or one whose schema is not yet
/// committed).
fn has_no_tables(conn: &Connection) -> rusqlite::Result<bool> {
    let tables: i64 =
        conn.query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'", [], |r| r.get(0))?;
    Ok(tables == 0)
}

fn stored_version(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    if !has_table(conn, "meta")? {
        return Ok(None);
    }
    conn.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0)).optional()
}

enum SchemaError {
    Sql(rusqlite::Error),
    Refused(StoreError),
}

impl From<rusqlite::Error> for SchemaError {
    fn from(e: rusqlite::Error) -> Self {
        SchemaError::Sql(e)
    }
}

/// Creates the schema of an empty file, or migrates an older file to [`SCHEMA_VERSION`], in
/// one transaction, re-checking the version under the write lock: a file is either left as it
/// was or ends up wholly at the current version.
fn create_schema(conn: &Connection) -> Result<(), SchemaError> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| {
        let found = stored_version(conn)?.unwrap_or(0);
        if found > i64::from(SCHEMA_VERSION) {
            return Err(SchemaError::Refused(StoreError::SchemaTooNew {
                found: u32::try_from(found).unwrap_or(u32::MAX),
                supported: SCHEMA_VERSION,
            }));
        }
        // `check_version` refused negative versions before; 0 is an empty file.
        let done = usize::try_from(found).unwrap_or(0);
        if done < MIGRATIONS.len() {
            for batch in MIGRATIONS[done..].iter().copied().flatten() {
                conn.execute_batch(batch)?;
            }
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?1) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [i64::from(SCHEMA_VERSION)],
            )?;
        }
        conn.execute("INSERT INTO meta (key, value) VALUES ('epoch', 0) ON CONFLICT (key) DO NOTHING", [])?;
        Ok(found)
    })();
    match result {
        Ok(found) => {
            conn.execute_batch("COMMIT")?;
            if found > 0 && found < i64::from(SCHEMA_VERSION) {
                tracing::info!(from = found, to = SCHEMA_VERSION, "migrated the store's schema");
            }
            Ok(())
        }
        Err(e) => {
            // The transaction is abandoned either way; the error that matters is `e`.
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}
