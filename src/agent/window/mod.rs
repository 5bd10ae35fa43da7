//! The conversation window: a persistent, append-mostly sequence of items (the brain's
//! messages) with a turn counter, whose fork is O(1) in memory and writes O(1) new chunks to
//! storage.
//!
//! # Structure
//!
//! ```text
//!  Window { contents: Arc<Contents>, turn }          (contents shared by forks until an edit)
//!  Contents { chain, tail }
//!    chain: head ─► [chunk 3] ─► [chunk 2] ─► [chunk 1] ─► [chunk 0]   (Arc nodes, shared)
//!                      └───────── jump ──────────┘
//!    tail:  Vec<M>, fewer than CHUNK_ITEMS_MAX items
//! ```
//!
//! Items live in sealed chunks of [`CHUNK_ITEMS_MAX`] items, never changed once sealed, and a
//! small tail of the newest items. The chunks sit in a persistent list, newest first
//! (`chain.rs`): appending a chunk allocates one node pointing at the old head, so any number
//! of windows can share any prefix of the list, and jump pointers (Myers' applicative
//! random-access stack) make `get` O(log chunks) without rebalancing.
//!
//! - **fork** clones one `Arc` and copies the turn counter: O(1) whatever the length. The two
//!   windows are then independent values, a semantic deep copy: the first edit of a
//!   still-shared window copies its contents (`Arc::make_mut`), which is one reference to the
//!   chunk list and at most `CHUNK_ITEMS_MAX - 1` tail items, and a push that fills a tail
//!   seals it into a node only that window's list points at.
//! - **push** is amortised O(1): one item into the tail, plus one node every
//!   `CHUNK_ITEMS_MAX` pushes.
//! - **replace_prefix / truncate_front** (compaction) make at most one new chunk, the
//!   part-chunk the cut falls in (with the summary first), and relink the whole chunks after it
//!   unchanged: they stay shared with forks and already stored.
//!
//! Why a list of chunks rather than the alternatives: a flat `Arc<Vec<M>>` with copy-on-write
//! makes the first push after a fork copy the whole window; an `Arc<Vec<Arc<Chunk>>>` index
//! makes the first seal after a fork copy one pointer per chunk (O(n / 64)); a general
//! persistent vector (an RRB tree) gives O(log n) everywhere but is far more code than a
//! window needs, since it is only appended to at one end and cut at the other. The list
//! keeps fork and append O(1) with no deferred bulk copy, and compaction, which is rare and
//! reads the whole window anyway, pays O(chunks) to relink.
//!
//! # Durable form
//!
//! A sealed chunk is stored once, under its [`ChunkId`]: the BLAKE3 hash of its encoded bytes
//! (`postcard(u16 version) ++ JSON(Vec<M>)`), and the list of chunks as links, each naming
//! its chunk and the link before it, stored the same way (`link.rs`). A [`WindowSnapshot`] is
//! `{ head, chunks, tail, turn }`: O(1) in size. [`Window::snapshot`] puts only the chunks and
//! links the [`ChunkStore`] does not hold, walking back from the head to the first link it
//! has, so snapshotting a window or a fork writes and looks up what was sealed since the last
//! snapshot, not the window; [`Window::restore`] reads them back and checks each against its
//! id. The id is content-derived rather than drawn at seal time so that reads are verified,
//! puts are idempotent, and sealing stays pure (no clock, no randomness); see [`ChunkId`].
//!
//! # Semantics
//!
//! Items are in push order, oldest at index 0. The turn counter is carried by fork, snapshot
//! and restore and changed only by [`Window::next_turn`]; compaction does not change it.
//! Every edit either happens whole or is refused with a [`WindowError`], leaving the window
//! as it was. Bounds are in [`limits`].

mod chain;
mod chunk;
mod compact;
mod error;
mod id;
mod iter;
pub mod limits;
mod link;
mod postgres_store;
mod sealed;
mod snapshot;
mod sqlite_store;
mod store;
mod weigh;
#[expect(clippy::module_inception, reason = "the type is the module's subject")]
mod window;

pub use chunk::CHUNK_FORMAT_VERSION;
pub use error::{RestoreError, SnapshotError, WindowError};
pub use id::ChunkId;
pub use iter::Iter;
pub use limits::{CHUNK_ITEMS_MAX, WINDOW_ITEMS_MAX};
pub use link::LINK_FORMAT_VERSION;
pub use postgres_store::{POSTGRES_CHUNK_SCHEMA_VERSION, PostgresChunkStore};
pub use sealed::SealedChunk;
pub use snapshot::{SNAPSHOT_FORMAT_VERSION, WindowSnapshot};
pub use sqlite_store::{CHUNK_STORE_SCHEMA_VERSION, SqliteChunkStore, WINDOWS_FILE};
pub use store::{ChunkStore, ChunkStoreError, MemoryChunkStore, open_chunk_store};
pub use weigh::Weigh;
pub use window::Window;
