//! The conversation types a brain reads and writes.
//!
//! A window is a sequence of [`Message`]s. There is deliberately no system role: the system
//! prompt lives in its own slot ([`super::TurnRequest::system`]), rendered per request, so it
//! cannot be stored in a history, copied by a fork or carried across an exec.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A person, or whatever put the agent to work.
    User,
    /// The model.
    Assistant,
    /// The answer to one of the model's tool calls.
    Tool,
    /// The runtime itself: an opening note after an exec or a fork, a notice.
    Note,
}

impl Role {
    /// The lowercase name (`user`, `assistant`, `tool`, `note`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Note => "note",
        }
    }
}

/// One tool call the model made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, unique within the window; the tool result names it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, already parsed from the provider's JSON string.
    pub arguments: Value,
}

/// What the model said in one turn: optional text and any number of tool calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// The text, if the model wrote any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The tool calls, in the order the model made them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

/// One message of a window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Input from a person or from whatever put the agent to work.
    User {
        /// The text.
        text: String,
    },
    /// A turn of the model.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    Tool {
        /// The [`ToolCall::id`] this answers.
        tool_call_id: String,
        /// The result as the model reads it (often JSON text).
        text: String,
    },
    /// A note from the runtime (an exec's or fork's opening note, a notice). Providers without
    /// such a role receive it as user input, marked as coming from the runtime.
    Note {
        /// The text.
        text: String,
    },
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Message {
        Message::User { text: text.into() }
    }

    /// An assistant message with text and no tool calls.
    pub fn assistant_text(text: impl Into<String>) -> Message {
        Message::Assistant(AssistantMessage { text: Some(text.into()), tool_calls: Vec::new() })
    }

    /// The result of the tool call `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, text: impl Into<String>) -> Message {
        Message::Tool { tool_call_id: tool_call_id.into(), text: text.into() }
    }

    /// A note from the runtime.
    pub fn note(text: impl Into<String>) -> Message {
        Message::Note { text: text.into() }
    }

    /// Who wrote it.
    pub fn role(&self) -> Role {
        match self {
            Message::User { .. } => Role::User,
            Message::Assistant(_) => Role::Assistant,
            Message::Tool { .. } => Role::Tool,
            Message::Note { .. } => Role::Note,
        }
    }

    /// Its text, if it has any (an assistant message that only calls tools has none).
    pub fn text(&self) -> Option<&str> {
        match self {
            Message::User { text } | Message::Tool { text, .. } | Message::Note { text } => Some(text),
            Message::Assistant(m) => m.text.as_deref(),
        }
    }

    /// The tool calls it makes (empty unless it is an assistant message that calls tools).
    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Message::Assistant(m) => &m.tool_calls,
            _ => &[],
        }
    }
}

impl From<AssistantMessage> for Message {
    fn from(message: AssistantMessage) -> Message {
        Message::Assistant(message)
    }
}

/// What one turn cost, as the provider reported it (or as estimated when it did not).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens read: system slot, window and tool specs.
    pub input_tokens: u64,
    /// Tokens written: the assistant message.
    pub output_tokens: u64,
    /// Of the input tokens, those served from the provider's prompt cache.
    pub cached_tokens: u64,
    /// Of the input tokens, those written into the provider's prompt cache (Anthropic's
    /// `cache_creation_input_tokens`; billed above the plain input rate).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// The cost in millionths of a currency unit, when the provider reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micros: Option<u64>,
}

impl Usage {
    /// Input plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// The sum of two usages (saturating); the cost is known only if both are.
    pub fn plus(&self, other: &Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cached_tokens: self.cached_tokens.saturating_add(other.cached_tokens),
            cache_write_tokens: self.cache_write_tokens.saturating_add(other.cache_write_tokens),
            cost_micros: match (self.cost_micros, other.cost_micros) {
                (Some(a), Some(b)) => Some(a.saturating_add(b)),
                _ => None,
            },
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
