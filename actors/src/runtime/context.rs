//! The handle a program uses to act as its process.

use super::actor::ProcessMsg;
use super::calls::{
    Call, CallOk, ChildList, ExitResult, Launched, ObjectView, SignalResult, ToolError,
    WaitResult,
};
use super::program::{ProgramStart, StartKind};
use crate::kernel::budget::Usage;
use crate::kernel::ids::{Oid, Pid};
use crate::kernel::launch::LaunchRequest;
use crate::kernel::status::SignalKind;
use ractor::ActorRef;
use ractor::rpc::CallResult;

/// What a program holds: its process's identity and a line to its process actor.
///
/// Every call is a message to the actor, which applies the kernel rules and commits before
/// answering. A call made while the process is paused is held until it is resumed.
///
/// Cancel safety: dropping a pending call's future does not withdraw the call; the actor still
/// applies it (and its effects commit), only the answer is lost.
#[derive(Clone)]
pub struct ProcessContext {
    pid: Pid,
    start: ProgramStart,
    actor: ActorRef<ProcessMsg>,
}

/// The result of one call in a batch.
pub type BatchItem = Result<CallOk, ToolError>;

impl ProcessContext {
    pub(crate) fn new(pid: Pid, start: ProgramStart, actor: ActorRef<ProcessMsg>) -> Self {
        ProcessContext { pid, start, actor }
    }

    /// This process's pid.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The goal it was launched with.
    pub fn goal(&self) -> &str {
        &self.start.goal
    }

    /// Why this execution started.
    pub fn start_kind(&self) -> &StartKind {
        &self.start.kind
    }

    /// The program's last checkpoint, if it stored one.
    pub fn restored_checkpoint(&self) -> Option<&[u8]> {
        self.start.checkpoint.as_deref()
    }

    /// Makes one call.
    pub async fn call(&self, call: Call) -> Result<CallOk, ToolError> {
        let pid = self.pid;
        match self.actor.call(|reply| ProcessMsg::Call(call, reply), None).await {
            Ok(CallResult::Success(result)) => result,
            _ => Err(ToolError::process_ended(pid)),
        }
    }

    /// Makes calls in order. A wait that suspended the process ends the batch: the calls after
    /// it do not run and each gets a `batch_ended` error. A refused call does not end the batch.
    pub async fn batch(&self, calls: Vec<Call>) -> Vec<BatchItem> {
        let mut results = Vec::with_capacity(calls.len());
        let mut ended = false;
        for call in calls {
            if ended {
                results.push(Err(ToolError::new(
                    "batch_ended",
                    format!("{} did not run: an earlier blocking wait ended this tool batch", call.name()),
                )));
                continue;
            }
            let result = self.call(call).await;
            if let Ok(CallOk::Waited(w)) = &result {
                ended = w.suspended;
            }
            results.push(result);
        }
        results
    }

    /// `spawn_child_process`.
    pub async fn spawn_child(&self, request: LaunchRequest) -> Result<Launched, ToolError> {
        match self.call(Call::Spawn(request)).await? {
            CallOk::Spawned(l) => Ok(l),
            other => Err(unexpected(other)),
        }
    }

    /// `list_child_processes`.
    pub async fn list_children(&self, include_terminal: bool) -> Result<ChildList, ToolError> {
        match self.call(Call::List { include_terminal }).await? {
            CallOk::Listed(l) => Ok(l),
            other => Err(unexpected(other)),
        }
    }

    /// `wait_child_process`.
    pub async fn wait_child(&self, child_pid: Pid, block: bool) -> Result<WaitResult, ToolError> {
        match self.call(Call::Wait { child_pid, block }).await? {
            CallOk::Waited(w) => Ok(w),
            other => Err(unexpected(other)),
        }
    }

    /// `signal_child_process`.
    pub async fn signal_child(
        &self,
        child_pid: Pid,
        signal: SignalKind,
        reason: Option<String>,
    ) -> Result<SignalResult, ToolError> {
        match self.call(Call::Signal { child_pid, signal, reason }).await? {
            CallOk::Signalled(s) => Ok(s),
            other => Err(unexpected(other)),
        }
    }

    /// `process_exit`: ends the process `exited`, after ending any live children. The program
    /// should return right after.
    pub async fn exit(&self, payload: Option<serde_json::Value>) -> Result<ExitResult, ToolError> {
        match self.call(Call::Exit { payload }).await? {
            CallOk::Exited(e) => Ok(e),
            other => Err(unexpected(other)),
        }
    }

    /// Reads an object's payload (its own or a direct child's result).
    pub async fn read_object(&self, oid: Oid) -> Result<ObjectView, ToolError> {
        match self.call(Call::ReadObject { oid }).await? {
            CallOk::Object(o) => Ok(o),
            other => Err(unexpected(other)),
        }
    }

    /// Charges usage to this process's budget; exhaustion fails the process.
    pub async fn charge(&self, usage: Usage) -> Result<(), ToolError> {
        self.call(Call::Charge(usage)).await.map(|_| ())
    }

    /// Stores a checkpoint durably; a restart gets it back in [`Self::restored_checkpoint`].
    pub async fn checkpoint(&self, bytes: Vec<u8>) -> Result<(), ToolError> {
        self.call(Call::Checkpoint(bytes)).await.map(|_| ())
    }
}

fn unexpected(ok: CallOk) -> ToolError {
    ToolError::new("internal", format!("unexpected result shape: {ok:?}"))
}
