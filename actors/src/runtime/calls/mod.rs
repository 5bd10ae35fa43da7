//! The typed calls a process makes, and their results.
//!
//! These are the kernel's tools as Rust values. Field names are exactly the JSON tool names of
//! the process-kernel specification; the root crate's JSON layer (de)serializes them verbatim.

use crate::kernel::budget::{Budget, Usage};
use crate::kernel::capability::{Grant, Rights};
use crate::kernel::ids::{GrantId, ImageId, Oid, Pid};
use crate::kernel::launch::{LaunchDenied, LaunchRequest};
use crate::kernel::mailbox::{MailboxQuery, Message, MessageId, MessageKind, Notice, SendDenied};
use crate::kernel::process::{ProcessRow, TransitionError};
use crate::kernel::status::{Outcome, PauseReason, SignalKind, Status, WaitState};
use crate::store::StoreError;
use serde::{Deserialize, Serialize};

mod batch;
mod objects;
pub use batch::{BATCH_ENDED, BatchRule, suspended};
pub use objects::{
    BindProfileObject, CreateObject, ForkRequest, HandleView, LaunchView, MemoryReport, MergeResult,
    NameUnbound, ObjectCreated, ObjectDelegated, ObjectDropped, ObjectTarget, ObjectView, ObjectWritten,
    OwnedObject, ProfileBound, SkillsLoaded,
};

