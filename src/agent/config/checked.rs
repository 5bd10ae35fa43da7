//! A configuration that passed the launch check.

use super::brain_ref::BrainSpec;
use super::budget::AgentBudget;
use super::capability::{Capability, MemoryScope};
use super::external::ExternalProfile;
use super::ids::{BrainId, MachineId, ProfileId, Target};
use super::machine::{Machine, State};
use super::profile::{CompactionStrategy, Profile};
use super::telemetry::TelemetrySettings;
use std::collections::BTreeMap;

/// A configuration every value of which can be honoured as written. Only
/// [`check`](super::check) makes one, so holding one proves:
///
/// - every id is valid and unique (profiles and machines in one namespace);
/// - every brain, summarizer, roster and state reference resolves;
/// - `exec` only with a non-empty roster, and never on a profile a machine runs as a state;
/// - `fork` only with `subagents`;
/// - `transition_state` only on a profile some machine runs as a state, and on every profile
///   a machine runs as a state that has moves out of it;
/// - every machine has states, an entry among them, and reaches all of them from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedConfig {
    brains: BTreeMap<BrainId, BrainSpec>,
    profiles: BTreeMap<ProfileId, Profile>,
    externals: BTreeMap<ProfileId, ExternalProfile>,
    machines: BTreeMap<MachineId, Machine>,
    default_budget: AgentBudget,
    telemetry: TelemetrySettings,
}

impl CheckedConfig {
    pub(super) fn new(
        brains: Vec<BrainSpec>,
        profiles: Vec<Profile>,
        externals: Vec<ExternalProfile>,
        machines: Vec<Machine>,
        default_budget: AgentBudget,
        telemetry: TelemetrySettings,
    ) -> Self {
        CheckedConfig {
            default_budget,
            telemetry,
            brains: brains.into_iter().map(|b| (b.id().clone(), b)).collect(),
            profiles: profiles.into_iter().map(|p| (p.id().clone(), p)).collect(),
            externals: externals.into_iter().map(|p| (p.id().clone(), p)).collect(),
            machines: machines.into_iter().map(|m| (m.id().clone(), m)).collect(),
        }
    }

    /// The cap a root launch gets in each dimension neither a flag nor its profile sets: the
    /// configuration's `default_budget`, or [`crate::agent::limits::DEFAULT_ROOT_BUDGET`].
    pub fn default_budget(&self) -> &AgentBudget {
        &self.default_budget
    }

    /// The `telemetry` section: the secrets agent events never carry.
    pub fn telemetry(&self) -> &TelemetrySettings {
        &self.telemetry
    }

    /// The brains, by id.
    pub fn brains(&self) -> impl Iterator<Item = &BrainSpec> {
        self.brains.values()
    }

    /// The brain with this id.
    pub fn brain(&self, id: &str) -> Option<&BrainSpec> {
        self.brains.get(id)
    }

    /// The profiles, by id.
    pub fn profiles(&self) -> impl Iterator<Item = &Profile> {
        self.profiles.values()
    }

    /// What scope each profile's memories have, for every profile that holds memories, in
    /// profile order. A `shared` scope is one instance per profile and state directory
    /// ([`MemoryScope::meaning`] says each scope in words).
    pub fn memory_scopes(&self) -> impl Iterator<Item = (&ProfileId, MemoryScope)> {
        self.profiles.values().filter_map(|p| p.capabilities().memories().map(|m| (p.id(), m.scope())))
    }

    /// The profile with this id.
    pub fn profile(&self, id: &str) -> Option<&Profile> {
        self.profiles.get(id)
    }

    /// The external (Claude Code, Codex) profiles, by id.
    pub fn externals(&self) -> impl Iterator<Item = &ExternalProfile> {
        self.externals.values()
    }

    /// The external profile with this id.
    pub fn external(&self, id: &str) -> Option<&ExternalProfile> {
        self.externals.get(id)
    }

    /// The machines, by id.
    pub fn machines(&self) -> impl Iterator<Item = &Machine> {
        self.machines.values()
    }

    /// The machine with this id.
    pub fn machine(&self, id: &str) -> Option<&Machine> {
        self.machines.get(id)
    }

