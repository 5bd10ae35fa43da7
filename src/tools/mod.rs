//! The tool surface: every tool an LLM, a script, an MCP client or a program calls, in one
//! registry ([`registry`]).
//!
//! Three families, each tool defined once with its name, the description a model reads, the
//! JSON Schema of its arguments (derived from the typed argument struct with schemars) and
//! the one conversion of JSON arguments into a typed call ([`parse`]):
//!
//! - the kernel tools ([`ToolName::ALL`]): the process tools (`spawn_child_process`,
//!   `fork_child_process`, `list_child_processes`, `wait_child_process`,
//!   `signal_child_process`, `merge_child_memory`, `process_exit`), the object-memory tools
//!   (`create_object`, `read_object`, `write_object`, `list_objects`, `checkpoint_object`,
//!   `delegate_object`, `load_skills`) and the mailbox tools (`send_process_message`,
//!   `read_process_messages`, `receive_process_messages`), whose arguments ([`args`],
//!   [`fork_args`], [`object_args`], [`message_args`]) are exactly the process-kernel
//!   specification's and become the kernel's typed [`Call`];
//! - the agent calls ([`AgentTool`]: `finish`, `spawn_subagent`, `wait_for_subagents`,
//!   `send_message`, `fork`, `exec`, `transition_state`), which only an agent's turn loop runs;
//! - the module tools ([`crate::agent::modules::ModuleTool`]: tasks, notebook, memories,
//!   program library).
//!
//! The process skill of the specification ([`PROCESS_SKILL_NAME`], its nine tools) is offered
//! to agents whose profile enables `child_processes`.
//!
//! Dispatch ([`dispatch_as`] for the host acting as a process, [`dispatch_ctx`] for a
//! program) answers JSON in every case: the kernel's result object, or
//! `{"error": {"code", "message"}}`. Malformed input is refused with `invalid_arguments` (the
//! message names the field) or `unknown_tool`; nothing here panics. Every refusal is one
//! [`crate::actors::runtime::calls::ToolError`] with a stable code.
//!
//! Batches ([`dispatch_batch_as`], [`dispatch_batch_ctx`]) follow the specification's rule,
//! written once in the kernel ([`BatchRule`]): a wait that suspended the caller ends the
//! batch, and every later call answers `batch_ended` without running.

pub mod agent;
pub mod args;
mod batch;
mod dispatch;
mod examples;
pub mod fork_args;
pub mod message_args;
pub mod object_args;
pub mod registry;
mod schema;
mod skill;
mod spec;

pub use agent::{AgentCall, AgentTool};
pub use batch::BatchCall;
pub(crate) use dispatch::{args_object, from_args, json_kind};
pub use dispatch::{
    dispatch_as, dispatch_batch_as, dispatch_batch_ctx, dispatch_ctx, error_json, parse_call, reply_json,
    result_json,
};
pub use examples::examples;
pub use registry::{Family, ParsedCall, Tool, parse};
pub use schema::{tool_schema, tool_schemas};
pub use skill::{
    PROCESS_SKILL_DESCRIPTION, PROCESS_SKILL_EXTRA_TOOLS, PROCESS_SKILL_NAME, PROCESS_SKILL_TOOLS,
    PROCESS_SKILL_WORKFLOW,
};
pub use spec::ToolSpec;
pub(crate) use spec::parameters_of;

use crate::actors::runtime::calls::Call;
pub use crate::actors::runtime::calls::{BATCH_ENDED, BatchRule};

/// `input` quoted for an error message, cut to
/// [`crate::actors::limits::QUOTED_INPUT_CHARS_MAX`] characters (with `…` and its full length
/// when cut).
pub fn quote(input: &str) -> String {
    match crate::actors::limits::excerpt_parts(input) {
        (all, None) => format!("{all:?}"),
        (prefix, Some(count)) => format!("{prefix:?}… ({count} characters)"),
    }
}

/// The error code of a call the caller is not offered: an agent call made by a process that
/// is not an agent, or a tool the agent's profile does not enable.
pub const NOT_OFFERED: &str = "not_offered";

/// The error code of malformed arguments (bad JSON shape, a missing or unknown field, a bad
/// id). The message names the field. The kernel's code, spelled once.
pub use crate::actors::kernel::codes::INVALID_ARGUMENTS;

/// The error code of a tool name that is not one of [`ToolName::ALL`].
pub const UNKNOWN_TOOL: &str = "unknown_tool";

/// The error code of a batch longer than [`crate::actors::limits::BATCH_CALLS_MAX`].
pub const BATCH_TOO_LARGE: &str = "batch_too_large";

/// The error code of a result that could not be rendered as JSON (never expected).
pub const INTERNAL: &str = "internal";

/// The kernel tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolName {
    /// `spawn_child_process`.
    Spawn,
    /// `fork_child_process`.
    Fork,
    /// `list_child_processes`.
    List,
    /// `wait_child_process`.
    Wait,
    /// `signal_child_process`.
    Signal,
    /// `merge_child_memory`.
    Merge,
    /// `process_exit`.
    Exit,
    /// `create_object`.
    CreateObject,
    /// `read_object`.
    ReadObject,
    /// `write_object`.
    WriteObject,
    /// `list_objects`.
    ListObjects,
    /// `checkpoint_object`.
    CheckpointObject,
    /// `delegate_object`.
    DelegateObject,
    /// `load_skills`.
    LoadSkills,
    /// `send_process_message`.
    Send,
    /// `read_process_messages`.
    Read,
    /// `receive_process_messages`.
    Receive,
}

impl ToolName {
    /// Every tool, in the order [`tool_schemas`] lists them: process, object, mailbox tools.
    pub const ALL: [ToolName; 17] = [
        ToolName::Spawn,
        ToolName::Fork,
        ToolName::List,
        ToolName::Wait,
        ToolName::Signal,
        ToolName::Merge,
        ToolName::Exit,
        ToolName::CreateObject,
        ToolName::ReadObject,
        ToolName::WriteObject,
        ToolName::ListObjects,
        ToolName::CheckpointObject,
        ToolName::DelegateObject,
        ToolName::LoadSkills,
        ToolName::Send,
        ToolName::Read,
        ToolName::Receive,
    ];

    /// The tool's JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Spawn => "spawn_child_process",
            ToolName::Fork => "fork_child_process",
            ToolName::List => "list_child_processes",
            ToolName::Wait => "wait_child_process",
            ToolName::Signal => "signal_child_process",
            ToolName::Merge => "merge_child_memory",
            ToolName::Exit => "process_exit",
            ToolName::CreateObject => "create_object",
            ToolName::ReadObject => "read_object",
            ToolName::WriteObject => "write_object",
            ToolName::ListObjects => "list_objects",
            ToolName::CheckpointObject => "checkpoint_object",
            ToolName::DelegateObject => "delegate_object",
            ToolName::LoadSkills => "load_skills",
            ToolName::Send => "send_process_message",
            ToolName::Read => "read_process_messages",
            ToolName::Receive => "receive_process_messages",
        }
    }

    /// Looks a tool up by its JSON name.
    pub fn parse(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The tool a typed call belongs to (`None` for bookkeeping calls, which are not tools).
    pub fn of(call: &Call) -> Option<ToolName> {
        ToolName::parse(call.name())
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
