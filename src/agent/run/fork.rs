//! `fork(prompt)`: a copy of the agent, one level deeper, working a second line in parallel.
//!
//! The copy's process is launched when the call runs, so its id is real when the call
//! returns. Its conversation is handed over when the turn ends, once every tool result of the
//! turn is in the window: the forker's window (shared in O(1) within the runtime, by snapshot
//! through the chunk store otherwise), its modules cloned — the program library so that
//! neither copy ever issues an id the other holds — and its memories by scope.

use super::calls::Dispatch;
use super::error::AgentError;
use super::launch::ForkOrigin;
use super::program::Agent;
use super::spawned::Spawned;
use super::start::FORK_CHANNEL;
use super::state::{ForkStart, PendingHandoff, Subagent};
use super::turn::{Declarations, DeclaredFork};
use crate::actors::Pid;
use crate::actors::kernel::codes::PROCESS_TERMINAL;
use crate::actors::kernel::launch::LaunchRequest;
use crate::actors::kernel::mailbox::MessageKind;
use crate::actors::kernel::objects::{ForkMode, ObjectRights, RootSelection};
use crate::actors::runtime::calls::ToolError;
use crate::actors::runtime::calls::{Call, CreateObject, ForkRequest, ObjectTarget, SendRequest};
use crate::agent::brain::Message;
use crate::agent::config::MemoryScope;
use crate::agent::modules::Modules;
use crate::agent::telemetry::{AgentEvent, ContextSource, ModuleMoveRecord, SpawnVia, TransitionKind};
use crate::tools::agent::ForkSelfArgs;
use crate::tools::{INVALID_ARGUMENTS, ToolName};
use serde_json::{Value, json};

impl Agent {
    /// Launches the copy's process and declares the fork.
    pub(crate) async fn fork_call(
        &mut self,
        args: ForkSelfArgs,
        declared: &mut Declarations,
        turn: u64,
        key: &str,
    ) -> Result<Value, Dispatch> {
        // Inherited and read-only copies are handed the forker's object; a shared copy binds
        // its profile's instance itself, and an isolated one gets its own.
        let scope = self.memory_scope();
        let linked = matches!(scope, Some(MemoryScope::Inherited | MemoryScope::ReadOnly));
        let memories = self.state.memory_link.as_ref().and_then(|l| l.oid.parse().ok()).filter(|_| linked);
        let mode = match scope {
            Some(MemoryScope::Inherited) => ForkMode::Copy,
            _ => ForkMode::Worker,
        };
        let mut launch = self.launch_below(self.state.profile.clone(), args.prompt.clone());
        launch.fork = Some(ForkOrigin { of_agent: self.state.agent_id.clone(), turn });
        let goal =
            launch.checked_goal().map_err(|m| ToolError::new(INVALID_ARGUMENTS, format!("prompt: {m}")))?;
        let request = ForkRequest {
            launch: LaunchRequest {
                goal,
                inherit_capabilities: self.host.launch_capabilities(&launch.agent),
                launch_key: Some(key.to_string()),
                ..Default::default()
            },
            mode,
            roots: RootSelection::Exact(memories.into_iter().collect()),
        };
        let launched = self.ctx.fork_child(request).await?;
        declared.declare_fork(DeclaredFork { pid: launched.pid, prompt: args.prompt });
        self.state.subagents.insert(
            launched.pid.to_string(),
            Subagent {
                via: "fork".into(),
                agent: self.state.profile.clone(),
                turn,
                linked_memories: memories.is_some() && scope == Some(MemoryScope::Inherited),
                collected: false,
            },
        );
        Ok(json!({
            "id": launched.pid.to_string(),
            "note": "the copy becomes your child when this turn ends; wait for it on a later turn"
        }))
    }

