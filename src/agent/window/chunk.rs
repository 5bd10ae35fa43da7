//! `Chunk`: a sealed, immutable run of window items, and its encoded form.
//!
//! Encoded form: `postcard(u16 version) ++ JSON(Vec<M>)`. The version is read first, so a chunk
//! written by a newer build is refused by number instead of failing somewhere inside the items.
//! The items are JSON because conversation items are self-describing data (tool-call arguments
//! are arbitrary JSON, messages are tagged by role), which postcard's non-self-describing
//! format cannot carry. Version 1 (`postcard(Vec<M>)` items) is still read.

use super::error::RestoreError;
use super::id::ChunkId;
use super::limits::CHUNK_ITEMS_MAX;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::sync::{Arc, OnceLock};

/// The chunk format version this build writes.
pub const CHUNK_FORMAT_VERSION: u16 = 2;

/// Sealed items. Never changed after sealing: every fork holding it sees the same items, and
/// its cached id stays the hash of its encoding.
pub(super) struct Chunk<M> {
    /// Shared, so that what re-states a chunk (a fork's `context_chunk` records) can hold
    /// the items without copying them.
    items: Arc<[M]>,
    /// Computed at the first snapshot (or known from the store at restore) and shared by every
    /// window that holds this chunk.
    id: OnceLock<ChunkId>,
    /// The items' total weight ([`super::weigh`]), computed the first time it is asked for.
    weight: OnceLock<u64>,
}

impl<M> Chunk<M> {
    /// Seals `items` (1 to [`CHUNK_ITEMS_MAX`] of them).
    pub(super) fn seal(items: Vec<M>) -> Chunk<M> {
        assert!(
            !items.is_empty() && items.len() <= CHUNK_ITEMS_MAX,
            "a sealed chunk holds 1 to {CHUNK_ITEMS_MAX} items, not {}",
            items.len()
        );
        Chunk { items: items.into(), id: OnceLock::new(), weight: OnceLock::new() }
    }

    /// A chunk read back from the store under `id`, already checked against it.
    pub(super) fn restored(items: Vec<M>, id: ChunkId) -> Chunk<M> {
        let chunk = Chunk::seal(items);
        let _ = chunk.id.set(id);
        chunk
    }

    /// Where the items' total weight is kept.
    pub(super) fn weight_cache(&self) -> &OnceLock<u64> {
        &self.weight
    }

    pub(super) fn items(&self) -> &[M] {
        &self.items
    }

    pub(super) fn shared_items(&self) -> Arc<[M]> {
        Arc::clone(&self.items)
    }

    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    /// The id, if a snapshot or a restore has computed it.
    pub(super) fn cached_id(&self) -> Option<ChunkId> {
        self.id.get().copied()
    }

    /// Records the id computed from this chunk's encoding. Two threads snapshotting forks that
    /// share this chunk compute the same id, so whichever sets it first is right.
    pub(super) fn cache_id(&self, id: ChunkId) {
        let _ = self.id.set(id);
        debug_assert_eq!(self.id.get(), Some(&id), "a chunk's id is the hash of its fixed bytes");
    }
}

impl<M: Serialize> Chunk<M> {
    /// The stored bytes of this chunk.
    pub(super) fn encode(&self) -> Result<Vec<u8>, String> {
        let mut bytes = postcard::to_stdvec(&CHUNK_FORMAT_VERSION).map_err(|e| e.to_string())?;
        serde_json::to_writer(&mut bytes, &*self.items).map_err(|e| e.to_string())?;
        Ok(bytes)
    }
}

/// Decodes the items of a chunk read back under `id`, refusing newer versions and trailing
/// bytes. The caller has checked the bytes against `id` already.
pub(super) fn decode_items<M: DeserializeOwned>(id: ChunkId, bytes: &[u8]) -> Result<Vec<M>, RestoreError> {
    let decode = |e: postcard::Error| RestoreError::ChunkDecode { id, message: e.to_string() };
    let (version, rest) = postcard::take_from_bytes::<u16>(bytes).map_err(decode)?;
    if version > CHUNK_FORMAT_VERSION {
        return Err(RestoreError::TooNew { what: "chunk", found: version, supported: CHUNK_FORMAT_VERSION });
    }
    let items: Vec<M> = if version == 1 {
        let (items, rest) = postcard::take_from_bytes::<Vec<M>>(rest).map_err(decode)?;
        if !rest.is_empty() {
            return Err(RestoreError::ChunkDecode { id, message: format!("{} trailing bytes", rest.len()) });
        }
        items
    } else {
        // serde_json refuses trailing characters other than whitespace.
        serde_json::from_slice(rest).map_err(|e| RestoreError::ChunkDecode { id, message: e.to_string() })?
    };
    if items.is_empty() || items.len() > CHUNK_ITEMS_MAX {
        return Err(RestoreError::ChunkItems { id, items: items.len() });
    }
    Ok(items)
}
