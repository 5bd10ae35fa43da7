//! `AgentHost`: what every agent process of one configuration shares — the checked
//! configuration, the brains, the window chunk store, telemetry — and the one agent image.

use super::error::AgentError;
use super::launch::AgentLaunch;
use super::program::AgentProgram;
use crate::actors::ImageId;
use crate::actors::Pid;
use crate::actors::kernel::capability::{CapabilityRequest, Rights};
use crate::actors::runtime::RootSpec;
use crate::actors::runtime::program::Image;
use crate::actors::store::Store;
use crate::agent::brain::{Brain, Message, Script};
use crate::agent::config::{AgentBudget, Capability, CheckedConfig, ExternalRuntime};
use crate::agent::telemetry::Telemetry;
use crate::agent::window::{ChunkStore, Window, WindowSnapshot};
use crate::tools::ToolName;
use dashmap::DashMap;
use std::sync::Arc;

/// The agent image's id: every agent process runs it; its goal says which agent it is.
pub const AGENT_IMAGE: &str = "agent";

/// Who a brain is being made for: one incarnation of one agent.
#[derive(Clone, Debug)]
pub struct AgentIdentity {
    /// The process.
    pub pid: Pid,
    /// The incarnation's agent id.
    pub agent_id: String,
    /// The profile it runs.
    pub profile: String,
    /// The brain its profile (or its compaction strategy) names.
    pub brain: String,
    /// Which incarnation of the process this is: 1 for its first, one more per succession.
    pub incarnation: u32,
    /// The process's launch (profile or machine, prompt, depth, fork origin).
    pub launch: AgentLaunch,
    /// Turns this incarnation has already taken (non-zero when a process continues after a
    /// restart, so a scripted brain can skip the turns it already played). Always 0 for a
    /// summarizer: each compaction asks one made for it.
    pub turns_taken: u64,
}

/// Makes the brain each incarnation talks to. Called once per incarnation and brain.
pub trait BrainProvider: Send + Sync {
    /// The brain `identity.brain` names, for `identity`.
    fn brain(&self, identity: &AgentIdentity) -> Result<Arc<dyn Brain>, AgentError>;
}

impl<F> BrainProvider for F
where
    F: Fn(&AgentIdentity) -> Result<Arc<dyn Brain>, AgentError> + Send + Sync,
{
    fn brain(&self, identity: &AgentIdentity) -> Result<Arc<dyn Brain>, AgentError> {
        self(identity)
    }
}

/// Everything agent processes share.
pub struct AgentHost {
    pub(crate) config: Arc<CheckedConfig>,
    pub(crate) brains: Arc<dyn BrainProvider>,
    pub(crate) chunks: Arc<dyn ChunkStore + Send + Sync>,
    pub(crate) telemetry: Telemetry,
    /// Fork handoffs within this runtime: the forker's window, shared in O(1), by the fork's
    /// pid. A fork restarted after a reopen restores the same window from the chunk store.
    pub(crate) handoffs: DashMap<Pid, Window<Message>>,
    /// What a root launch's budget is made from besides its profile's.
    pub(crate) root_budget: parking_lot::Mutex<RootBudget>,
    /// The image id its agents run on.
    image_id: ImageId,
    /// Where external sessions get their MCP server, once the runtime has a state directory.
    mcp_link: std::sync::OnceLock<crate::agent::external::McpLink>,
    /// The runtime's store, once attached: where a seat started from a prior conversation
    /// source reads that source's last checkpoint.
    store: std::sync::OnceLock<Arc<dyn Store>>,
    /// Windows kept for seats that start from them: by the process whose window it is, its
    /// window at its last checkpoint (`None` until the first). A fork of that checkpoint
    /// shares it in O(1) instead of restoring it from the chunk store.
    kept: DashMap<Pid, Option<Window<Message>>>,
}

impl std::fmt::Debug for AgentHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentHost").finish_non_exhaustive()
    }
}

