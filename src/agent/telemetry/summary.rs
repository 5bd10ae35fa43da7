//! One line a person reads for each event (`agentvisor events`, logs).

use super::event::AgentEvent;
use crate::agent::brain::Usage;

/// Longest piece of free text (a message, a refusal) a summary quotes, in characters. The
/// full text is in the record; a summary is one line of a table.
pub const SUMMARY_TEXT_CHARS_MAX: usize = 80;

impl AgentEvent {
    /// A one-line description of the event, free text clipped to [`SUMMARY_TEXT_CHARS_MAX`].
    pub fn summary(&self) -> String {
        match self {
            AgentEvent::AgentSpawned {
                profile,
                parent_agent_id,
                via,
                depth,
                machine,
                state,
                inherited_messages,
                inherited,
                opening,
            } => {
                let mut out = format!("{} as {profile} depth={depth}", via.as_str());
                if let Some(parent) = parent_agent_id {
                    out.push_str(&format!(" from={parent}"));
                }
                if let (Some(machine), Some(state)) = (machine, state) {
                    out.push_str(&format!(" machine={machine} state={state}"));
                }
                out.push_str(&format!(
                    " inherited={inherited_messages} ({} chunks) opening={}",
                    inherited.chunks.len(),
                    opening.len()
                ));
                out
            }
            AgentEvent::ContextChunk { chunk, messages } => {
                format!("chunk {chunk}: {} messages", messages.count())
            }
            AgentEvent::AgentTransition { kind, to_agent_id, to_profile, modules, turn } => {
                let moves: Vec<String> =
                    modules.iter().map(|m| format!("{}:{}", m.module, m.action)).collect();
                format!(
                    "{} to {to_profile} ({to_agent_id}) at turn {turn}{}",
                    kind.as_str(),
                    if moves.is_empty() { String::new() } else { format!(" modules={}", moves.join(",")) }
                )
            }
            AgentEvent::FsmState { machine, state, from } => match from {
                Some(from) => format!("{machine}: {from} -> {state}"),
                None => format!("{machine}: enters {state}"),
            },
            AgentEvent::TurnCompleted { turn, usage, tool_calls, compacted, .. } => format!(
                "turn {turn} {}{}{}",
                usage_text(usage),
                if tool_calls.is_empty() {
                    String::new()
                } else {
                    format!(" tools={}", tool_calls.join(","))
                },
                if *compacted { " compacted" } else { "" }
            ),
            AgentEvent::ModelRetried { turn, attempt, delay_ms, retry_after, code, message } => format!(
                "turn {turn} attempt {attempt} failed ({code}), retrying in {delay_ms} ms{}: {}",
                if *retry_after { " (Retry-After)" } else { "" },
                clip(message)
            ),
            AgentEvent::Compacted { turn, tokens_before, tokens_after, cut } => {
                format!("before turn {turn}: {tokens_before} -> {tokens_after} tokens, {cut} messages cut")
            }
            AgentEvent::ThreadArchived { turn, from_turn, to_turn, messages, summary } => format!(
                "turn {turn} archived turns {from_turn}-{to_turn} ({messages} messages): {}",
                clip(summary)
            ),
            AgentEvent::MessageSent { to_pid, text } => format!("to {to_pid}: {}", clip(text)),
            AgentEvent::MessageReceived { from_pid, text, kind } => {
                format!("{kind} from {from_pid}: {}", clip(text))
            }
            AgentEvent::ToolRefused { turn, tool, code, message } => {
                format!("turn {turn} {tool} {code}: {}", clip(message))
            }
            AgentEvent::AgentFinished { outcome, result, usage } => format!(
                "{outcome} {}{}",
                usage_text(usage),
                result.as_ref().map(|r| format!(" result={}", clip(&r.to_string()))).unwrap_or_default()
            ),
        }
    }
}

fn usage_text(usage: &Usage) -> String {
    format!("in={} out={} cached={}", usage.input_tokens, usage.output_tokens, usage.cached_tokens)
}

/// The text on one line, clipped with an ellipsis.
fn clip(text: &str) -> String {
    crate::actors::text::excerpt_chars(&text.replace(['\n', '\r'], " "), SUMMARY_TEXT_CHARS_MAX)
}
