//! An incarnation's `agent_spawned`, and the run of records it is emitted in: a succession's
//! `agent_transition` on the outgoing stream right before it, and after it the content of
//! every window chunk it inherited that its stream has not stated yet.

use super::program::Agent;
use super::state::MachineAt;
use crate::agent::brain::Message;
use crate::agent::telemetry::{AgentEvent, ContextSource, EventOn, SpawnVia, Telemetry};

/// What an `agent_spawned` says of the incarnation that starts.
pub(crate) struct Spawned<'a> {
    /// Its process.
    pub(crate) pid: String,
    /// Its agent id.
    pub(crate) agent_id: String,
    /// The profile it runs.
    pub(crate) profile: String,
    /// The spawner, forker or predecessor.
    pub(crate) parent_agent_id: Option<String>,
    /// How it came to be.
    pub(crate) via: SpawnVia,
    /// Its process's depth.
    pub(crate) depth: u32,
    /// Where it stands in a machine, if it does.
    pub(crate) machine: Option<&'a MachineAt>,
    /// The window it inherited (before its opening message).
    pub(crate) inherited: &'a ContextSource,
    /// The message it opens on, which it did not inherit.
    pub(crate) opening: Message,
}

impl Spawned<'_> {
    /// Emits `transition` (if any) and this start as one run no other record comes between.
    pub(crate) fn emit(self, telemetry: &Telemetry, transition: Option<EventOn>) {
        let event = AgentEvent::AgentSpawned {
            profile: self.profile,
            parent_agent_id: self.parent_agent_id,
            via: self.via,
            depth: self.depth,
            machine: self.machine.map(|m| m.machine.clone()),
            state: self.machine.map(|m| m.state.clone()),
            inherited_messages: self.inherited.len() as u64,
            inherited: self.inherited.named(),
            opening: vec![self.opening],
        };
        let spawned = EventOn { pid: self.pid, agent_id: self.agent_id, event };
        telemetry.emit_spawn(transition, spawned, self.inherited);
    }
}

impl Agent {
    /// Emits the current incarnation's `agent_spawned`, right after `transition` if a
    /// succession made it: how it came to be, the window it inherited and the opening message
    /// it did not inherit.
    pub(crate) fn emit_spawned(
        &self,
        via: SpawnVia,
        transition: Option<EventOn>,
        inherited: &ContextSource,
        opening: Message,
    ) {
        let spawned = Spawned {
            pid: self.ctx.pid().to_string(),
            agent_id: self.state.agent_id.clone(),
            profile: self.state.profile.clone(),
            parent_agent_id: self.state.parent_agent_id.clone(),
            via,
            depth: self.state.depth,
            machine: self.state.machine.as_ref(),
            inherited,
            opening,
        };
        spawned.emit(&self.host.telemetry, transition);
    }

    /// `event` on the current incarnation's stream, to be emitted in a run.
    pub(crate) fn event_on(&self, event: AgentEvent) -> EventOn {
        EventOn { pid: self.ctx.pid().to_string(), agent_id: self.state.agent_id.clone(), event }
    }
}