impl AgentHost {
    /// A host for `config`, with brains from `brains`, windows kept in `chunks` and events to
    /// `telemetry`.
    pub fn new(
        config: CheckedConfig,
        brains: Arc<dyn BrainProvider>,
        chunks: Arc<dyn ChunkStore + Send + Sync>,
        telemetry: Telemetry,
    ) -> Arc<AgentHost> {
        AgentHost::on_image(ImageId(AGENT_IMAGE.to_string()), config, brains, chunks, telemetry)
    }

    /// The same, on an image of its own (`agent.<suffix>`), for a runtime that runs agents of
    /// several configurations side by side (a rig whose members name different agent files).
    pub fn with_image_suffix(
        suffix: &str,
        config: CheckedConfig,
        brains: Arc<dyn BrainProvider>,
        chunks: Arc<dyn ChunkStore + Send + Sync>,
        telemetry: Telemetry,
    ) -> Arc<AgentHost> {
        AgentHost::on_image(ImageId(format!("{AGENT_IMAGE}.{suffix}")), config, brains, chunks, telemetry)
    }

    fn on_image(
        image_id: ImageId,
        config: CheckedConfig,
        brains: Arc<dyn BrainProvider>,
        chunks: Arc<dyn ChunkStore + Send + Sync>,
        telemetry: Telemetry,
    ) -> Arc<AgentHost> {
        telemetry.redact(secrets_of(&config));
        Arc::new(AgentHost {
            config: Arc::new(config),
            brains,
            chunks,
            telemetry,
            handoffs: DashMap::new(),
            kept: DashMap::new(),
            root_budget: parking_lot::Mutex::new(RootBudget::default()),
            store: std::sync::OnceLock::new(),
            mcp_link: std::sync::OnceLock::new(),
            image_id,
        })
    }

    /// The image id its agents run on.
    pub fn image_id(&self) -> &ImageId {
        &self.image_id
    }

    /// Gives the host the store of the runtime its image runs on, so that launches with a
    /// `source` can read the source session. The first store attached stays.
    pub fn attach_store(&self, store: Arc<dyn Store>) {
        let _ = self.store.set(store);
    }

    /// The conversation of the agent process `source` as of its last checkpoint: what a
    /// session started from it opens on. Refused if the process is unknown, is not an agent,
    /// or has no checkpoint yet.
    pub fn source_window(&self, source: &str) -> Result<Window<Message>, AgentError> {
        let snapshot = self.source_snapshot(source)?;
        let kept = source.parse().ok().and_then(|pid| self.kept_window(pid));
        match kept {
            // The window of the very checkpoint the store names: shared, not restored.
            Some(window) if window.holds_snapshot(&snapshot) => Ok(window),
            _ => Ok(Window::restore(snapshot, &*self.chunks)?),
        }
    }

    /// From now on, the agent `pid` leaves its window here at each checkpoint, for a seat that
    /// will start from its conversation ([`Self::source_window`] then shares it). Kept until
    /// the host is dropped.
    pub fn keep_window_of(&self, pid: Pid) {
        self.kept.entry(pid).or_insert(None);
    }

    /// The window `pid` left at its last checkpoint, if this host keeps it.
    pub fn kept_window(&self, pid: Pid) -> Option<Window<Message>> {
        self.kept.get(&pid).and_then(|slot| slot.clone())
    }

    /// Keeps `window` as `pid`'s, for a seat of this host that starts from it (the window was
    /// kept by the host `pid` ran on).
    pub fn offer_window(&self, pid: Pid, window: Window<Message>) {
        self.kept.insert(pid, Some(window));
    }

    /// After `pid`'s checkpoint: its window, if this host keeps it.
    pub(crate) fn leave_window(&self, pid: Pid, window: &Window<Message>) {
        if let Some(mut slot) = self.kept.get_mut(&pid) {
            *slot = Some(window.clone());
        }
    }

