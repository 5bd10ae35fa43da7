//! The handle a program uses to act as its process.

use super::actor::{ProcessMsg, Reply};
use super::calls::{
    BatchRule, CallReply, GroupedSend, MessagesRead, MessagesReceived, SendRequest, SentMessage,
};
use super::calls::{
    BindProfileObject, CreateObject, ForkRequest, MemoryReport, MergeResult, NameUnbound, NamedWrite,
    ObjectCreated, ObjectDropped, ObjectTarget, ObjectWritten, ProfileBound,
};
use super::calls::{
    Call, CallOk, ChildList, ExitResult, Launched, ObjectView, SignalResult, ToolError, WaitResult,
};
use super::program::{ProgramStart, StartKind};
use crate::kernel::budget::Usage;
use crate::kernel::ids::{Oid, Pid};
use crate::kernel::launch::LaunchRequest;
use crate::kernel::mailbox::{MailboxQuery, Notice};
use crate::kernel::status::SignalKind;
use parking_lot::Mutex;
use ractor::ActorRef;
use ractor::rpc::CallResult;
use std::sync::Arc;

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
    /// Notices delivered with answers and not yet taken by the program.
    notices: Arc<Mutex<Vec<Notice>>>,
}

/// The result of one call in a batch.
pub type BatchItem = Result<CallOk, ToolError>;

impl ProcessContext {
    pub(crate) fn new(pid: Pid, start: ProgramStart, actor: ActorRef<ProcessMsg>) -> Self {
        ProcessContext { pid, start, actor, notices: Arc::default() }
    }

    /// This process's pid.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The goal it was launched with.
    pub fn goal(&self) -> &str {
        &self.start.goal
    }

    /// Its working directory.
    pub fn cwd(&self) -> &str {
        &self.start.cwd
    }

    /// Why this execution started.
    pub fn start_kind(&self) -> &StartKind {
        &self.start.kind
    }

    /// The program's last checkpoint, if it stored one.
    pub fn restored_checkpoint(&self) -> Option<&[u8]> {
        self.start.checkpoint.as_deref()
    }

    /// Makes one call. Notices delivered with its answer are kept for [`Self::take_notices`].
    pub async fn call(&self, call: Call) -> Result<CallOk, ToolError> {
        let reply = self.call_with_notices(call).await;
        self.notices.lock().extend(reply.notices);
        reply.result
    }

    /// Makes one call and returns its answer with the notices delivered with it.
    pub async fn call_with_notices(&self, call: Call) -> CallReply {
        call_actor(&self.actor, self.pid, call).await
    }

    /// Notices of messages that arrived, delivered with earlier answers and not yet taken:
    /// ids only; read the content with `read_process_messages`.
    pub fn take_notices(&self) -> Vec<Notice> {
        std::mem::take(&mut *self.notices.lock())
    }

