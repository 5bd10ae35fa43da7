//! The agent events and the record each is written as.

use super::chunk_messages::ChunkMessages;
use super::context::WindowContext;
use crate::agent::brain::{Message, Usage};
use crate::agent::window::ChunkId;
use serde::{Deserialize, Serialize};

/// One event, as written: one JSON object per line.
///
/// The event's fields sit next to the record's (`#[serde(flatten)]`), with the variant name
/// in `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Strictly increasing within one event file: a [`Telemetry`](super::Telemetry) on a file
    /// that already has records continues after the last one's; in memory only, from 1.
    pub seq: u64,
    /// Unix milliseconds when the event was emitted.
    pub at_ms: u64,
    /// The kernel process id (a `Pid`'s `Display`).
    pub pid: String,
    /// The incarnation whose stream this event is on.
    pub agent_id: String,
    /// The event.
    #[serde(flatten)]
    pub event: AgentEvent,
}

/// What happened to an agent. Every context message an event refers to is re-stated in full
/// on the stream it is emitted on: a stream never points into another stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// An incarnation started: a root agent, a subagent, a fork, an exec's successor or a
    /// machine state's profile.
    AgentSpawned {
        /// The profile it runs.
        profile: String,
        /// The incarnation it came from (the spawner, forker or predecessor), if any.
        parent_agent_id: Option<String>,
        /// How it came to be.
        via: SpawnVia,
        /// Its process's depth in the process tree.
        depth: u32,
        /// The machine it runs a state of, if any.
        machine: Option<String>,
        /// The machine state it runs, if any.
        state: Option<String>,
        /// How many window messages it starts with from its predecessor or forker.
        inherited_messages: u64,
        /// Those messages: the sealed chunks by id (each stated by a `context_chunk` record of
        /// this stream, the ones right after this record or an earlier one) and the tail in
        /// full. Empty for a fresh start.
        #[serde(default)]
        inherited: WindowContext,
        /// The context messages it starts with that it did not inherit (goal, prompt, opening
        /// note), re-stated in full.
        opening: Vec<Message>,
    },
    /// This incarnation handed over to another (exec, fork or a machine transition).
    AgentTransition {
        /// Which kind of hand-over.
        kind: TransitionKind,
        /// The incarnation that takes over (or the fork).
        to_agent_id: String,
        /// The profile it runs.
        to_profile: String,
        /// What became of each module.
        modules: Vec<ModuleMoveRecord>,
        /// The turn the hand-over happened in.
        turn: u64,
    },
    /// The content of a sealed window chunk an event of this stream names by id: stated once
    /// per stream, right after the first event that names it.
    ContextChunk {
        /// The chunk's id (the BLAKE3 address its snapshot names).
        chunk: ChunkId,
        /// Its messages, oldest first, redacted and capped when first read: shared with the
        /// window's chunk unless redaction or the field cap changed one of them.
        messages: ChunkMessages,
    },
    /// A machine entered a state.
    FsmState {
        /// The machine.
        machine: String,
        /// The state entered.
        state: String,
        /// The state left; `None` on entry.
        from: Option<String>,
    },
    /// A turn of the brain finished.
    TurnCompleted {
        /// The turn's number.
        turn: u64,
        /// What it cost.
        usage: Usage,
        /// The assistant text of the turn, if the model wrote any (capped at
        /// [`EVENT_FIELD_CHARS_MAX`](crate::agent::limits::EVENT_FIELD_CHARS_MAX)).
        #[serde(default)]
        text: Option<String>,
        /// The names of the tools it called, in order.
        tool_calls: Vec<String>,
        /// Each call with its arguments and its answer, in order.
        #[serde(default)]
        calls: Vec<CallRecord>,
        /// Whether the window was compacted before it.
        compacted: bool,
    },
    /// A model call failed with a retryable error and is tried again after a wait.
    ModelRetried {
        /// The turn.
        turn: u64,
        /// The attempt that failed, from 1.
        attempt: u32,
        /// The wait before the next attempt, in milliseconds.
        delay_ms: u64,
        /// Whether the wait is the server's `Retry-After`.
        retry_after: bool,
        /// The failure's stable code.
        code: String,
        /// The failure.
        message: String,
    },
    /// The window was compacted.
    Compacted {
        /// The turn it happened before.
        turn: u64,
        /// The request's estimated tokens before.
        tokens_before: u64,
        /// The request's estimated tokens after.
        tokens_after: u64,
        /// Messages cut.
        cut: u64,
    },
    /// Turns were archived (`archive_thread`): they left the window for a note with the
    /// summary, and stay readable by number.
    ThreadArchived {
        /// The turn that archived them.
        turn: u64,
        /// The first turn archived.
        from_turn: u64,
        /// The last turn archived.
        to_turn: u64,
        /// Messages that left the window.
        messages: u64,
        /// The summary in the note that took their place.
        summary: String,
    },
    /// The agent sent a message to another process.
    MessageSent {
        /// The recipient.
        to_pid: String,
        /// The text, in full.
        text: String,
    },
    /// A message reached the agent's context.
    MessageReceived {
        /// The sender.
        from_pid: String,
        /// The text, in full.
        text: String,
        /// `normal` or `interrupt`.
        kind: String,
    },
    /// A tool call was refused.
    ToolRefused {
        /// The turn of the call.
        turn: u64,
        /// The tool.
        tool: String,
        /// The refusal's stable code.
        code: String,
        /// The refusal's sentence.
        message: String,
    },
    /// The incarnation ended.
    AgentFinished {
        /// How it ended (`exited`, `failed`, …).
        outcome: String,
        /// Its result, if it gave one.
        result: Option<serde_json::Value>,
        /// What all its turns cost.
        usage: Usage,
    },
}

