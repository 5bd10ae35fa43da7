//! The PostgreSQL schema, its version check and migrations, and how connections are opened.
//!
//! The tables, columns and indexes are SQLite's (schema 7, whose `WITHOUT ROWID` has no
//! counterpart here: a PostgreSQL table is a heap and its key an index), in PostgreSQL's types:
//! `BIGINT` for integers and flags, `BYTEA` for envelopes, `TEXT` for ids, words and JSON (which escapes
//! control characters). Free text a caller chose (a goal, a message body, a channel, a name, a
//! key) may hold NUL, which PostgreSQL's `TEXT` refuses, so it is `BYTEA` holding UTF-8. Ids are lowercase
//! hyphenated UUIDs of one length with hyphens in the same places, so they sort the same under
//! any collation. The PostgreSQL schema has its own version counter, starting at 1;
//! `docs/storage-format.md` keeps its log.

use super::db::PgDb;
use crate::store::StoreError;
use crate::store::sql::read::RESIDENT_INDEXES;

/// The PostgreSQL schema version this build writes and understands.
pub(super) const PG_SCHEMA_VERSION: i64 = 3;

/// The tables and indexes of PostgreSQL schema version 1.
const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS processes (
    pid              TEXT PRIMARY KEY,
    parent           TEXT NULL,
    depth            BIGINT NOT NULL,
    image            BYTEA NOT NULL,
    cwd              BYTEA NOT NULL,
    goal             BYTEA NOT NULL,
    status           TEXT NOT NULL,
    wait_state       TEXT NULL,
    pause_reason     TEXT NULL,
    host_gate        BYTEA NULL,
    outcome          TEXT NULL,
    result_oid       TEXT NULL,
    state_generation BIGINT NOT NULL,
    epoch            BIGINT NULL,
    resume_claim     BIGINT NULL,
    started          BIGINT NOT NULL,
    account          TEXT NOT NULL,
    restart          TEXT NULL
);
CREATE INDEX IF NOT EXISTS processes_parent ON processes (parent, pid);
CREATE INDEX IF NOT EXISTS processes_live_parent ON processes (parent, pid)
    WHERE status NOT IN ('exited', 'failed', 'killed');