/// A call from a process to the kernel.
#[derive(Clone, Debug)]
pub enum Call {
    /// `spawn_child_process`.
    Spawn(LaunchRequest),
    /// Several `spawn_child_process` calls made together, so that their launches share one
    /// commit. Each is charged, checked and answered as when made one by one, in order: a
    /// refused launch takes nothing, the launches after it are planned against the parent as
    /// the ones before left it, and a charge that exhausts the budget answers
    /// `budget_exhausted` after the launches before it commit (the later ones answer as calls
    /// of an ended process). Answered by [`CallOk::SpawnedGroup`]; not a tool of its own.
    SpawnGroup(Vec<LaunchRequest>),
    /// `list_child_processes`.
    List {
        /// Include terminal children.
        include_terminal: bool,
    },
    /// `wait_child_process`.
    Wait {
        /// The direct child.
        child_pid: Pid,
        /// Suspend until it is terminal.
        block: bool,
    },
    /// Several `wait_child_process` calls with `block=false` made together, so that the result
    /// handles of the ended children are granted in one commit. Each answers as when made
    /// alone, in order; a wait that answers (an ended child, or a refusal) is charged a tool
    /// call, a child still running answers `ready=false` uncharged. A charge that exhausts the
    /// budget answers `budget_exhausted`, the waits after it answer as calls of an ended
    /// process. Answered by [`CallOk::WaitedGroup`]; not a tool of its own.
    WaitGroup(Vec<Pid>),
    /// `signal_child_process`.
    Signal {
        /// The direct child.
        child_pid: Pid,
        /// The signal.
        signal: SignalKind,
        /// Why.
        reason: Option<String>,
    },
    /// `process_exit`.
    Exit {
        /// The result payload, made into a PROCESS_RESULT object.
        payload: Option<serde_json::Value>,
    },
    /// `fork_child_process` (boxed: it is the largest call, and calls travel in actor messages).
    Fork(Box<ForkRequest>),
    /// `merge_child_memory`.
    Merge {
        /// A direct, terminal child.
        child_pid: Pid,
        /// Also consider the child's process-owned objects that are not roots.
        include_child_created: bool,
    },
    /// `create_object`.
    CreateObject(CreateObject),
    /// `read_object`: reads a payload through a handle with `read`; raises the caller's
    /// context by the object's labels.
    ReadObject {
        /// The object.
        target: ObjectTarget,
    },
    /// `write_object`: replaces a payload through a handle with `write`.
    WriteObject {
        /// The object.
        target: ObjectTarget,
        /// The new payload.
        payload: serde_json::Value,
    },
    /// `list_objects`: the caller's namespace, roots, handles and owned objects.
    ListObjects,
    /// `checkpoint_object`: makes a payload durable (this and every later write).
    CheckpointObject {
        /// The object; the caller needs `write` on it.
        target: ObjectTarget,
    },
    /// `delegate_object`: gives a direct, live child a handle on an object the caller holds
    /// with `delegate` and every right it gives.
    DelegateObject {
        /// The object.
        target: ObjectTarget,
        /// The direct, live child.
        to: Pid,
        /// The rights to give (never empty); they add to any handle the child has.
        rights: crate::kernel::objects::ObjectRights,
    },
    /// Binds the profile-bound instance of a key in the caller's namespace, making it (with a
    /// durable payload) on the first bind. A program's bookkeeping, not a tool: the key is
    /// the program's choice, within its own image's namespace.
    BindProfileObject(BindProfileObject),
    /// Removes a name from the caller's namespace; the object and the caller's handle stay.
    /// A program's bookkeeping, not a tool.
    UnbindName {
        /// The name.
        name: String,
    },
    /// Drops an object the caller no longer uses: released (every handle revoked) if the
    /// caller owns it, else only the caller's handle and names go. A program's bookkeeping,
    /// not a tool.
    DropObject {
        /// The object.
        target: ObjectTarget,
    },
    /// `load_skills`: replaces the caller's loaded skill snapshot.
    LoadSkills(Vec<crate::kernel::objects::Skill>),
    /// `send_process_message`.
    Send(SendRequest),
    /// `send_process_message` with a `message_key`: a second send with the same key (from
    /// the same process) delivers nothing and answers the first send's result.
    SendKeyed {
        /// The idempotency key, unique per sender.
        message_key: String,
        /// The message (boxed: a key must not make every call larger).
        request: Box<SendRequest>,
    },
    /// Several `send_process_message` calls made together, so that their messages share one
    /// commit. Each is charged, checked and answered as when made one by one, in order: a
    /// refused send commits nothing and the sends after it go on, a send is checked against
    /// the mailboxes as the sends before it left them (a full mailbox counts them), a
    /// `message_key` used twice answers what its first send came to, and a charge that
    /// exhausts the budget answers `budget_exhausted` after the sends before it commit (the
    /// later ones answer as calls of an ended process). A message call: interrupt notices wait
    /// for the next call that is not. Answered by [`CallOk::SentGroup`]; not a tool of its own.
    SendGroup(Vec<GroupedSend>),
    /// `read_process_messages`: an immediate snapshot of the caller's mailbox.
    Read {
        /// Filters, include_acked, limit.
        query: MailboxQuery,
        /// Acknowledge returned unread messages.
        ack: bool,
    },
    /// `receive_process_messages`: a read that may suspend until a match arrives.
    Receive {
        /// Filters, include_acked, limit.
        query: MailboxQuery,
        /// Acknowledge returned unread messages.
        ack: bool,
        /// Suspend while nothing matches.
        block: bool,
    },
    /// Charges usage to the process's budget (model tokens, cost).
    Charge(Usage),
    /// Writes the named objects of `writes` (each created, durable, if the name is unbound),
    /// in order, in one commit. Each write is charged and refused as the `write_object` or
    /// `create_object` it stands for; the first refused write refuses the call, with the
    /// writes before it done, as the calls made one by one would leave them.
    WriteNamed(Vec<NamedWrite>),
    /// Stores the program's checkpoint durably and releases a resume claim, after writing the
    /// named objects of `writes` (each created, durable, if the name is unbound): all in one
    /// commit. Each write is charged as the `write_object` or `create_object` it stands for;
    /// the first refused write refuses the call, with the writes before it done and no
    /// checkpoint stored, as the calls made one by one would leave it.
    Checkpoint {
        /// The program's checkpoint.
        state: Vec<u8>,
        /// Objects of the caller's namespace to write first, in order; names are distinct.
        writes: Vec<NamedWrite>,
    },
}

/// One object a [`Call::Checkpoint`] or [`Call::WriteNamed`] writes: the caller's name for it
/// and its new payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedWrite {
    /// The name in the caller's namespace.
    pub name: String,
    /// The new payload.
    pub payload: serde_json::Value,
}

