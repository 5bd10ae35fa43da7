//! Agents on kernel processes: the turn loop and everything it applies.
//!
//! Every agent process runs the one agent image ([`AGENT_IMAGE`]); its goal is an
//! [`AgentLaunch`] naming the profile or machine it starts as. An [`AgentHost`] holds what
//! agent processes share (the checked configuration, a [`BrainProvider`], the window chunk
//! store, telemetry) and makes the image. See `docs/agents.md`.
//!
//! - `program.rs`: the turn loop; `start.rs`: fresh, fork and restart starts.
//! - `calls.rs`: executing a turn's calls; `tools.rs`: the agent calls' schemas and offers.
//! - `turn.rs`: turn finality (declarations applied at the turn's end).
//! - `succession.rs`: exec and transition_state; `fork.rs`: fork and its handoff;
//!   `finish.rs`: ending a session.
//! - `memories.rs`: module calls and the memories object by scope; `inbox.rs`: messages.
//! - `persist.rs`, `checkpoint.rs`: modules as kernel objects and the turn checkpoint.
//! - `compact.rs`: compaction before a turn; `prompt.rs`: the system prompt slot.
//! - `oversize.rs`: a turn's text and calls bounded before the window records them.
//! - `state.rs`: the durable agent state; `launch.rs`: the goal document.

mod archive;
mod brains;
mod call_group;
mod calls;
mod checkpoint;
mod code;
mod compact;
mod cost;
mod drops;
mod error;
mod finish;
mod fork;
mod host;
mod inbox;
mod launch;
mod memories;
mod oversize;
pub mod persist;
mod program;
mod prompt;
mod spawned;
mod start;
mod state;
mod succession;
mod tools;
mod turn;
mod watch;

pub use crate::tools::AgentTool;
pub use archive::{Archive, ArchivedTurn, TurnSpan, turn_spans};
pub use brains::{BrainSetupError, config_brains};
pub use code::PROGRAM_FAILED;
pub use error::AgentError;
pub use host::{AGENT_IMAGE, AgentHost, AgentIdentity, BrainProvider, RootBudget, read_scripts};
pub use launch::{AgentLaunch, ForkOrigin};
pub use memories::MEMORIES_CHANNEL;
pub use program::AgentProgram;
pub use prompt::render as render_system_prompt;
pub(crate) use start::new_agent_id;
pub use start::{FORK_CHANNEL, RELEASE_CHANNEL};

/// Waits for a held launch's release.
pub(crate) async fn start_receive_release(
    ctx: &crate::actors::runtime::ProcessContext,
) -> Result<(), AgentError> {
    start::receive_on(ctx, RELEASE_CHANNEL).await.map(|_| ())
}
pub use state::{
    AGENT_CHECKPOINT_VERSION, AgentState, ForkStart, IncarnationCost, MachineAt, MemoryLink, Subagent,
    add_usage,
};
pub use tools::{all_tool_names, offered_tools};
pub use turn::{Declarations, DeclaredArchive, DeclaredFork, Resolved, Succession};
