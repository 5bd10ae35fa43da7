//! A host whose scripted brains can do three things a plain script cannot:
//!
//! - name ids they were handed: `{id:N}` anywhere in a call's arguments becomes the N-th id a
//!   `fork` or `spawn_subagent` result returned to this agent (from 0);
//! - hold a turn until another agent's turn has been played (gates), so tests that need one
//!   agent to act before another reads need neither sleeps nor luck;
//! - keep every request's window, by pid, for assertions on what an agent was shown.
//!
//! Scripts are looked up exactly as `super::host` looks them up.

use super::Scripts;
use agentvisor::actors::Pid;
use agentvisor::agent::brain::{Brain, Message, Script, ScriptedBrain, TurnFuture, TurnRequest};
use agentvisor::agent::config::load_yaml;
use agentvisor::agent::run::{AgentError, AgentHost, AgentIdentity};
use agentvisor::agent::telemetry::Telemetry;
use agentvisor::agent::window::MemoryChunkStore;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Notify;

/// One request a brain was asked: whose, under which script key, and the window it saw.
#[derive(Clone, Debug)]
pub struct Request {
    pub pid: Pid,
    pub key: String,
    pub messages: Vec<Message>,
}

/// Every request of a host's brains, in the order they were asked.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Request>>>);

impl Log {
    fn push(&self, request: Request) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push(request);
    }

    /// The windows `pid`'s brain was shown, first request first.
    pub fn windows_of(&self, pid: Pid) -> Vec<Vec<Message>> {
        let all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        all.iter().filter(|r| r.pid == pid).map(|r| r.messages.clone()).collect()
    }
}

/// Where turns wait and what opens them: a turn listed in `waits` is played only once the
/// named gate has been opened by the turn listed for it in `opens` being played.
#[derive(Clone, Default)]
pub struct Gates {
    waits: HashMap<(String, usize), String>,
    opens: HashMap<(String, usize), String>,
    open: Arc<Mutex<HashMap<String, Arc<Gate>>>>,
}

/// A gate: closed until opened, then open for every waiter, those already waiting included.
#[derive(Default)]
struct Gate {
    opened: std::sync::atomic::AtomicBool,
    notify: Notify,
}

impl Gate {
    async fn pass(&self) {
        loop {
            let notified = self.notify.notified();
            if self.opened.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    fn open(&self) {
        self.opened.store(true, std::sync::atomic::Ordering::SeqCst);
        self.notify.notify_waiters();
    }
}

impl Gates {
    pub fn new() -> Gates {
        Gates::default()
    }

    /// Turn `turn` (from 0) of the script `key` waits for `gate`.
    pub fn wait_before(mut self, key: &str, turn: usize, gate: &str) -> Gates {
        self.waits.insert((key.to_string(), turn), gate.to_string());
        self
    }

    /// Playing turn `turn` (from 0) of the script `key` opens `gate`. A turn is played after
    /// every call of the turn before it has run, so this says "once turn `turn - 1` is done".
    pub fn open_at(mut self, key: &str, turn: usize, gate: &str) -> Gates {
        self.opens.insert((key.to_string(), turn), gate.to_string());
        self
    }

    fn gate(&self, gate: &str) -> Arc<Gate> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(open.entry(gate.to_string()).or_default())
    }
}

/// A host for `yaml` whose brains play `scripts` with `gates`, and the log of their requests.
pub fn host(yaml: &str, scripts: Scripts, gates: Gates) -> (Arc<AgentHost>, Log) {
    let config = load_yaml(yaml).expect("the test configuration passes the launch check");
    let log = Log::default();
    let brains_log = log.clone();
    let provider = move |identity: &AgentIdentity| -> Result<Arc<dyn Brain>, AgentError> {
        let numbered = format!("{}#{}", identity.profile, identity.incarnation);
        let prompted = format!("{}:{}", identity.profile, identity.launch.prompt);
        let key = [numbered, prompted, identity.profile.clone()]
            .into_iter()
            .find(|k| scripts.0.contains_key(k))
            .unwrap_or_default();
        let turns = scripts.0.get(&key).cloned().unwrap_or_default();
        let inner = ScriptedBrain::new(Script::new(turns).skip(identity.turns_taken));
        Ok(Arc::new(Relay { inner, pid: identity.pid, key, gates: gates.clone(), log: brains_log.clone() }))
    };
    let host =
        AgentHost::new(config, Arc::new(provider), Arc::new(MemoryChunkStore::new()), Telemetry::new());
    (host, log)
}

struct Relay {
    inner: ScriptedBrain,
    pid: Pid,
    key: String,
    gates: Gates,
    log: Log,
}

impl Brain for Relay {
    fn turn<'a>(&'a self, request: TurnRequest<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let index = self.inner.played();
            let slot = (self.key.clone(), index);
            if let Some(gate) = self.gates.waits.get(&slot) {
                self.gates.gate(gate).pass().await;
            }
            if let Some(gate) = self.gates.opens.get(&slot) {
                // Open for good: every waiter proceeds, whether it is already waiting or not.
                self.gates.gate(gate).open();
            }
            let messages: Vec<Message> = request.window.messages().cloned().collect();
            let ids = handed_ids(&messages);
            self.log.push(Request { pid: self.pid, key: self.key.clone(), messages });
            let mut turn = self.inner.play(&request)?;
            for call in &mut turn.message.tool_calls {
                substitute(&mut call.arguments, &ids);
            }
            Ok(turn)
        })
    }
}

/// The ids `fork` and `spawn_subagent` results handed this agent, in window order.
fn handed_ids(messages: &[Message]) -> Vec<String> {
    let mut launching: Vec<String> = Vec::new();
    let mut ids = Vec::new();
    for message in messages {
        for call in message.tool_calls() {
            if call.name == "fork" || call.name == "spawn_subagent" {
                launching.push(call.id.clone());
            }
        }
        if let Message::Tool { tool_call_id, text } = message
            && launching.contains(tool_call_id)
            && let Some(start) = text.find("\"id\":\"")
        {
            let rest = &text[start + 6..];
            if let Some(end) = rest.find('"') {
                ids.push(rest[..end].to_string());
            }
        }
    }
    ids
}

fn substitute(value: &mut Value, ids: &[String]) {
    match value {
        Value::String(s) => {
            for (n, id) in ids.iter().enumerate() {
                *s = s.replace(&format!("{{id:{n}}}"), id);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| substitute(v, ids)),
        Value::Object(map) => map.values_mut().for_each(|v| substitute(v, ids)),
        _ => {}
    }
}

/// The text of every message, for assertions that something appears somewhere in a window.
pub fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().filter_map(|m| m.text().map(str::to_string)).collect()
}
