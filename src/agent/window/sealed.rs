//! `SealedChunk`: a window's sealed chunks as readers outside the window see them, each with
//! its content address, so that a reader that has seen a chunk once can name it by id after.

use super::chunk::Chunk;
use super::error::SnapshotError;
use super::id::ChunkId;
use super::snapshot::identify;
use super::window::Window;
use serde::Serialize;
use std::sync::Arc;

/// One sealed chunk of a window: its [`ChunkId`] and its items, shared with the window (no
/// item is copied).
pub struct SealedChunk<M> {
    id: ChunkId,
    chunk: Arc<Chunk<M>>,
}

impl<M> Clone for SealedChunk<M> {
    fn clone(&self) -> SealedChunk<M> {
        SealedChunk { id: self.id, chunk: Arc::clone(&self.chunk) }
    }
}

impl<M> SealedChunk<M> {
    /// The chunk's content address (the one its snapshot names).
    pub fn id(&self) -> ChunkId {
        self.id
    }

    /// Its items, oldest first (1 to [`CHUNK_ITEMS_MAX`](super::CHUNK_ITEMS_MAX)).
    pub fn items(&self) -> &[M] {
        self.chunk.items()
    }

    /// Its items, shared with the chunk (no copy).
    pub fn shared_items(&self) -> Arc<[M]> {
        self.chunk.shared_items()
    }
}

impl<M> Window<M> {
    /// The newest items, those not yet sealed into a chunk (fewer than
    /// [`CHUNK_ITEMS_MAX`](super::CHUNK_ITEMS_MAX)): the window is its
    /// [`sealed_chunks`](Window::sealed_chunks) followed by this.
    pub fn tail(&self) -> &[M] {
        &self.contents.tail
    }
}

impl<M: Serialize> Window<M> {
    /// The sealed chunks, oldest first, each with its id. O(chunks); a chunk's id is computed
    /// (one encoding and one hash) only the first time any window holding it asks, by this or
    /// by a [snapshot](Window::snapshot), and is the same id a snapshot names.
    pub fn sealed_chunks(&self) -> Result<Vec<SealedChunk<M>>, SnapshotError> {
        self.contents
            .chain
            .chunks()
            .into_iter()
            .map(|chunk| Ok(SealedChunk { id: identify(chunk)?.0, chunk: Arc::clone(chunk) }))
            .collect()
    }
}
