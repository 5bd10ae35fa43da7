//! The runner's state, its output, and the step loop.

use super::agents::AgentRig;
use super::calls::Handle;
use super::error::ScenarioError;
use super::format::{Scenario, Step, name_ref, substitute};
use super::settle;
use crate::actors::Pid;
use crate::actors::runtime::calls::{CallOk, CallReply, ToolError};
use crate::actors::runtime::{Runtime, RuntimeError};
use crate::images::{PuppetRestart, builtin_images, observed_puppets};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ScenarioSummary {
    /// Steps run.
    pub steps: usize,
    /// Steps whose answer was an error (tool refusals included: they are often the point).
    pub errors: usize,
    /// `expect` steps that held.
    pub expectations_passed: usize,
    /// `expect` steps that did not hold.
    pub expectations_failed: usize,
    /// Handles of suspended calls that no step awaited, sorted.
    pub pending_handles: Vec<String>,
}

impl ScenarioSummary {
    /// Whether every expectation held.
    pub fn passed(&self) -> bool {
        self.expectations_failed == 0
    }
}

impl std::fmt::Display for ScenarioSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} steps, {} answered an error, {} of {} expectations held",
            self.steps,
            self.errors,
            self.expectations_passed,
            self.expectations_passed + self.expectations_failed
        )?;
        if !self.pending_handles.is_empty() {
            write!(f, ", never awaited: {}", self.pending_handles.join(", "))?;
        }
        Ok(())
    }
}

/// A step's answer, as printed.
pub(super) enum Answer {
    /// The exact result JSON.
    Result(Value),
    /// A refusal or failure.
    Error(ToolError),
    /// A call that suspended its caller (or was held because the caller is paused); a batch
    /// also carries its answers so far.
    Suspended {
        /// The handle a later `await` names.
        handle: String,
        /// Held because the caller is paused, rather than suspended by a blocking wait.
        held: bool,
        /// A batch's array of answers.
        result: Option<Value>,
    },
}

#[derive(Serialize)]
struct Line<'v> {
    step: usize,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    suspended: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    held: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    handle: Option<&'v str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'v Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
}

/// The runner: a runtime, the names bound so far, pending calls, and the output.
pub(super) struct Runner<'o> {
    rt: Option<Arc<Runtime>>,
    pub(super) state_dir: Option<PathBuf>,
    /// The database the state is kept in instead of the state directory's files, if any.
    pub(super) store_url: Option<String>,
    out: &'o mut dyn Write,
    names: HashMap<String, Value>,
    /// Why a name is not bound although a step tried to bind it.
    unbound: HashMap<String, String>,
    pub(super) handles: HashMap<String, Handle>,
    /// Each step's output document, for `expect`.
    pub(super) outputs: Vec<Value>,
    /// Set to `true` to make every in-flight call task let go of the runtime (restart, end).
    pub(super) stop: watch::Sender<bool>,
    pub(super) restart_tx: mpsc::UnboundedSender<PuppetRestart>,
    pub(super) restart_rx: mpsc::UnboundedReceiver<PuppetRestart>,
    /// Restart reports received so far, per process, oldest first.
    pub(super) restarted: HashMap<Pid, VecDeque<Option<CallOk>>>,
    pub(super) summary: ScenarioSummary,
    /// The agent host, its driver and its pending asks, when the scenario has an agent
    /// configuration.
    pub(super) agents: Option<AgentRig>,
}

/// A host error as a tool-style error with a stable code.
pub(super) fn host_error(e: &RuntimeError) -> ToolError {
    e.to_tool_error()
}

/// Opens a runtime with the built-in images, the puppets observed through `sink`, and waits
/// until what recovery left has been brought back.
pub(super) async fn open_runtime(
    dir: Option<&Path>,
    store_url: Option<&str>,
    sink: &mpsc::UnboundedSender<PuppetRestart>,
    agents: Option<&AgentRig>,
) -> Result<Runtime, ScenarioError> {
    let mut options = builtin_images().store_url(store_url.map(str::to_string));
    for image in observed_puppets(sink) {
        options.images.register(image);
    }
    if let Some(rig) = agents {
        for image in rig.images() {
            options.images.register(image);
        }
    }
    let rt = match dir {
        None => Runtime::in_memory(options)
            .await
            .map_err(|e| ScenarioError::Open { path: None, message: e.to_string() })?,
        Some(dir) => {
            let rt = Runtime::open(dir, options)
                .await
                .map_err(|e| ScenarioError::Open { path: Some(dir.to_path_buf()), message: e.to_string() })?;
            if rt.is_read_only() {
                return Err(ScenarioError::StateDirBusy { path: dir.to_path_buf() });
            }
            rt
        }
    };
    settle::until_reopened(&rt).await;
    Ok(rt)
}

