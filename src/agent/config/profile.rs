//! Agent profiles: what an agent is (brain, window, prompt, roster, capabilities, compaction).

use super::budget::{AgentBudget, Guards, RawBudget, RawGuards};
use super::capability::{CapabilitySet, RawCapabilities};
use super::ids::{BrainId, ProfileId, Target};
use super::prompt::PromptTemplate;
use crate::actors::kernel::restart::{RestartPolicy, Supervision};
use serde::Deserialize;
use std::num::NonZeroU32;

/// One entry of the `profiles` section as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProfile {
    /// The profile's id, which rosters name (required; unique among profiles and machines).
    pub id: Option<String>,
    /// One or two sentences on what the profile is for, shown to agents whose roster names it.
    pub description: Option<String>,
    /// What its agents run: `native` (default), `claude-code` or `codex`. An external
    /// profile has no brain, window, prompt, compaction or guards; its `cli` table says how
    /// the session starts.
    pub runtime: Option<super::external::ProfileRuntime>,
    /// External profiles only: how the command-line session is started.
    pub cli: Option<super::external::RawCli>,
    /// The id of the brain (model) that produces its turns (required).
    pub brain: Option<String>,
    /// The window limit, in tokens: compaction keeps the conversation under it (required).
    pub window_tokens: Option<u64>,
    /// The system-prompt template (default
    /// [`DEFAULT_SYSTEM_PROMPT`](super::prompt::DEFAULT_SYSTEM_PROMPT)).
    pub system_prompt: Option<String>,
    /// The delegation roster: the profile and machine ids this agent may spawn as subagents
    /// or become with `exec` (default empty).
    #[serde(default)]
    pub roster: Vec<String>,
    /// The capability set (default: `history` alone).
    #[serde(default)]
    pub capabilities: RawCapabilities,
    /// How the conversation is kept under the window (default: summarize with the profile's
    /// own brain at 80%).
    #[serde(default)]
    pub compaction: RawCompaction,
    /// What an agent of this profile may spend (default: no limit of its own; a root launch
    /// gets the default cap).
    pub budget: Option<RawBudget>,
    /// When a model that repeats itself or keeps sending malformed calls is stopped.
    pub guards: Option<RawGuards>,
    /// When an agent of this profile launched as a child is restarted after it ends:
    /// `permanent`, `transient` or `temporary` (default: never).
    pub restart: Option<RestartPolicy>,
    /// How an agent of this profile restarts its children: `{strategy, intensity,
    /// period_ms}` (default `one_for_one`, 1 restart per 5000 ms).
    pub supervision: Option<Supervision>,
}

/// How a window over its limit is brought back under it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionKind {
    /// `summarize`: older turns are replaced by a summary a brain writes.
    #[default]
    Summarize,
    /// `truncate`: the oldest turns are dropped.
    Truncate,
}

/// A profile's `compaction` table as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCompaction {
    /// `summarize` (default) or `truncate`.
    pub strategy: Option<CompactionKind>,
    /// `summarize` only: the id of the brain that writes summaries (default: the profile's own
    /// brain). A separate brain on a large-window model lets an agent whose window shrank on
    /// an exec compact what it inherited.
    pub summarizer: Option<String>,
    /// Compact when the window holds more than this percentage of its limit, 1 to 100
    /// (default [`crate::agent::limits::COMPACTION_TRIGGER_PERCENT_DEFAULT`]).
    pub trigger_percent: Option<u64>,
}

/// A checked profile. Its brain, summarizer and roster ids resolve in the configuration it
/// was checked with; its window is at least one token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    pub(super) id: ProfileId,
    pub(super) description: Option<String>,
    pub(super) brain: BrainId,
    pub(super) window_tokens: NonZeroU32,
    pub(super) system_prompt: PromptTemplate,
    pub(super) roster: Vec<Target>,
    pub(super) capabilities: CapabilitySet,
    pub(super) compaction: Compaction,
    pub(super) budget: AgentBudget,
    pub(super) guards: Guards,
    pub(super) restart: RestartPolicy,
    pub(super) supervision: Option<Supervision>,
}

impl Profile {
    /// The profile's id.
    pub fn id(&self) -> &ProfileId {
        &self.id
    }

    /// Its description, if it has one.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The brain that produces its turns.
    pub fn brain(&self) -> &BrainId {
        &self.brain
    }

    /// The window limit, in tokens.
    pub fn window_tokens(&self) -> NonZeroU32 {
        self.window_tokens
    }

    /// The system-prompt template.
    pub fn system_prompt(&self) -> &PromptTemplate {
        &self.system_prompt
    }

    /// The delegation roster, in the order written (no duplicates).
    pub fn roster(&self) -> &[Target] {
        &self.roster
    }

    /// The roster entry with this id, if any: the check an `exec` or `spawn_subagent` target
    /// goes through.
    pub fn roster_target(&self, id: &str) -> Option<&Target> {
        self.roster.iter().find(|t| t.as_str() == id)
    }

    /// The capability set.
    pub fn capabilities(&self) -> &CapabilitySet {
        &self.capabilities
    }

    /// The compaction strategy.
    pub fn compaction(&self) -> &Compaction {
        &self.compaction
    }

    /// Its budget (each dimension `None` where the profile sets none).
    pub fn budget(&self) -> &AgentBudget {
        &self.budget
    }

    /// Its guards.
    pub fn guards(&self) -> &Guards {
        &self.guards
    }

    /// Its restart policy when launched as a child.
    pub fn restart(&self) -> RestartPolicy {
        self.restart
    }

    /// How it supervises its children (`None`: the kernel's default).
    pub fn supervision(&self) -> Option<Supervision> {
        self.supervision
    }
}

/// A checked compaction strategy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compaction {
    pub(super) strategy: CompactionStrategy,
    pub(super) trigger_percent: u8,
}

impl Compaction {
    /// What compaction does.
    pub fn strategy(&self) -> &CompactionStrategy {
        &self.strategy
    }

    /// Compact when the window holds more than this percentage of its limit (1 to 100).
    pub fn trigger_percent(&self) -> u8 {
        self.trigger_percent
    }
}

/// What compaction does, with the brain it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompactionStrategy {
    /// Older turns are replaced by a summary.
    Summarize {
        /// The brain that writes it: the `summarizer` given, or the profile's own brain.
        summarizer: BrainId,
    },
    /// The oldest turns are dropped.
    Truncate,
}
