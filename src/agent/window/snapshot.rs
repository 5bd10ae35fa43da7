//! The durable form of a window: `WindowSnapshot`, and `Window::snapshot` / `Window::restore`.
//!
//! A snapshot names the list of sealed chunks by its head link ([`super::link`]) and carries
//! the tail and the turn inline, so its size does not grow with the window. Writing one puts
//! only the chunks and links the store lacks: those sealed since the last snapshot of any
//! window sharing them, found by walking back from the head to the first link the store has.
//!
//! Encoded snapshot: `postcard(u16 version) ++ JSON(WindowSnapshot)`. Version 2 listed every
//! chunk id (`chunk_ids`) and version 1 was `postcard` of that list, the tail and the turn;
//! both are still read.

use super::chain::Chain;
use super::chunk::{self, Chunk};
use super::error::{RestoreError, SnapshotError};
use super::id::ChunkId;
use super::limits::{CHUNK_ITEMS_MAX, WINDOW_ITEMS_MAX};
use super::link;
use super::store::ChunkStore;
use super::window::{Contents, Window};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The snapshot format version this build writes.
pub const SNAPSHOT_FORMAT_VERSION: u16 = 3;

/// A window as stored: its sealed chunks by the link naming the newest, its tail and its turn
/// counter.
///
/// Restoring it needs every chunk and link it names in the [`ChunkStore`];
/// [`Window::snapshot`] puts them all before it returns, so a snapshot record written after
/// that never names a record the store lacks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowSnapshot<M> {
    /// The link naming the newest sealed chunk; `None` when none is sealed (or when
    /// `chunk_ids` lists them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<ChunkId>,
    /// Sealed chunks in the list `head` names.
    #[serde(default)]
    pub chunks: usize,
    /// The sealed chunks listed one by one, oldest first, as version 2 records name them.
    /// Written empty: a snapshot names its chunks by `head`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunk_ids: Vec<ChunkId>,
    /// The newest items, fewer than [`CHUNK_ITEMS_MAX`](super::CHUNK_ITEMS_MAX).
    pub tail: Vec<M>,
    /// The turn counter.
    pub turn: u64,
}

/// Version 1 of the snapshot record, read only.
#[derive(Deserialize)]
struct SnapshotV1<M> {
    chunk_ids: Vec<ChunkId>,
    tail: Vec<M>,
    turn: u64,
}

impl<M> WindowSnapshot<M> {
    /// A window with no item at turn `turn`.
    pub fn empty(turn: u64) -> WindowSnapshot<M> {
        WindowSnapshot { head: None, chunks: 0, chunk_ids: Vec::new(), tail: Vec::new(), turn }
    }

    /// Sealed chunks the snapshot names.
    pub fn chunk_count(&self) -> usize {
        if self.head.is_some() { self.chunks } else { self.chunk_ids.len() }
    }

    /// Checks that `store` holds every chunk this snapshot names, without reading them: one
    /// lookup of the head link (a store holding a link holds the whole list it names), or one
    /// per chunk of a version 2 list.
    pub fn check_stored<S: ChunkStore + ?Sized>(&self, store: &S) -> Result<(), RestoreError> {
        if let Some(head) = self.head {
            return if store.contains(&head)? { Ok(()) } else { Err(RestoreError::MissingLink { id: head }) };
        }
        for &id in &self.chunk_ids {
            if !store.contains(&id)? {
                return Err(RestoreError::MissingChunk { id });
            }
        }
        Ok(())
    }

    /// The chunks the snapshot names, oldest first, each with the id of its link (`None` in a
    /// version 2 list), reading the links from `store`.
    fn listed<S: ChunkStore + ?Sized>(
        &self,
        store: &S,
    ) -> Result<Vec<(ChunkId, Option<ChunkId>)>, RestoreError> {
        let Some(head) = self.head else {
            return Ok(self.chunk_ids.iter().map(|&id| (id, None)).collect());
        };
        if !self.chunk_ids.is_empty() {
            return Err(RestoreError::SnapshotDecode {
                message: "the snapshot names its chunks both by a head link and by a list".into(),
            });
        }
        if self.chunks > WINDOW_ITEMS_MAX {
            return Err(RestoreError::TooManyItems);
        }
        let mut listed = Vec::with_capacity(self.chunks);
        let mut next = Some(head);
        while let Some(id) = next {
            if listed.len() == self.chunks {
                return Err(RestoreError::ChunkCount { counted: self.chunks, linked: listed.len() + 1 });
            }
            let bytes = store.get(&id)?.ok_or(RestoreError::MissingLink { id })?;
            let actual = ChunkId::of(&bytes);
            if actual != id {
                return Err(RestoreError::CorruptLink { id, actual });
            }
            let (chunk, prev) = link::decode(id, &bytes)?;
            listed.push((chunk, Some(id)));
            next = prev;
        }
        if listed.len() != self.chunks {
            return Err(RestoreError::ChunkCount { counted: self.chunks, linked: listed.len() });
        }
        listed.reverse();
        Ok(listed)
    }
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
            let (old, rest) = postcard::take_from_bytes::<SnapshotV1<M>>(rest).map_err(decode)?;
            if !rest.is_empty() {
                return Err(RestoreError::SnapshotDecode {
                    message: format!("{} trailing bytes", rest.len()),
                });
            }
            let SnapshotV1 { chunk_ids, tail, turn } = old;
            return Ok(WindowSnapshot { chunk_ids, tail, turn, ..WindowSnapshot::empty(turn) });
        }
        serde_json::from_slice(rest).map_err(|e| RestoreError::SnapshotDecode { message: e.to_string() })
    }
}

