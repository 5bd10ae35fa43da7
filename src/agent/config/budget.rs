//! Budgets and guards on profiles: what an agent may spend, and when a model that repeats
//! itself or keeps sending malformed calls is stopped.
//!
//! A budget's dimensions map onto the kernel's [`Budget`]: `tokens`, `cost_usd` (a decimal
//! dollar string read exactly into micro-dollars, `cost_micros`), `tool_calls`,
//! `wall_time_ms`, `live_children`. `turns` has no kernel dimension: the agent counts its own
//! turns and ends `budget_exhausted` when they run out.

use crate::actors::kernel::budget::Budget;
use serde::Deserialize;

/// A profile's `budget` table as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBudget {
    /// Model tokens, input and output together.
    pub tokens: Option<u64>,
    /// Cost in dollars as a decimal string (`"0.50"`), at most six decimals.
    pub cost_usd: Option<String>,
    /// Kernel calls the agent makes (spawns, messages, waits, object writes).
    pub tool_calls: Option<u64>,
    /// Model turns.
    pub turns: Option<u64>,
    /// Wall-clock milliseconds since the process started.
    pub wall_time_ms: Option<u64>,
    /// Live descendants at once.
    pub live_children: Option<u64>,
}

/// A profile's `guards` table as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGuards {
    /// Consecutive turns with a malformed tool call (arguments not JSON, an unknown tool)
    /// after which the agent fails (default
    /// [`crate::agent::limits::MALFORMED_TURNS_DEFAULT`]).
    pub malformed_turns: Option<u64>,
    /// The same call with the same arguments this many times in a row draws a warning; once
    /// more fails the agent (default [`crate::agent::limits::REPEATED_CALLS_DEFAULT`]).
    pub repeated_calls: Option<u64>,
}

/// A checked budget: each limit `None` (not set here) or a value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgentBudget {
    /// The kernel dimensions.
    pub kernel: Budget,
    /// Model turns (an agent-level count).
    pub turns: Option<u64>,
}

impl AgentBudget {
    /// No limit set.
    pub const NONE: AgentBudget = AgentBudget { kernel: Budget::UNLIMITED, turns: None };

    /// Each dimension from `self` if set, else from `fallback`.
    pub fn or(&self, fallback: &AgentBudget) -> AgentBudget {
        let mut kernel = self.kernel;
        for d in crate::actors::kernel::budget::Dimension::ALL {
            if kernel.get(d).is_none() {
                kernel.set(d, fallback.kernel.get(d));
            }
        }
        AgentBudget { kernel, turns: self.turns.or(fallback.turns) }
    }

    /// Whether no dimension is limited.
    pub fn is_unlimited(&self) -> bool {
        self.kernel == Budget::UNLIMITED && self.turns.is_none()
    }
}

/// Checked guards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guards {
    /// Consecutive malformed turns that fail the agent.
    pub malformed_turns: u32,
    /// Identical consecutive calls that draw the warning; one more fails the agent.
    pub repeated_calls: u32,
}

impl Default for Guards {
    fn default() -> Guards {
        Guards {
            malformed_turns: crate::agent::limits::MALFORMED_TURNS_DEFAULT,
            repeated_calls: crate::agent::limits::REPEATED_CALLS_DEFAULT,
        }
    }
}