    /// Checks that [`Self::source_window`] can restore `source`'s conversation — an agent
    /// with a checkpointed turn whose every sealed chunk is stored — without reading the
    /// chunks: what a launcher checks before a fork, which then restores it once.
    pub fn check_source(&self, source: &str) -> Result<(), AgentError> {
        Ok(self.source_snapshot(source)?.check_stored(&*self.chunks)?)
    }

    /// The window snapshot of `source`'s last checkpointed turn.
    fn source_snapshot(&self, source: &str) -> Result<WindowSnapshot<Message>, AgentError> {
        let unknown = |why: &str| AgentError::BadLaunch {
            message: format!("the conversation source {source:?} cannot be resolved: {why}"),
        };
        let store = self.store.get().ok_or_else(|| unknown("no runtime store is attached to this host"))?;
        let pid: Pid = source.parse().map_err(|_| unknown("it is not a process id"))?;
        let row = store
            .process(pid)
            .map_err(|e| unknown(&e.to_string()))?
            .ok_or_else(|| unknown("no such process"))?;
        if !row.image.as_str().starts_with(AGENT_IMAGE) {
            return Err(unknown("the process is not an agent"));
        }
        let envelope = store
            .checkpoint(pid)
            .map_err(|e| unknown(&e.to_string()))?
            .ok_or_else(|| unknown("the agent has no checkpointed turn"))?;
        Ok(super::state::AgentState::decode(&envelope.body)?.window)
    }

    /// The checked configuration.
    pub fn config(&self) -> &CheckedConfig {
        &self.config
    }

