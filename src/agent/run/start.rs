//! How an agent process begins: fresh from its launch, as a fork handed its forker's window,
//! or restarted from its last turn-boundary checkpoint.

use super::error::AgentError;
use super::host::AgentHost;
use super::launch::AgentLaunch;
use super::program::Agent;
use super::state::{AgentState, ForkStart, IncarnationCost, MachineAt};
use crate::actors::kernel::mailbox::{MailboxQuery, Message as MailMessage, MessageFilter};
use crate::actors::runtime::ProcessContext;
use crate::agent::brain::Message;
use crate::agent::config::Target;
use crate::agent::modules::Modules;
use crate::agent::telemetry::{AgentEvent, ContextSource, SpawnVia};
use crate::agent::window::{Window, WindowSnapshot};
use std::sync::Arc;

/// The mailbox channel a fork's start arrives on.
pub const FORK_CHANNEL: &str = "agent.fork";

/// The mailbox channel a held launch's release arrives on (from the host).
pub const RELEASE_CHANNEL: &str = "agent.release";

/// A fresh agent id (UUID v7: ids sort by creation).
pub(crate) fn new_agent_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

impl Agent {
    /// Starts an agent process's execution.
    pub(crate) async fn start(host: Arc<AgentHost>, ctx: ProcessContext) -> Result<Agent, AgentError> {
        let launch = AgentLaunch::from_goal(ctx.goal())?;
        if let Some(bytes) = ctx.restored_checkpoint() {
            let state = AgentState::decode(bytes)?;
            return Agent::restart(host, ctx, launch, state).await;
        }
        if launch.held {
            receive_on(&ctx, RELEASE_CHANNEL).await?;
        }
        let agent = match &launch.fork {
            Some(_) => Agent::start_fork(host, ctx, launch).await?,
            None => Agent::start_fresh(host, ctx, launch)?,
        };
        let mut agent = agent;
        agent.link_memories().await?;
        agent.checkpoint().await?;
        Ok(agent)
    }

    fn assemble(
        host: Arc<AgentHost>,
        ctx: ProcessContext,
        launch: AgentLaunch,
        state: AgentState,
        window: Window<Message>,
        turns: u64,
    ) -> Result<Agent, AgentError> {
        let placeholder: Arc<dyn crate::agent::brain::Brain> =
            Arc::new(crate::agent::brain::ScriptedBrain::new(Default::default()));
        let mut agent = Agent {
            host,
            ctx,
            launch,
            state,
            window,
            brain: placeholder,
            interrupts: Vec::new(),
            normals: Vec::new(),
            inbox_unread: true,
            rendered: None,
            incarnation_turns: turns,
            guards: Default::default(),
            written: Default::default(),
            in_program: false,
        };
        let brain = agent.profile()?.brain().as_str().to_string();
        agent.brain = agent.make_brain(&brain)?;
        Ok(agent)
    }

    /// A root or a spawned subagent: the launch names a profile or a machine.
    fn start_fresh(
        host: Arc<AgentHost>,
        ctx: ProcessContext,
        launch: AgentLaunch,
    ) -> Result<Agent, AgentError> {
        let (profile, machine) = resolve_target(&host, &launch.agent)?;
        let caps = host
            .config
            .profile(&profile)
            .map(|p| p.capabilities().clone())
            .ok_or_else(|| AgentError::BadLaunch { message: format!("no profile {profile:?}") })?;
        let (mut window, opening) = match &launch.source {
            Some(source) => (
                host.source_window(source)?.fork(),
                Message::user(format!(
                    "This session was started from prior conversation source {source}: it is forked \
                     from that source session, whose conversation is above; the source itself is not \
                     continued. {}",
                    launch.prompt
                )),
            ),
            None => (Window::new(), Message::user(launch.prompt.clone())),
        };
        let inherited = ContextSource::of(&window)?;
        window.push(opening.clone())?;
        let agent_id = new_agent_id();
        let state = AgentState {
            agent_id: agent_id.clone(),
            parent_agent_id: launch.parent_agent_id.clone(),
            profile: profile.clone(),
            machine: machine.clone(),
            depth: launch.depth,
            window: WindowSnapshot::empty(0),
            modules: Modules::fresh_for(&caps),
            costs: vec![IncarnationCost { agent_id, profile: profile.clone(), ..Default::default() }],
            memory_link: None,
            collected_costs: Default::default(),
            subagents: Default::default(),
            pending_handoffs: Vec::new(),
            archive: Default::default(),
            pending_drops: Vec::new(),
            ending: None,
        };
        let agent = Agent::assemble(host, ctx, launch, state, window, 0)?;
        let via = if agent.launch.parent_agent_id.is_some() { SpawnVia::Spawn } else { SpawnVia::Root };
        agent.emit_spawned(via, None, &inherited, opening);
        if let Some(at) = machine {
            agent.emit(AgentEvent::FsmState { machine: at.machine, state: at.state, from: None });
        }
        Ok(agent)
    }

