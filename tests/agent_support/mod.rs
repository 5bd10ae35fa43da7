//! Shared set-up for the agent-layer tests: a configuration from YAML, scripted brains per
//! profile (or per profile and launch prompt), a host on an in-memory chunk store, and a
//! runtime running the agent image.

#![allow(dead_code, unreachable_pub)]

pub mod config;
pub mod relay;

use agentvisor::actors::Pid;
use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::actors::{Outcome, Status};
use agentvisor::agent::brain::{
    Brain, Message, Script, ScriptedBrain, ScriptedTurn, TurnFuture, TurnRequest,
};
use agentvisor::agent::config::load_yaml;
use agentvisor::agent::run::{AgentError, AgentHost, AgentIdentity, BrainProvider};
use agentvisor::agent::telemetry::{AgentEvent, EventRecord, Telemetry};
use agentvisor::agent::window::MemoryChunkStore;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Scripts by `brain:<id>` (the brain being made, e.g. a summarizer), `profile#incarnation`
/// (1 for a process's first incarnation), `profile:prompt` (a fork's or a subagent's prompt)
/// or `profile`, tried in that order.
#[derive(Clone, Default)]
pub struct Scripts(pub HashMap<String, Vec<ScriptedTurn>>);

impl Scripts {
    pub fn new() -> Scripts {
        Scripts::default()
    }

    pub fn with(mut self, key: &str, turns: Vec<ScriptedTurn>) -> Scripts {
        self.0.insert(key.to_string(), turns);
        self
    }

    /// The script for `identity`, by the keys above; empty if none matches.
    pub fn for_identity(&self, identity: &AgentIdentity) -> Vec<ScriptedTurn> {
        let by_brain = format!("brain:{}", identity.brain);
        let numbered = format!("{}#{}", identity.profile, identity.incarnation);
        let prompted = format!("{}:{}", identity.profile, identity.launch.prompt);
        self.0
            .get(&by_brain)
            .or_else(|| self.0.get(&numbered))
            .or_else(|| self.0.get(&prompted))
            .or_else(|| self.0.get(&identity.profile))
            .cloned()
            .unwrap_or_default()
    }

    /// A brain playing `identity`'s script from the turn it has reached.
    pub fn brain(&self, identity: &AgentIdentity) -> Arc<dyn Brain> {
        Arc::new(ScriptedBrain::new(Script::new(self.for_identity(identity)).skip(identity.turns_taken)))
    }
}

/// A host for `yaml` whose brains play `scripts`.
pub fn host(yaml: &str, scripts: Scripts) -> Arc<AgentHost> {
    host_on(yaml, scripts, Arc::new(MemoryChunkStore::new()))
}

/// The same, on a given chunk store.
pub fn host_on(
    yaml: &str,
    scripts: Scripts,
    chunks: Arc<dyn agentvisor::agent::window::ChunkStore + Send + Sync>,
) -> Arc<AgentHost> {
    let provider =
        move |identity: &AgentIdentity| -> Result<Arc<dyn Brain>, AgentError> { Ok(scripts.brain(identity)) };
    host_with(yaml, Arc::new(provider), chunks)
}

/// A host for `yaml` with brains from `brains`, on `chunks`.
pub fn host_with(
    yaml: &str,
    brains: Arc<dyn BrainProvider>,
    chunks: Arc<dyn agentvisor::agent::window::ChunkStore + Send + Sync>,
) -> Arc<AgentHost> {
    let config = load_yaml(yaml).expect("the test configuration passes the launch check");
    AgentHost::new(config, brains, chunks, Telemetry::new())
}

/// One request a brain was asked, as it was asked.
#[derive(Clone, Debug)]
pub struct Asked {
    /// The incarnation the brain was made for.
    pub agent_id: String,
    /// The profile of the incarnation the brain was made for.
    pub profile: String,
    /// The brain id (a summarizer's differs from its profile's brain).
    pub brain: String,
    /// The system prompt slot.
    pub system: String,
    /// The offered tools' names.
    pub tools: Vec<String>,
    /// The window, oldest message first.
    pub window: Vec<Message>,
}

/// Every request asked of the brains of a [`host_recording`] host, in order.
pub type Requests = Arc<Mutex<Vec<Asked>>>;

/// A brain that records each request, then lets `inner` answer it.
pub struct Recording {
    inner: Arc<dyn Brain>,
    agent_id: String,
    profile: String,
    brain: String,
    requests: Requests,
}

impl Brain for Recording {
    fn turn<'a>(&'a self, request: TurnRequest<'a>) -> TurnFuture<'a> {
        let asked = Asked {
            agent_id: self.agent_id.clone(),
            profile: self.profile.clone(),
            brain: self.brain.clone(),
            system: request.system.to_string(),
            tools: request.tools.iter().map(|t| t.name.clone()).collect(),
            window: request.window.messages().cloned().collect(),
        };
        self.requests.lock().expect("requests lock").push(asked);
        self.inner.turn(request)
    }
}

/// A host like [`host`] whose brains record every request they are asked.
pub fn host_recording(yaml: &str, scripts: Scripts) -> (Arc<AgentHost>, Requests) {
    host_recording_on(yaml, scripts, Arc::new(MemoryChunkStore::new()))
}