    /// The telemetry agents emit to.
    pub fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }

    /// The agent images, to register in the runtime's options: the native agents' image and
    /// one per external runtime (`<image>:claude-code`, `<image>:codex`), which refuse
    /// `pause`. All are registered whatever the configuration holds, so that a state
    /// directory with external processes reopens under any command.
    pub fn images(self: &Arc<Self>) -> Vec<Image> {
        let mut images = vec![self.image()];
        images.extend(self.external_images());
        images
    }

    /// The native agents' image alone (a runtime that runs no external agent).
    pub fn image(self: &Arc<Self>) -> Image {
        self.agent_image(self.image_id.as_str())
    }

    fn agent_image(self: &Arc<Self>, id: &str) -> Image {
        let host = Arc::clone(self);
        Image::new(id, move |start| Box::new(AgentProgram::new(Arc::clone(&host), start)))
            .offers(super::tools::all_tool_names())
    }

    /// The images of the external runtimes, which refuse `pause`.
    fn external_images(self: &Arc<Self>) -> Vec<Image> {
        let mut images = Vec::new();
        for runtime in [ExternalRuntime::ClaudeCode, ExternalRuntime::Codex] {
            images.push(self.agent_image(self.external_image(runtime).as_str()).refuses_pause(format!(
                "it runs a {} session, a foreign program agentvisor cannot hold still between two \
                 of its steps; cancel or terminate it instead (a crash leaves it paused, and a \
                 resume continues its own session)",
                runtime.product()
            )));
        }
        images
    }

    /// The image an external runtime's agents run on.
    pub fn external_image(&self, runtime: ExternalRuntime) -> ImageId {
        ImageId(format!("{}:{}", self.image_id.as_str(), runtime.as_str()))
    }

    /// The image a process launched as `agent` runs on: an external profile's runtime image,
    /// else the native agent image.
    pub fn image_for(&self, agent: &str) -> ImageId {
        match self.config.external(agent) {
            Some(profile) => self.external_image(profile.runtime()),
            None => self.image_id.clone(),
        }
    }

    /// A root's working directory: for an external agent, the directory the launching command
    /// runs in (its session works there); `/` for a native agent, which touches no files.
    fn root_cwd(&self, agent: &str) -> String {
        let here = std::env::current_dir().ok().filter(|_| self.config.external(agent).is_some());
        here.map_or_else(|| "/".to_string(), |dir| dir.display().to_string())
    }

    /// Gives external sessions their MCP server: `<program> mcp --state <dir> --as <pid>`.
    /// The first link set stays. Without one, sessions run without agentvisor's tools.
    pub fn set_mcp_link(&self, link: crate::agent::external::McpLink) {
        let _ = self.mcp_link.set(link);
    }

    /// The MCP link, if one was set.
    pub fn mcp_link(&self) -> Option<crate::agent::external::McpLink> {
        self.mcp_link.get().cloned()
    }

    /// What an external session of `profile`, running as `pid`, is told about its tools: who
    /// it is, and how to start the agents on its roster with `spawn_child_process`.
    pub fn external_note(&self, profile: &crate::agent::config::ExternalProfile, pid: Pid) -> String {
        let mut note = format!(
            "You run as agentvisor process {pid}. The MCP server `{}` gives you its process tools: \
             spawn_child_process, wait_child_process, list_child_processes, signal_child_process, \
             send_process_message, read_process_messages, receive_process_messages and \
             merge_child_memory act on your children and your mailbox; your budget covers them.",
            crate::agent::external::MCP_SERVER_NAME
        );
        if !profile.roster().is_empty() {
            note.push_str(
                " To start an agent, call spawn_child_process with the image named below and the goal \
                 a JSON object {\"agent\": \"<id>\", \"prompt\": \"<its task>\"}; wait_child_process \
                 returns its result. The agents you may start:",
            );
            for target in profile.roster() {
                let id = target.as_str();
                note.push_str(&format!(" `{id}` (image `{}`)", self.image_for(id).as_str()));
                if let Some(description) = self
                    .config
                    .profile(id)
                    .and_then(|p| p.description())
                    .or_else(|| self.config.external(id).and_then(|p| p.description()))
                {
                    note.push_str(&format!(": {description}"));
                }
                note.push(';');
            }
        }
        note
    }

    /// A root launch of `agent` (a profile or machine id) with `prompt`. Refused before any
    /// process exists if the configuration has no such id.
    pub fn root_spec(&self, agent: &str, prompt: &str) -> Result<RootSpec, AgentError> {
        self.launch_spec(AgentLaunch::new(agent, prompt))
    }

    /// A root launch of `agent` whose conversation starts from the last checkpointed
    /// conversation of the agent process `source` (a new session, forked from that source
    /// session; the source is not continued). The source is resolved when the new process
    /// starts; an unresolvable one fails it with the reason.
    pub fn root_spec_from_source(
        &self,
        agent: &str,
        prompt: &str,
        source: &str,
    ) -> Result<RootSpec, AgentError> {
        let mut launch = AgentLaunch::new(agent, prompt);
        launch.source = Some(source.to_string());
        self.launch_spec(launch)
    }

    /// [`Self::root_spec`] or [`Self::root_spec_from_source`], held: the agent waits for
    /// [`Self::release`] before its first turn.
    pub fn held_root_spec(
        &self,
        agent: &str,
        prompt: &str,
        source: Option<&str>,
    ) -> Result<RootSpec, AgentError> {
        let mut launch = AgentLaunch::new(agent, prompt);
        launch.source = source.map(str::to_string);
        launch.held = true;
        self.launch_spec(launch)
    }

    /// Releases a held agent process: a host message on its release channel.
    pub async fn release(
        &self,
        runtime: &crate::actors::runtime::Runtime,
        pid: Pid,
    ) -> Result<(), AgentError> {
        let request = crate::actors::runtime::calls::SendRequest {
            to: pid,
            body: "released".to_string(),
            payload: None,
            channel: Some(super::start::RELEASE_CHANNEL.to_string()),
            correlation_id: None,
            reply_to: None,
            kind: Default::default(),
        };
        runtime.send_message(request).await.map_err(AgentError::kernel(ToolName::Send.as_str()))?;
        Ok(())
    }

    /// Releases a held agent process that was never released: one with no message on its
    /// release channel (read or not) and no checkpoint. For a run that ended between recording
    /// a seat's token and releasing it; a released agent is left alone, so it is never told
    /// twice. Returns whether it released it.
    pub async fn release_if_held(
        &self,
        runtime: &crate::actors::runtime::Runtime,
        pid: Pid,
    ) -> Result<bool, AgentError> {
        let store = runtime.store();
        let query = crate::actors::kernel::mailbox::MailboxQuery {
            filter: crate::actors::kernel::mailbox::MessageFilter {
                channel: Some(super::start::RELEASE_CHANNEL.to_string()),
                ..Default::default()
            },
            include_acked: true,
            limit: 1,
        };
        let corrupt = |e: crate::actors::store::StoreError| AgentError::Corrupt { message: e.to_string() };
        let released = !store.mailbox(pid, &query).map_err(corrupt)?.messages.is_empty();
        if released || store.checkpoint(pid).map_err(corrupt)?.is_some() {
            return Ok(false);
        }
        self.release(runtime, pid).await?;
        Ok(true)
    }

    fn launch_spec(&self, launch: AgentLaunch) -> Result<RootSpec, AgentError> {
        let agent = launch.agent.as_str();
        if self.config.target(agent).is_none() {
            return Err(AgentError::BadLaunch {
                message: format!("no profile or machine has the id {}", crate::tools::quote(agent)),
            });
        }
        let goal = launch.checked_goal().map_err(|message| AgentError::BadLaunch { message })?;
        Ok(RootSpec {
            goal,
            image: self.image_for(agent),
            cwd: self.root_cwd(agent),
            capabilities: self.launch_capabilities(agent),
            budget: self.root_limits(agent).kernel,
            clearance: None,
            goal_labels: Default::default(),
            supervision: self.restart_of(agent).1,
        })
    }
}