    /// At the end of the turn: clones what each fork is handed and records the handoffs, so
    /// the turn's checkpoint (which also saves the forker's narrowed id space) names them.
    pub(crate) fn prepare_forks(&mut self, forks: &[DeclaredFork], turn: u64) -> Result<(), AgentError> {
        if forks.is_empty() {
            return Ok(());
        }
        let snapshot = self.window.snapshot(&*self.host.chunks)?;
        let inherited = ContextSource::of(&self.window)?;
        let scope = self.memory_scope();
        let isolated = scope == Some(MemoryScope::Isolated);
        for fork in forks {
            let mut modules = self.state.modules.clone();
            modules.library = self.state.modules.library.as_mut().map(|library| library.fork());
            if !isolated {
                modules.memories = None;
            }
            self.host.handoffs.insert(fork.pid, self.window.fork());
            let agent_id = super::start::new_agent_id();
            let transition = self.event_on(AgentEvent::AgentTransition {
                kind: TransitionKind::Fork,
                to_agent_id: agent_id.clone(),
                to_profile: self.state.profile.clone(),
                modules: fork_moves(&modules, scope),
                turn,
            });
            let start = ForkStart {
                window: snapshot.clone(),
                profile: self.state.profile.clone(),
                // A copy is a second worker, not a second driver of the machine: it runs the
                // state's profile outside the machine, so it is offered no transition_state.
                machine: None,
                modules,
                forker: self.state.agent_id.clone(),
                agent_id,
                turn,
                prompt: fork.prompt.clone(),
                archive: self.state.archive.clone(),
            };
            // The copy's agent_spawned is the forker's to emit, right after the transition:
            // the copy's process may not run until later, and nothing may come between.
            let spawned = Spawned {
                pid: fork.pid.to_string(),
                agent_id: start.agent_id.clone(),
                profile: start.profile.clone(),
                parent_agent_id: Some(start.forker.clone()),
                via: SpawnVia::Fork,
                depth: self.state.depth + 1,
                machine: None,
                inherited: &inherited,
                opening: fork_opening(&start),
            };
            spawned.emit(&self.host.telemetry, Some(transition));
            self.state.pending_handoffs.push(PendingHandoff { pid: fork.pid.to_string(), start });
        }
        Ok(())
    }

    /// Hands each recorded fork its start: a durable object it may read, and a message
    /// pointing at it. Also run again after a restart from a checkpoint that still lists the
    /// handoffs, which a crash may have stopped after some or all of them were made: the
    /// message is keyed by the copy, so a copy is sent its start once, and a copy that has
    /// ended since (it had its start and finished, or was stopped) is handed nothing.
    pub(crate) async fn deliver_handoffs(&mut self) -> Result<(), AgentError> {
        for handoff in std::mem::take(&mut self.state.pending_handoffs) {
            let pid: Pid = handoff
                .pid
                .parse()
                .map_err(|_| AgentError::Corrupt { message: format!("a handoff to {:?}", handoff.pid) })?;
            let payload = super::persist::to_payload(&handoff.start)?;
            let request = CreateObject { payload, durable: true, ..Default::default() };
            let created = self
                .ctx
                .create_object(request)
                .await
                .map_err(AgentError::kernel(ToolName::CreateObject.as_str()))?;
            let delegate = Call::DelegateObject {
                target: ObjectTarget::Oid(created.oid),
                to: pid,
                rights: ObjectRights::READ,
            };
            match self.ctx.call(delegate).await {
                Ok(_) => {}
                Err(e) if e.code == PROCESS_TERMINAL => {
                    self.ctx
                        .drop_object(ObjectTarget::Oid(created.oid))
                        .await
                        .map_err(AgentError::kernel("drop_object"))?;
                    continue;
                }
                Err(e) => return Err(AgentError::kernel(ToolName::DelegateObject.as_str())(e)),
            }
            let message = SendRequest {
                to: pid,
                body: format!("fork start from agent {}", handoff.start.forker),
                payload: Some(json!({"start": created.oid.to_string()})),
                channel: Some(FORK_CHANNEL.to_string()),
                correlation_id: None,
                reply_to: None,
                kind: MessageKind::Normal,
            };
            let keyed =
                Call::SendKeyed { message_key: format!("fork-start:{pid}"), request: Box::new(message) };
            self.ctx.call(keyed).await.map_err(AgentError::kernel(ToolName::Send.as_str()))?;
        }
        Ok(())
    }
}

/// A copy's opening message: the agent and turn it was forked from, that the original runs on
/// in parallel, and its task.
pub(crate) fn fork_opening(start: &ForkStart) -> Message {
    Message::user(format!(
        "You are a fork of agent {} made at its turn {}. The original is still running its own \
         copy of this conversation in parallel; you are the copy. Your task: {}",
        start.forker, start.turn, start.prompt
    ))
}

/// What a fork did with each module, for its `agent_transition`.
fn fork_moves(modules: &Modules, scope: Option<MemoryScope>) -> Vec<ModuleMoveRecord> {
    let record =
        |module: &str, action: &str| ModuleMoveRecord { module: module.into(), action: action.into() };
    let mut moves = vec![record("history", "copied")];
    if modules.tasks.is_some() {
        moves.push(record("tasks", "copied"));
    }
    if modules.notebook.is_some() {
        moves.push(record("notebook", "copied"));
    }
    if let Some(scope) = scope {
        let action = match scope {
            MemoryScope::Isolated => "copied",
            MemoryScope::Shared => "shared",
            MemoryScope::Inherited => "linked",
            MemoryScope::ReadOnly => "linked_read_only",
        };
        moves.push(record("memories", action));
    }
    if modules.library.is_some() {
        moves.push(record("program_library", "cloned"));
    }
    moves
}
