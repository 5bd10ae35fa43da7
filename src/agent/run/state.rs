//! An agent's durable state: what a turn-boundary checkpoint records, and what the loop keeps
//! between turns.

use super::archive::Archive;
use super::error::AgentError;
use crate::actors::Pid;
use crate::agent::brain::{Message, Usage};
use crate::agent::modules::Modules;
use crate::agent::window::WindowSnapshot;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The checkpoint format version this build writes.
pub const AGENT_CHECKPOINT_VERSION: u16 = 1;

/// Where an agent stands in a declared machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineAt {
    /// The machine.
    pub machine: String,
    /// The state it stands in.
    pub state: String,
}

/// The memories object an agent reads and writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryLink {
    /// The object.
    pub oid: String,
    /// Whether this agent created it (otherwise a fork was handed it by its forker).
    pub owned: bool,
    /// Whether this agent may write it (a read-only scope may not).
    pub writable: bool,
    /// Whether writes notify the other holders (inherited scope).
    pub notify: bool,
    /// Whether it is the profile's one instance (shared scope): every agent running the
    /// profile binds it, and none of them owns it.
    #[serde(default)]
    pub profile_bound: bool,
}

/// A module object an exec let go of, dropped once the checkpoint that names the successor is
/// committed (so a restart from the checkpoint before never finds it gone): released if the
/// process owns it, else only its handle goes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PendingDrop {
    /// By name, still bound (a dropped task list, notebook or program library).
    Name(String),
    /// By OID, its name already unbound (memories, whose name the successor may bind anew).
    Oid(String),
}

/// One incarnation's usage: accounting keys on the profile each incarnation actually ran.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncarnationCost {
    /// The incarnation's agent id.
    pub agent_id: String,
    /// The profile it ran.
    pub profile: String,
    /// What it spent (its turns and its compactions).
    pub usage: Usage,
    /// Turns it took.
    pub turns: u64,
}

/// A subagent this agent launched (spawned or forked).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subagent {
    /// `spawn` or `fork`.
    pub via: String,
    /// The profile or machine it was launched as.
    pub agent: String,
    /// The turn that launched it.
    pub turn: u64,
    /// Whether it shares this agent's memories object (inherited scope): it gets notices.
    pub linked_memories: bool,
    /// Whether its result has been collected by `wait_for_subagents`.
    pub collected: bool,
}

/// A fork whose copy of the conversation has not yet been handed over: recorded in the
/// checkpoint of the turn that made it, so a restart hands it over instead of losing it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingHandoff {
    /// The fork's pid.
    pub pid: String,
    /// What it is handed.
    pub start: ForkStart,
}

/// What a fork is handed at the end of the turn that made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForkStart {
    /// The forker's window at the end of the turn, with the turn counter.
    pub window: WindowSnapshot<Message>,
    /// The forker's profile.
    pub profile: String,
    /// The machine state the forker stands in, if any.
    pub machine: Option<MachineAt>,
    /// The modules, cloned (the program library with disjoint future ids; memories only when
    /// isolated — a linked scope shares the forker's object instead).
    pub modules: Modules,
    /// The forker's agent id.
    pub forker: String,
    /// The copy's agent id, chosen by the forker so its `agent_transition` can name it.
    pub agent_id: String,
    /// The turn it was forked at.
    pub turn: u64,
    /// What the copy should do.
    pub prompt: String,
    /// The forker's archive: the copy reads the turns archived before the fork as its forker
    /// does.
    #[serde(default)]
    pub archive: Archive,
}

/// An agent process's state between turns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    /// The current incarnation's agent id.
    pub agent_id: String,
    /// The incarnation (or launcher) before it.
    pub parent_agent_id: Option<String>,
    /// The profile the current incarnation runs.
    pub profile: String,
    /// Where it stands in a machine, if it does.
    pub machine: Option<MachineAt>,
    /// Its delegation depth.
    pub depth: u32,
    /// The conversation, as stored.
    pub window: WindowSnapshot<Message>,
    /// The modules' contents (memories as last read; a linked scope's truth is its object).
    pub modules: Modules,
    /// Usage per incarnation, oldest first; the last is the current one.
    pub costs: Vec<IncarnationCost>,
    /// The memories object, while the agent holds memories.
    pub memory_link: Option<MemoryLink>,
    /// Usage per profile of the subtrees of collected subagents (read from their results).
    #[serde(default)]
    pub collected_costs: BTreeMap<String, Usage>,
    /// Subagents by pid.
    pub subagents: BTreeMap<String, Subagent>,
    /// Forks not yet handed their start.
    pub pending_handoffs: Vec<PendingHandoff>,
    /// The turns `archive_thread` took out of the window.
    #[serde(default)]
    pub archive: Archive,
    /// Module objects an exec let go of, and subagent results kept across a merge, not yet
    /// dropped.
    #[serde(default)]
    pub pending_drops: Vec<PendingDrop>,
    /// The ending the last checkpointed turn declared: a restart from that checkpoint ends the
    /// session with it instead of asking the brain for another turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending: Option<DeclaredEnding>,
}

/// A session's declared end, as its checkpoint records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeclaredEnding {
    /// The result it finishes with.
    pub result: Option<serde_json::Value>,
    /// The forks declared in the finishing turn, which run to completion first.
    pub forks: Vec<Pid>,
}

impl AgentState {
    /// The checkpoint bytes.
    pub fn encode(&self) -> Result<Vec<u8>, AgentError> {
        serde_json::to_vec(&(AGENT_CHECKPOINT_VERSION, self))
            .map_err(|e| AgentError::Corrupt { message: format!("cannot encode the agent state: {e}") })
    }

    /// Reads checkpoint bytes back.
    pub fn decode(bytes: &[u8]) -> Result<AgentState, AgentError> {
        let (version, state): (u16, AgentState) = serde_json::from_slice(bytes)
            .map_err(|e| AgentError::Corrupt { message: format!("unreadable agent checkpoint: {e}") })?;
        if version != AGENT_CHECKPOINT_VERSION {
            return Err(AgentError::Corrupt {
                message: format!(
                    "agent checkpoint version {version}; this build reads {AGENT_CHECKPOINT_VERSION}"
                ),
            });
        }
        Ok(state)
    }

    /// Usage summed per profile.
    pub fn cost_by_profile(&self) -> BTreeMap<String, Usage> {
        let mut by: BTreeMap<String, Usage> = BTreeMap::new();
        for c in &self.costs {
            let entry = by.entry(c.profile.clone()).or_default();
            *entry = add_usage(entry, &c.usage);
        }
        by
    }

    /// Usage per profile over this process and the subagents it collected.
    pub fn subtree_by_profile(&self) -> BTreeMap<String, Usage> {
        let mut by = self.cost_by_profile();
        for (profile, usage) in &self.collected_costs {
            let entry = by.entry(profile.clone()).or_default();
            *entry = add_usage(entry, usage);
        }
        by
    }

    /// Adds usage to the current incarnation.
    pub fn charge(&mut self, usage: &Usage) {
        if let Some(current) = self.costs.last_mut() {
            current.usage = add_usage(&current.usage, usage);
        }
    }
}

/// `a + b` for accounting: token counts add, and a cost reported by either side is counted
/// (an unreported cost adds nothing rather than making the sum unknown).
pub fn add_usage(a: &Usage, b: &Usage) -> Usage {
    let cost_micros = match (a.cost_micros, b.cost_micros) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0).saturating_add(y.unwrap_or(0))),
    };
    Usage { cost_micros, ..a.plus(b) }
}
