//! `ChunkStore`: where sealed chunks are kept, by id. The seam to the kernel's store.

use super::id::ChunkId;
use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

/// Why a chunk store refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkStoreError {
    /// The backing store failed; its own error, as text.
    #[error("failed to reach the chunk store: {message}")]
    Backend {
        /// What the backing store said.
        message: String,
    },
}

impl ChunkStoreError {
    /// A durable store's refusal of every write after its first failed one (`cause`).
    pub(super) fn after_failure(cause: &str) -> ChunkStoreError {
        ChunkStoreError::Backend {
            message: format!("the chunk store refuses writes after an earlier failure ({cause}); reopen it"),
        }
    }
}

/// A content-addressed map from [`ChunkId`] to encoded chunk bytes.
///
/// Contract, which [`Window::snapshot`](super::Window::snapshot) and
/// [`Window::restore`](super::Window::restore) rely on:
/// - `put(id, bytes)` is only ever called with `id == ChunkId::of(&bytes)`, so a put of an id
///   the store holds already may be skipped: the bytes are the same.
/// - Once `put` returns `Ok`, `contains` answers `true` and `get` returns the same bytes, for
///   as long as any snapshot naming the id may be restored. When that is durable is the
///   store's promise; a snapshot is only as durable as the chunks it names.
/// - `get` returns the bytes as stored; the window checks them against the id.
///
/// The methods take `&self` because a real store is shared between the processes whose windows
/// it keeps; it synchronises inside.
pub trait ChunkStore {
    /// Stores `bytes` under `id`.
    fn put(&self, id: ChunkId, bytes: Vec<u8>) -> Result<(), ChunkStoreError>;

    /// Stores each `(id, bytes)` of `records` as [`put`](Self::put) does. A durable store
    /// writes them in one transaction (one commit for a snapshot's new chunks and links, not
    /// one each); this default puts them one by one. Either way, on `Ok` every one is stored.
    fn put_all(&self, records: Vec<(ChunkId, Vec<u8>)>) -> Result<(), ChunkStoreError> {
        records.into_iter().try_for_each(|(id, bytes)| self.put(id, bytes))
    }

    /// The bytes stored under `id`, or `None`.
    fn get(&self, id: &ChunkId) -> Result<Option<Vec<u8>>, ChunkStoreError>;

    /// Whether `id` is stored.
    fn contains(&self, id: &ChunkId) -> Result<bool, ChunkStoreError>;
}

/// Opens the durable chunk store of a state: the PostgreSQL database `url` names, or the
/// SQLite file [`WINDOWS_FILE`](super::WINDOWS_FILE) in the state directory `dir` (created if
/// missing).
pub fn open_chunk_store(
    dir: &std::path::Path,
    url: Option<&str>,
) -> Result<std::sync::Arc<dyn ChunkStore + Send + Sync>, ChunkStoreError> {
    Ok(match url {
        Some(url) => std::sync::Arc::new(super::PostgresChunkStore::open(url)?),
        None => {
            std::fs::create_dir_all(dir).map_err(|e| ChunkStoreError::Backend {
                message: format!("failed to create the state directory {}: {e}", dir.display()),
            })?;
            std::sync::Arc::new(super::SqliteChunkStore::open(dir.join(super::WINDOWS_FILE))?)
        }
    })
}

/// A [`ChunkStore`] in memory, for tests, benches and windows that need no durability.
///
/// It never forgets a chunk: unreferenced chunks are collected by the durable store, which
/// knows which snapshots are live.
#[derive(Debug, Default)]
pub struct MemoryChunkStore {
    chunks: RwLock<HashMap<ChunkId, Vec<u8>>>,
}

impl MemoryChunkStore {
    /// An empty store.
    pub fn new() -> MemoryChunkStore {
        MemoryChunkStore::default()
    }

    /// Records stored: chunks and the links that list them.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no record is stored.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Bytes of all records stored.
    pub fn bytes(&self) -> usize {
        self.read().values().map(Vec::len).sum()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<ChunkId, Vec<u8>>> {
        // The map is whole after any panic (an insert either happened or did not), so a
        // poisoned lock is still a correct store.
        self.chunks.read().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ChunkStore for MemoryChunkStore {
    fn put(&self, id: ChunkId, bytes: Vec<u8>) -> Result<(), ChunkStoreError> {
        debug_assert_eq!(ChunkId::of(&bytes), id, "a chunk is put under the hash of its bytes");
        self.chunks.write().unwrap_or_else(PoisonError::into_inner).entry(id).or_insert(bytes);
        Ok(())
    }

    fn get(&self, id: &ChunkId) -> Result<Option<Vec<u8>>, ChunkStoreError> {
        Ok(self.read().get(id).cloned())
    }

    fn contains(&self, id: &ChunkId) -> Result<bool, ChunkStoreError> {
        Ok(self.read().contains_key(id))
    }
}
