//! Agent steps: `spawn_agent`, `agent_turn` and `agent_events`, with the scenario playing the
//! model.
//!
//! A scenario with an `agents` configuration registers the agent image of an [`AgentHost`]
//! whose brains are [`DrivenBrains`]: every turn an agent process asks for is queued for the
//! runner, and an `agent_turn` step answers it. After answering, the step waits — on the
//! driver's notification, the kernel's terminal wait and kernel telemetry, never a timer — for
//! whichever comes first: the same process asking for its next turn (whose window tail holds
//! the tool results), its end (the results are read back from its last checkpoint), or its
//! suspension on a wait (a `wait_for_subagents`, or a `finish` waiting for its turn's forks),
//! when the results printed are those of the calls answered before it, sent live by the
//! telemetry ([`CallAnswered`]) to a subscription taken before the turn was answered.

use super::error::ScenarioError;
use super::format::{AgentEventsStep, AgentTurnStep, SpawnAgentStep};
use super::host::inspect_json;
use super::runner::{Answer, Runner, host_error};
use super::settle;
use crate::actors::Pid;
use crate::actors::kernel::status::Status;
use crate::actors::runtime::Runtime;
use crate::actors::runtime::calls::ToolError;
use crate::actors::runtime::program::Image;
use crate::actors::runtime::telemetry::KernelEvent;
use crate::agent::brain::{AssistantMessage, DrivenBrains, DrivenDriver, Message, ToolCall, TurnAsk};
use crate::agent::config::load_path;
use crate::agent::run::{AGENT_IMAGE, AgentHost, AgentState};
use crate::agent::telemetry::{CallAnswered, Telemetry};
use crate::agent::window::{ChunkStore, MemoryChunkStore, Window, open_chunk_store};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

/// What a scenario with agents holds: the host, the driver of its brains, and the asks taken
/// from the driver but not answered yet.
pub(super) struct AgentRig {
    host: Arc<AgentHost>,
    driver: DrivenDriver,
    chunks: Arc<dyn ChunkStore + Send + Sync>,
    /// The next turn of each process, asked and not yet answered (at most one per process:
    /// a process waits for each turn before it asks again).
    pending: HashMap<Pid, TurnAsk>,
}

impl AgentRig {
    /// Loads and checks the configuration and builds the host: the state's durable chunk store
    /// if there is a state directory (in `store_url`'s database when one is named), in memory
    /// otherwise.
    pub(super) fn open(
        config: &Path,
        state_dir: Option<&Path>,
        store_url: Option<&str>,
    ) -> Result<AgentRig, ScenarioError> {
        let checked = load_path(config)
            .map_err(|e| ScenarioError::AgentConfig { path: config.to_path_buf(), message: e.to_string() })?;
        let chunks: Arc<dyn ChunkStore + Send + Sync> = match state_dir {
            None => Arc::new(MemoryChunkStore::new()),
            Some(dir) => open_chunk_store(dir, store_url)
                .map_err(|e| ScenarioError::AgentStore { message: e.to_string() })?,
        };
        let (brains, driver) = DrivenBrains::new();
        let host = AgentHost::new(checked, brains, Arc::clone(&chunks), Telemetry::new());
        Ok(AgentRig { host, driver, chunks, pending: HashMap::new() })
    }

    /// The agent images, to register in a runtime's options.
    pub(super) fn images(&self) -> Vec<Image> {
        self.host.images()
    }

    /// Drops every unanswered ask (before a shutdown: the processes ask again after a reopen).
    pub(super) fn abandon_asks(&mut self) {
        self.pending.clear();
        self.driver.abandon_all();
    }
}

/// How the wait after an answered turn ended.
enum AfterTurn {
    /// The process asked for its next turn.
    Asked(TurnAsk),
    /// The process is terminal.
    Ended,
    /// The process suspended on a wait before asking again.
    Waiting,
}

/// A tool result's text as JSON where it is JSON, else as a string.
fn result_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// The tool results (of the calls in `calls`, by id) and notes of a window tail.
fn read_tail(tail: &[Message], calls: &[(String, String)]) -> (Vec<Value>, Vec<Value>) {
    let mut results = Vec::new();
    let mut notes = Vec::new();
    for message in tail {
        match message {
            Message::Tool { tool_call_id, text } => {
                if let Some((id, name)) = calls.iter().find(|(id, _)| id == tool_call_id) {
                    results.push(json!({ "id": id, "name": name, "result": result_value(text) }));
                }
            }
            Message::Note { text } | Message::User { text } => notes.push(json!(text)),
            Message::Assistant(_) => {}
        }
    }
    (results, notes)
}

/// The tool results of `calls` that `pid` answered, as tool messages, from the answers sent
/// so far (a lagged subscription skips what it missed).
fn answered_before(
    answers: &mut tokio::sync::broadcast::Receiver<CallAnswered>,
    pid: Pid,
    calls: &[(String, String)],
) -> Vec<Message> {
    let pid = pid.to_string();
    let mut results = Vec::new();
    loop {
        match answers.try_recv() {
            Ok(a) if a.pid == pid && calls.iter().any(|(id, _)| *id == a.call_id) => {
                results.push(Message::Tool { tool_call_id: a.call_id, text: a.result });
            }
            Ok(_) | Err(TryRecvError::Lagged(_)) => {}
            Err(TryRecvError::Empty | TryRecvError::Closed) => return results,
        }
    }
}