/// The secrets `config`'s agents' events never carry: its `telemetry.redact` literals, and
/// the values of its `telemetry.redact_env` variables and of its brains' API key variables as
/// the environment holds them now (an unset or empty variable has nothing to redact).
fn secrets_of(config: &CheckedConfig) -> Vec<String> {
    let settings = config.telemetry();
    let variables = settings
        .redact_env()
        .iter()
        .map(String::as_str)
        .chain(config.brains().filter_map(|b| b.api_key_env()))
        .chain(config.externals().flat_map(|p| p.cli().secret_sources()));
    let values = variables.filter_map(|name| std::env::var(name).ok()).filter(|value| !value.is_empty());
    settings.redact().iter().cloned().chain(values).collect()
}

/// What a root launch's budget is made from besides its profile's budget: the caller's
/// limits (command-line flags), and whether the default cap applies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RootBudget {
    /// Limits the caller sets; they take precedence over the profile's.
    pub limits: AgentBudget,
    /// No default cap: dimensions neither the caller nor the profile sets are unlimited.
    pub unlimited: bool,
}

impl AgentHost {
    /// Sets what root launches' budgets are made from (the default: no caller limits, the
    /// default cap on).
    pub fn set_root_budget(&self, budget: RootBudget) {
        *self.root_budget.lock() = budget;
    }

    /// The limits a root launch of `agent` runs under: per dimension the caller's, else the
    /// profile's (a machine's entry profile), else the configuration's default cap
    /// (`default_budget`, or [`crate::agent::limits::DEFAULT_ROOT_BUDGET`]) unless unlimited.
    pub fn root_limits(&self, agent: &str) -> AgentBudget {
        let root = *self.root_budget.lock();
        let profile = self
            .config
            .target(agent)
            .and_then(|t| self.config.first_profile(&t).map(|p| *p.budget()))
            .or_else(|| self.config.external(agent).map(|p| *p.budget()))
            .unwrap_or(AgentBudget::NONE);
        let chosen = root.limits.or(&profile);
        if root.unlimited { chosen } else { chosen.or(self.config.default_budget()) }
    }

