//! What an agent process is launched as: its kernel goal, a small JSON document.
//!
//! Every agent process runs on the one agent image, so the goal says which agent it is: the
//! profile or machine it starts as, its prompt, its delegation depth, and for a fork where its
//! copy of the conversation comes from. A person reading `agentvisor ps` sees the same
//! document.

use super::error::AgentError;
use serde::{Deserialize, Serialize};

/// An agent process's goal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentLaunch {
    /// The profile or machine id it starts as (for a fork: the forker's current profile).
    pub agent: String,
    /// The opening prompt (a fork's: what the copy should do that its forker will not).
    pub prompt: String,
    /// Its delegation depth: 0 for a root, one more than its launcher's otherwise.
    #[serde(default)]
    pub depth: u32,
    /// The agent that launched it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<String>,
    /// The launching process's pid, if any: where `send_message` to `parent` goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_pid: Option<String>,
    /// Set for a seat started from a prior conversation source: the agent process (pid) whose
    /// last checkpointed conversation the new session starts from. The source is not
    /// continued; the new session is its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Held: the agent takes no turn (and emits nothing) until the host releases it with
    /// [`super::AgentHost::release`]. A rig launches native seats held, so a seat does no
    /// work before its token is durably recorded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
    /// Set for a fork: where its copy of the conversation comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<ForkOrigin>,
}

/// Where a fork comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkOrigin {
    /// The forker's agent id.
    pub of_agent: String,
    /// The forker's turn that made the fork.
    pub turn: u64,
}

impl AgentLaunch {
    /// A root or subagent launch of `agent` with `prompt`.
    pub fn new(agent: impl Into<String>, prompt: impl Into<String>) -> AgentLaunch {
        AgentLaunch {
            agent: agent.into(),
            prompt: prompt.into(),
            depth: 0,
            parent_agent_id: None,
            parent_pid: None,
            source: None,
            held: false,
            fork: None,
        }
    }

    /// The kernel goal text.
    pub fn to_goal(&self) -> String {
        // Serializing a struct of strings and integers cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The kernel goal text, or why the prompt does not fit in one: a goal holds at most
    /// [`GOAL_BYTES_MAX`](crate::actors::limits::GOAL_BYTES_MAX) bytes, and the launch record
    /// around the prompt takes part of them. The refusal speaks of the prompt, which is what
    /// the launcher wrote.
    pub fn checked_goal(&self) -> Result<String, String> {
        let goal = self.to_goal();
        let max = crate::actors::limits::GOAL_BYTES_MAX;
        if goal.len() <= max {
            return Ok(goal);
        }
        let record = goal.len().saturating_sub(self.prompt.len());
        Err(format!(
            "the prompt is {} bytes; at most {} bytes fit here (a launch holds {max} bytes, and              its record takes {record}); shorten the prompt",
            self.prompt.len(),
            max.saturating_sub(record),
        ))
    }

    /// Reads a goal back.
    pub fn from_goal(goal: &str) -> Result<AgentLaunch, AgentError> {
        serde_json::from_str(goal)
            .map_err(|e| AgentError::BadLaunch { message: format!("the goal is not an agent launch: {e}") })
    }
}