/// The tail of an ended process's last checkpointed window (the turn it ended on).
fn checkpointed_tail(rt: &Runtime, chunks: &dyn ChunkStore, pid: Pid) -> Result<Vec<Message>, String> {
    let envelope = rt
        .store()
        .checkpoint(pid)
        .map_err(|e| format!("failed to read the checkpoint of {pid}: {e}"))?
        .ok_or_else(|| format!("{pid} left no checkpoint"))?;
    let state = AgentState::decode(&envelope.body).map_err(|e| e.to_string())?;
    let window: Window<Message> = Window::restore(state.window, chunks)
        .map_err(|e| format!("failed to restore the window of {pid}: {e}"))?;
    let messages: Vec<Message> = window.iter().cloned().collect();
    Ok(crate::agent::brain::tail_since_assistant(&messages).into_iter().cloned().collect())
}

impl Runner<'_> {
    fn rig(&self, step: usize) -> Result<&AgentRig, ScenarioError> {
        self.agents.as_ref().ok_or_else(|| ScenarioError::Runtime {
            step,
            message: "agent steps need a top-level \"agents\" configuration".into(),
        })
    }

    /// The pid of `name`, refused unless it runs the agent image.
    fn agent_pid(&self, step: usize, rt: &Runtime, name: &str) -> Result<Pid, ScenarioError> {
        let pid = self.pid_of(step, name)?;
        if let Ok(Some(row)) = rt.process(pid)
            && row.image.0 != AGENT_IMAGE
        {
            return Err(ScenarioError::NotAnAgent {
                step,
                name: super::format::name_ref(name).to_string(),
                pid: pid.to_string(),
                image: row.image.0,
            });
        }
        Ok(pid)
    }

    pub(super) async fn spawn_agent(&mut self, i: usize, s: &SpawnAgentStep) -> Result<(), ScenarioError> {
        let rt = self.rt(i)?;
        let spec = match self.rig(i)?.host.root_spec(&s.agent, &s.prompt) {
            Ok(spec) => spec,
            Err(e) => {
                self.unbind_name(&s.name, format!(": steps[{i}] did not launch it (bad_launch)"));
                return self.emit(
                    i,
                    "spawn_agent",
                    Answer::Error(ToolError::new("bad_launch", e.to_string())),
                );
            }
        };
        match rt.spawn_root(spec).await {
            Ok(pid) => {
                settle::until_started(&rt, pid).await;
                self.bind_name(&s.name, json!(pid));
                let answer = match inspect_json(&rt, pid) {
                    Ok(v) => Answer::Result(v),
                    Err(e) => Answer::Error(e),
                };
                self.emit(i, "spawn_agent", answer)
            }
            Err(e) => {
                let e = host_error(&e);
                self.unbind_name(&s.name, format!(": steps[{i}] did not launch it ({})", e.code));
                self.emit(i, "spawn_agent", Answer::Error(e))
            }
        }
    }

    /// The next turn request of `pid`: one taken earlier, or the next the driver gets. `None`
    /// if the process ends (or no brain can ask) first.
    async fn turn_ask(&mut self, i: usize, rt: &Runtime, pid: Pid) -> Result<Option<TurnAsk>, ScenarioError> {
        let rig = self.agents.as_mut().ok_or_else(|| ScenarioError::Runtime {
            step: i,
            message: "agent steps need a top-level \"agents\" configuration".into(),
        })?;
        if let Some(ask) = rig.pending.remove(&pid).filter(|a| !a.is_abandoned()) {
            return Ok(Some(ask));
        }
        tokio::select! {
            biased;
            ask = rig.driver.next_request(pid) => Ok(ask),
            _ = rt.wait_terminal(pid) => Ok(rig.driver.try_next(pid)),
        }
    }

    /// After an answered turn: waits for the process's next ask, its end, or its suspension.
    /// `events` was subscribed before the turn was answered, so no transition is missed.
    async fn after_turn(
        &self,
        rt: &Runtime,
        pid: Pid,
        rig: &AgentRig,
        mut events: tokio::sync::broadcast::Receiver<KernelEvent>,
    ) -> AfterTurn {
        let waiting =
            |rt: &Runtime| matches!(rt.process(pid), Ok(Some(row)) if row.status == Status::WaitingEvent);
        loop {
            tokio::select! {
                biased;
                ask = rig.driver.next_request(pid) => return match ask {
                    Some(ask) => AfterTurn::Asked(ask),
                    None => AfterTurn::Ended,
                },
                _ = rt.wait_terminal(pid) => return match rig.driver.try_next(pid) {
                    Some(ask) => AfterTurn::Asked(ask),
                    None => AfterTurn::Ended,
                },
                event = events.recv() => match event {
                    Ok(KernelEvent::ProcessTransition { pid: p, to: Status::WaitingEvent, .. }) if p == pid => {
                        return AfterTurn::Waiting;
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => {
                        if waiting(rt) {
                            return AfterTurn::Waiting;
                        }
                    }
                    // The runtime is gone: the terminal wait answers.
                    Err(RecvError::Closed) => {
                        let _ = rt.wait_terminal(pid).await;
                        return AfterTurn::Ended;
                    }
                },
            }
        }
    }

    pub(super) async fn agent_turn(&mut self, i: usize, s: &AgentTurnStep) -> Result<(), ScenarioError> {
        let rt = self.rt(i)?;
        let pid = self.agent_pid(i, &rt, &s.caller)?;
        let mut tool_calls = Vec::with_capacity(s.tool_calls.len());
        let mut calls: Vec<(String, String)> = Vec::with_capacity(s.tool_calls.len());
        for (k, call) in s.tool_calls.iter().enumerate() {
            let arguments = self.substitute(i, &call.arguments)?;
            let id = format!("s{i}c{k}");
            calls.push((id.clone(), call.name.clone()));
            tool_calls.push(ToolCall { id, name: call.name.clone(), arguments });
        }
        let refuse = |this: &mut Self, code: &str, message: String| {
            for name in s.bind.keys() {
                this.unbind_name(name, format!(": steps[{i}] answered no turn ({code})"));
            }
            this.emit(i, "agent_turn", Answer::Error(ToolError::new(code, message)))
        };
        let Some(ask) = self.turn_ask(i, &rt, pid).await? else {
            let status = rt.process(pid).ok().flatten().map(|r| r.status.to_string()).unwrap_or_default();
            return refuse(self, "agent_ended", format!("{pid} ended ({status}) without asking for a turn"));
        };
        let asked = json!({ "agent_id": ask.agent_id, "profile": ask.profile, "tools": ask.tools });
        // Subscribed before the answer, so that a suspension however fast is seen, and so are
        // the calls answered before it.
        let events = rt.subscribe();
        let mut answers = self.rig(i)?.host.telemetry().subscribe_answered();
        if let Err(e) = ask.answer(AssistantMessage { text: s.text.clone(), tool_calls }) {
            return refuse(self, "turn_abandoned", e.to_string());
        }
        let rig = self.rig(i)?;
        let after = self.after_turn(&rt, pid, rig, events).await;
        let mut doc = json!({ "answered": asked });
        let (tail, ended, waiting) = match after {
            AfterTurn::Asked(next) => {
                let tail = next.tail.clone();
                doc["next"] =
                    json!({ "agent_id": next.agent_id, "profile": next.profile, "tools": next.tools });
                self.agents.as_mut().map(|rig| rig.pending.insert(pid, next));
                (Ok(tail), false, false)
            }
            AfterTurn::Ended => {
                settle::until_parent_notified(&rt, pid).await;
                (checkpointed_tail(&rt, &*rig.chunks, pid), true, false)
            }
            // The turn is not whole until the wait completes, so its window holds nothing to
            // read yet: the calls answered before the wait are those sent live (each before the
            // next call ran, so before the suspension was seen).
            AfterTurn::Waiting => {
                let answered = answered_before(&mut answers, pid, &calls);
                (Ok(answered), false, true)
            }
        };
        match tail {
            Ok(tail) => {
                let (results, notes) = read_tail(&tail, &calls);
                doc["tool_results"] = json!(results);
                doc["notes"] = json!(notes);
            }
            Err(message) => {
                doc["tool_results"] = json!([]);
                doc["notes"] = json!([]);
                doc["results_unreadable"] = json!(message);
            }
        }
        doc["ended"] = json!(ended);
        doc["waiting"] = json!(waiting);
        let row = rt.process(pid).map_err(|e| ScenarioError::Runtime { step: i, message: e.to_string() })?;
        doc["status"] = json!(row.as_ref().map(|r| r.status));
        doc["outcome"] = json!(row.as_ref().and_then(|r| r.outcome.clone()));
        if ended && let Some(oid) = row.as_ref().and_then(|r| r.result_oid) {
            doc["result"] =
                rt.payload(oid).ok().flatten().and_then(|p| p.get("result").cloned()).unwrap_or(Value::Null);
        }
        self.bind(i, &s.bind, &doc);
        self.emit(i, "agent_turn", Answer::Result(doc))
    }

    pub(super) fn agent_events(&mut self, i: usize, s: &AgentEventsStep) -> Result<(), ScenarioError> {
        let rt = self.rt(i)?;
        let pid = self.agent_pid(i, &rt, &s.caller)?;
        let key = pid.to_string();
        let records: Vec<_> =
            self.rig(i)?.host.telemetry().records().into_iter().filter(|r| r.pid == key).collect();
        let types: Vec<&str> = records.iter().map(|r| r.event.type_name()).collect();
        let events = serde_json::to_value(&records).map_err(|e| ScenarioError::Runtime {
            step: i,
            message: format!("failed to render the events: {e}"),
        })?;
        let doc = json!({ "types": types, "events": events });
        self.emit(i, "agent_events", Answer::Result(doc))
    }
}
