//! `Window`: the conversation window, its appends, reads, turn counter and fork.

use super::chain::Chain;
use super::chunk::Chunk;
use super::error::WindowError;
use super::iter::Iter;
use super::limits::{CHUNK_ITEMS_MAX, WINDOW_ITEMS_MAX};
use std::fmt;
use std::sync::Arc;

/// A conversation window: items in order, oldest first, and the turn counter.
///
/// Sealed chunks of [`CHUNK_ITEMS_MAX`] items sit in a persistent list shared by every fork;
/// the newest items sit in a tail, shared with the list until one holder edits.
/// [`fork`](Window::fork) is O(1) and the two windows are independent from then on: what
/// either pushes, compacts or counts is invisible to the other. See the [module docs](super)
/// for the structure.
///
/// Generic over the item type so that it holds the brain's message type; the bounds are only
/// on the operations that need them (`Clone` to edit a possibly shared tail, serde to
/// snapshot and restore).
pub struct Window<M> {
    /// Shared between forks until one of them changes it: a fork is one reference count.
    pub(super) contents: Arc<Contents<M>>,
    pub(super) turn: u64,
}

/// The items of a window: sealed chunks and the tail.
pub(super) struct Contents<M> {
    pub(super) chain: Chain<M>,
    /// Fewer than [`CHUNK_ITEMS_MAX`] items: a push that fills it seals it into `chain`.
    pub(super) tail: Vec<M>,
}

impl<M: Clone> Clone for Contents<M> {
    /// What the first edit of a shared window copies: one reference to the chain and at most
    /// `CHUNK_ITEMS_MAX - 1` tail items.
    fn clone(&self) -> Contents<M> {
        Contents { chain: self.chain.clone(), tail: self.tail.clone() }
    }
}

impl<M> Window<M> {
    /// An empty window at turn 0.
    pub fn new() -> Window<M> {
        Window { contents: Arc::new(Contents { chain: Chain::new(), tail: Vec::new() }), turn: 0 }
    }

    /// Items in the window.
    pub fn len(&self) -> usize {
        self.contents.chain.len() + self.contents.tail.len()
    }

    /// Whether the window holds no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The item at `index` (0 is the oldest), in O(log chunks).
    pub fn get(&self, index: usize) -> Option<&M> {
        let Contents { chain, tail } = &*self.contents;
        let sealed = chain.len();
        if index < sealed { chain.get(index) } else { tail.get(index - sealed) }
    }

    /// The items in order, oldest first.
    pub fn iter(&self) -> Iter<'_, M> {
        let Contents { chain, tail } = &*self.contents;
        let mut slices: Vec<&[M]> = chain.chunks().into_iter().map(|chunk| chunk.items()).collect();
        slices.push(tail);
        Iter::new(slices, self.len())
    }

    /// Sealed chunks, which forks share (for diagnostics and tests).
    pub fn chunk_count(&self) -> usize {
        self.contents.chain.chunk_count()
    }

    /// The current turn number; 0 before the first turn.
    pub fn turn(&self) -> u64 {
        self.turn
    }

    /// Advances the turn counter and returns the new turn number.
    pub fn next_turn(&mut self) -> u64 {
        self.turn = self.turn.checked_add(1).expect("2^64 turns, each a model call, are never reached");
        self.turn
    }

    /// A copy of this window that shares every item with it, in O(1): one reference count,
    /// and the turn counter carried so that both copies name the same turns.
    ///
    /// From here on the two are independent (a semantic deep copy): a push, compaction or turn
    /// on either is invisible to the other. The first edit of a still-shared window copies its
    /// tail (at most `CHUNK_ITEMS_MAX - 1` items) and one reference to its chunk list, so what
    /// a fork costs is paid once, at the first edit, and is bounded by the chunk size whatever
    /// the length of the window.
    pub fn fork(&self) -> Window<M> {
        Window { contents: Arc::clone(&self.contents), turn: self.turn }
    }

    /// Checks the structural invariants (O(chunks)): every sealed chunk holds 1 to
    /// [`CHUNK_ITEMS_MAX`] items, the tail fewer than that, and the window at most
    /// [`WINDOW_ITEMS_MAX`].
    pub(super) fn check(&self) {
        let Contents { chain, tail } = &*self.contents;
        assert!(tail.len() < CHUNK_ITEMS_MAX, "a tail is sealed when it fills");
        assert!(self.len() <= WINDOW_ITEMS_MAX, "a window holds at most WINDOW_ITEMS_MAX items");
        let chunks = chain.chunks();
        assert_eq!(chunks.len(), chain.chunk_count(), "the chunk count is the list's length");
        let sealed: usize = chunks.iter().map(|chunk| chunk.len()).sum();
        assert_eq!(sealed, chain.len(), "chunk starts add up");
        assert!(chunks.iter().all(|chunk| (1..=CHUNK_ITEMS_MAX).contains(&chunk.len())));
    }
}

impl<M: Clone> Window<M> {
    /// Appends `item` at the newest end. Amortised O(1); a push that fills the tail seals it
    /// into a chunk that forks made from here on share.
    pub fn push(&mut self, item: M) -> Result<(), WindowError> {
        let len = self.len();
        if len >= WINDOW_ITEMS_MAX {
            return Err(WindowError::Full { len });
        }
        // Copies the tail if a fork still shares it: the only copying a fork ever causes.
        let Contents { chain, tail } = Arc::make_mut(&mut self.contents);
        tail.push(item);
        if tail.len() == CHUNK_ITEMS_MAX {
            let full = std::mem::replace(tail, Vec::with_capacity(CHUNK_ITEMS_MAX));
            chain.push(Arc::new(Chunk::seal(full)));
        }
        debug_assert!(self.contents.tail.len() < CHUNK_ITEMS_MAX);
        Ok(())
    }
}

impl<M> Default for Window<M> {
    fn default() -> Window<M> {
        Window::new()
    }
}

impl<M> Clone for Window<M> {
    /// The same as [`Window::fork`]: O(1), and a semantic deep copy.
    fn clone(&self) -> Window<M> {
        self.fork()
    }
}

impl<M: PartialEq> PartialEq for Window<M> {
    /// Equal when the turn and the items are; where the chunk boundaries fall does not matter.
    fn eq(&self, other: &Window<M>) -> bool {
        self.turn == other.turn && self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<M: Eq> Eq for Window<M> {}

impl<M: fmt::Debug> fmt::Debug for Window<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Window").field("turn", &self.turn).field("items", &DebugItems(self)).finish()
    }
}

struct DebugItems<'a, M>(&'a Window<M>);

impl<M: fmt::Debug> fmt::Debug for DebugItems<'_, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

impl<'a, M> IntoIterator for &'a Window<M> {
    type Item = &'a M;
    type IntoIter = Iter<'a, M>;

    fn into_iter(self) -> Iter<'a, M> {
        self.iter()
    }
}
