//! The agent layer's errors: what ends an agent's process, and what a tool call is refused with.

use crate::actors::runtime::calls::ToolError;
use crate::actors::runtime::program::ProgramError;
use crate::agent::brain::BrainError;
use crate::agent::compaction::CompactionError;
use crate::agent::modules::ModuleError;
use crate::agent::window::{RestoreError, SnapshotError, WindowError};

/// Why an agent's program stopped with a failure (its process ends `failed`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The goal is not an agent launch, or names something the configuration lacks.
    #[error("bad agent launch: {message}")]
    BadLaunch {
        /// What is wrong.
        message: String,
    },
    /// The configuration names a brain no brain was built for.
    #[error("no brain is registered for brain id {brain:?}")]
    NoBrain {
        /// The brain id.
        brain: String,
    },
    /// The brain failed.
    #[error("the brain failed on turn {turn}: {source}")]
    Brain {
        /// The turn.
        turn: u64,
        /// The brain's error.
        source: BrainError,
    },
    /// The brain's task panicked or was cancelled.
    #[error("the brain's task stopped on turn {turn}: {message}")]
    BrainTask {
        /// The turn.
        turn: u64,
        /// What the task's join reported.
        message: String,
    },
    /// Compaction failed.
    #[error("compaction failed: {0}")]
    Compaction(#[from] CompactionError),
    /// The window refused an edit.
    #[error(transparent)]
    Window(#[from] WindowError),
    /// A window could not be snapshotted.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// A window could not be restored.
    #[error(transparent)]
    Restore(#[from] RestoreError),
    /// A kernel call the loop itself makes (not a model's tool call) was refused.
    #[error("kernel call {call} refused: {error}")]
    Kernel {
        /// The call.
        call: &'static str,
        /// The refusal.
        error: ToolError,
    },
    /// A checkpoint or module record could not be read back.
    #[error("corrupt agent record: {message}")]
    Corrupt {
        /// What is wrong.
        message: String,
    },
    /// A limit the agent keeps itself ran out (its turns; a profile's tokens or cost).
    #[error("budget {dimension} exhausted: {used} used of {limit}")]
    BudgetExhausted {
        /// The dimension (`turns`, `tokens`, `cost_micros`).
        dimension: &'static str,
        /// The limit.
        limit: u64,
        /// What was used.
        used: u64,
    },
    /// The model sent malformed tool calls (arguments not JSON, unknown tools) turn after turn.
    #[error(
        "malformed_tool_calls: {turns} turns in a row held a malformed tool call (arguments not valid JSON, or a tool that does not exist); the model is not correcting them"
    )]
    MalformedTurns {
        /// Consecutive malformed turns.
        turns: u32,
    },
    /// The model made the same call with the same arguments again after the warning.
    #[error(
        "repeated_tool_call: the model called {tool} with the same arguments {times} times in a row, after a warning"
    )]
    RepeatedToolCall {
        /// The tool.
        tool: String,
        /// Times in a row.
        times: u32,
    },
    /// An external (Claude Code, Codex) session failed: it could not start, reported an
    /// error, exited non-zero, or timed out. The message keeps the end of its standard error.
    #[error("{message}")]
    External {
        /// What happened.
        message: String,
    },
    /// The model kept going past the turn bound.
    #[error("the agent took {turns} turns without ending; the bound is {max}")]
    TooManyTurns {
        /// Turns taken.
        turns: u64,
        /// The bound.
        max: u64,
    },
}

impl AgentError {
    /// A kernel refusal of `call`.
    pub(crate) fn kernel(call: &'static str) -> impl FnOnce(ToolError) -> AgentError {
        move |error| AgentError::Kernel { call, error }
    }
}

impl From<AgentError> for ProgramError {
    fn from(e: AgentError) -> ProgramError {
        match e {
            AgentError::BudgetExhausted { .. } => ProgramError::budget_exhausted(e.to_string()),
            e => ProgramError::new(e.to_string()),
        }
    }
}

/// A module refusal as the one tool error every caller answers with: its stable code and
/// its sentence.
impl From<ModuleError> for ToolError {
    fn from(e: ModuleError) -> ToolError {
        ToolError::new(e.code(), e.to_string())
    }
}
