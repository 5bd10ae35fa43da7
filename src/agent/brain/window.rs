//! [`WindowView`]: how a brain reads a window without knowing how it is stored.
//!
//! Windows will be persistent structures of shared immutable chunks, so that a fork copies a
//! conversation in O(1). A `&[Message]` would force every request to flatten those chunks
//! into one contiguous buffer first; a brain only ever needs one ordered pass (to build a
//! request body or to estimate tokens) and, as a capacity hint, the length. This trait asks
//! for exactly that, and is object-safe so that [`super::TurnRequest`] is not generic and
//! brains stay usable as `Arc<dyn Brain>`. The boxed iterator costs one allocation per pass,
//! which is noise next to a model call.

use super::message::Message;

/// An ordered, read-only view of a window's messages, oldest first.
pub trait WindowView: Sync {
    /// How many messages the window holds.
    fn len(&self) -> usize;

    /// Whether the window holds no message.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The messages, oldest first. Each call starts a new pass from the beginning.
    fn messages(&self) -> Box<dyn Iterator<Item = &Message> + '_>;

    /// The messages, newest first. Each call starts a new pass from the newest. This default
    /// reads the whole window first; a view that can walk backwards overrides it, so that a
    /// reader of the newest messages (the tail since the model last spoke) pays for those
    /// only.
    fn newest_first(&self) -> Box<dyn Iterator<Item = &Message> + '_> {
        let all: Vec<&Message> = self.messages().collect();
        Box::new(all.into_iter().rev())
    }

    /// The estimated tokens of every message ([`super::tokens::message_tokens`] summed). A view
    /// that keeps running totals answers without reading the messages again (a `Window` keeps
    /// one per sealed chunk); this default reads them.
    fn tokens(&self) -> u64 {
        self.messages().map(super::tokens::message_tokens).sum()
    }
}

// A slice cannot become `&dyn WindowView` itself (it is unsized), so a slice is viewed through a
// reference to it: `TurnRequest::new(system, &slice, tools)`.
impl WindowView for &[Message] {
    fn len(&self) -> usize {
        <[Message]>::len(self)
    }

    fn messages(&self) -> Box<dyn Iterator<Item = &Message> + '_> {
        Box::new(self.iter())
    }

    fn newest_first(&self) -> Box<dyn Iterator<Item = &Message> + '_> {
        Box::new(self.iter().rev())
    }
}

impl WindowView for Vec<Message> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    fn messages(&self) -> Box<dyn Iterator<Item = &Message> + '_> {
        Box::new(self.iter())
    }

    fn newest_first(&self) -> Box<dyn Iterator<Item = &Message> + '_> {
        Box::new(self.iter().rev())
    }
}

impl<const N: usize> WindowView for [Message; N] {
    fn len(&self) -> usize {
        N
    }

    fn messages(&self) -> Box<dyn Iterator<Item = &Message> + '_> {
        Box::new(self.iter())
    }

    fn newest_first(&self) -> Box<dyn Iterator<Item = &Message> + '_> {
        Box::new(self.iter().rev())
    }
}

/// The messages after the last assistant message: what the model is answering now (tool
/// results, notes, user input). The whole window if the model has not spoken yet.
/// Read from the newest message back, so it costs the tail, not the window.
pub fn tail_since_assistant(window: &dyn WindowView) -> Vec<&Message> {
    let mut tail: Vec<&Message> =
        window.newest_first().take_while(|message| !matches!(message, Message::Assistant(_))).collect();
    tail.reverse();
    tail
}
