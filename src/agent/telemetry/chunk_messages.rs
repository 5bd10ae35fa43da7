//! `ChunkMessages`: a stated chunk's messages, redacted and capped when first read.

use super::bound::{bound_message, message_fits};
use super::redact::Redactor;
use crate::agent::brain::Message;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

/// The messages of a `context_chunk` record, as every observer reads them: with the secrets
/// of the telemetry that emitted the record taken out and each text capped
/// ([`EVENT_FIELD_CHARS_MAX`](crate::agent::limits::EVENT_FIELD_CHARS_MAX)).
///
/// A fork or a successor states its whole inherited window, so preparing and writing those
/// messages costs in proportion to the conversation. The preparation is therefore done once,
/// by the first reader (the telemetry's writer thread, a subscriber, [`rebuild_context`]),
/// not by the agent that emits the record: emitting stays O(1) per chunk. Nothing can read the
/// messages unprepared: every access ([`Deref`], [`shared`](Self::shared), serialising,
/// comparing) goes through the preparation. The window's own chunk is shared, not copied,
/// unless redaction or the cap changes one of its messages.
///
/// [`rebuild_context`]: super::rebuild_context
#[derive(Clone)]
pub struct ChunkMessages(Arc<Prepared>);

struct Prepared {
    raw: Arc<[Message]>,
    /// The secrets to take out, when the messages were handed to a telemetry; none for
    /// messages read back from a file or built by hand.
    redactor: Option<Arc<Redactor>>,
    done: OnceLock<Arc<[Message]>>,
}

impl ChunkMessages {
    /// Messages to be redacted by `redactor` and capped when first read.
    pub(super) fn deferred(raw: Arc<[Message]>, redactor: Arc<Redactor>) -> ChunkMessages {
        ChunkMessages(Arc::new(Prepared { raw, redactor: Some(redactor), done: OnceLock::new() }))
    }

    /// These messages, to be redacted by `redactor` (as well) when first read: redaction
    /// still comes before the cap.
    pub(super) fn redacted_by(&self, redactor: Arc<Redactor>) -> ChunkMessages {
        ChunkMessages::deferred(self.redacted(), redactor)
    }

    /// The messages as observers read them, shared.
    pub fn shared(&self) -> Arc<[Message]> {
        Arc::clone(self.prepared())
    }

    /// How many messages, without preparing them.
    pub fn count(&self) -> usize {
        self.0.raw.len()
    }

    /// Redacted, then capped: so that a cut never leaves the start of a secret.
    fn prepared(&self) -> &Arc<[Message]> {
        self.0.done.get_or_init(|| changed(self.redacted(), message_fits, bound_message))
    }

    /// The raw messages with this statement's secrets taken out, not capped.
    fn redacted(&self) -> Arc<[Message]> {
        let raw = Arc::clone(&self.0.raw);
        match &self.0.redactor {
            Some(redactor) if !redactor.is_empty() => {
                changed(raw, |m| !redactor.message_holds_secret(m), |m| redactor.redact_message(m))
            }
            _ => raw,
        }
    }
}

/// `messages` with `change` applied to each: the same slice, shared, when every message is
/// `unchanged` already; a copy otherwise.
fn changed(
    messages: Arc<[Message]>,
    unchanged: impl Fn(&Message) -> bool,
    change: impl FnMut(&mut Message),
) -> Arc<[Message]> {
    if messages.iter().all(unchanged) {
        return messages;
    }
    let mut owned = messages.to_vec();
    owned.iter_mut().for_each(change);
    owned.into()
}

impl Deref for ChunkMessages {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        self.prepared()
    }
}

impl From<Arc<[Message]>> for ChunkMessages {
    fn from(messages: Arc<[Message]>) -> ChunkMessages {
        ChunkMessages(Arc::new(Prepared { raw: messages, redactor: None, done: OnceLock::new() }))
    }
}

impl From<Vec<Message>> for ChunkMessages {
    fn from(messages: Vec<Message>) -> ChunkMessages {
        ChunkMessages::from(Arc::<[Message]>::from(messages))
    }
}

impl PartialEq for ChunkMessages {
    fn eq(&self, other: &ChunkMessages) -> bool {
        **self == **other
    }
}

impl fmt::Debug for ChunkMessages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for ChunkMessages {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ChunkMessages {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ChunkMessages, D::Error> {
        Vec::<Message>::deserialize(deserializer).map(ChunkMessages::from)
    }
}
