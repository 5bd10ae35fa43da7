//! The durable form of a window: `WindowSnapshot`, and `Window::snapshot` / `Window::restore`.
//!
//! A snapshot names the sealed chunks by id and carries the tail and the turn inline. Writing
//! one puts only the chunks the store lacks, which after a fork is at most the chunks sealed
//! since the last snapshot of either copy: the rest are shared and already there.
//!
//! Encoded snapshot: `postcard(u16 version) ++ JSON(WindowSnapshot)` (version 1,
//! `postcard(WindowSnapshot)`, is still read).

use super::chain::Chain;
use super::chunk::{self, Chunk};
use super::error::{RestoreError, SnapshotError};
use super::id::ChunkId;
use super::limits::{CHUNK_ITEMS_MAX, WINDOW_ITEMS_MAX};
use super::store::ChunkStore;
use super::window::{Contents, Window};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The snapshot format version this build writes.
pub const SNAPSHOT_FORMAT_VERSION: u16 = 2;

/// A window as stored: its sealed chunks by id, its tail and its turn counter.
///
/// Restoring it needs every chunk it names in the [`ChunkStore`]; [`Window::snapshot`] puts
/// them all before it returns, so a snapshot record written after that never names a chunk
/// the store lacks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowSnapshot<M> {
    /// The sealed chunks, oldest first.
    pub chunk_ids: Vec<ChunkId>,
    /// The newest items, fewer than [`CHUNK_ITEMS_MAX`](super::CHUNK_ITEMS_MAX).
    pub tail: Vec<M>,
    /// The turn counter.
    pub turn: u64,
}

impl<M: Serialize> WindowSnapshot<M> {
    /// The bytes to store for this snapshot.
    pub fn encode(&self) -> Result<Vec<u8>, SnapshotError> {
        let encode = |message: String| SnapshotError::Encode { what: "snapshot", message };
        let mut bytes = postcard::to_stdvec(&SNAPSHOT_FORMAT_VERSION).map_err(|e| encode(e.to_string()))?;
        serde_json::to_writer(&mut bytes, self).map_err(|e| encode(e.to_string()))?;
        Ok(bytes)
    }
}

impl<M: DeserializeOwned> WindowSnapshot<M> {
    /// A snapshot from its stored bytes, refusing newer versions and trailing bytes.
    pub fn decode(bytes: &[u8]) -> Result<WindowSnapshot<M>, RestoreError> {
        let decode = |e: postcard::Error| RestoreError::SnapshotDecode { message: e.to_string() };
        let (version, rest) = postcard::take_from_bytes::<u16>(bytes).map_err(decode)?;
        if version > SNAPSHOT_FORMAT_VERSION {
            return Err(RestoreError::TooNew {
                what: "snapshot",
                found: version,
                supported: SNAPSHOT_FORMAT_VERSION,
            });
        }
        if version == 1 {
            let (snapshot, rest) = postcard::take_from_bytes::<WindowSnapshot<M>>(rest).map_err(decode)?;
            if !rest.is_empty() {
                return Err(RestoreError::SnapshotDecode {
                    message: format!("{} trailing bytes", rest.len()),
                });
            }
            return Ok(snapshot);
        }
        serde_json::from_slice(rest).map_err(|e| RestoreError::SnapshotDecode { message: e.to_string() })
    }
}

impl<M: Clone + Serialize> Window<M> {
    /// Writes this window's sealed chunks that `store` lacks and returns the snapshot naming
    /// them.
    ///
    /// Each chunk's id is computed once (at its first snapshot, by whichever window holds it)
    /// and cached in the chunk, so a later snapshot asks the store `contains` once per chunk
    /// and encodes only chunks it has to put. After a fork, that is the chunks either copy
    /// sealed since: O(1) puts per fork, whatever the length of the window.
    pub fn snapshot<S: ChunkStore + ?Sized>(&self, store: &S) -> Result<WindowSnapshot<M>, SnapshotError> {
        let chunks = self.contents.chain.chunks();
        let mut chunk_ids = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            let (id, bytes) = identify(chunk)?;
            if !store.contains(&id)? {
                let bytes = match bytes {
                    Some(bytes) => bytes,
                    None => encode(chunk)?,
                };
                store.put(id, bytes)?;
            }
            chunk_ids.push(id);
        }
        let tail = self.contents.tail.clone();
        debug_assert!(tail.len() < CHUNK_ITEMS_MAX, "checked again by restore");
        Ok(WindowSnapshot { chunk_ids, tail, turn: self.turn })
    }
}

/// A chunk's id: the cached one, or computed from its encoding (returned too, so that a
/// caller about to store it does not encode it twice) and cached in the chunk.
pub(super) fn identify<M: Serialize>(chunk: &Chunk<M>) -> Result<(ChunkId, Option<Vec<u8>>), SnapshotError> {
    if let Some(id) = chunk.cached_id() {
        return Ok((id, None));
    }
    let bytes = encode(chunk)?;
    let id = ChunkId::of(&bytes);
    chunk.cache_id(id);
    Ok((id, Some(bytes)))
}

fn encode<M: Serialize>(chunk: &Chunk<M>) -> Result<Vec<u8>, SnapshotError> {
    chunk.encode().map_err(|e| SnapshotError::Encode { what: "chunk", message: e.to_string() })
}

impl<M: Clone + DeserializeOwned> Window<M> {
    /// The window `snapshot` describes, reading its chunks from `store`.
    ///
    /// Every chunk is checked against its id (bytes that changed are
    /// [`RestoreError::CorruptChunk`], never replayed as conversation) and against the same
    /// bounds a window keeps when it is built by pushes. Windows restored separately share the
    /// store's chunks but not memory; fork a restored window to share memory.
    pub fn restore<S: ChunkStore + ?Sized>(
        snapshot: WindowSnapshot<M>,
        store: &S,
    ) -> Result<Window<M>, RestoreError> {
        if snapshot.tail.len() >= CHUNK_ITEMS_MAX {
            return Err(RestoreError::TailItems { items: snapshot.tail.len() });
        }
        let mut items = snapshot.tail.len();
        let mut chain = Chain::new();
        for &id in &snapshot.chunk_ids {
            let bytes = store.get(&id)?.ok_or(RestoreError::MissingChunk { id })?;
            let actual = ChunkId::of(&bytes);
            if actual != id {
                return Err(RestoreError::CorruptChunk { id, actual });
            }
            let chunk_items = chunk::decode_items::<M>(id, &bytes)?;
            items += chunk_items.len();
            if items > WINDOW_ITEMS_MAX {
                return Err(RestoreError::TooManyItems);
            }
            chain.push(Arc::new(Chunk::restored(chunk_items, id)));
        }
        let contents = Contents { chain, tail: snapshot.tail };
        let window = Window { contents: Arc::new(contents), turn: snapshot.turn };
        assert_eq!(window.len(), items, "a restored window holds what its snapshot names");
        window.check();
        Ok(window)
    }
}