impl Call {
    /// The tool name.
    pub fn name(&self) -> &'static str {
        match self {
            Call::Spawn(_) | Call::SpawnGroup(_) => "spawn_child_process",
            Call::List { .. } => "list_child_processes",
            Call::Wait { .. } | Call::WaitGroup(_) => "wait_child_process",
            Call::Signal { .. } => "signal_child_process",
            Call::Exit { .. } => "process_exit",
            Call::Fork(_) => "fork_child_process",
            Call::Merge { .. } => "merge_child_memory",
            Call::CreateObject(_) => "create_object",
            Call::ReadObject { .. } => "read_object",
            Call::WriteObject { .. } | Call::WriteNamed(_) => "write_object",
            Call::ListObjects => "list_objects",
            Call::CheckpointObject { .. } => "checkpoint_object",
            Call::DelegateObject { .. } => "delegate_object",
            Call::BindProfileObject(_) => "bind_profile_object",
            Call::UnbindName { .. } => "unbind_name",
            Call::DropObject { .. } => "drop_object",
            Call::LoadSkills(_) => "load_skills",
            Call::Send(_) | Call::SendKeyed { .. } | Call::SendGroup(_) => "send_process_message",
            Call::Read { .. } => "read_process_messages",
            Call::Receive { .. } => "receive_process_messages",
            Call::Charge(_) => "charge",
            Call::Checkpoint { .. } => "checkpoint",
        }
    }

    /// Whether this is a message call (send, read, receive). Interrupt notices are delivered
    /// with the answer of the next call that is not.
    pub fn is_message_call(&self) -> bool {
        matches!(
            self,
            Call::Send(_)
                | Call::SendKeyed { .. }
                | Call::SendGroup(_)
                | Call::Read { .. }
                | Call::Receive { .. }
        )
    }

    /// How many units of the `tool_calls` budget the call is charged before it runs: one for
    /// a tool call; none for bookkeeping (charge, binding and dropping a program's objects), the
    /// final exit, and a group, whose handler charges one per launch, send or answered wait, in
    /// order;
    /// for a checkpoint, one per object it writes (each stands for a `write_object` or
    /// `create_object`), the checkpoint itself being bookkeeping.
    pub fn charged_tool_calls(&self) -> u64 {
        match self {
            Call::Checkpoint { writes, .. } | Call::WriteNamed(writes) => writes.len() as u64,
            Call::SpawnGroup(_)
            | Call::SendGroup(_)
            | Call::WaitGroup(_)
            | Call::Exit { .. }
            | Call::Charge(_)
            | Call::BindProfileObject(_)
            | Call::UnbindName { .. }
            | Call::DropObject { .. } => 0,
            _ => 1,
        }
    }
}

/// A successful call's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CallOk {
    /// From `spawn_child_process` and `fork_child_process`.
    Spawned(Launched),
    /// From a [`Call::SpawnGroup`]: one answer per launch, in order.
    SpawnedGroup(Vec<Result<Launched, ToolError>>),
    /// From a [`Call::SendGroup`]: one answer per send, in order.
    SentGroup(Vec<Result<SentMessage, ToolError>>),
    /// From a [`Call::WaitGroup`]: one answer per wait, in order.
    WaitedGroup(Vec<Result<WaitResult, ToolError>>),
    /// From `merge_child_memory`.
    Merged(MergeResult),
    /// From `create_object`.
    Created(ObjectCreated),
    /// From `write_object` and `checkpoint_object`.
    Written(ObjectWritten),
    /// From `list_objects`.
    Memory(Box<MemoryReport>),
    /// From `load_skills`.
    SkillsLoaded(SkillsLoaded),
    /// From `delegate_object`.
    Delegated(ObjectDelegated),
    /// From binding a profile-bound instance.
    Bound(ProfileBound),
    /// From unbinding a name.
    Unbound(NameUnbound),
    /// From dropping an object.
    Dropped(ObjectDropped),
    /// From `list_child_processes`.
    Listed(ChildList),
    /// From `wait_child_process`.
    Waited(WaitResult),
    /// From `signal_child_process`.
    Signalled(SignalResult),
    /// From `process_exit`.
    Exited(ExitResult),
    /// From `read_object`.
    Object(ObjectView),
    /// From `send_process_message`.
    Sent(SentMessage),
    /// From `read_process_messages`.
    Read(MessagesRead),
    /// From `receive_process_messages`.
    Received(MessagesReceived),
    /// From charge and checkpoint.
    Done(Done),
}