    /// What an id names: a profile (native or external), a machine, or nothing.
    pub fn target(&self, id: &str) -> Option<Target> {
        if let Some(profile) = self.profiles.get(id) {
            Some(Target::Profile(profile.id().clone()))
        } else if let Some(profile) = self.externals.get(id) {
            Some(Target::Profile(profile.id().clone()))
        } else {
            self.machines.get(id).map(|m| Target::Machine(m.id().clone()))
        }
    }

    /// The native profile a target runs first: the profile itself, or a machine's entry
    /// state's profile (against which an exec into the machine computes its transfer). `None`
    /// for an external profile.
    pub fn first_profile(&self, target: &Target) -> Option<&Profile> {
        match target {
            Target::Profile(id) => self.profile(id.as_str()),
            Target::Machine(id) => self.profile(self.machine(id.as_str())?.entry().profile().as_str()),
        }
    }

    /// Every state, of any machine, that runs this profile.
    pub fn states_running<'a>(
        &'a self,
        profile: &'a str,
    ) -> impl Iterator<Item = (&'a Machine, &'a State)> + 'a {
        self.machines
            .values()
            .flat_map(|m| m.states().iter().map(move |s| (m, s)))
            .filter(move |(_, s)| s.profile().as_str() == profile)
    }

    /// The first invariant of the type docs that does not hold, if any: asserted after every
    /// check, so that a gap in the check is found by its tests rather than by an agent.
    pub(super) fn invariant_violation(&self) -> Option<String> {
        for (id, brain) in &self.brains {
            if brain.id() != id {
                return Some(format!("brain {id} is filed under another id"));
            }
        }
        for (id, profile) in &self.profiles {
            if let Some(v) = self.profile_violation(id, profile) {
                return Some(v);
            }
        }
        for (id, external) in &self.externals {
            if external.id() != id || self.profiles.contains_key(id.as_str()) {
                return Some(format!("external profile {id} is filed under another id or twice"));
            }
            if external.roster().iter().any(|t| self.target(t.as_str()).as_ref() != Some(t)) {
                return Some(format!("external profile {id} has a roster entry that resolves to nothing"));
            }
            if self.states_running(id.as_str()).next().is_some() {
                return Some(format!("external profile {id} runs as a machine state"));
            }
        }
        for (id, machine) in &self.machines {
            if self.profiles.contains_key(id.as_str()) {
                return Some(format!("{id} is both a profile and a machine"));
            }
            if machine.states().is_empty() || machine.state(machine.entry.as_str()).is_none() {
                return Some(format!("machine {id} has no states or no entry among them"));
            }
            if machine.states().iter().any(|s| self.profile(s.profile().as_str()).is_none()) {
                return Some(format!("machine {id} runs an undeclared profile"));
            }
            if machine
                .transitions()
                .iter()
                .any(|(f, t)| machine.state(f.as_str()).is_none() || machine.state(t.as_str()).is_none())
            {
                return Some(format!("machine {id} has a transition to or from an undeclared state"));
            }
        }
        None
    }

    fn profile_violation(&self, id: &ProfileId, profile: &Profile) -> Option<String> {
        let caps = profile.capabilities();
        let is_state = self.states_running(id.as_str()).next().is_some();
        let moves =
            self.states_running(id.as_str()).any(|(m, s)| m.next_states(s.id().as_str()).next().is_some());
        let broken = if profile.id() != id {
            "is filed under another id"
        } else if self.brain(profile.brain().as_str()).is_none() {
            "names an undeclared brain"
        } else if matches!(profile.compaction().strategy(), CompactionStrategy::Summarize { summarizer } if self.brain(summarizer.as_str()).is_none())
        {
            "names an undeclared summarizer"
        } else if profile.roster().iter().any(|t| self.target(t.as_str()).as_ref() != Some(t)) {
            "has a roster entry that resolves to nothing or to something else"
        } else if caps.contains(Capability::Exec) && (profile.roster().is_empty() || is_state) {
            "holds exec with an empty roster or as a machine state"
        } else if caps.contains(Capability::Fork) && !caps.contains(Capability::Subagents) {
            "holds fork without subagents"
        } else if caps.contains(Capability::TransitionState) != moves {
            "holds transition_state without a state to move from, or lacks it in a state with moves"
        } else {
            return None;
        };
        Some(format!("profile {id} {broken}"))
    }
}
