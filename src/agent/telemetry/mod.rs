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
//! is re-stated in full on that agent's stream, never pointed at in another stream. A fork's
//! or exec successor's `agent_spawned` carries how many messages it inherited and, in full,
//! the opening messages it did not; `message_sent` and `message_received` carry the text.
//!
//! # The file
//!
//! [`Telemetry::with_jsonl`] appends each record as one line of JSON to a file, by convention
//! [`EVENTS_FILE`] in a state directory, which `agentvisor events` reads. [`read_jsonl`] and
//! [`EventFileReader`] read it back. `docs/telemetry.md` lists the events and their fields.

mod error;
mod event;
pub mod limits;
mod read;
mod sink;
mod summary;
#[expect(clippy::module_inception, reason = "the type is the module's subject")]
mod telemetry;

pub use error::TelemetryError;
pub use event::{AgentEvent, EventRecord, ModuleMoveRecord, SpawnVia, TransitionKind};
pub use limits::{BROADCAST_CAPACITY, EVENT_LINE_BYTES_MAX, RECORDS_MAX};
pub use read::{EventFileReader, EventLine, read_jsonl};
pub use summary::SUMMARY_TEXT_CHARS_MAX;
pub use telemetry::{ModelProgress, Telemetry};

/// The agent event file's name inside a state directory.
pub const EVENTS_FILE: &str = "agent-events.jsonl";
