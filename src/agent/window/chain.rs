//! `Chain`: the sealed part of a window, a persistent list of shared chunks.
//!
//! The list runs from the newest chunk back to the oldest. Appending a chunk allocates one node
//! that points at the old head, so two windows that share a head share every chunk before it
//! and appending to one never touches the other: a fork clones one `Arc`.
//!
//! Each node also carries a jump pointer to an earlier node (Myers, "An applicative
//! random-access stack", 1983). The rule below places jumps so that finding the node holding
//! any index takes O(log chunks) steps, while appending stays O(1) and needs no rebalancing.

use super::chunk::Chunk;
use super::id::ChunkId;
use std::sync::{Arc, OnceLock};

/// One link of the list.
struct Node<M> {
    chunk: Arc<Chunk<M>>,
    /// Items in all earlier chunks: the window index of this chunk's first item.
    start: usize,
    /// Chunks before this one.
    depth: usize,
    /// The node before; `None` only on the first.
    prev: Option<Arc<Node<M>>>,
    /// An earlier node (the jump pointer); `None` only on the first, which jumps to itself.
    jump: Option<Arc<Node<M>>>,
    /// The id of the stored link naming this chunk and the link before it
    /// ([`super::link`]): computed at the first snapshot, or known at restore, and shared by
    /// every window holding this node.
    link: OnceLock<ChunkId>,
    /// The weight of this chunk and every chunk before it ([`super::weigh`]).
    total: OnceLock<u64>,
}

impl<M> Node<M> {
    fn new(
        chunk: Arc<Chunk<M>>,
        start: usize,
        depth: usize,
        prev: Option<Arc<Node<M>>>,
        jump: Option<Arc<Node<M>>>,
    ) -> Node<M> {
        Node { chunk, start, depth, prev, jump, link: OnceLock::new(), total: OnceLock::new() }
    }

    fn end(&self) -> usize {
        self.start + self.chunk.len()
    }
}

/// Where `node` jumps to: its jump pointer, or itself on the first node.
fn jump_of<M>(node: &Arc<Node<M>>) -> &Arc<Node<M>> {
    node.jump.as_ref().unwrap_or(node)
}

impl<M> Drop for Node<M> {
    /// Unlinks in a loop, so dropping a window takes O(1) stack whatever its length. The
    /// default drop would recurse through the nodes it frees; the jump pointers happen to keep
    /// that recursion shallow, but nothing bounds it by construction.
    fn drop(&mut self) {
        let mut next = self.prev.take();
        // A jump target is an ancestor, still held through `next`: this only decrements.
        drop(self.jump.take());
        while let Some(node) = next {
            match Arc::into_inner(node) {
                Some(mut node) => {
                    next = node.prev.take();
                    drop(node.jump.take());
                    // `node` drops here with both links taken, so its own drop does nothing.
                }
                // Another window still holds the rest of the list.
                None => break,
            }
        }
    }
}

/// A persistent list of sealed chunks, oldest first in every view it gives.
pub(super) struct Chain<M> {
    head: Option<Arc<Node<M>>>,
}

impl<M> Clone for Chain<M> {
    /// O(1): the copy shares every node.
    fn clone(&self) -> Chain<M> {
        Chain { head: self.head.clone() }
    }
}

impl<M> Chain<M> {
    pub(super) fn new() -> Chain<M> {
        Chain { head: None }
    }

    /// A chain of these chunks, in order.
    pub(super) fn from_chunks(chunks: impl IntoIterator<Item = Arc<Chunk<M>>>) -> Chain<M> {
        let mut chain = Chain::new();
        for chunk in chunks {
            chain.push(chunk);
        }
        chain
    }

    /// Items in all chunks.
    pub(super) fn len(&self) -> usize {
        self.head.as_ref().map_or(0, |head| head.end())
    }

    /// Sealed chunks.
    pub(super) fn chunk_count(&self) -> usize {
        self.head.as_ref().map_or(0, |head| head.depth + 1)
    }

