//! `Redactor`: secrets replaced by [`REDACTED`] in every text of an event before it is kept,
//! written, broadcast or logged.

use super::event::{AgentEvent, CallRecord};
use crate::agent::brain::{AssistantMessage, Message};
use serde_json::Value;
use std::sync::Arc;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The secrets to take out of events: literal strings, longest first (so that a secret that
/// holds a shorter one is replaced whole).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor of `secrets`. Empty strings are ignored (they would match everywhere).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let mut redactor = Redactor::default();
        redactor.extend(secrets);
        redactor
    }

    /// Adds `secrets`, ignoring empty strings and ones already held.
    pub fn extend(&mut self, secrets: impl IntoIterator<Item = String>) {
        for secret in secrets {
            if !secret.is_empty() && !self.secrets.contains(&secret) {
                self.secrets.push(secret);
            }
        }
        self.secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        self.redact_in_place(&mut out);
        out
    }

    /// Whether `text` holds a secret.
    fn holds_secret(&self, text: &str) -> bool {
        self.secrets.iter().any(|secret| text.contains(secret.as_str()))
    }

    fn redact_in_place(&self, text: &mut String) {
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                *text = text.replace(secret.as_str(), REDACTED);
            }
        }
    }

    /// Every string in `value` (object keys included) redacted.
    pub fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(text) => self.redact_in_place(text),
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut item) in entries {
                    self.redact_value(&mut item);
                    map.insert(self.redact(&key), item);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Redacts every text field of `event`, in place.
    pub fn apply(&self, event: &mut AgentEvent) {
        if self.is_empty() {
            return;
        }
        let text = |t: &mut String| self.redact_in_place(t);
        let opt = |t: &mut Option<String>| {
            if let Some(t) = t {
                self.redact_in_place(t);
            }
        };
        match event {
            AgentEvent::AgentSpawned {
                profile,
                parent_agent_id,
                via: _,
                depth: _,
                machine,
                state,
                inherited_messages: _,
                inherited,
                opening,
            } => {
                text(profile);
                opt(parent_agent_id);
                opt(machine);
                opt(state);
                inherited.tail.iter_mut().for_each(|m| self.redact_message(m));
                opening.iter_mut().for_each(|m| self.redact_message(m));
            }
            AgentEvent::ContextChunk { chunk: _, messages } => {
                // Redacted when first read, before the cap, as every chunk statement is.
                *messages = messages.redacted_by(Arc::new(self.clone()));
            }
            AgentEvent::AgentTransition { kind: _, to_agent_id, to_profile, modules, turn: _ } => {
                text(to_agent_id);
                text(to_profile);
                for m in modules {
                    text(&mut m.module);
                    text(&mut m.action);
                }
            }
            AgentEvent::FsmState { machine, state, from } => {
                text(machine);
                text(state);
                opt(from);
            }
            AgentEvent::TurnCompleted { turn: _, usage: _, text: said, tool_calls, calls, compacted: _ } => {
                opt(said);
                tool_calls.iter_mut().for_each(text);
                calls.iter_mut().for_each(|c| self.redact_call(c));
            }
            AgentEvent::ModelRetried { code, message, .. } => {
                text(code);
                text(message);
            }
            AgentEvent::Compacted { .. } => {}
            AgentEvent::ThreadArchived { summary, .. } => text(summary),
            AgentEvent::MessageSent { to_pid, text: body } => {
                text(to_pid);
                text(body);
            }
            AgentEvent::MessageReceived { from_pid, text: body, kind } => {
                text(from_pid);
                text(body);
                text(kind);
            }
            AgentEvent::ToolRefused { tool, code, message, .. } => {
                text(tool);
                text(code);
                text(message);
            }
            AgentEvent::AgentFinished { outcome, result, usage: _ } => {
                text(outcome);
                if let Some(result) = result {
                    self.redact_value(result);
                }
            }
        }
    }

    fn redact_call(&self, call: &mut CallRecord) {
        self.redact_in_place(&mut call.tool);
        self.redact_value(&mut call.arguments);
        if let Some(result) = &mut call.result {
            self.redact_value(result);
        }
        if let Some(error) = &mut call.error {
            self.redact_in_place(&mut error.code);
            self.redact_in_place(&mut error.message);
        }
    }

    /// Whether [`Self::redact_message`] would change `message`.
    pub(super) fn message_holds_secret(&self, message: &Message) -> bool {
        let text = |t: &str| self.holds_secret(t);
        match message {
            Message::User { text: t } | Message::Note { text: t } => text(t),
            Message::Tool { tool_call_id, text: t } => text(tool_call_id) || text(t),
            Message::Assistant(AssistantMessage { text: t, tool_calls }) => {
                t.as_deref().is_some_and(text)
                    || tool_calls.iter().any(|call| {
                        text(&call.id) || text(&call.name) || self.value_holds_secret(&call.arguments)
                    })
            }
        }
    }

    /// Whether [`Self::redact_value`] would change `value`.
    fn value_holds_secret(&self, value: &Value) -> bool {
        let text = |t: &str| self.holds_secret(t);
        match value {
            Value::String(t) => text(t),
            Value::Array(items) => items.iter().any(|v| self.value_holds_secret(v)),
            Value::Object(map) => map.iter().any(|(key, item)| text(key) || self.value_holds_secret(item)),
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }

    pub(super) fn redact_message(&self, message: &mut Message) {
        match message {
            Message::User { text } | Message::Note { text } => self.redact_in_place(text),
            Message::Tool { tool_call_id, text } => {
                self.redact_in_place(tool_call_id);
                self.redact_in_place(text);
            }
            Message::Assistant(AssistantMessage { text, tool_calls }) => {
                if let Some(text) = text {
                    self.redact_in_place(text);
                }
                for call in tool_calls {
                    self.redact_in_place(&mut call.id);
                    self.redact_in_place(&mut call.name);
                    self.redact_value(&mut call.arguments);
                }
            }
        }
    }
}
