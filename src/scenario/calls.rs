//! Tool calls as a process: `call`, `batch` and `await`.
//!
//! Each call runs in its own task so that a blocking wait does not hang the runner. Before
//! the call is sent the runner subscribes to telemetry; it then waits for whichever comes
//! first: the call's answer, or a `process_transition` of the caller to `waiting_event`
//! (the kernel publishes it after committing the suspension). In the second case the step
//! prints `suspended` with a handle, and the answer is printed by a later `await`. A call
//! made while the caller is `paused` is held by the kernel until a resume: the step prints
//! `suspended` with `held: true` at once. No timer is involved anywhere.
//!
//! A restart makes every in-flight call task let go of the runtime (the kernel still applies
//! a call whose answer nobody waits for). A blocking wait survives the restart as its
//! process's saved action: when the child ends after the reopen, the observed puppet reports
//! the completed wait as it restarts, and `await` prints that answer.

use super::error::ScenarioError;
use super::format::{BatchStep, CallStep};
use super::runner::{Answer, Runner, host_error};
use super::settle;
use crate::actors::Pid;
use crate::actors::kernel::status::Status;
use crate::actors::limits::BATCH_CALLS_MAX;
use crate::actors::runtime::Runtime;
use crate::actors::runtime::calls::CallReply;
use crate::actors::runtime::calls::{Call, CallOk, ToolError};
use crate::actors::runtime::telemetry::KernelEvent;
use crate::tools::{BATCH_TOO_LARGE, BatchRule, error_json, parse_call, reply_json, result_json};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;
use tokio::task::{JoinError, JoinHandle};

/// How a call task ended.
pub(super) enum CallOutcome {
    /// The kernel answered, with the notices delivered with the answer.
    Done(Box<CallReply>),
    /// The runner took the runtime away (restart or end) before the answer.
    Interrupted,
}

/// A call that has not been awaited yet.
pub(super) enum Handle {
    /// Its task is in flight.
    Live {
        /// The caller.
        pid: Pid,
        /// Whether it is a blocking `wait_child_process` (which survives a restart).
        blocking_wait: bool,
        /// Names to bind from its answer.
        bind: BTreeMap<String, String>,
        /// The task.
        task: JoinHandle<CallOutcome>,
    },
    /// It answered while the runner was letting go of the runtime.
    Ready {
        /// The answer (boxed: an answer is large, a handle small).
        result: Box<Result<CallOk, ToolError>>,
        /// Names to bind from it.
        bind: BTreeMap<String, String>,
    },
    /// A blocking wait interrupted by a restart: its answer comes from the restarted process.
    Carried {
        /// The waiting process.
        pid: Pid,
        /// Names to bind from its answer.
        bind: BTreeMap<String, String>,
    },
    /// Another call interrupted by a restart: its answer is lost.
    Lost {
        /// The caller.
        pid: Pid,
        /// Names it would have bound.
        bind: BTreeMap<String, String>,
    },
}

fn joined(r: Result<CallOutcome, JoinError>) -> CallOutcome {
    r.unwrap_or_else(|e| {
        let error = ToolError::new(crate::tools::INTERNAL, format!("the call task failed: {e}"));
        CallOutcome::Done(Box::new(CallReply { result: Err(error), notices: Vec::new() }))
    })
}

fn outcome_reply(outcome: CallOutcome) -> CallReply {
    match outcome {
        CallOutcome::Done(reply) => *reply,
        CallOutcome::Interrupted => CallReply {
            result: Err(ToolError::new(
                "runtime_shutdown",
                "the runner let go of the runtime before the call answered",
            )),
            notices: Vec::new(),
        },
    }
}

impl Handle {
    /// Waits for a live task that was told to let go, and says what the call became.
    pub(super) async fn release(self) -> Handle {
        match self {
            Handle::Live { pid, blocking_wait, bind, task } => match joined(task.await) {
                CallOutcome::Done(reply) => Handle::Ready { result: Box::new(reply.result), bind },
                CallOutcome::Interrupted if blocking_wait => Handle::Carried { pid, bind },
                CallOutcome::Interrupted => Handle::Lost { pid, bind },
            },
            other => other,
        }
    }
}