    /// Makes calls in order under the batch rule ([`BatchRule`]): a wait that suspended the
    /// process ends the batch, the calls after it do not run and each gets a `batch_ended`
    /// error. A refused call does not end the batch.
    pub async fn batch(&self, calls: Vec<Call>) -> Vec<BatchItem> {
        let mut rule = BatchRule::new();
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            let result = match rule.admit(call.name()) {
                Ok(()) => self.call(call).await,
                Err(e) => Err(e),
            };
            rule.observe(&result);
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

    /// Several `spawn_child_process` calls made together ([`Call::SpawnGroup`]): their
    /// launches share one commit, and each answers as it would have alone, in order.
    pub async fn spawn_children(
        &self,
        requests: Vec<LaunchRequest>,
    ) -> Result<Vec<Result<Launched, ToolError>>, ToolError> {
        match self.call(Call::SpawnGroup(requests)).await? {
            CallOk::SpawnedGroup(answers) => Ok(answers),
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

    /// Several `wait_child_process` calls with `block=false` made together
    /// ([`Call::WaitGroup`]): the result handles of the ended children are granted in one
    /// commit, and each answers as it would have alone, in order (a child still running
    /// answers `ready=false` and is not charged).
    pub async fn wait_children(
        &self,
        children: Vec<Pid>,
    ) -> Result<Vec<Result<WaitResult, ToolError>>, ToolError> {
        match self.call(Call::WaitGroup(children)).await? {
            CallOk::WaitedGroup(answers) => Ok(answers),
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

    /// `read_object`: needs a handle with `read` (a child's result: after a wait).
    pub async fn read_object(&self, oid: Oid) -> Result<ObjectView, ToolError> {
        self.expect(Call::ReadObject { target: ObjectTarget::Oid(oid) }, |ok| match ok {
            CallOk::Object(o) => Some(o),
            _ => None,
        })
        .await
    }

    /// `fork_child_process`.
    pub async fn fork_child(&self, request: ForkRequest) -> Result<Launched, ToolError> {
        self.expect(Call::Fork(Box::new(request)), |ok| match ok {
            CallOk::Spawned(l) => Some(l),
            _ => None,
        })
        .await
    }

    /// `merge_child_memory`.
    pub async fn merge_child(
        &self,
        child_pid: Pid,
        include_child_created: bool,
    ) -> Result<MergeResult, ToolError> {
        self.expect(Call::Merge { child_pid, include_child_created }, |ok| match ok {
            CallOk::Merged(m) => Some(m),
            _ => None,
        })
        .await
    }

    /// `create_object`.
    pub async fn create_object(&self, request: CreateObject) -> Result<ObjectCreated, ToolError> {
        self.expect(Call::CreateObject(request), |ok| match ok {
            CallOk::Created(c) => Some(c),
            _ => None,
        })
        .await
    }

    /// `write_object`.
    pub async fn write_object(
        &self,
        target: ObjectTarget,
        payload: serde_json::Value,
    ) -> Result<ObjectWritten, ToolError> {
        self.expect(Call::WriteObject { target, payload }, |ok| match ok {
            CallOk::Written(w) => Some(w),
            _ => None,
        })
        .await
    }

    /// Binds the profile-bound instance of `request.key` under `request.name` (made, durable,
    /// on the first bind of the key).
    pub async fn bind_profile_object(&self, request: BindProfileObject) -> Result<ProfileBound, ToolError> {
        self.expect(Call::BindProfileObject(request), |ok| match ok {
            CallOk::Bound(b) => Some(b),
            _ => None,
        })
        .await
    }

    /// Removes `name` from this process's namespace (the object and the handle stay).
    pub async fn unbind_name(&self, name: &str) -> Result<NameUnbound, ToolError> {
        self.expect(Call::UnbindName { name: name.to_string() }, |ok| match ok {
            CallOk::Unbound(u) => Some(u),
            _ => None,
        })
        .await
    }

    /// Drops an object: released if this process owns it, else its handle and names go.
    pub async fn drop_object(&self, target: ObjectTarget) -> Result<ObjectDropped, ToolError> {
        self.expect(Call::DropObject { target }, |ok| match ok {
            CallOk::Dropped(d) => Some(d),
            _ => None,
        })
        .await
    }

    /// `list_objects`: this process's memory.
    pub async fn list_objects(&self) -> Result<MemoryReport, ToolError> {
        self.expect(Call::ListObjects, |ok| match ok {
            CallOk::Memory(m) => Some(*m),
            _ => None,
        })
        .await
    }

    /// Makes a call and takes the one result shape it answers with.
    async fn expect<T>(&self, call: Call, shape: impl FnOnce(CallOk) -> Option<T>) -> Result<T, ToolError> {
        let name = call.name();
        shape(self.call(call).await?).ok_or_else(|| {
            ToolError::new("internal", format!("{name} answered with a result of an unexpected shape"))
        })
    }

    /// `send_process_message`.
    pub async fn send_message(&self, request: SendRequest) -> Result<SentMessage, ToolError> {
        match self.call(Call::Send(request)).await? {
            CallOk::Sent(s) => Ok(s),
            other => Err(unexpected(other)),
        }
    }

    /// `send_process_message` with an idempotency key: if this process already sent with
    /// `message_key` (in this execution or an earlier one), nothing is sent and the first
    /// send's answer is returned. A restarted program that sends again cannot duplicate.
    pub async fn send_message_keyed(
        &self,
        request: SendRequest,
        message_key: impl Into<String>,
    ) -> Result<SentMessage, ToolError> {
        match self
            .call(Call::SendKeyed { message_key: message_key.into(), request: Box::new(request) })
            .await?
        {
            CallOk::Sent(s) => Ok(s),
            other => Err(unexpected(other)),
        }
    }

    /// Several `send_process_message` calls made together ([`Call::SendGroup`]): their
    /// messages share one commit, and each answers as when sent alone, in order.
    pub async fn send_messages(
        &self,
        sends: Vec<GroupedSend>,
    ) -> Result<Vec<Result<SentMessage, ToolError>>, ToolError> {
        match self.call(Call::SendGroup(sends)).await? {
            CallOk::SentGroup(answers) => Ok(answers),
            other => Err(unexpected(other)),
        }
    }

    /// `read_process_messages`.
    pub async fn read_messages(&self, query: MailboxQuery, ack: bool) -> Result<MessagesRead, ToolError> {
        match self.call(Call::Read { query, ack }).await? {
            CallOk::Read(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    /// `receive_process_messages`.
    pub async fn receive_messages(
        &self,
        query: MailboxQuery,
        ack: bool,
        block: bool,
    ) -> Result<MessagesReceived, ToolError> {
        match self.call(Call::Receive { query, ack, block }).await? {
            CallOk::Received(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    /// Charges usage to this process's budget; exhaustion fails the process.
    pub async fn charge(&self, usage: Usage) -> Result<(), ToolError> {
        self.call(Call::Charge(usage)).await.map(|_| ())
    }

    /// Writes `writes` (objects named in this process's namespace, created if unbound) in one
    /// commit ([`Call::WriteNamed`]).
    pub async fn write_named(&self, writes: Vec<NamedWrite>) -> Result<(), ToolError> {
        self.call(Call::WriteNamed(writes)).await.map(|_| ())
    }

    /// Stores a checkpoint durably; a restart gets it back in [`Self::restored_checkpoint`].
    pub async fn checkpoint(&self, bytes: Vec<u8>) -> Result<(), ToolError> {
        self.checkpoint_with(bytes, Vec::new()).await
    }

    /// [`Self::checkpoint`] after writing `writes` (objects named in this process's
    /// namespace, created if unbound), all in one commit ([`Call::Checkpoint`]).
    pub async fn checkpoint_with(&self, bytes: Vec<u8>, writes: Vec<NamedWrite>) -> Result<(), ToolError> {
        self.call(Call::Checkpoint { state: bytes, writes }).await.map(|_| ())
    }
}

/// Sends a call to a process actor and waits for its answer.
pub(crate) async fn call_actor(actor: &ActorRef<ProcessMsg>, pid: Pid, call: Call) -> CallReply {
    match actor.call(|port| ProcessMsg::Call(Box::new(call), Reply::new(port)), None).await {
        Ok(CallResult::Success(reply)) => reply,
        _ => CallReply { result: Err(ToolError::process_ended(pid)), notices: Vec::new() },
    }
}

fn unexpected(ok: CallOk) -> ToolError {
    ToolError::new("internal", format!("unexpected result shape: {ok:?}"))
}
