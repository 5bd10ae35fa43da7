//! `PostgresChunkStore`: a durable [`ChunkStore`] in the PostgreSQL database that holds the
//! tree's kernel state, so one database holds a whole tree.
//!
//! One table, `window_chunks(id BYTEA PRIMARY KEY, bytes BYTEA NOT NULL)`, beside the kernel's
//! tables; its version is the row `window_chunks` of `store_versions` (1). A put that returned
//! `Ok` was committed (with the server's default `synchronous_commit=on`, after its WAL flush).
//! Chunks are content-addressed, so a put is `ON CONFLICT DO NOTHING`. Every use of the
//! connection runs off the tokio workers, as the kernel store's do.
//!
//! Fail-stop: after a write fails, every later write is refused until the store is reopened.

use super::id::ChunkId;
use super::store::{ChunkStore, ChunkStoreError};
use crate::actors::store::create_shard_schema_sql;
use crate::postgres_session::{PostgresSession, describe};

/// The schema version this build writes and reads.
pub const POSTGRES_CHUNK_SCHEMA_VERSION: i64 = 1;

const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS store_versions (
    store   TEXT PRIMARY KEY,
    version BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS window_chunks (
    id    BYTEA PRIMARY KEY,
    bytes BYTEA NOT NULL
);
INSERT INTO store_versions (store, version) VALUES ('window_chunks', 1) ON CONFLICT (store) DO NOTHING;
";

/// A [`ChunkStore`] in a PostgreSQL database. `Send + Sync`: one connection behind a mutex.
#[derive(Debug)]
pub struct PostgresChunkStore {
    session: PostgresSession,
}

/// Inserts every record (one already stored is left as it is: same id, same bytes) and
/// commits once; nothing is stored if any insert or the commit fails.
fn put_in_one_transaction(
    client: &mut postgres::Client,
    records: Vec<(ChunkId, Vec<u8>)>,
) -> Result<(), ChunkStoreError> {
    let Some(first) = records.first().map(|(id, _)| *id) else { return Ok(()) };
    let mut transaction = client.transaction().map_err(|e| backend(&format!("put chunk {first}"), &e))?;
    for (id, bytes) in records {
        debug_assert_eq!(ChunkId::of(&bytes), id, "a chunk is put under the hash of its bytes");
        transaction
            .execute(
                "INSERT INTO window_chunks (id, bytes) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
                &[&id.as_bytes().as_slice(), &bytes],
            )
            .map_err(|e| backend(&format!("put chunk {id}"), &e))?;
    }
    // Dropping an uncommitted transaction rolls it back.
    transaction
        .commit()
        .map_err(|e| backend(&format!("commit chunk {first} and the records put with it"), &e))
}

fn backend(what: &str, error: &postgres::Error) -> ChunkStoreError {
    ChunkStoreError::Backend { message: format!("failed to {what}: {}", describe(error)) }
}

fn closed() -> ChunkStoreError {
    ChunkStoreError::Backend { message: "the chunk store is closed".to_string() }
}

impl PostgresChunkStore {
    /// Opens the store in the database `url` names, creating its table if needed. Refuses a
    /// database whose chunk schema is newer than [`POSTGRES_CHUNK_SCHEMA_VERSION`].
    pub fn open(url: &str) -> Result<PostgresChunkStore, ChunkStoreError> {
        let (session, ()) = PostgresSession::open(
            url,
            |e| backend("connect to the chunk store", &e),
            |client| {
                client
                    .batch_execute(&create_shard_schema_sql())
                    .and_then(|()| client.batch_execute(SCHEMA_V1))
                    .map_err(|e| backend("create the chunk store's table", &e))?;
                let version: i64 = client
                    .query_one("SELECT version FROM store_versions WHERE store = 'window_chunks'", &[])
                    .and_then(|row| row.try_get(0))
                    .map_err(|e| backend("read the chunk store's version", &e))?;
                if version > POSTGRES_CHUNK_SCHEMA_VERSION {
                    return Err(ChunkStoreError::Backend {
                        message: format!(
                            "the chunk store's schema version {version} is newer than this build reads \
                             ({POSTGRES_CHUNK_SCHEMA_VERSION}); open it with a newer agentvisor"
                        ),
                    });
                }
                Ok(())
            },
        )?;
        Ok(PostgresChunkStore { session })
    }
}

impl ChunkStore for PostgresChunkStore {
    fn put(&self, id: ChunkId, bytes: Vec<u8>) -> Result<(), ChunkStoreError> {
        self.put_all(vec![(id, bytes)])
    }

    /// One transaction for all of `records`.
    fn put_all(&self, records: Vec<(ChunkId, Vec<u8>)>) -> Result<(), ChunkStoreError> {
        self.session.with(closed, |client, failed| {
            if let Some(cause) = failed {
                return Err(ChunkStoreError::after_failure(cause));
            }
            let written = put_in_one_transaction(client, records);
            written.inspect_err(|error| *failed = Some(error.to_string()))
        })
    }

    fn get(&self, id: &ChunkId) -> Result<Option<Vec<u8>>, ChunkStoreError> {
        self.session.with(closed, |client, _| {
            client
                .query_opt("SELECT bytes FROM window_chunks WHERE id = $1", &[&id.as_bytes().as_slice()])
                .and_then(|row| row.map(|r| r.try_get::<_, Vec<u8>>(0)).transpose())
                .map_err(|e| backend(&format!("get chunk {id}"), &e))
        })
    }

    fn contains(&self, id: &ChunkId) -> Result<bool, ChunkStoreError> {
        self.session.with(closed, |client, _| {
            client
                .query_opt("SELECT 1 FROM window_chunks WHERE id = $1", &[&id.as_bytes().as_slice()])
                .map(|row| row.is_some())
                .map_err(|e| backend(&format!("look up chunk {id}"), &e))
        })
    }
}
