//! The size cap on what the model said and did ([`EVENT_FIELD_CHARS_MAX`]): a turn's text and
//! each call's arguments, result and refusal message.

use super::event::{AgentEvent, CallRecord};
use crate::agent::brain::{AssistantMessage, Message};
use crate::agent::limits::EVENT_FIELD_CHARS_MAX;
use serde_json::Value;

/// `text` cut to `max` characters, ending with `… [N chars cut]` when it was longer.
pub fn cap_text(text: &str, max: usize) -> String {
    match crate::actors::text::prefix_chars(text, max) {
        (all, None) => all.to_string(),
        (kept, Some(cut)) => format!("{kept}… [{cut} chars cut]"),
    }
}

/// `value` as it is if its JSON text is at most `max` characters; otherwise that text cut by
/// [`cap_text`], as a JSON string.
pub fn cap_value(value: Value, max: usize) -> Value {
    if value_fits(&value, max) {
        return value;
    }
    Value::String(cap_text(&value.to_string(), max))
}

/// Whether `value`'s JSON text is at most `max` characters. The text is counted in bytes as
/// it is written, and the writing stops at the first byte past `max`; only a text longer than
/// `max` bytes is written out and counted in characters.
fn value_fits(value: &Value, max: usize) -> bool {
    struct Counter {
        bytes: usize,
        max: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes = self.bytes.saturating_add(buf.len());
            if self.bytes > self.max { Err(std::io::Error::other("past the cap")) } else { Ok(buf.len()) }
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Counter { bytes: 0, max }, value).is_ok()
        || value.to_string().chars().nth(max).is_none()
}

/// Whether `text` is at most `max` characters.
fn text_fits(text: &str, max: usize) -> bool {
    text.len() <= max || text.chars().nth(max).is_none()
}

impl CallRecord {
    fn bound(&mut self) {
        let max = EVENT_FIELD_CHARS_MAX;
        self.arguments = cap_value(std::mem::take(&mut self.arguments), max);
        if let Some(result) = self.result.take() {
            self.result = Some(cap_value(result, max));
        }
        if let Some(error) = &mut self.error {
            error.message = cap_text(&error.message, max);
        }
        self.calls.iter_mut().for_each(CallRecord::bound);
    }
}

/// Whether [`bound_message`] would leave `message` as it is.
pub(super) fn message_fits(message: &Message) -> bool {
    let max = EVENT_FIELD_CHARS_MAX;
    match message {
        Message::User { text } | Message::Note { text } | Message::Tool { text, .. } => text_fits(text, max),
        Message::Assistant(AssistantMessage { text, tool_calls }) => {
            text.as_deref().is_none_or(|t| text_fits(t, max))
                && tool_calls.iter().all(|call| value_fits(&call.arguments, max))
        }
    }
}

/// Caps each text of a window message a context re-states: a text, a tool result, a call's
/// arguments (as [`cap_value`] does).
pub(super) fn bound_message(message: &mut Message) {
    let max = EVENT_FIELD_CHARS_MAX;
    match message {
        Message::User { text } | Message::Note { text } | Message::Tool { text, .. } => {
            *text = cap_text(text, max);
        }
        Message::Assistant(AssistantMessage { text, tool_calls }) => {
            if let Some(text) = text {
                *text = cap_text(text, max);
            }
            for call in tool_calls {
                call.arguments = cap_value(std::mem::take(&mut call.arguments), max);
            }
        }
    }
}

impl AgentEvent {
    /// Caps the fields that carry what the model said and did at [`EVENT_FIELD_CHARS_MAX`]:
    /// a turn's text and calls, and each message of a re-stated window (an inherited tail, a
    /// chunk's content), whose messages are what the model said and read. The other fields
    /// are bounded where they come from (goals and messages by the kernel's limits) and are
    /// re-stated in full, as the per-agent stream rule wants.
    pub(super) fn bound(&mut self) {
        match self {
            AgentEvent::TurnCompleted { text, calls, .. } => {
                if let Some(text) = text {
                    *text = cap_text(text, EVENT_FIELD_CHARS_MAX);
                }
                calls.iter_mut().for_each(CallRecord::bound);
            }
            AgentEvent::AgentSpawned { inherited, .. } => inherited.tail.iter_mut().for_each(bound_message),
            // A chunk's messages are capped when first read (`ChunkMessages`).
            _ => {}
        }
    }
}