/// The same, on a given chunk store.
pub fn host_recording_on(
    yaml: &str,
    scripts: Scripts,
    chunks: Arc<dyn agentvisor::agent::window::ChunkStore + Send + Sync>,
) -> (Arc<AgentHost>, Requests) {
    let requests: Requests = Arc::default();
    let recorded = Arc::clone(&requests);
    let provider = move |identity: &AgentIdentity| -> Result<Arc<dyn Brain>, AgentError> {
        Ok(Arc::new(Recording {
            inner: scripts.brain(identity),
            agent_id: identity.agent_id.clone(),
            profile: identity.profile.clone(),
            brain: identity.brain.clone(),
            requests: Arc::clone(&recorded),
        }))
    };
    (host_with(yaml, Arc::new(provider), chunks), requests)
}

/// The text of every message of `window`, tool calls included, one line each.
pub fn window_text(window: &[Message]) -> Vec<String> {
    window
        .iter()
        .map(|m| {
            let calls: Vec<String> =
                m.tool_calls().iter().map(|c| format!("{}({})", c.name, c.arguments)).collect();
            format!("[{}] {} {}", m.role().as_str(), m.text().unwrap_or_default(), calls.join(" "))
        })
        .collect()
}

/// An in-memory runtime running the agent image.
pub async fn runtime(host: &Arc<AgentHost>) -> Runtime {
    Runtime::in_memory(RuntimeOptions::new().image(host.image())).await.expect("runtime")
}

/// Launches `agent` with `prompt` as a root and waits for it to end.
pub async fn run_root(
    host: &Arc<AgentHost>,
    runtime: &Runtime,
    agent: &str,
    prompt: &str,
) -> (Pid, Finished) {
    let pid =
        runtime.spawn_root(host.root_spec(agent, prompt).expect("root spec")).await.expect("spawn root");
    let finished = finished(runtime, pid).await;
    (pid, finished)
}

/// Scripts for a `lead` launched with prompt `start` that takes `before`, then forks two copies
/// in one turn (prompts `one` and `two`, each ending at once), collects them and ends.
pub fn two_forks(before: Vec<ScriptedTurn>) -> Scripts {
    let mut lead = before;
    lead.extend([
        ScriptedTurn::call("fork", json!({"prompt": "one"})).with_call("fork", json!({"prompt": "two"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::text("collected"),
    ]);
    Scripts::new()
        .with("lead:start", lead)
        .with("lead:one", vec![ScriptedTurn::text("one done")])
        .with("lead:two", vec![ScriptedTurn::text("two done")])
}

/// Launches `agent` with `prompt` as a root on a new in-memory runtime of `host`, and asserts
/// that it ran to an exit.
pub async fn run_to_exit(host: &Arc<AgentHost>, agent: &str, prompt: &str) -> Pid {
    let runtime = runtime(host).await;
    let (pid, done) = run_root(host, &runtime, agent, prompt).await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    pid
}

/// How a process ended, with its result payload when it exited with one.
#[derive(Debug)]
pub struct Finished {
    pub status: Status,
    pub outcome: Option<Outcome>,
    pub payload: Option<Value>,
}

impl Finished {
    /// The `result` an agent finished with.
    pub fn result(&self) -> Value {
        self.payload.as_ref().and_then(|p| p.get("result")).cloned().unwrap_or(Value::Null)
    }

    /// The profile that finished.
    pub fn profile(&self) -> String {
        self.payload
            .as_ref()
            .and_then(|p| p.get("profile"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into()
    }
}

/// Waits for `pid` to end and reads its result.
pub async fn finished(runtime: &Runtime, pid: Pid) -> Finished {
    let row = runtime.wait_terminal(pid).await.expect("wait terminal");
    let payload = match &row.outcome {
        Some(Outcome::Exited { result_oid: Some(oid) }) => runtime.payload(*oid).expect("payload"),
        _ => None,
    };
    Finished { status: row.status, outcome: row.outcome, payload }
}

/// The events of one process, in order.
pub fn events_of(host: &AgentHost, pid: Pid) -> Vec<EventRecord> {
    let pid = pid.to_string();
    host.telemetry().records().iter().filter(|r| r.pid == pid).map(|r| EventRecord::clone(r)).collect()
}

/// The refusals recorded for a process: (tool, code, message).
pub fn refusals(host: &AgentHost, pid: Pid) -> Vec<(String, String, String)> {
    events_of(host, pid)
        .into_iter()
        .filter_map(|r| match r.event {
            AgentEvent::ToolRefused { tool, code, message, .. } => Some((tool, code, message)),
            _ => None,
        })
        .collect()
}

/// A kernel object payload of `pid` by name (`agent.tasks`, …).
pub fn module(runtime: &Runtime, pid: Pid, name: &str) -> Value {
    let space = runtime.object_space();
    let oid = space
        .process(pid)
        .and_then(|m| m.namespace.get(name).copied())
        .unwrap_or_else(|| panic!("{pid} binds no {name}"));
    runtime.payload(oid).expect("payload").unwrap_or(Value::Null)
}