/// A call's answer together with the notices delivered with it.
///
/// `notices` holds ids only. Interrupt notices are delivered with the answer of a call that is
/// not a message call (present them before that call's result); normal notices with the answer
/// of any call (present them after it).
#[derive(Clone, Debug)]
pub struct CallReply {
    /// The call's result.
    pub result: Result<CallOk, ToolError>,
    /// Notices of messages that arrived, oldest first.
    pub notices: Vec<Notice>,
}

/// What `send_process_message` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendRequest {
    /// Self, the parent, a direct non-terminal child, or a process whose mailbox the sender
    /// holds WRITE on (`mailbox:<pid>`, a grant only the host makes).
    pub to: Pid,
    /// Text; data, not authority.
    pub body: String,
    /// Structured data; data, not authority.
    pub payload: Option<serde_json::Value>,
    /// A stable channel.
    pub channel: Option<String>,
    /// A correlation id.
    pub correlation_id: Option<String>,
    /// The exact message answered.
    pub reply_to: Option<MessageId>,
    /// `normal` (default) or `interrupt`.
    pub kind: MessageKind,
}

impl SendRequest {
    /// A normal message to `to` with only a body.
    pub fn new(to: Pid, body: impl Into<String>) -> SendRequest {
        SendRequest {
            to,
            body: body.into(),
            payload: None,
            channel: None,
            correlation_id: None,
            reply_to: None,
            kind: MessageKind::Normal,
        }
    }
}

/// One send of a [`Call::SendGroup`]: the message, and its idempotency key if it has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupedSend {
    /// The message.
    pub request: SendRequest,
    /// As `send_process_message`'s `message_key`: a send with a key used before answers the
    /// first send's result and delivers nothing.
    pub message_key: Option<String>,
}

/// The result of `send_process_message`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SentMessage {
    /// The new message.
    pub message_id: MessageId,
    /// Its recipient.
    pub to: Pid,
    /// Its kind.
    pub kind: MessageKind,
    /// Its channel.
    pub channel: Option<String>,
    /// Its correlation id.
    pub correlation_id: Option<String>,
    /// The message it answers.
    pub reply_to: Option<MessageId>,
    /// Its delivery sequence number.
    pub seq: u64,
}

/// What a mailbox page says beyond its messages.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Continuation {
    /// Always true: there is no cursor; repeat the call with the same filters.
    pub reuse_filters: bool,
    /// Whether repeating advances: only when returned unread messages are acknowledged and
    /// excluded (`ack=true`, `include_acked=false`). Otherwise the same first page returns.
    pub advances: bool,
}

/// The result of `read_process_messages`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct MessagesRead {
    /// Matching messages, oldest first.
    pub messages: Vec<Message>,
    /// Messages this call acknowledged (returned and previously unread).
    pub acked_message_ids: Vec<MessageId>,
    /// Whether more messages matched than were returned.
    pub has_more: bool,
    /// How many matching messages were not returned.
    pub omitted_count: u64,
    /// Present when `has_more`: how to get the rest.
    pub continuation: Option<Continuation>,
}

/// The result of `receive_process_messages`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct MessagesReceived {
    /// Whether any message matched. `false` (with `block=false`) is not failure.
    pub ready: bool,
    /// Whether this call suspended the caller (`waiting_event`) before answering; a suspended
    /// receive ended the caller's tool batch.
    pub suspended: bool,
    /// Matching messages, oldest first.
    pub messages: Vec<Message>,
    /// Messages this call acknowledged.
    pub acked_message_ids: Vec<MessageId>,
    /// Whether more messages matched than were returned.
    pub has_more: bool,
    /// How many matching messages were not returned.
    pub omitted_count: u64,
    /// Present when `has_more`.
    pub continuation: Option<Continuation>,
}