    /// A fork: waits for its forker's end-of-turn handoff, then opens on its own message.
    async fn start_fork(
        host: Arc<AgentHost>,
        ctx: ProcessContext,
        launch: AgentLaunch,
    ) -> Result<Agent, AgentError> {
        let start = receive_fork_start(&ctx).await?;
        let window = match host.handoffs.remove(&ctx.pid()) {
            Some((_, window)) => window,
            None => Window::restore(start.window.clone(), &*host.chunks)?,
        };
        let mut window = window.fork();
        // The forker emitted this copy's agent_spawned, right after its agent_transition.
        window.push(super::fork::fork_opening(&start))?;
        let agent_id = start.agent_id.clone();
        let state = AgentState {
            agent_id: agent_id.clone(),
            parent_agent_id: Some(start.forker.clone()),
            profile: start.profile.clone(),
            machine: start.machine.clone(),
            depth: launch.depth,
            window: WindowSnapshot::empty(window.turn()),
            modules: start.modules,
            costs: vec![IncarnationCost { agent_id, profile: start.profile.clone(), ..Default::default() }],
            memory_link: None,
            collected_costs: Default::default(),
            subagents: Default::default(),
            pending_handoffs: Vec::new(),
            archive: start.archive,
            pending_drops: Vec::new(),
            ending: None,
        };
        Agent::assemble(host, ctx, launch, state, window, 0)
    }

    /// After a reopen (or a resume of a stopped execution): continue from the last checkpoint.
    async fn restart(
        host: Arc<AgentHost>,
        ctx: ProcessContext,
        launch: AgentLaunch,
        state: AgentState,
    ) -> Result<Agent, AgentError> {
        let mut window = Window::restore(state.window.clone(), &*host.chunks)?;
        window.push(Message::note(format!(
            "The runtime restarted this agent from its checkpoint after turn {}. Effects of a turn \
             that was in progress may have happened in part; check before repeating them.",
            window.turn()
        )))?;
        let turns = state.costs.last().map_or(0, |c| c.turns);
        let mut agent = Agent::assemble(host, ctx, launch, state, window, turns)?;
        agent.deliver_handoffs().await?;
        agent.finish_drops().await?;
        Ok(agent)
    }
}

/// What a launch's `agent` names: a profile, or a machine entered at its entry state.
pub(crate) fn resolve_target(host: &AgentHost, id: &str) -> Result<(String, Option<MachineAt>), AgentError> {
    match host.config.target(id) {
        Some(Target::Profile(p)) => Ok((p.as_str().to_string(), None)),
        Some(Target::Machine(m)) => {
            let machine = host
                .config
                .machine(m.as_str())
                .ok_or_else(|| AgentError::BadLaunch { message: format!("no machine {id:?}") })?;
            let entry = machine.entry();
            Ok((
                entry.profile().as_str().to_string(),
                Some(MachineAt { machine: m.as_str().to_string(), state: entry.id().as_str().to_string() }),
            ))
        }
        _ => Err(AgentError::BadLaunch { message: format!("no profile or machine has the id {id:?}") }),
    }
}

/// Blocks until a message on `channel` arrives (or has arrived: an acknowledged one counts,
/// since a receive that completed while no execution was live acknowledged it).
pub(crate) async fn receive_on(ctx: &ProcessContext, channel: &str) -> Result<MailMessage, AgentError> {
    let query = MailboxQuery {
        filter: MessageFilter { channel: Some(channel.to_string()), ..Default::default() },
        include_acked: true,
        limit: 1,
    };
    loop {
        let received =
            ctx.receive_messages(query.clone(), true, true).await.map_err(AgentError::kernel("receive"))?;
        if let Some(message) = received.messages.into_iter().next() {
            return Ok(message);
        }
    }
}

/// Blocks until the forker's handoff message arrives, then reads the start it points at.
async fn receive_fork_start(ctx: &ProcessContext) -> Result<ForkStart, AgentError> {
    let message = receive_on(ctx, FORK_CHANNEL).await?;
    let oid = message
        .payload
        .as_ref()
        .and_then(|p| p.get("start"))
        .and_then(|v| v.as_str())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| AgentError::Corrupt { message: "a fork handoff without a start object".into() })?;
    let payload = super::persist::get_oid(ctx, oid).await?;
    super::persist::from_payload("fork start", payload)
}
