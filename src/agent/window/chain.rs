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
use std::sync::Arc;

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
}

impl<M> Node<M> {
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
            None => Node { chunk, start: 0, depth: 0, prev: None, jump: None },
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
                Node { chunk, start: prev.end(), depth: prev.depth + 1, prev: Some(prev), jump: Some(jump) }
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