impl<'o> Runner<'o> {
    pub(super) async fn open(
        state_dir: Option<&Path>,
        store_url: Option<&str>,
        agents: Option<&Path>,
        out: &'o mut dyn Write,
    ) -> Result<Runner<'o>, ScenarioError> {
        let (restart_tx, restart_rx) = mpsc::unbounded_channel();
        let agents = agents.map(|config| AgentRig::open(config, state_dir, store_url)).transpose()?;
        let rt = open_runtime(state_dir, store_url, &restart_tx, agents.as_ref()).await?;
        Ok(Runner {
            rt: Some(Arc::new(rt)),
            state_dir: state_dir.map(Path::to_path_buf),
            store_url: store_url.map(str::to_string),
            out,
            names: HashMap::new(),
            unbound: HashMap::new(),
            handles: HashMap::new(),
            outputs: Vec::new(),
            stop: watch::channel(false).0,
            restart_tx,
            restart_rx,
            restarted: HashMap::new(),
            summary: ScenarioSummary::default(),
            agents,
        })
    }

    /// The runtime (always present between steps).
    pub(super) fn rt(&self, step: usize) -> Result<Arc<Runtime>, ScenarioError> {
        self.rt.clone().ok_or_else(|| ScenarioError::Runtime {
            step,
            message: "the runtime is gone after a failed restart".into(),
        })
    }

    pub(super) fn take_rt(&mut self) -> Option<Arc<Runtime>> {
        self.rt.take()
    }

    pub(super) fn set_rt(&mut self, rt: Runtime) {
        self.rt = Some(Arc::new(rt));
    }

    pub(super) async fn run(&mut self, scenario: &Scenario) -> Result<(), ScenarioError> {
        for (i, step) in scenario.steps.iter().enumerate() {
            match step {
                Step::SpawnRoot(s) => self.spawn_root(i, s).await?,
                Step::Call(s) => self.call(i, s).await?,
                Step::Batch(s) => self.batch(i, s).await?,
                Step::Await(h) => self.await_handle(i, h).await?,
                Step::Signal(s) => self.signal(i, s).await?,
                Step::Gate(s) => self.gate(i, &s.pid, Some(&s.reason)).await?,
                Step::Ungate(s) => self.gate(i, &s.pid, None).await?,
                Step::Revoke(s) => self.revoke(i, s).await?,
                Step::Inspect(s) => self.inspect(i, s).await?,
                Step::WaitTerminal(s) => self.wait_terminal(i, s).await?,
                Step::Restart => self.restart(i).await?,
                Step::Expect(s) => self.expect(i, s)?,
                Step::SpawnAgent(s) => self.spawn_agent(i, s).await?,
                Step::AgentTurn(s) => self.agent_turn(i, s).await?,
                Step::AgentEvents(s) => self.agent_events(i, s)?,
            }
            self.summary.steps += 1;
        }
        Ok(())
    }

    /// Makes every in-flight call let go of the runtime and collects what each became.
    pub(super) async fn release_calls(&mut self) {
        self.stop.send_replace(true);
        let names: Vec<String> = self.handles.keys().cloned().collect();
        for name in names {
            if let Some(handle) = self.handles.remove(&name) {
                let released = handle.release().await;
                self.handles.insert(name, released);
            }
        }
        self.stop = watch::channel(false).0;
    }

    /// Lets go of every call and shuts the runtime down.
    pub(super) async fn close(&mut self, step: usize) -> Result<(), ScenarioError> {
        self.release_calls().await;
        if let Some(rig) = self.agents.as_mut() {
            rig.abandon_asks();
        }
        let mut pending: Vec<String> = self.handles.keys().cloned().collect();
        pending.sort();
        self.summary.pending_handles = pending;
        let Some(rt) = self.rt.take() else { return Ok(()) };
        let rt = Arc::try_unwrap(rt).map_err(|_| ScenarioError::Runtime {
            step,
            message: "the runtime is still in use by a call task".into(),
        })?;
        rt.shutdown()
            .await
            .map_err(|e| ScenarioError::Runtime { step, message: format!("failed to shut down: {e}") })
    }

    /// Prints one step's line and records its output document.
    pub(super) fn emit(
        &mut self,
        step: usize,
        kind: &'static str,
        answer: Answer,
    ) -> Result<(), ScenarioError> {
        let mut line =
            Line { step, kind, suspended: None, held: None, handle: None, result: None, error: None };
        let doc = match &answer {
            Answer::Result(v) => {
                line.result = Some(v);
                v.clone()
            }
            Answer::Error(e) => {
                self.summary.errors += 1;
                let error = json!({ "code": e.code, "message": e.message });
                line.error = Some(error.clone());
                json!({ "error": error })
            }
            Answer::Suspended { handle, held, result } => {
                line.suspended = Some(true);
                line.held = held.then_some(true);
                line.handle = Some(handle);
                line.result = result.as_ref();
                result.clone().unwrap_or_else(|| {
                    let mut doc = json!({ "suspended": true, "handle": handle });
                    if *held {
                        doc["held"] = json!(true);
                    }
                    doc
                })
            }
        };
        let text = serde_json::to_string(&line).map_err(|e| ScenarioError::Runtime {
            step,
            message: format!("failed to render the output: {e}"),
        })?;
        writeln!(self.out, "{text}")?;
        self.out.flush()?;
        if self.outputs.len() <= step {
            self.outputs.resize(step + 1, Value::Null);
        }
        self.outputs[step] = doc;
        Ok(())
    }

    /// Prints a call's answer with the notices delivered with it (result or error).
    pub(super) fn emit_reply(
        &mut self,
        step: usize,
        kind: &'static str,
        reply: &CallReply,
    ) -> Result<(), ScenarioError> {
        match &reply.result {
            Ok(_) => self.emit(step, kind, Answer::Result(crate::tools::reply_json(reply))),
            Err(e) => self.emit(step, kind, Answer::Error(e.clone())),
        }
    }

    /// Prints a call's answer (result or error).
    pub(super) fn emit_call(
        &mut self,
        step: usize,
        kind: &'static str,
        result: &Result<CallOk, ToolError>,
    ) -> Result<(), ScenarioError> {
        match result {
            Ok(_) => self.emit(step, kind, Answer::Result(crate::tools::result_json(result))),
            Err(e) => self.emit(step, kind, Answer::Error(e.clone())),
        }
    }

    /// A bound value.
    pub(super) fn lookup(&self, step: usize, name: &str) -> Result<Value, ScenarioError> {
        self.names.get(name).cloned().ok_or_else(|| ScenarioError::UnknownName {
            step,
            name: name.to_string(),
            detail: self.unbound.get(name).cloned().unwrap_or_default(),
        })
    }

    /// The pid a name (optionally `$name`) is bound to.
    pub(super) fn pid_of(&self, step: usize, text: &str) -> Result<Pid, ScenarioError> {
        let name = name_ref(text);
        let value = self.lookup(step, name)?;
        value.as_str().and_then(|s| s.parse::<Pid>().ok()).ok_or_else(|| ScenarioError::NotAPid {
            step,
            name: name.to_string(),
            value: value.to_string(),
        })
    }

    /// Replaces `"$name"` strings in a call's arguments.
    pub(super) fn substitute(&self, step: usize, args: &Value) -> Result<Value, ScenarioError> {
        substitute(args, &mut |name| self.lookup(step, name))
    }

    /// Binds a name to a pid.
    pub(super) fn bind_name(&mut self, name: &str, value: Value) {
        self.unbound.remove(name);
        self.names.insert(name.to_string(), value);
    }

    /// Notes that a name could not be bound (and forgets any earlier value).
    pub(super) fn unbind_name(&mut self, name: &str, why: String) {
        self.names.remove(name);
        self.unbound.insert(name.to_string(), why);
    }

    /// Applies `bind` pointers to an output document.
    pub(super) fn bind(&mut self, step: usize, bind: &BTreeMap<String, String>, doc: &Value) {
        for (name, pointer) in bind {
            match doc.pointer(pointer) {
                Some(v) if !v.is_null() => self.bind_name(name, v.clone()),
                _ => self.unbind_name(
                    name,
                    format!(": steps[{step}] could not bind it, its answer has no value at {pointer:?}"),
                ),
            }
        }
    }

    /// Queues what restarted puppets have reported so far.
    pub(super) fn drain_restarts(&mut self) {
        while let Ok(r) = self.restart_rx.try_recv() {
            self.note_restart(r);
        }
    }

    /// Queues one restart report.
    pub(super) fn note_restart(&mut self, r: PuppetRestart) {
        self.restarted.entry(r.pid).or_default().push_back(r.completed);
    }
}
