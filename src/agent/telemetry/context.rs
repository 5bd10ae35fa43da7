//! The context an incarnation starts with, as its own stream states it: the window it
//! inherited (sealed chunks by id, then the tail in full) and, in `context_chunk` records, the
//! content of each chunk, once per stream. [`rebuild_context`] reads it back.

use super::event::{AgentEvent, EventRecord};
use crate::agent::brain::Message;
use crate::agent::window::{ChunkId, SealedChunk, SnapshotError, Window};
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::collections::HashMap;

/// A window as an event names it: its sealed chunks by id, oldest first, then the newest
/// messages (fewer than [`CHUNK_ITEMS_MAX`](crate::agent::window::CHUNK_ITEMS_MAX)) in full.
/// Each chunk's content is on the same stream in a `context_chunk` record
/// ([`AgentEvent::ContextChunk`]): the one that follows the naming event, or an earlier one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowContext {
    /// The sealed chunks, oldest first.
    #[serde(default)]
    pub chunks: Vec<ChunkId>,
    /// The messages after them, in full.
    #[serde(default)]
    pub tail: Vec<Message>,
}

/// A window's content, shared with it (no message copied), ready to be stated on a stream:
/// what [`Telemetry::emit_spawn`](super::Telemetry::emit_spawn) states.
#[derive(Clone, Default)]
pub struct ContextSource {
    chunks: Vec<SealedChunk<Message>>,
    tail: Vec<Message>,
}

impl ContextSource {
    /// The content of `window`: O(chunks) pointers and its tail (fewer than
    /// [`CHUNK_ITEMS_MAX`](crate::agent::window::CHUNK_ITEMS_MAX) messages) copied.
    pub fn of(window: &Window<Message>) -> Result<ContextSource, SnapshotError> {
        Ok(ContextSource { chunks: window.sealed_chunks()?, tail: window.tail().to_vec() })
    }

    /// How an event names this content.
    pub fn named(&self) -> WindowContext {
        WindowContext { chunks: self.chunks.iter().map(SealedChunk::id).collect(), tail: self.tail.clone() }
    }

    /// Messages it holds.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(|c| c.items().len()).sum::<usize>() + self.tail.len()
    }

    /// Whether it holds no message.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sealed chunks, oldest first.
    pub(super) fn chunks(&self) -> &[SealedChunk<Message>] {
        &self.chunks
    }
}

/// Why a stream does not tell an incarnation's starting context.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// The records hold no `agent_spawned`: pass the whole stream, from its first record.
    #[error(
        "failed to rebuild the context: the stream has no agent_spawned record; pass the whole stream of one agent id"
    )]
    NoSpawn,
    /// The records are of more than one incarnation.
    #[error(
        "failed to rebuild the context: the records are of agent {first} and agent {other}; pass one agent id's stream"
    )]
    MixedStreams {
        /// The first record's agent id.
        first: String,
        /// Another agent id among them.
        other: String,
    },
    /// A chunk the context names is stated by no `context_chunk` record of the stream.
    #[error(
        "failed to rebuild the context: chunk {chunk} is named but no context_chunk record of the stream states it; the stream is cut short"
    )]
    MissingChunk {
        /// The chunk's id.
        chunk: ChunkId,
    },
}

/// The context an incarnation started with, from its stream alone (one agent id's records,
/// oldest first, as [`Telemetry::stream`](super::Telemetry::stream) or the event file give
/// them): the window it inherited, then its opening messages, message by message. Each text is
/// as the stream states it: redacted, and capped at
/// [`EVENT_FIELD_CHARS_MAX`](crate::agent::limits::EVENT_FIELD_CHARS_MAX) characters per field.
pub fn rebuild_context<R: Borrow<EventRecord>>(stream: &[R]) -> Result<Vec<Message>, ContextError> {
    if let Some(first) = stream.first().map(Borrow::borrow)
        && let Some(other) = stream.iter().map(Borrow::borrow).find(|r| r.agent_id != first.agent_id)
    {
        return Err(ContextError::MixedStreams {
            first: first.agent_id.clone(),
            other: other.agent_id.clone(),
        });
    }
    let mut stated: HashMap<ChunkId, &[Message]> = HashMap::new();
    let mut spawned = None;
    for record in stream {
        match &record.borrow().event {
            AgentEvent::ContextChunk { chunk, messages } => {
                stated.entry(*chunk).or_insert(messages);
            }
            AgentEvent::AgentSpawned { inherited, opening, .. } if spawned.is_none() => {
                spawned = Some((inherited, opening));
            }
            _ => {}
        }
    }
    let (inherited, opening) = spawned.ok_or(ContextError::NoSpawn)?;
    let mut messages = Vec::new();
    for chunk in &inherited.chunks {
        let content = stated.get(chunk).ok_or(ContextError::MissingChunk { chunk: *chunk })?;
        messages.extend_from_slice(content);
    }
    messages.extend_from_slice(&inherited.tail);
    messages.extend_from_slice(opening);
    Ok(messages)
}
