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
    let text = value.to_string();
    if text.chars().nth(max).is_none() {
        return value;
    }
    Value::String(cap_text(&text, max))
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

/// Caps each text of a window message a context re-states: a text, a tool result, a call's
/// arguments (as [`cap_value`] does).
fn bound_message(message: &mut Message) {
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
            AgentEvent::ContextChunk { messages, .. } => messages.iter_mut().for_each(bound_message),
            _ => {}
        }
    }
}