impl AgentEvent {
    /// The `type` tag the event is written with (`agent_spawned`, `fsm_state`, …).
    pub fn type_name(&self) -> &'static str {
        match self {
            AgentEvent::AgentSpawned { .. } => "agent_spawned",
            AgentEvent::AgentTransition { .. } => "agent_transition",
            AgentEvent::ContextChunk { .. } => "context_chunk",
            AgentEvent::FsmState { .. } => "fsm_state",
            AgentEvent::TurnCompleted { .. } => "turn_completed",
            AgentEvent::ModelRetried { .. } => "model_retried",
            AgentEvent::Compacted { .. } => "compacted",
            AgentEvent::ThreadArchived { .. } => "thread_archived",
            AgentEvent::MessageSent { .. } => "message_sent",
            AgentEvent::MessageReceived { .. } => "message_received",
            AgentEvent::ToolRefused { .. } => "tool_refused",
            AgentEvent::AgentFinished { .. } => "agent_finished",
        }
    }
}

/// How an incarnation came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpawnVia {
    /// Started by the host.
    Root,
    /// A subagent spawned by another agent.
    Spawn,
    /// A fork of another agent.
    Fork,
    /// The successor of an exec.
    Exec,
    /// A machine's state.
    Fsm,
}

impl SpawnVia {
    /// The lowercase name, as written.
    pub fn as_str(self) -> &'static str {
        match self {
            SpawnVia::Root => "root",
            SpawnVia::Spawn => "spawn",
            SpawnVia::Fork => "fork",
            SpawnVia::Exec => "exec",
            SpawnVia::Fsm => "fsm",
        }
    }
}

/// Which kind of hand-over an [`AgentEvent::AgentTransition`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransitionKind {
    /// The agent became another profile.
    Exec,
    /// The agent copied itself.
    Fork,
    /// A machine moved to another state.
    Fsm,
}

impl TransitionKind {
    /// The lowercase name, as written.
    pub fn as_str(self) -> &'static str {
        match self {
            TransitionKind::Exec => "exec",
            TransitionKind::Fork => "fork",
            TransitionKind::Fsm => "fsm",
        }
    }
}

/// What a transition did with one module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleMoveRecord {
    /// The module (`history`, `tasks`, …).
    pub module: String,
    /// What happened to it (`kept`, `copied`, `dropped`, …).
    pub action: String,
}

/// One tool call of a turn: what the model sent and what it was answered. Exactly one of
/// `result` and `error` is set. Arguments, result and message are capped at
/// [`EVENT_FIELD_CHARS_MAX`](crate::agent::limits::EVENT_FIELD_CHARS_MAX) characters of JSON
/// text; a longer value is written as its JSON text cut, a string ending with
/// `… [N chars cut]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The tool's name, as the model called it.
    pub tool: String,
    /// The arguments, as the model sent them.
    pub arguments: serde_json::Value,
    /// The JSON the tool returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// The refusal (or the agent's failure) the model was answered with instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<CallError>,
    /// The calls a program made (`run_code`, `run_program`), in the order it made them, each
    /// recorded as a call of the turn is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallRecord>,
}

/// Why a call produced no result: the error the model read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallError {
    /// The stable code (`not_on_roster`, `invalid_tool_arguments`, …).
    pub code: String,
    /// The sentence.
    pub message: String,
}