    /// The restart policy and supervision an agent starting as `agent` is launched with: its
    /// profile's, or a machine's entry-state profile's.
    pub fn restart_of(
        &self,
        agent: &str,
    ) -> (crate::actors::kernel::restart::RestartPolicy, Option<crate::actors::kernel::restart::Supervision>)
    {
        if let Some(external) = self.config.external(agent) {
            return (external.restart(), external.supervision());
        }
        let profile = match self.config.machine(agent) {
            Some(machine) => self.config.profile(machine.entry().profile().as_str()),
            None => self.config.profile(agent),
        };
        profile.map_or_else(Default::default, |p| (p.restart(), p.supervision()))
    }

    /// What a process launched as `agent` is granted: `process:spawn` (execute, delegable) if
    /// it, or anything it can become by exec or a machine transition, may start subagents or
    /// forks; and read on every other agent image its tree may launch (`image:<id>`,
    /// delegable: a launch on an image other than the parent's needs it), so native and
    /// external agents can start each other. Nothing otherwise.
    pub fn launch_capabilities(&self, agent: &str) -> Vec<CapabilityRequest> {
        let reach = reach(&self.config, agent);
        if !reach.launches {
            return Vec::new();
        }
        let own = self.image_for(agent);
        let images: std::collections::BTreeSet<ImageId> =
            reach.children.iter().map(|id| self.image_for(id)).filter(|image| *image != own).collect();
        let grant = |resource: String, rights| CapabilityRequest {
            resource,
            rights,
            constraints: Default::default(),
            delegable: true,
        };
        std::iter::once(grant("process:spawn".into(), Rights::EXECUTE))
            .chain(images.into_iter().map(|image| grant(format!("image:{}", image.as_str()), Rights::READ)))
            .collect()
    }
}

/// What an agent starting as `start` can ever do by way of launches.
struct Reach {
    /// Whether it (or anything it can become by exec or a machine transition) may start
    /// subagents, forks or child processes.
    launches: bool,
    /// Every profile or machine id a launch anywhere below it may start.
    children: std::collections::BTreeSet<String>,
}

/// A walk over the profiles an agent starting as `start` can become (exec roster targets,
/// machine states) and the agents its tree can launch (rosters, child agents).
fn reach(config: &CheckedConfig, start: &str) -> Reach {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Reach { launches: false, children: Default::default() };
    // (id, whether it is `start` itself or something it becomes).
    let mut pending = vec![(start.to_string(), true)];
    while let Some((id, own)) = pending.pop() {
        if !seen.insert((id.clone(), own)) {
            continue;
        }
        if !own {
            out.children.insert(id.clone());
        }
        if let Some(machine) = config.machine(&id) {
            pending.extend(machine.states().iter().map(|s| (s.profile().as_str().to_string(), own)));
            continue;
        }
        let (caps, roster) = match (config.profile(&id), config.external(&id)) {
            (Some(profile), _) => (profile.capabilities(), profile.roster()),
            (None, Some(external)) => (external.capabilities(), external.roster()),
            (None, None) => continue,
        };
        let launches = caps.contains(Capability::Subagents)
            || caps.contains(Capability::Fork)
            || caps.contains(Capability::ChildProcesses);
        out.launches |= own && launches;
        if launches {
            pending.extend(roster.iter().map(|t| (t.as_str().to_string(), false)));
            if let Some(skill) = caps.child_processes() {
                pending.push((skill.child_agent().to_string(), false));
            }
        }
        if caps.contains(Capability::Exec) {
            pending.extend(roster.iter().map(|t| (t.as_str().to_string(), own)));
        }
    }
    out
}

/// Reads a scripts file: a JSON object mapping script names to scripts, each checked.
pub fn read_scripts(file: &std::path::Path) -> Result<std::collections::HashMap<String, Script>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let raw: std::collections::HashMap<String, serde_json::Value> = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a JSON object of scripts: {e}", file.display()))?;
    let mut scripts = std::collections::HashMap::new();
    for (name, value) in raw {
        let script = Script::from_json(&value.to_string())
            .map_err(|e| format!("the script {name:?} in {}: {e}", file.display()))?;
        scripts.insert(name, script);
    }
    Ok(scripts)
}
