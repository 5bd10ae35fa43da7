//! Applying a succession at the end of a turn: `exec` (become another profile, or enter a
//! machine at its entry state) and `transition_state` (move the machine on). Both are the
//! same operation over the modules: present in both profiles → transferred and re-resolved;
//! held but off in the successor → dropped, its object released; new to the successor → fresh.
//! The successor is a new incarnation (fresh agent id, parented to the one before) in the
//! same process: same pid, depth and slot, one return value.

use super::drops::shared_memories_note;
use super::error::AgentError;
use super::program::Agent;
use super::start::{new_agent_id, resolve_target};
use super::state::{IncarnationCost, MachineAt};
use super::turn::Succession;
use crate::agent::brain::Message;
use crate::agent::modules::opening_note;
use crate::agent::telemetry::{AgentEvent, ContextSource, ModuleMoveRecord, SpawnVia, TransitionKind};

impl Agent {
    /// Makes the declared succession.
    pub(crate) async fn succeed(&mut self, succession: &Succession, turn: u64) -> Result<(), AgentError> {
        let (profile, machine, kind, prompt, from_state) = match succession {
            Succession::Exec { target, prompt } => {
                let (profile, machine) = resolve_target(&self.host, target)?;
                (profile, machine, TransitionKind::Exec, prompt.clone(), None)
            }
            Succession::Transition { state, prompt } => {
                let at = self.machine().cloned().ok_or_else(|| AgentError::BadLaunch {
                    message: "transition_state outside a machine".into(),
                })?;
                let machine = self.host.config.machine(&at.machine).ok_or_else(|| AgentError::BadLaunch {
                    message: format!("no machine {:?}", at.machine),
                })?;
                let next = machine.state(state).ok_or_else(|| AgentError::BadLaunch {
                    message: format!("no state {state:?} in {}", at.machine),
                })?;
                let profile = next.profile().as_str().to_string();
                let to = MachineAt { machine: at.machine.clone(), state: state.clone() };
                (profile, Some(to), TransitionKind::Fsm, prompt.clone(), Some(at.state))
            }
        };
        let successor = self
            .host
            .config
            .profile(&profile)
            .ok_or_else(|| AgentError::BadLaunch { message: format!("no profile {profile:?}") })?;
        let moves = self.state.modules.apply_transfer(successor.capabilities());
        let predecessor = std::mem::replace(&mut self.state.profile, profile.clone());
        let entered = match (&kind, &machine) {
            (TransitionKind::Exec, Some(at)) => Some((at.machine.as_str(), at.state.as_str())),
            _ => None,
        };
        // A transition says where the machine moved before whatever its prompt says.
        let prompt = match (&from_state, &machine) {
            (Some(from), Some(to)) => Some(match prompt.as_deref().filter(|p| !p.is_empty()) {
                Some(p) => format!("The machine {} moved from {from} to {}.\n\n{p}", to.machine, to.state),
                None => format!("The machine {} moved from {from} to {}.", to.machine, to.state),
            }),
            _ => prompt,
        };
        let held_shared = self.state.memory_link.as_ref().is_some_and(|l| l.profile_bound);
        let scope = successor.capabilities().memories().map(|m| m.scope());
        let memories = shared_memories_note(held_shared, scope, &profile, &predecessor);
        let note =
            opening_note(&moves, &profile, &predecessor, entered, memories.as_deref(), prompt.as_deref());
        let entered_machine = entered.is_some();
        let opening = Message::note(note);
        // What the successor inherits: the window before its opening note.
        let inherited = ContextSource::of(&self.window)?;
        self.window.push(opening.clone())?;
        let agent_id = new_agent_id();
        // Emitted with the successor's agent_spawned, so that nothing comes between them.
        let transition = self.event_on(AgentEvent::AgentTransition {
            kind,
            to_agent_id: agent_id.clone(),
            to_profile: profile.clone(),
            modules: moves
                .iter()
                .map(|m| ModuleMoveRecord {
                    module: m.module.as_str().into(),
                    action: m.action.as_str().into(),
                })
                .collect(),
            turn,
        });
        let previous = std::mem::replace(&mut self.state.agent_id, agent_id.clone());
        self.state.parent_agent_id = Some(previous);
        self.state.machine = machine.clone();
        self.state.costs.push(IncarnationCost { agent_id, profile: profile.clone(), ..Default::default() });
        self.incarnation_turns = 0;
        // The objects follow the module table: a dropped module's is released once the
        // checkpoint naming the successor commits; memories are re-linked by scope.
        self.let_go_at_exec(&moves).await?;
        let brain = self.profile()?.brain().as_str().to_string();
        self.brain = self.make_brain(&brain)?;
        let via = match kind {
            TransitionKind::Fsm => SpawnVia::Fsm,
            _ => SpawnVia::Exec,
        };
        self.emit_spawned(via, Some(transition), &inherited, opening);
        if let Some(at) = machine.filter(|_| kind == TransitionKind::Fsm || entered_machine) {
            self.emit(AgentEvent::FsmState { machine: at.machine, state: at.state, from: from_state });
        }
        Ok(())
    }
}
