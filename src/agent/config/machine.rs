//! Declared state machines: states that each run a profile, the transitions allowed between
//! them, and the state a machine is entered at.
//!
//! A machine is a declared process. An agent standing in one of its states moves it with
//! `transition_state` and is offered no `exec`; an agent outside enters it by naming the
//! machine on its roster, which runs the entry state's profile. (Moving and telemetry belong
//! to the turn loop; this is the declaration.)

use super::ids::{MachineId, ProfileId, StateId};
use serde::Deserialize;

/// One entry of the `machines` section as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMachine {
    /// The machine's id, which rosters name (required; unique among profiles and machines).
    pub id: Option<String>,
    /// One or two sentences on what the process does, shown to agents whose roster names it.
    pub description: Option<String>,
    /// The id of the state the machine is entered at (required).
    pub entry: Option<String>,
    /// The states (at least one).
    #[serde(default)]
    pub states: Vec<RawState>,
    /// The allowed moves between states (default none: a one-state process).
    #[serde(default)]
    pub transitions: Vec<RawTransition>,
}

/// One state as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawState {
    /// The state's id, unique within its machine (required).
    pub id: Option<String>,
    /// The id of the profile the state runs (required).
    pub profile: Option<String>,
}

/// One allowed move as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTransition {
    /// The state moved from (required).
    pub from: Option<String>,
    /// The state moved to (required; may equal `from`, which re-enters the state).
    pub to: Option<String>,
}

/// A checked machine: at least one state, every state reachable from the entry, every state's
/// profile defined, every transition between two of its states.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    pub(super) id: MachineId,
    pub(super) description: Option<String>,
    pub(super) entry: StateId,
    pub(super) states: Vec<State>,
    pub(super) transitions: Vec<(StateId, StateId)>,
}

/// A checked state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    pub(super) id: StateId,
    pub(super) profile: ProfileId,
}

impl State {
    /// The state's id.
    pub fn id(&self) -> &StateId {
        &self.id
    }

    /// The profile the state runs.
    pub fn profile(&self) -> &ProfileId {
        &self.profile
    }
}

impl Machine {
    /// The machine's id.
    pub fn id(&self) -> &MachineId {
        &self.id
    }

    /// Its description, if it has one.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The state the machine is entered at.
    pub fn entry(&self) -> &State {
        self.state(self.entry.as_str()).expect("the launch check proved the entry state is declared")
    }

    /// The states, in the order written.
    pub fn states(&self) -> &[State] {
        &self.states
    }

    /// The state with this id, if declared.
    pub fn state(&self, id: &str) -> Option<&State> {
        self.states.iter().find(|s| s.id.as_str() == id)
    }

    /// The allowed moves, in the order written (no duplicates).
    pub fn transitions(&self) -> &[(StateId, StateId)] {
        &self.transitions
    }

    /// Whether the machine may move from one state to another.
    pub fn allows(&self, from: &str, to: &str) -> bool {
        self.transitions.iter().any(|(f, t)| f.as_str() == from && t.as_str() == to)
    }

    /// The states a move from `from` may reach, in the order written. Empty for a final state.
    pub fn next_states<'a>(&'a self, from: &'a str) -> impl Iterator<Item = &'a StateId> + 'a {
        self.transitions.iter().filter(move |(f, _)| f.as_str() == from).map(|(_, t)| t)
    }
}