    /// Appends a sealed chunk in O(1), leaving every other holder of this chain's nodes as it
    /// was.
    pub(super) fn push(&mut self, chunk: Arc<Chunk<M>>) {
        debug_assert!(chunk.len() > 0, "a sealed chunk is never empty");
        let node = match self.head.take() {
            None => Node::new(chunk, 0, 0, None, None),
            Some(prev) => {
                // Myers' rule: jump two levels up when the two jumps above cover equal spans,
                // else jump to the parent. Spans then follow the skew-binary numbers.
                let up = jump_of(&prev);
                let up_up = jump_of(up);
                let jump = if prev.depth - up.depth == up.depth - up_up.depth {
                    Arc::clone(up_up)
                } else {
                    Arc::clone(&prev)
                };
                Node::new(chunk, prev.end(), prev.depth + 1, Some(prev), Some(jump))
            }
        };
        self.head = Some(Arc::new(node));
    }

    /// The item at `index`, in O(log chunks).
    pub(super) fn get(&self, index: usize) -> Option<&M> {
        let mut node = self.head.as_ref()?;
        if index >= node.end() {
            return None;
        }
        // Starts fall towards the first node, so the holder is the newest node starting at or
        // before `index`. Take the jump whenever it does not pass that node.
        while node.start > index {
            let jump = jump_of(node);
            node = if jump.start > index { jump } else { node.prev.as_ref()? };
        }
        node.chunk.items().get(index - node.start)
    }

    /// Records the stored link id of the newest chunk, known at restore.
    pub(super) fn set_head_link(&self, link: ChunkId) {
        if let Some(head) = &self.head {
            let _ = head.link.set(link);
        }
    }

    /// The chunks from the newest back, each with its link id if one is known.
    pub(super) fn newest_first(&self) -> impl Iterator<Item = (&Arc<Chunk<M>>, Option<ChunkId>)> {
        std::iter::successors(self.head.as_deref(), |node| node.prev.as_deref())
            .map(|node| (&node.chunk, node.link.get().copied()))
    }

    /// The stored link id of the newest chunk (`None` with no chunk), computing the ids not yet
    /// known: `link(chunk, previous link)` for each chunk since the newest one whose id is.
    pub(super) fn head_link<E>(
        &self,
        link: impl FnMut(&Arc<Chunk<M>>, Option<ChunkId>) -> Result<ChunkId, E>,
    ) -> Result<Option<ChunkId>, E> {
        self.running(|node| &node.link, link)
    }

    /// The weight of all chunks, computing the running totals not yet known from each chunk's
    /// `weight`.
    pub(super) fn total(&self, mut weight: impl FnMut(&Chunk<M>) -> u64) -> u64 {
        let total = self.running::<u64, std::convert::Infallible>(
            |node| &node.total,
            |chunk, before| Ok(before.unwrap_or(0) + weight(chunk)),
        );
        match total {
            Ok(total) => total.unwrap_or(0),
            Err(never) => match never {},
        }
    }

    /// A value kept in every node that is a function of its chunk and the value of the node
    /// before: read at the head, after computing it, oldest first, for the nodes since the
    /// newest one that has it. O(nodes without it), so O(1) a turn once every node has it.
    fn running<T: Copy, E>(
        &self,
        cell: impl Fn(&Node<M>) -> &OnceLock<T>,
        mut step: impl FnMut(&Arc<Chunk<M>>, Option<T>) -> Result<T, E>,
    ) -> Result<Option<T>, E> {
        let mut missing = Vec::new();
        let mut known = None;
        let mut node = self.head.as_deref();
        while let Some(current) = node {
            if let Some(&value) = cell(current).get() {
                known = Some(value);
                break;
            }
            missing.push(current);
            node = current.prev.as_deref();
        }
        for node in missing.into_iter().rev() {
            let value = step(&node.chunk, known)?;
            // Another window sharing the node may have set it: the value is the same.
            known = Some(*cell(node).get_or_init(|| value));
        }
        Ok(known)
    }

    /// The chunks, oldest first. O(chunks).
    pub(super) fn chunks(&self) -> Vec<&Arc<Chunk<M>>> {
        let mut chunks = Vec::with_capacity(self.chunk_count());
        let mut node = self.head.as_deref();
        while let Some(current) = node {
            chunks.push(&current.chunk);
            node = current.prev.as_deref();
        }
        chunks.reverse();
        chunks
    }
}