/// An acknowledgement with the caller's generation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Done {
    /// The caller's state generation after the call.
    pub state_generation: u64,
}

/// A delegated grant, as the launch result shows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct GrantView {
    /// Its id.
    pub grant_id: GrantId,
    /// The resource.
    pub resource: String,
    /// The rights.
    pub rights: Vec<String>,
    /// Whether it may be delegated further.
    pub delegable: bool,
    /// Whether it is live.
    pub live: bool,
    /// The grant it was derived from.
    pub derived_from: Option<GrantId>,
}

impl From<&Grant> for GrantView {
    fn from(g: &Grant) -> Self {
        GrantView {
            grant_id: g.id,
            resource: g.resource.clone(),
            rights: g.rights.names().into_iter().map(String::from).collect(),
            delegable: g.delegable,
            live: g.live,
            derived_from: g.derived_from,
        }
    }
}

/// The result of a launch. `status` is `runnable`: launch, not success.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Launched {
    /// The new child's pid.
    pub pid: Pid,
    /// Always `runnable`.
    pub status: Status,
    /// Its image.
    pub image: ImageId,
    /// Its resolved working directory.
    pub cwd: String,
    /// Its depth.
    pub depth: u32,
    /// Its generation (0).
    pub state_generation: u64,
    /// Its reserved budget.
    pub resource_budget: Budget,
    /// Its delegated grants.
    pub capabilities: Vec<GrantView>,
    /// Its memory view: goal, roots, skills (and, for a fork, the mode and what was dropped).
    #[serde(flatten)]
    pub view: LaunchView,
}

/// One row of `list_child_processes`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ChildRow {
    /// The child.
    pub pid: Pid,
    /// Exact lowercase status.
    pub status: Status,
    /// Its saved action, if suspended.
    pub wait_state: Option<WaitState>,
    /// Its typed outcome, if terminal.
    pub outcome: Option<Outcome>,
    /// Its result object, if it exited with a payload.
    pub result_oid: Option<Oid>,
    /// Its working directory.
    pub cwd: String,
    /// Its generation.
    pub state_generation: u64,
    /// Its image.
    pub image: ImageId,
    /// Its goal.
    pub goal: String,
    /// Its depth.
    pub depth: u32,
    /// Why it is paused, if it is.
    pub pause_reason: Option<PauseReason>,
    /// Whether the host holds a resume gate on it.
    pub host_gate: Option<String>,
    /// Its budget limits.
    pub resource_budget: Budget,
    /// What it and its finished children spent.
    pub usage: Usage,
}

impl From<&ProcessRow> for ChildRow {
    fn from(r: &ProcessRow) -> Self {
        ChildRow {
            pid: r.pid,
            status: r.status,
            wait_state: r.wait_state.clone(),
            outcome: r.outcome.clone(),
            result_oid: r.result_oid,
            cwd: r.cwd.clone(),
            state_generation: r.state_generation,
            image: r.image.clone(),
            goal: r.goal.clone(),
            depth: r.depth,
            pause_reason: r.pause_reason.clone(),
            host_gate: r.host_gate.clone(),
            resource_budget: r.account.limit,
            usage: r.account.total_spent(),
        }
    }
}

/// The result of `list_child_processes`: direct children only.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ChildList {
    /// The rows, in launch order.
    pub children: Vec<ChildRow>,
    /// Whether rows were left out by the row limit.
    pub has_more: bool,
}

/// The result of `wait_child_process`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct WaitResult {
    /// The child.
    pub child_pid: Pid,
    /// Whether the child is terminal. `false` is not failure.
    pub ready: bool,
    /// Its exact status at the time of the answer.
    pub status: Status,
    /// Its generation.
    pub state_generation: u64,
    /// Its saved action, if suspended.
    pub wait_state: Option<WaitState>,
    /// Its typed outcome, when ready.
    pub outcome: Option<Outcome>,
    /// Its result object, when ready and it exited with a payload.
    pub result_oid: Option<Oid>,
    /// Whether this call suspended the caller (`waiting_event`) before answering. A suspended
    /// wait ended the caller's tool batch.
    pub suspended: bool,
    /// Whether the caller now holds a `read` handle on `result_oid`. A non-null OID is not
    /// proof the payload survived: read it (`materialized`).
    pub result_handle: bool,
    /// Why no handle was granted on an existing result (data flow, or the result was already
    /// released by a merge).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_denied: Option<ToolError>,
}

