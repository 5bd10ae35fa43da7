//! Shared set-up for the agent-layer tests: a configuration from YAML, scripted brains per
//! profile (or per profile and launch prompt), a host on an in-memory chunk store, and a
//! runtime running the agent image.

#![allow(dead_code, unreachable_pub)]

pub mod config;
pub mod relay;

use agentvisor::actors::Pid;
use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::actors::{Outcome, Status};
use agentvisor::agent::brain::{Brain, Script, ScriptedBrain, ScriptedTurn};
use agentvisor::agent::config::load_yaml;
use agentvisor::agent::run::{AgentError, AgentHost, AgentIdentity};
use agentvisor::agent::telemetry::{AgentEvent, EventRecord, Telemetry};
use agentvisor::agent::window::MemoryChunkStore;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Scripts by `profile#incarnation` (1 for a process's first incarnation), `profile:prompt`
/// (a fork's or a subagent's prompt) or `profile`, tried in that order.
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
    let config = load_yaml(yaml).expect("the test configuration passes the launch check");
    let provider = move |identity: &AgentIdentity| -> Result<Arc<dyn Brain>, AgentError> {
        let numbered = format!("{}#{}", identity.profile, identity.incarnation);
        let prompted = format!("{}:{}", identity.profile, identity.launch.prompt);
        let turns = scripts
            .0
            .get(&numbered)
            .or_else(|| scripts.0.get(&prompted))
            .or_else(|| scripts.0.get(&identity.profile))
            .cloned()
            .unwrap_or_default();
        Ok(Arc::new(ScriptedBrain::new(Script::new(turns).skip(identity.turns_taken))))
    };
    AgentHost::new(config, Arc::new(provider), chunks, Telemetry::new())
}

/// An in-memory runtime running the agent image.
pub async fn runtime(host: &Arc<AgentHost>) -> Runtime {
    Runtime::in_memory(RuntimeOptions::new().image(host.image())).await.expect("runtime")
}

/// Launches `agent` with `prompt` as a root and waits for it to end.
pub async fn run_root(host: &Arc<AgentHost>, runtime: &Runtime, agent: &str, prompt: &str) -> (Pid, Finished) {
    let pid = runtime.spawn_root(host.root_spec(agent, prompt).expect("root spec")).await.expect("spawn root");
    let finished = finished(runtime, pid).await;
    (pid, finished)
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
        self.payload.as_ref().and_then(|p| p.get("profile")).and_then(Value::as_str).unwrap_or_default().into()
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
    host.telemetry().records().into_iter().filter(|r| r.pid == pid).collect()
}

/// The `type` tag of an event.
pub fn kind(event: &AgentEvent) -> &'static str {
    match event {
        AgentEvent::AgentSpawned { .. } => "agent_spawned",
        AgentEvent::AgentTransition { .. } => "agent_transition",
        AgentEvent::FsmState { .. } => "fsm_state",
        AgentEvent::TurnCompleted { .. } => "turn_completed",
        AgentEvent::Compacted { .. } => "compacted",
        AgentEvent::MessageSent { .. } => "message_sent",
        AgentEvent::MessageReceived { .. } => "message_received",
        AgentEvent::ToolRefused { .. } => "tool_refused",
        AgentEvent::AgentFinished { .. } => "agent_finished",
    }
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
