//! `Weigh`: a window's running total, computed once per sealed chunk.
//!
//! A request's token estimate is a sum over every message of the window, and it is asked for
//! every turn (to decide compaction, and by the scripted brain to report usage). Summed item
//! by item it costs O(window) a turn, so a session's total cost grows with the square of its
//! length. A sealed chunk never changes, so its sum is computed the first time it is asked for
//! and kept with the chunk, where every fork holding it shares it: a window's total then costs
//! O(chunks) additions plus the tail's at most [`super::CHUNK_ITEMS_MAX`]` - 1` items, 64 times
//! fewer steps, and none of them re-reads a message.

use super::chunk::Chunk;
use super::window::Window;

/// What an item counts for in its window's total: for conversation messages, their estimated
/// tokens (`agent::brain::tokens`). One function per item type, so a chunk's kept sum is always
/// the sum of that function.
pub trait Weigh {
    /// This item's weight.
    fn weight(&self) -> u64;
}

impl<M: Weigh> Chunk<M> {
    /// The sum of the items' weights, computed once.
    pub(super) fn weight(&self) -> u64 {
        *self.weight_cache().get_or_init(|| self.items().iter().map(Weigh::weight).sum())
    }
}

impl<M: Weigh> Window<M> {
    /// The sum of every item's weight: each sealed chunk's kept sum, then the tail's items.
    pub fn weight(&self) -> u64 {
        self.contents.chain.total(Chunk::weight) + self.contents.tail.iter().map(Weigh::weight).sum::<u64>()
    }
}
