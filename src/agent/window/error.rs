//! Typed errors of the window, one enum per operation family.

use super::id::ChunkId;
use super::limits::{CHUNK_ITEMS_MAX, WINDOW_ITEMS_MAX};
use super::store::ChunkStoreError;

/// Why an edit of a window (push, compaction) was refused. The window is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WindowError {
    /// The window holds [`WINDOW_ITEMS_MAX`] items already.
    #[error(
        "failed to append to the window: it holds {len} items, the most a window may hold \
         ({WINDOW_ITEMS_MAX}); compact it first"
    )]
    Full {
        /// Items in the window.
        len: usize,
    },
    /// A compaction asked to drop more items than the window holds.
    #[error("failed to drop the oldest {requested} items of a window that holds {len}")]
    PrefixTooLong {
        /// Items asked to be dropped.
        requested: usize,
        /// Items in the window.
        len: usize,
    },
    /// A range edit named items the window does not hold.
    #[error("failed to replace the items {start}..{end} of a window that holds {len}")]
    RangeOutOfBounds {
        /// The first item of the range.
        start: usize,
        /// One past its last item.
        end: usize,
        /// Items in the window.
        len: usize,
    },
}

/// Why a snapshot could not be written. Chunks put before the failure stay in the store; they
/// are content-addressed, so they are correct and a retry skips them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// An item could not be encoded (its `Serialize` failed).
    #[error("failed to encode a window {what}: {message}")]
    Encode {
        /// `"chunk"` or `"snapshot"`.
        what: &'static str,
        /// The encoder's message.
        message: String,
    },
    /// The chunk store refused a read or a write.
    #[error("failed to write a window snapshot: {0}")]
    Store(#[from] ChunkStoreError),
}

/// Why a window could not be restored from a snapshot. Nothing is restored in part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreError {
    /// The snapshot names a chunk the store does not hold.
    #[error("failed to restore a window: chunk {id} is not in the store")]
    MissingChunk {
        /// The missing chunk.
        id: ChunkId,
    },
    /// The bytes read back under an id do not hash to it: they changed after they were written.
    #[error("failed to restore a window: chunk {id} reads back as bytes that hash to {actual}")]
    CorruptChunk {
        /// The id asked for.
        id: ChunkId,
        /// The hash of the bytes the store returned.
        actual: ChunkId,
    },
    /// A chunk's bytes are not a chunk of this item type.
    #[error("failed to decode window chunk {id}: {message}")]
    ChunkDecode {
        /// The chunk.
        id: ChunkId,
        /// The decoder's message.
        message: String,
    },
    /// The snapshot's list of chunks names a link the store does not hold.
    #[error("failed to restore a window: link {id} of its list of chunks is not in the store")]
    MissingLink {
        /// The missing link.
        id: ChunkId,
    },
    /// A link's bytes do not hash to its id: they changed after they were written.
    #[error("failed to restore a window: link {id} reads back as bytes that hash to {actual}")]
    CorruptLink {
        /// The id asked for.
        id: ChunkId,
        /// The hash of the bytes the store returned.
        actual: ChunkId,
    },
    /// A link's bytes are not a link.
    #[error("failed to decode window link {id}: {message}")]
    LinkDecode {
        /// The link.
        id: ChunkId,
        /// What is wrong with it.
        message: String,
    },
    /// The list of chunks a snapshot's head names is not as long as the snapshot says.
    #[error(
        "failed to restore a window: its snapshot counts {counted} chunks, its list of links holds {linked}"
    )]
    ChunkCount {
        /// The count in the snapshot.
        counted: usize,
        /// Chunks the links name (counted up to one past the snapshot's count).
        linked: usize,
    },
    /// An encoded snapshot is not a snapshot of this item type.
    #[error("failed to decode a window snapshot: {message}")]
    SnapshotDecode {
        /// The decoder's message.
        message: String,
    },
    /// Written by a newer build.
    #[error("window {what} format version {found} is newer than {supported}, the newest this build reads")]
    TooNew {
        /// `"chunk"`, `"link"` or `"snapshot"`.
        what: &'static str,
        /// The version found.
        found: u16,
        /// The newest this build reads.
        supported: u16,
    },
    /// A chunk holds no items or more than [`CHUNK_ITEMS_MAX`].
    #[error("failed to restore a window: chunk {id} holds {items} items, not 1 to {CHUNK_ITEMS_MAX}")]
    ChunkItems {
        /// The chunk.
        id: ChunkId,
        /// Its items.
        items: usize,
    },
    /// The snapshot's tail holds [`CHUNK_ITEMS_MAX`] items or more; this build seals a tail
    /// before it gets there.
    #[error(
        "failed to restore a window: its tail holds {items} items, fewer than {CHUNK_ITEMS_MAX} expected"
    )]
    TailItems {
        /// Items in the tail.
        items: usize,
    },
    /// The snapshot holds more than [`WINDOW_ITEMS_MAX`] items.
    #[error("failed to restore a window: it holds more than {WINDOW_ITEMS_MAX} items")]
    TooManyItems,
    /// The chunk store refused a read.
    #[error("failed to restore a window: {0}")]
    Store(#[from] ChunkStoreError),
}
