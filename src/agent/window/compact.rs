//! The edits compaction makes: dropping the oldest items, optionally putting a summary first.
//!
//! Both keep every whole chunk after the cut shared with any fork that holds it (and with the
//! store, where its id is already known), and make at most one new chunk: the part-chunk the
//! cut falls in, with the summary in front. Each is O(chunks) in pointer work, since the list
//! of chunks after the cut is relinked; no item after the cut's chunk is copied.

use super::chain::Chain;
use super::chunk::Chunk;
use super::error::WindowError;
use super::limits::CHUNK_ITEMS_MAX;
use super::window::{Contents, Window};
use std::sync::Arc;

impl<M: Clone> Window<M> {
    /// Drops the oldest `n` items and puts `summary` first: the window becomes
    /// `[summary] ++ items[n..]`. The turn counter is unchanged. Refused, leaving the window as
    /// it was, when `n` is more than the window holds.
    pub fn replace_prefix(&mut self, n: usize, summary: M) -> Result<(), WindowError> {
        self.cut_front(n, Some(summary))
    }

    /// Drops the oldest `n` items: the window becomes `items[n..]`. The turn counter is
    /// unchanged. Refused, leaving the window as it was, when `n` is more than the window holds.
    pub fn truncate_front(&mut self, n: usize) -> Result<(), WindowError> {
        self.cut_front(n, None)
    }

    /// Replaces the items `start..end` with `item`: the window becomes
    /// `items[..start] ++ [item] ++ items[end..]`. The turn counter is unchanged. Refused,
    /// leaving the window as it was, when the range is not within the window.
    ///
    /// Unlike the cuts at the front this rebuilds the window, O(len): it is what a model-called
    /// archive of turns in the middle of a conversation does, a rare edit. A fork that shares
    /// the old contents keeps them.
    pub fn replace_range(&mut self, start: usize, end: usize, item: M) -> Result<(), WindowError> {
        let len = self.len();
        if start > end || end > len {
            return Err(WindowError::RangeOutOfBounds { start, end, len });
        }
        let mut rebuilt = Window::new();
        rebuilt.turn = self.turn;
        let mut item = Some(item);
        for (index, existing) in self.iter().enumerate() {
            if index == start
                && let Some(item) = item.take()
            {
                rebuilt.push(item)?;
            }
            if index < start || index >= end {
                rebuilt.push(existing.clone())?;
            }
        }
        if let Some(item) = item {
            rebuilt.push(item)?;
        }
        *self = rebuilt;
        Ok(())
    }

    fn cut_front(&mut self, n: usize, summary: Option<M>) -> Result<(), WindowError> {
        let len = self.len();
        if n > len {
            return Err(WindowError::PrefixTooLong { requested: n, len });
        }
        let expected = len - n + usize::from(summary.is_some());
        let sealed = self.contents.chain.len();
        if n >= sealed {
            // The cut falls in the tail: no chunk survives, the tail keeps its newest part.
            let mut chain = Chain::new();
            let mut tail = Vec::with_capacity(CHUNK_ITEMS_MAX);
            tail.extend(summary);
            tail.extend_from_slice(&self.contents.tail[n - sealed..]);
            // A summary in front of a full-but-one tail fills it.
            if tail.len() == CHUNK_ITEMS_MAX {
                chain.push(Arc::new(Chunk::seal(tail)));
                tail = Vec::with_capacity(CHUNK_ITEMS_MAX);
            }
            self.contents = Arc::new(Contents { chain, tail });
        } else {
            // The tail survives whole; this copies it only if a fork still shares it.
            let Contents { chain, .. } = Arc::make_mut(&mut self.contents);
            let chunks = chain.chunks();
            // The chunk the cut falls in, and how far into it.
            let mut start = 0;
            let mut position = 0;
            while start + chunks[position].len() <= n {
                start += chunks[position].len();
                position += 1;
            }
            let offset = n - start;
            let mut front = Vec::new();
            if offset == 0 {
                // The cut is on a chunk boundary: that chunk survives whole, shared.
                if let Some(summary) = summary {
                    front.push(Arc::new(Chunk::seal(vec![summary])));
                }
            } else {
                // At most CHUNK_ITEMS_MAX - 1 items survive of the cut chunk, so the summary fits.
                let mut items = Vec::with_capacity(CHUNK_ITEMS_MAX);
                items.extend(summary);
                items.extend_from_slice(&chunks[position].items()[offset..]);
                front.push(Arc::new(Chunk::seal(items)));
                position += 1;
            }
            let shared = chunks[position..].iter().map(|chunk| Arc::clone(chunk));
            *chain = Chain::from_chunks(front.into_iter().chain(shared));
        }
        assert_eq!(self.len(), expected, "a cut keeps exactly the items after it, and the summary");
        self.check();
        Ok(())
    }
}
