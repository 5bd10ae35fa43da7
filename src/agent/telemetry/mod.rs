//! Agent telemetry: typed agent events, one stream per incarnation, and a JSONL file.
//!
//! An agent (its turn loop, its exec and fork, its machine) reports what happens to it as an
//! [`AgentEvent`] through a shared [`Telemetry`], which numbers and stamps it into an
//! [`EventRecord`] naming the process (`pid`) and the incarnation (`agent_id`) whose stream
//! it is on.
//!
//! # The per-agent stream rule
//!
//! An incarnation's stream is complete on its own: every context message an event refers to
//! is re-stated on that agent's stream, never pointed at in another stream. A fork's or exec
//! successor's `agent_spawned` names the window it inherited ([`WindowContext`]: sealed chunks
//! by id, the tail in full) and carries, in full, the opening messages it did not inherit; the
//! `context_chunk` records after it state each chunk's content, once per stream
//! ([`Telemetry::emit_spawn`]), and [`rebuild_context`] reads the starting context back from
//! the stream alone. `message_sent` and `message_received` carry the text.
//!
//! # Successions
//!
//! A succession's `agent_transition` (on the outgoing stream) and the new incarnation's
//! `agent_spawned` are emitted as consecutive records that nothing comes between.
//!
//! # Bounds and secrets
//!
//! What the model said and did (a turn's text, each call's arguments and answer) is capped at
//! [`EVENT_FIELD_CHARS_MAX`](crate::agent::limits::EVENT_FIELD_CHARS_MAX) characters per
//! field. Before an event is kept, written, broadcast or logged, every secret the
//! [`Telemetry`] was given ([`Telemetry::redact`]) is replaced by [`REDACTED`] in every one of
//! its texts; redaction comes before the cap, so a cut never leaves part of a secret.
//!
//! # The file
//!
//! [`Telemetry::with_jsonl`] appends each record as one line of JSON to a file, by convention
//! [`EVENTS_FILE`] in a state directory, which `agentvisor events` reads. [`read_jsonl`] and
//! [`EventFileReader`] read it back. `docs/telemetry.md` lists the events and their fields.

mod answered;
mod bound;
mod chunk_messages;
mod context;
mod error;
mod event;
pub mod limits;
mod read;
mod redact;
mod sink;
mod summary;
#[expect(clippy::module_inception, reason = "the type is the module's subject")]
mod telemetry;

pub use answered::CallAnswered;
pub use bound::{cap_text, cap_value};
pub use chunk_messages::ChunkMessages;
pub use context::{ContextError, ContextSource, WindowContext, rebuild_context};
pub use error::TelemetryError;
pub use event::{AgentEvent, CallError, CallRecord, EventRecord, ModuleMoveRecord, SpawnVia, TransitionKind};
pub use limits::{
    BROADCAST_CAPACITY, EVENT_LINE_BYTES_MAX, RECORDS_BYTES_MAX, RECORDS_MAX, STATED_CHUNKS_MAX,
    WRITER_QUEUE_MAX,
};
pub use read::{EventFileReader, EventLine, last_seq, read_jsonl};
pub use redact::{REDACTED, Redactor};
pub use summary::SUMMARY_TEXT_CHARS_MAX;
pub use telemetry::{EventOn, ModelProgress, Telemetry};

/// The agent event file's name inside a state directory.
pub const EVENTS_FILE: &str = "agent-events.jsonl";