impl<M: Clone + Serialize> Window<M> {
    /// Writes this window's sealed chunks and links that `store` lacks and returns the
    /// snapshot naming them.
    ///
    /// Each chunk's id and each link's id are computed once (at the first snapshot, by
    /// whichever window holds them) and cached where every fork shares them. The store is
    /// asked about links from the newest back until it holds one, which it does for the head
    /// of this window's last snapshot: O(chunks sealed since) lookups and puts, whatever the
    /// length of the window, and the same after a fork.
    pub fn snapshot<S: ChunkStore + ?Sized>(&self, store: &S) -> Result<WindowSnapshot<M>, SnapshotError> {
        let chain = &self.contents.chain;
        // Chunks encoded to compute their ids, kept for the puts below.
        let mut encoded: Vec<(ChunkId, Vec<u8>)> = Vec::new();
        let head = chain.head_link(|chunk, prev| {
            let (id, bytes) = identify(chunk)?;
            encoded.extend(bytes.map(|bytes| (id, bytes)));
            Ok::<_, SnapshotError>(ChunkId::of(&link::encode(id, prev)))
        })?;
        let mut unstored = Vec::new();
        let mut stored = None;
        for (chunk, link) in chain.newest_first() {
            let link = link.ok_or_else(|| SnapshotError::Encode {
                what: "link",
                message: "a link id was not computed before it was stored".into(),
            })?;
            if store.contains(&link)? {
                stored = Some(link);
                break;
            }
            unstored.push((chunk, link));
        }
        // Oldest first, each chunk before its link and each link after the one it names, all
        // put at once (a durable store commits them together).
        let mut puts = Vec::with_capacity(2 * unstored.len());
        let mut prev = stored;
        for (chunk, link_id) in unstored.into_iter().rev() {
            let (chunk_id, _) = identify(chunk)?;
            if !store.contains(&chunk_id)? {
                let bytes = match encoded.iter().position(|(id, _)| *id == chunk_id) {
                    Some(at) => encoded.swap_remove(at).1,
                    None => encode(chunk)?,
                };
                puts.push((chunk_id, bytes));
            }
            let bytes = link::encode(chunk_id, prev);
            debug_assert_eq!(ChunkId::of(&bytes), link_id, "a link's id is the hash of its bytes");
            puts.push((link_id, bytes));
            prev = Some(link_id);
        }
        if !puts.is_empty() {
            store.put_all(puts)?;
        }
        let tail = self.contents.tail.clone();
        debug_assert!(tail.len() < CHUNK_ITEMS_MAX, "checked again by restore");
        Ok(WindowSnapshot { head, chunks: chain.chunk_count(), chunk_ids: Vec::new(), tail, turn: self.turn })
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

impl<M: PartialEq> Window<M> {
    /// Whether this window is the one `snapshot` describes: the same head link (known once a
    /// snapshot of this window or of the window it was forked from computed it), chunk count,
    /// tail and turn. O(tail); reads no store. A window that is, can stand in for a restore of
    /// the snapshot.
    pub fn holds_snapshot(&self, snapshot: &WindowSnapshot<M>) -> bool {
        let chain = &self.contents.chain;
        let head = chain.newest_first().next().map(|(_, link)| link);
        let same_head = match (head, snapshot.head) {
            (None, None) => snapshot.chunk_ids.is_empty(),
            (Some(Some(link)), Some(named)) => link == named,
            _ => false,
        };
        same_head
            && chain.chunk_count() == snapshot.chunk_count()
            && self.turn == snapshot.turn
            && self.contents.tail == snapshot.tail
    }
}

impl<M: Clone + DeserializeOwned> Window<M> {
    /// The window `snapshot` describes, reading its chunks from `store`.
    ///
    /// Every chunk and link is checked against its id (bytes that changed are
    /// [`RestoreError::CorruptChunk`] or [`RestoreError::CorruptLink`], never replayed as
    /// conversation), the list against the snapshot's count, and the chunks against the same
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
        for (id, link) in snapshot.listed(store)? {
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
            if let Some(link) = link {
                chain.set_head_link(link);
            }
        }
        let contents = Contents { chain, tail: snapshot.tail };
        let window = Window { contents: Arc::new(contents), turn: snapshot.turn };
        assert_eq!(window.len(), items, "a restored window holds what its snapshot names");
        window.check();
        Ok(window)
    }
}