/// The result of `signal_child_process`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SignalResult {
    /// The child.
    pub child_pid: Pid,
    /// The signal applied.
    pub signal: SignalKind,
    /// Its status after the signal.
    pub status: Status,
    /// Its generation after the signal.
    pub state_generation: u64,
    /// Its saved action, kept across pause and resume.
    pub wait_state: Option<WaitState>,
}

/// The result of `process_exit`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ExitResult {
    /// The process.
    pub pid: Pid,
    /// Always `exited`.
    pub status: Status,
    /// Its result object, if a payload was given.
    pub result_oid: Option<Oid>,
    /// Its final generation.
    pub state_generation: u64,
}

/// A refused or failed call. `code` is stable and machine-readable; `message` says what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{code}: {message}")]
pub struct ToolError {
    /// A stable lowercase code.
    pub code: String,
    /// A sentence for the caller.
    pub message: String,
}

impl ToolError {
    /// A new error.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        ToolError { code: code.to_string(), message: message.into() }
    }

    /// The caller named a process that is not its direct child.
    pub fn not_direct_child(caller: Pid, child: Pid) -> Self {
        ToolError::new(
            "not_direct_child",
            format!("{child} is not a direct child of {caller}; list_child_processes shows the children"),
        )
    }

    /// No process has this pid: the one code for "no such process", whichever call named it.
    pub fn unknown_process(pid: Pid) -> Self {
        ToolError::new(
            "unknown_process",
            format!("no process {pid}; list_child_processes shows the children that exist"),
        )
    }

    /// A caller's `reason` over [`crate::limits::REASON_BYTES_MAX`] is refused, never cut.
    pub fn check_reason(reason: Option<&str>) -> Result<(), ToolError> {
        match reason {
            Some(r) if r.len() > crate::limits::REASON_BYTES_MAX => Err(ToolError::new(
                crate::kernel::codes::INVALID_ARGUMENTS,
                format!(
                    "reason: {} bytes, more than the {} allowed; shorten it",
                    r.len(),
                    crate::limits::REASON_BYTES_MAX
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The target is terminal.
    pub fn terminal(pid: Pid, status: Status) -> Self {
        ToolError::new(
            crate::kernel::codes::PROCESS_TERMINAL,
            format!("{pid} is {status}; terminal processes accept no signals or messages"),
        )
    }

    /// The process ended while the call was pending.
    pub fn process_ended(pid: Pid) -> Self {
        ToolError::new("process_ended", format!("{pid} ended before the call completed"))
    }

    /// A store failure.
    pub fn store(e: &StoreError) -> Self {
        ToolError::new("store_failed", e.to_string())
    }
}

impl From<LaunchDenied> for ToolError {
    fn from(d: LaunchDenied) -> Self {
        ToolError::new(d.code(), d.to_string())
    }
}

impl From<SendDenied> for ToolError {
    fn from(d: SendDenied) -> Self {
        ToolError::new(d.code(), d.to_string())
    }
}

impl From<TransitionError> for ToolError {
    fn from(e: TransitionError) -> Self {
        let code = match &e {
            TransitionError::Terminal { .. } => crate::kernel::codes::PROCESS_TERMINAL,
            TransitionError::Gated { .. } => "host_gate_held",
            _ => "illegal_transition",
        };
        ToolError::new(code, e.to_string())
    }
}

/// Parses right names for a request; re-exported for the JSON layer.
pub fn parse_rights(names: &[String]) -> Result<Rights, ToolError> {
    Rights::parse_names(names)
        .map_err(|e| ToolError::new(crate::kernel::launch::capability_code(&e), e.to_string()))
}