CREATE TABLE IF NOT EXISTS grants (
    id           TEXT PRIMARY KEY,
    holder       TEXT NOT NULL,
    resource     BYTEA NOT NULL,
    rights       BIGINT NOT NULL,
    constraints  TEXT NOT NULL,
    delegable    BIGINT NOT NULL,
    live         BIGINT NOT NULL,
    derived_from TEXT NULL
);
CREATE INDEX IF NOT EXISTS grants_holder ON grants (holder, id);
CREATE INDEX IF NOT EXISTS grants_derived_from ON grants (derived_from, id);
CREATE TABLE IF NOT EXISTS checkpoints (
    pid      TEXT PRIMARY KEY,
    envelope BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    message_id     TEXT PRIMARY KEY,
    recipient      TEXT NOT NULL,
    seq            BIGINT NOT NULL,
    sender_kind    TEXT NOT NULL,
    sender_pid     TEXT NULL,
    kind           TEXT NOT NULL,
    channel        BYTEA NULL,
    correlation_id BYTEA NULL,
    reply_to       TEXT NULL,
    body           BYTEA NOT NULL,
    payload        TEXT NULL,
    labels         TEXT NOT NULL,
    acked          BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_unread ON messages (recipient, acked, seq);
CREATE INDEX IF NOT EXISTS messages_channel ON messages (recipient, channel, seq);
CREATE INDEX IF NOT EXISTS messages_correlation ON messages (recipient, correlation_id, seq);
CREATE INDEX IF NOT EXISTS messages_sender ON messages (recipient, sender_kind, sender_pid, seq);
CREATE INDEX IF NOT EXISTS messages_reply_to ON messages (recipient, reply_to);
CREATE INDEX IF NOT EXISTS messages_seq ON messages (seq);
CREATE TABLE IF NOT EXISTS object_meta (
    oid        TEXT PRIMARY KEY,
    owner_kind TEXT NOT NULL,
    owner_ref  BYTEA NULL,
    kind       TEXT NOT NULL,
    labels     TEXT NOT NULL,
    ephemeral  BIGINT NOT NULL,
    released   BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS object_handles (
    holder    TEXT NOT NULL,
    oid       TEXT NOT NULL,
    rights    BIGINT NOT NULL,
    ephemeral BIGINT NOT NULL,
    PRIMARY KEY (holder, oid)
);
CREATE INDEX IF NOT EXISTS object_handles_oid ON object_handles (oid, holder);
CREATE TABLE IF NOT EXISTS object_names (
    pid  TEXT NOT NULL,
    name BYTEA NOT NULL,
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
    envelope BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS call_keys (
    caller   BYTEA NOT NULL,
    kind     TEXT NOT NULL,
    call_key BYTEA NOT NULL,
    answer   TEXT NOT NULL,
    PRIMARY KEY (caller, kind, call_key)
);
";

/// Version 2: the owner lease every writing runtime holds (`owner`, one row) and the nodes
/// that have run on the database (`nodes`); see `lease.rs`.
const SCHEMA_V2: &str = "
CREATE TABLE IF NOT EXISTS owner (
    id            SMALLINT PRIMARY KEY CHECK (id = 1),
    node          TEXT NOT NULL,
    fence         BIGINT NOT NULL,
    lease_until   TIMESTAMPTZ NOT NULL,
    session_pid   INTEGER NOT NULL,
    session_start TIMESTAMPTZ NULL
);
INSERT INTO owner (id, node, fence, lease_until, session_pid, session_start)
    VALUES (1, '', 0, '-infinity', 0, NULL) ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS nodes (
    node       TEXT PRIMARY KEY,
    host       TEXT NOT NULL,
    os_pid     BIGINT NOT NULL,
    lease_ms   BIGINT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL,
    seen_at    TIMESTAMPTZ NOT NULL
);
";

/// Version 3: the indexes of SQLite's schema 6, so that a reopen and every read-only view read
/// what is live without scanning the history.
const SCHEMA_V3: &str = RESIDENT_INDEXES;

/// The migration steps: `MIGRATIONS[i]` takes a database from version `i` to `i + 1`
/// (version 0 being one without the store's tables). Sized by [`PG_SCHEMA_VERSION`], so
/// bumping the version without adding its step does not compile.
const MIGRATIONS: [&str; PG_SCHEMA_VERSION as usize] = [SCHEMA_V1, SCHEMA_V2, SCHEMA_V3];

/// The advisory lock that serialises schema changes between openers of one database.
pub(super) const SCHEMA_LOCK: i64 = 0x6167_656e_7476_0001;

/// The error of opening `url`, which is named without its password.
pub(super) fn open_error(url: &str, message: impl std::fmt::Display) -> StoreError {
    StoreError::Open { path: redact(url), message: message.to_string() }
}

/// A client error while opening `url`, with the server's message when it sent one.
pub(super) fn client_error(url: &str, e: tokio_postgres::Error) -> StoreError {
    open_error(url, super::db::pg_error(e))
}

/// `url` with any password replaced by `***`, for messages.
pub(super) fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else { return url.to_string() };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    match (authority.rfind('@'), authority.find(':')) {
        (Some(at), Some(colon)) if colon < at => {
            format!("{}{}:***{}", &url[..scheme_end + 3], &authority[..colon], &rest[at..])
        }
        _ => url.to_string(),
    }
}

/// Creates the schema of an empty database, or migrates an older one to
/// [`PG_SCHEMA_VERSION`], in one transaction under [`SCHEMA_LOCK`].
pub(super) fn create_schema(db: &mut PgDb, url: &str) -> Result<(), StoreError> {
    let (runtime, client) = db.parts();
    let found = runtime
        .block_on(async {
            let tx = client.transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).await?;
            tx.batch_execute(&super::shard::create_shard_schema_sql()).await?;
            let found = stored_version(&tx).await?.unwrap_or(0);
            if found > PG_SCHEMA_VERSION {
                return Ok(found);
            }
            let done = usize::try_from(found).unwrap_or(0);
            for step in MIGRATIONS.iter().skip(done) {
                tx.batch_execute(step).await?;
            }
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', $1) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&PG_SCHEMA_VERSION],
            )
            .await?;
            tx.execute("INSERT INTO meta (key, value) VALUES ('epoch', 0) ON CONFLICT (key) DO NOTHING", &[])
                .await?;
            tx.commit().await?;
            Ok::<_, tokio_postgres::Error>(found)
        })
        .map_err(|e| client_error(url, e))?;
    if found > PG_SCHEMA_VERSION {
        return Err(too_new(found));
    }
    if found > 0 && found < PG_SCHEMA_VERSION {
        tracing::info!(from = found, to = PG_SCHEMA_VERSION, "migrated the PostgreSQL store's schema");
    }
    Ok(())
}

/// Checks that a database opened for reading holds a store this build can read.
pub(super) fn check_readable(db: &mut PgDb, url: &str) -> Result<(), StoreError> {
    let (runtime, client) = db.parts();
    let found = runtime.block_on(stored_version(&*client)).map_err(|e| client_error(url, e))?;
    match found {
        None => Err(StoreError::BeingCreated { path: redact(url) }),
        Some(v) if v > PG_SCHEMA_VERSION => Err(too_new(v)),
        Some(_) => Ok(()),
    }
}

fn too_new(found: i64) -> StoreError {
    StoreError::SchemaTooNew {
        found: u32::try_from(found).unwrap_or(u32::MAX),
        supported: u32::try_from(PG_SCHEMA_VERSION).unwrap_or(u32::MAX),
    }
}

/// The stored schema version, `None` when the database has no `meta` table.
async fn stored_version(
    client: &impl tokio_postgres::GenericClient,
) -> Result<Option<i64>, tokio_postgres::Error> {
    let has_meta =
        client.query_one("SELECT to_regclass('meta') IS NOT NULL", &[]).await?.try_get::<_, bool>(0)?;
    if !has_meta {
        return Ok(None);
    }
    let row = client.query_opt("SELECT value FROM meta WHERE key = 'schema_version'", &[]).await?;
    row.map(|r| r.try_get::<_, i64>(0)).transpose()
}