/// Runs `call` as `pid` in its own task; the task lets go of the runtime when `stop` turns
/// `true` (or its sender is dropped).
fn spawn_call(
    rt: Arc<Runtime>,
    pid: Pid,
    call: Call,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<CallOutcome> {
    tokio::spawn(async move {
        tokio::select! {
            biased;
            reply = rt.call_as_with_notices(pid, call) => CallOutcome::Done(Box::new(reply)),
            _ = stop.wait_for(|stopped| *stopped) => CallOutcome::Interrupted,
        }
    })
}

/// A started call: answered, or suspended with its task still in flight.
enum Started {
    Done(Box<CallReply>),
    Suspended { task: JoinHandle<CallOutcome>, held: bool },
}

impl Runner<'_> {
    fn check_free(&self, step: usize, kind: &str, handle: &str) -> Result<(), ScenarioError> {
        if self.handles.contains_key(handle) {
            return Err(ScenarioError::InvalidStep {
                step,
                kind: kind.into(),
                field: "handle".into(),
                message: format!(
                    "handle {handle:?} is still pending; await it first or give this step another `handle`"
                ),
            });
        }
        Ok(())
    }

    /// Sends a call and waits for its answer or for its caller's suspension.
    async fn start(&self, step: usize, pid: Pid, call: Call) -> Result<Started, ScenarioError> {
        let rt = self.rt(step)?;
        let mut events = rt.subscribe();
        let held = matches!(rt.process(pid), Ok(Some(row)) if row.status == Status::Paused);
        let mut task = spawn_call(rt.clone(), pid, call, self.stop.subscribe());
        if held {
            return Ok(Started::Suspended { task, held: true });
        }
        let mut listening = true;
        loop {
            tokio::select! {
                biased;
                outcome = &mut task => {
                    let reply = outcome_reply(joined(outcome));
                    settle::after_call(&rt, &reply.result).await;
                    return Ok(Started::Done(Box::new(reply)));
                }
                event = events.recv(), if listening => match event {
                    Ok(KernelEvent::ProcessTransition { pid: p, to: Status::WaitingEvent, .. }) if p == pid => {
                        return Ok(Started::Suspended { task, held: false });
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => {
                        if matches!(rt.process(pid), Ok(Some(row)) if row.status == Status::WaitingEvent) {
                            return Ok(Started::Suspended { task, held: false });
                        }
                    }
                    Err(RecvError::Closed) => listening = false,
                },
            }
        }
    }

    pub(super) async fn call(&mut self, i: usize, s: &CallStep) -> Result<(), ScenarioError> {
        let pid = self.pid_of(i, &s.caller)?;
        let args = self.substitute(i, &s.args)?;
        let call = match parse_call(&s.tool, args) {
            Ok(call) => call,
            Err(e) => {
                self.bind(i, &s.bind, &error_json(&e));
                return self.emit(i, "call", Answer::Error(e));
            }
        };
        let handle = s.handle.clone().unwrap_or_else(|| format!("call{i}"));
        self.check_free(i, "call", &handle)?;
        let blocking_wait =
            matches!(call, Call::Wait { block: true, .. } | Call::Receive { block: true, .. });
        match self.start(i, pid, call).await? {
            Started::Done(reply) => {
                self.bind(i, &s.bind, &reply_json(&reply));
                self.emit_reply(i, "call", &reply)
            }
            Started::Suspended { task, held } => {
                self.handles
                    .insert(handle.clone(), Handle::Live { pid, blocking_wait, bind: s.bind.clone(), task });
                self.emit(i, "call", Answer::Suspended { handle, held, result: None })
            }
        }
    }

    pub(super) async fn batch(&mut self, i: usize, s: &BatchStep) -> Result<(), ScenarioError> {
        let pid = self.pid_of(i, &s.caller)?;
        let handle = s.handle.clone().unwrap_or_else(|| format!("batch{i}"));
        self.check_free(i, "batch", &handle)?;
        if s.calls.len() > BATCH_CALLS_MAX {
            let message =
                format!("the batch has {} calls; the limit is {BATCH_CALLS_MAX}: split it", s.calls.len());
            return self.emit(i, "batch", Answer::Error(ToolError::new(BATCH_TOO_LARGE, message)));
        }
        let rt = self.rt(i)?;
        if matches!(rt.process(pid), Ok(Some(row)) if row.status == Status::Paused) {
            let message = format!(
                "{pid} is paused, so the kernel would hold every call of this batch until a resume; the runner does not queue batches: resume it first, or use single calls"
            );
            return self.emit(i, "batch", Answer::Error(ToolError::new("caller_paused", message)));
        }
        let mut rule = BatchRule::new();
        let mut answers: Vec<Value> = Vec::with_capacity(s.calls.len());
        let mut suspended = false;
        for c in &s.calls {
            let args = self.substitute(i, &c.args)?;
            let reply = match rule.admit(&c.tool).and_then(|()| parse_call(&c.tool, args)) {
                Err(e) => CallReply { result: Err(e), notices: Vec::new() },
                Ok(call) => {
                    let blocking_wait =
                        matches!(call, Call::Wait { block: true, .. } | Call::Receive { block: true, .. });
                    match self.start(i, pid, call).await? {
                        Started::Done(reply) => *reply,
                        Started::Suspended { task, .. } => {
                            rule.end();
                            suspended = true;
                            let bind = BTreeMap::new();
                            self.handles
                                .insert(handle.clone(), Handle::Live { pid, blocking_wait, bind, task });
                            answers.push(json!({ "suspended": true, "handle": handle }));
                            continue;
                        }
                    }
                }
            };
            rule.observe(&reply.result);
            answers.push(reply_json(&reply));
        }
        let doc = Value::Array(answers);
        self.bind(i, &s.bind, &doc);
        if suspended {
            self.emit(i, "batch", Answer::Suspended { handle, held: false, result: Some(doc) })
        } else {
            self.emit(i, "batch", Answer::Result(doc))
        }
    }

    pub(super) async fn await_handle(&mut self, i: usize, name: &str) -> Result<(), ScenarioError> {
        let Some(handle) = self.handles.remove(name) else {
            return Err(ScenarioError::UnknownHandle {
                step: i,
                handle: name.to_string(),
                detail: ": its call answered at once, or it was already awaited".into(),
            });
        };
        let (result, bind) = match handle {
            Handle::Live { task, bind, .. } => {
                let result = outcome_reply(joined(task.await)).result;
                let rt = self.rt(i)?;
                settle::after_call(&rt, &result).await;
                (result, bind)
            }
            Handle::Ready { result, bind } => (*result, bind),
            Handle::Carried { pid, bind } => (self.resumed_wait(i, pid).await?, bind),
            Handle::Lost { pid, bind } => {
                let message = format!(
                    "a restart interrupted this call as {pid} before it answered; only a blocking wait_child_process or receive_process_messages survives a restart"
                );
                (Err(ToolError::new("runtime_shutdown", message)), bind)
            }
        };
        self.bind(i, &bind, &result_json(&result));
        self.emit_call(i, "await", &result)
    }

    /// The answer of a blocking wait that outlived a restart: what the process's restarted
    /// execution was handed as its completed saved action.
    async fn resumed_wait(&mut self, i: usize, pid: Pid) -> Result<Result<CallOk, ToolError>, ScenarioError> {
        let rt = self.rt(i)?;
        loop {
            self.drain_restarts();
            if let Some(report) = self.restarted.get_mut(&pid).and_then(|q| q.pop_front()) {
                return Ok(match report {
                    Some(answer) => Ok(answer),
                    None => Err(ToolError::new(
                        "runtime_shutdown",
                        format!(
                            "{pid} was restarted without a completed wait: the answer was lost in the restart; inspect it"
                        ),
                    )),
                });
            }
            let mut events = rt.subscribe();
            match rt.process(pid) {
                Ok(Some(row)) if row.status.is_terminal() => {
                    self.drain_restarts();
                    if self.restarted.get(&pid).is_some_and(|q| !q.is_empty()) {
                        continue;
                    }
                    return Ok(Err(ToolError::process_ended(pid)));
                }
                Ok(Some(_)) => {}
                Ok(None) => return Ok(Err(ToolError::new("unknown_process", format!("no process {pid}")))),
                Err(e) => return Ok(Err(host_error(&e))),
            }
            tokio::select! {
                report = self.restart_rx.recv() => match report {
                    Some(r) => self.note_restart(r),
                    None => return Ok(Err(ToolError::process_ended(pid))),
                },
                event = events.recv() => {
                    if let Err(RecvError::Closed) = event {
                        return Ok(Err(ToolError::process_ended(pid)));
                    }
                }
            }
        }
    }
}
