//! The ractor shell around the kernel, and the host API.
//!
//! [`Runtime`] opens a state directory (or runs in memory), recovers what an earlier runtime
//! left, restarts one actor per live process under a root supervisor, and gives the host its
//! calls: launch roots, act as a process, signal and gate any process, revoke grants, read
//! state, subscribe to telemetry, and shut down.

mod actor;
pub mod calls;
pub mod clock;
mod context;
pub mod ids;
mod keys;
pub mod lock;
pub mod mailbox;
mod memory;
mod options;
pub mod program;
mod recovery;
mod shared;
mod supervisor;
pub mod telemetry;

pub use actor::{ProcessMsg, SUPERVISION_CHANNEL};
pub use calls::suspended;
pub use context::{BatchItem, ProcessContext};
pub use options::{RootSpec, RuntimeOptions};
pub use recovery::RecoveryReport;

use crate::kernel::capability::{self, CapabilityRequest, Grant};
use crate::kernel::ids::{Epoch, GrantId, IdSource, Oid, Pid};
use crate::kernel::mailbox::{MailboxPage, MailboxQuery};
use crate::kernel::objects::{ObjectMeta, ObjectSpace, RootViewRequest};
use crate::kernel::path;
use crate::kernel::process::ProcessRow;
use crate::kernel::status::{PauseReason, Sender, SignalKind};
use crate::limits;
use crate::store::{
    Change, KeyKind, MemoryStore, PostgresStore, ProcessQuery, SqliteStore, Store, StoreError,
};
use actor::{ProcessActor, ProcessArgs};
use calls::{Call, CallOk, CallReply, MemoryReport, SendRequest, SentMessage, SignalResult, ToolError};
use keys::Keyed;
use lock::{DirLock, LockAttempt};
use memory::Memory;
use program::ImageRegistry;
use ractor::rpc::CallResult;
use ractor::{Actor, ActorRef};
use shared::Shared;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use supervisor::{RootSupervisor, SupervisorMsg};
use telemetry::KernelEvent;
use tokio::sync::broadcast;

/// The database file inside a state directory.
pub const DB_FILE: &str = "agentvisor.db";

/// Why a host call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// A store failure.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The state directory cannot be used.
    #[error("failed to use the state directory {path}: {message}")]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// What happened.
        message: String,
    },
    /// This runtime is a read-only view: another runtime owns the directory.
    #[error("this is a read-only view: another runtime owns the state directory")]
    ReadOnly,
    /// The image is not registered.
    #[error("unknown image {:?}", crate::limits::excerpt(.0))]
    UnknownImage(String),
    /// A bad root specification.
    #[error("invalid root: {0}")]
    InvalidRoot(String),
    /// No such process.
    #[error("unknown process {0}")]
    UnknownProcess(Pid),
    /// The actor system failed.
    #[error("failed to start an actor: {0}")]
    Actor(String),
    /// A call was refused.
    #[error(transparent)]
    Tool(#[from] ToolError),
}

impl RuntimeError {
    /// The error as a tool answer: a stable snake_case code (`store_failed`, `state_dir`,
    /// `read_only`, `unknown_image`, `invalid_root`, `unknown_process`, `actor_failed`, or a
    /// refused call's own code) and this error's sentence.
    pub fn to_tool_error(&self) -> ToolError {
        let code = match self {
            RuntimeError::Store(_) => "store_failed",
            RuntimeError::StateDir { .. } => "state_dir",
            RuntimeError::ReadOnly => "read_only",
            RuntimeError::UnknownImage(_) => "unknown_image",
            RuntimeError::InvalidRoot(_) => "invalid_root",
            RuntimeError::UnknownProcess(_) => "unknown_process",
            RuntimeError::Actor(_) => "actor_failed",
            RuntimeError::Tool(t) => return t.clone(),
        };
        ToolError::new(code, self.to_string())
    }
}

/// A running (or read-only) agentvisor runtime.
pub struct Runtime {
    shared: Arc<Shared>,
    supervisor: Option<ActorRef<SupervisorMsg>>,
    report: RecoveryReport,
    state_dir: Option<PathBuf>,
    /// The PostgreSQL database the state is in, if not the state directory's file.
    store_url: Option<String>,
    _lock: Option<DirLock>,
}

impl Runtime {
    /// Opens the state directory `dir` (created if missing). If another live runtime owns it,
    /// the result is a read-only view that never recovers or changes anything; otherwise this
    /// runtime takes the lock, starts a new epoch, recovers, and restarts every live process.
    /// The store is the SQLite file in `dir`, or the PostgreSQL database
    /// [`RuntimeOptions::store_url`] names (whose own owner lock also refuses a second owner
    /// from another directory or machine).
    pub async fn open(dir: impl AsRef<Path>, options: RuntimeOptions) -> Result<Runtime, RuntimeError> {
        let dir = dir.as_ref().to_path_buf();
        let state_err =
            |e: std::io::Error| RuntimeError::StateDir { path: dir.clone(), message: e.to_string() };
        std::fs::create_dir_all(&dir).map_err(state_err)?;
        match lock::try_lock(&dir).map_err(state_err)? {
            LockAttempt::Owned(lock) => Self::open_owned(dir, lock, options).await,
            LockAttempt::HeldElsewhere => Self::open_read_only(dir, options),
        }
    }

    /// The owner's store: the PostgreSQL database [`RuntimeOptions::store_url`] names, or the
    /// SQLite file in `dir`.
    fn owned_store(dir: &Path, options: &RuntimeOptions) -> Result<Arc<dyn Store>, StoreError> {
        Ok(match &options.store_url {
            Some(url) => Arc::new(PostgresStore::open_as(url, &options.node_lease)?),
            None => Arc::new(SqliteStore::open(&dir.join(DB_FILE))?),
        })
    }

    /// A read-only view of the store [`Self::owned_store`] opens.
    fn viewed_store(dir: &Path, options: &RuntimeOptions) -> Result<Arc<dyn Store>, StoreError> {
        Ok(match &options.store_url {
            Some(url) => Arc::new(PostgresStore::open_read_only(url)?),
            None => Arc::new(SqliteStore::open_read_only(&dir.join(DB_FILE))?),
        })
    }

    /// Opens `dir` as its owner with a lock the caller already took ([`lock::try_lock`]), so
    /// that a command can refuse before creating any file when another runtime owns the
    /// directory, and create its own files only once it owns it.
    pub async fn open_owned(
        dir: impl AsRef<Path>,
        lock: DirLock,
        options: RuntimeOptions,
    ) -> Result<Runtime, RuntimeError> {
        let dir = dir.as_ref().to_path_buf();
        let store = Self::owned_store(&dir, &options)?;
        let store_url = options.store_url.clone();
        let mut rt = Self::start(store, options).await?;
        rt.state_dir = Some(dir);
        rt.store_url = store_url;
        rt._lock = Some(lock);
        Ok(rt)
    }

    /// Opens only a read-only view of `dir`, whether or not a runtime owns it.
    pub fn open_read_only(dir: impl AsRef<Path>, options: RuntimeOptions) -> Result<Runtime, RuntimeError> {
        let dir = dir.as_ref().to_path_buf();
        let store = Self::viewed_store(&dir, &options)?;
        Self::read_only(store, options, Some(dir))
    }

    /// A runtime on a fresh in-memory store.
    pub async fn in_memory(options: RuntimeOptions) -> Result<Runtime, RuntimeError> {
        Self::start(Arc::new(MemoryStore::new()), options).await
    }

    /// A runtime owning `store` (which must not be in use by another runtime): starts a new
    /// epoch, recovers, and restarts every live process.
    pub async fn start(store: Arc<dyn Store>, options: RuntimeOptions) -> Result<Runtime, RuntimeError> {
        let epoch = store.begin_epoch()?;
        let memory = Memory::new(store.object_space()?, store.payload_oids()?);
        let (live, mut report) = recovery::recover(store.as_ref(), &memory).await?;
        report.unmaterialized_oids = memory.unmaterializable();
        let resume_after_shutdown = options.resume_after_shutdown;
        let to_resume: Vec<Pid> = live
            .iter()
            .filter(|r| resume_after_shutdown && r.pause_reason == Some(PauseReason::Shutdown))
            .map(|r| r.pid)
            .collect();
        let message_seq = store.message_seq_max()?;
        let pids: Vec<Pid> = live.iter().map(|r| r.pid).collect();
        let reads = store.live_reads(&pids)?;
        let mut shared = Shared::new(store, memory, options.images, epoch, message_seq);
        shared.hold = options.hold;
        shared.begin_opening(reads);
        if let Some(clock) = options.clock {
            shared.clock = clock;
        }
        let shared = Arc::new(shared);
        let (supervisor, _) = Actor::spawn(None, RootSupervisor { shared: shared.clone() }, ())
            .await
            .map_err(|e| RuntimeError::Actor(e.to_string()))?;
        let rt = Runtime {
            shared,
            supervisor: Some(supervisor),
            report,
            state_dir: None,
            store_url: None,
            _lock: None,
        };
        // Roots first; each actor restarts its own live children. No recovered process enters
        // its execution before every actor has started, so what the opening read stays true.
        for row in live.into_iter().filter(|r| r.parent.is_none()) {
            let grants = rt.shared.grants_at_start(row.pid)?;
            rt.spawn_root_actor(row, grants, true).await?;
        }
        rt.shared.finish_opening();
        if !rt.shared.hold {
            for entry in rt.shared.registry.iter() {
                let _ = entry.value().cast(ProcessMsg::Release);
            }
        }
        for pid in to_resume {
            if let Err(e) =
                rt.signal(pid, SignalKind::Resume, Some("resumed after a clean shutdown".into())).await
            {
                tracing::warn!(%pid, error = %e, "failed to resume a process paused by shutdown");
            }
        }
        Ok(rt)
    }

    fn read_only(
        store: Arc<dyn Store>,
        options: RuntimeOptions,
        dir: Option<PathBuf>,
    ) -> Result<Runtime, RuntimeError> {
        let epoch = store.epoch().unwrap_or_default();
        let memory = Memory::new(store.object_space()?, store.payload_oids()?);
        let shared = Arc::new(Shared::new(store, memory, options.images, epoch, 0));
        Ok(Runtime {
            shared,
            supervisor: None,
            report: RecoveryReport::default(),
            state_dir: dir,
            store_url: None,
            _lock: None,
        })
    }

    async fn spawn_root_actor(
        &self,
        row: ProcessRow,
        grants: Vec<Grant>,
        recovering: bool,
    ) -> Result<(), RuntimeError> {
        let supervisor = self.supervisor.as_ref().ok_or(RuntimeError::ReadOnly)?;
        let pid = row.pid;
        let actor = ProcessActor { shared: self.shared.clone() };
        let (actor_ref, _) =
            Actor::spawn_linked(None, actor, ProcessArgs { row, grants, recovering }, supervisor.get_cell())
                .await
                .map_err(|e| RuntimeError::Actor(e.to_string()))?;
        let _ = supervisor.cast(SupervisorMsg::RootStarted(actor_ref.get_id(), pid));
        Ok(())
    }

    /// Releases a runtime opened with [`RuntimeOptions::hold`]: every recovered process not
    /// yet started enters the execution its row calls for (a `runnable` row starts, a saved
    /// wait is re-armed), as it would have at open. Processes the host already signalled are
    /// unaffected. Does nothing on a runtime opened without hold.
    pub fn release_hold(&self) {
        if !self.shared.hold {
            return;
        }
        for entry in self.shared.registry.iter() {
            let _ = entry.value().cast(ProcessMsg::Release);
        }
    }

    /// Whether this is a read-only view.
    pub fn is_read_only(&self) -> bool {
        self.supervisor.is_none()
    }

    /// What recovery did when this runtime opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.report
    }

    /// This runtime's epoch.
    pub fn epoch(&self) -> Epoch {
        self.shared.epoch
    }

    /// The state directory, if opened from one.
    pub fn state_dir(&self) -> Option<&Path> {
        self.state_dir.as_deref()
    }

    /// The PostgreSQL database this runtime's state is in ([`RuntimeOptions::store_url`]), if
    /// it was opened from a state directory with one.
    pub fn store_url(&self) -> Option<&str> {
        self.store_url.as_deref()
    }

    /// The store (read it; write only through the runtime).
    pub fn store(&self) -> Arc<dyn Store> {
        self.shared.store.clone()
    }

    /// Registered images.
    pub fn images(&self) -> &ImageRegistry {
        &self.shared.images
    }

    /// Launches a root process with host-made grants.
    pub async fn spawn_root(&self, spec: RootSpec) -> Result<Pid, RuntimeError> {
        self.launch_root(spec, None).await
    }

    /// [`Self::spawn_root`] with an idempotency key: the launch records its pid under
    /// `launch_key` in the same commit, and a later launch with the same key (after a
    /// restart too, or on another runtime that took the store over) launches nothing and
    /// answers that pid. Concurrent launches with one key must be serialised by the caller.
    pub async fn spawn_root_keyed(&self, spec: RootSpec, launch_key: String) -> Result<Pid, RuntimeError> {
        self.launch_root(spec, Some(launch_key)).await
    }

    async fn launch_root(&self, spec: RootSpec, launch_key: Option<String>) -> Result<Pid, RuntimeError> {
        if self.is_read_only() {
            return Err(RuntimeError::ReadOnly);
        }
        if !self.shared.images.contains(&spec.image) {
            return Err(RuntimeError::UnknownImage(spec.image.0));
        }
        if spec.goal.trim().is_empty() || spec.goal.len() > limits::GOAL_BYTES_MAX {
            return Err(RuntimeError::InvalidRoot(format!(
                "the goal is {} bytes; it must be 1 to {} bytes",
                spec.goal.len(),
                limits::GOAL_BYTES_MAX
            )));
        }
        let cwd = path::resolve("/", &spec.cwd).map_err(|e| RuntimeError::InvalidRoot(e.to_string()))?;
        if !spec.cwd.starts_with('/') {
            return Err(RuntimeError::InvalidRoot(format!("the root cwd {:?} must be absolute", spec.cwd)));
        }
        let key = match keys::lookup(
            self.shared.store.as_ref(),
            Sender::Host,
            KeyKind::Launch,
            launch_key,
            "launch_key",
        )? {
            Keyed::Answered(first) => return Ok(first),
            Keyed::New(key) => key,
        };
        let mut ids = ids::UuidV7Ids;
        let pid = ids.pid();
        let grants = spec
            .capabilities
            .iter()
            .map(|req| capability::host_grant(req, pid, ids.grant()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| RuntimeError::InvalidRoot(e.to_string()))?;
        let default_skills =
            self.shared.images.get(&spec.image).map(|i| i.skills.clone()).unwrap_or_default();
        let view =
            RootViewRequest { clearance: spec.clearance, goal_labels: spec.goal_labels, default_skills };
        let mut row = ProcessRow::launched(pid, None, 0, spec.image, cwd, spec.goal, spec.budget);
        row.restart.supervision = spec.supervision;
        self.shared
            .memory
            .commit(self.shared.store.as_ref(), |stage| {
                let mut plan = stage
                    .space()
                    .plan_root_view(&view)
                    .and_then(|approval| stage.space().materialize_view(approval, pid, &mut ids))
                    .map_err(|e| RuntimeError::Tool(e.into()))?;
                stage.apply_view(&mut plan, &row.goal);
                stage.push(Change::PutProcess(row.clone()));
                stage.extend(grants.iter().cloned().map(Change::PutGrant));
                if let Some(key) = &key {
                    stage.push(keys::record(key.clone(), &pid)?);
                }
                Ok::<_, RuntimeError>(())
            })
            .await?;
        self.shared.telemetry.publish(KernelEvent::ProcessLaunched {
            pid,
            parent: None,
            image: row.image.clone(),
            depth: 0,
        });
        self.spawn_root_actor(row, grants, false).await?;
        Ok(pid)
    }

    fn actor(&self, pid: Pid) -> Result<ActorRef<ProcessMsg>, ToolError> {
        if let Some(actor) = self.shared.registry.get(&pid) {
            return Ok(actor.clone());
        }
        match self.shared.store.process(pid) {
            Ok(Some(row)) if row.status.is_terminal() => Err(ToolError::terminal(pid, row.status)),
            Ok(Some(_)) if self.is_read_only() => {
                Err(ToolError::new("read_only", "this is a read-only view of the state directory"))
            }
            Ok(Some(_)) => Err(ToolError::process_ended(pid)),
            Ok(None) => Err(ToolError::unknown_process(pid)),
            Err(e) => Err(ToolError::store(&e)),
        }
    }

    /// Makes a call as process `pid`, exactly as its program would. Notices delivered with
    /// the answer are dropped; see [`Self::call_as_with_notices`].
    pub async fn call_as(&self, pid: Pid, call: Call) -> Result<CallOk, ToolError> {
        self.call_as_with_notices(pid, call).await.result
    }

    /// Makes a call as process `pid` and returns the answer with its notices.
    pub async fn call_as_with_notices(&self, pid: Pid, call: Call) -> CallReply {
        match self.actor(pid) {
            Ok(actor) => context::call_actor(&actor, pid, call).await,
            Err(e) => CallReply { result: Err(e), notices: Vec::new() },
        }
    }

    /// Sends a message from the host to any live process.
    pub async fn send_message(&self, request: SendRequest) -> Result<SentMessage, ToolError> {
        if self.is_read_only() {
            return Err(ToolError::new("read_only", "this is a read-only view of the state directory"));
        }
        actor::deliver(&self.shared, actor::Origin::nobody(Sender::Host), request, None).await
    }

    /// Sends a message from the host with an idempotency key: a second send with the same
    /// `message_key` from the host delivers nothing and answers the first send's result.
    pub async fn send_message_keyed(
        &self,
        request: SendRequest,
        message_key: impl Into<String>,
    ) -> Result<SentMessage, ToolError> {
        if self.is_read_only() {
            return Err(ToolError::new("read_only", "this is a read-only view of the state directory"));
        }
        actor::deliver(&self.shared, actor::Origin::nobody(Sender::Host), request, Some(message_key.into()))
            .await
    }

    /// Reads any mailbox without acknowledging anything.
    pub fn read_mailbox(&self, pid: Pid, query: &MailboxQuery) -> Result<MailboxPage, RuntimeError> {
        Ok(self.shared.store.mailbox(pid, query)?)
    }

    /// How many unacknowledged messages a mailbox holds.
    pub fn unread_count(&self, pid: Pid) -> Result<u64, RuntimeError> {
        Ok(self.shared.store.unread_count(pid)?)
    }

    /// Signals any process (the host is not limited to direct children).
    pub async fn signal(
        &self,
        pid: Pid,
        signal: SignalKind,
        reason: Option<String>,
    ) -> Result<SignalResult, ToolError> {
        ToolError::check_reason(reason.as_deref())?;
        let actor = self.actor(pid)?;
        let sent = actor
            .call(
                |port| ProcessMsg::Signal {
                    signal,
                    reason,
                    sender: Sender::Host,
                    reply: Some(actor::Reply::new(port)),
                },
                None,
            )
            .await;
        match sent {
            Ok(CallResult::Success(CallReply { result: Ok(CallOk::Signalled(result)), .. })) => Ok(result),
            Ok(CallResult::Success(CallReply { result: Err(e), .. })) => Err(e),
            _ => Err(ToolError::process_ended(pid)),
        }
    }

    /// Sets the host-only resume gate: pauses a live process, and no resume takes effect until
    /// [`Self::clear_gate`].
    pub async fn set_gate(&self, pid: Pid, reason: &str) -> Result<ProcessRow, ToolError> {
        self.gate(pid, Some(reason.to_string())).await
    }

    /// Clears the host gate; does not resume.
    pub async fn clear_gate(&self, pid: Pid) -> Result<ProcessRow, ToolError> {
        self.gate(pid, None).await
    }

    async fn gate(&self, pid: Pid, reason: Option<String>) -> Result<ProcessRow, ToolError> {
        ToolError::check_reason(reason.as_deref())?;
        let actor = self.actor(pid)?;
        match actor.call(|reply| ProcessMsg::Gate { reason, reply }, None).await {
            Ok(CallResult::Success(result)) => result,
            _ => Err(ToolError::process_ended(pid)),
        }
    }

    /// Gives the live process `holder` a grant of the host's (derived from nothing, so only
    /// the host can make it), durably, then tells its actor. For example WRITE on
    /// `mailbox:<pid>` ([`crate::kernel::mailbox::mailbox_resource`]) lets `holder` message a
    /// process outside its parent and children. Revocable like any grant.
    pub async fn grant(&self, holder: Pid, request: &CapabilityRequest) -> Result<Grant, RuntimeError> {
        if self.is_read_only() {
            return Err(RuntimeError::ReadOnly);
        }
        let row = self.shared.store.process(holder)?.ok_or(RuntimeError::UnknownProcess(holder))?;
        if row.status.is_terminal() {
            return Err(RuntimeError::Tool(ToolError::process_ended(holder)));
        }
        let grant = capability::host_grant(request, holder, ids::UuidV7Ids.grant()).map_err(|e| {
            RuntimeError::Tool(ToolError::new(crate::kernel::codes::INVALID_ARGUMENTS, e.to_string()))
        })?;
        self.shared.store.submit(vec![Change::PutGrant(grant.clone())]).await?;
        if let Some(actor) = self.shared.registry.get(&holder) {
            let _ = actor.cast(ProcessMsg::GrantAdded(Box::new(grant.clone())));
        }
        Ok(grant)
    }

    /// Revokes a grant and everything derived from it, in one transaction, then tells the
    /// holders. Returns every revoked grant with its holder.
    pub async fn revoke(&self, grant: GrantId) -> Result<Vec<(GrantId, Pid)>, RuntimeError> {
        if self.is_read_only() {
            return Err(RuntimeError::ReadOnly);
        }
        let receipt = self.shared.store.submit(vec![Change::RevokeGrant(grant)]).await?;
        let mut by_holder: std::collections::HashMap<Pid, Vec<GrantId>> = Default::default();
        for (id, holder) in &receipt.revoked {
            by_holder.entry(*holder).or_default().push(*id);
        }
        for (holder, ids) in by_holder {
            if let Some(actor) = self.shared.registry.get(&holder) {
                let _ = actor.cast(ProcessMsg::GrantsRevoked(ids));
            }
        }
        Ok(receipt.revoked)
    }

    /// One process's committed row.
    pub fn process(&self, pid: Pid) -> Result<Option<ProcessRow>, RuntimeError> {
        Ok(self.shared.store.process(pid)?)
    }

    /// Committed rows matching a query.
    pub fn processes(&self, query: ProcessQuery) -> Result<Vec<ProcessRow>, RuntimeError> {
        Ok(self.shared.store.processes(query)?)
    }

    /// A process's grants.
    pub fn grants_of(&self, pid: Pid) -> Result<Vec<Grant>, RuntimeError> {
        Ok(self.shared.store.grants_of(pid)?)
    }

    /// An object's metadata (released objects stay as tombstones). A store fault while reading
    /// one from the history a reopen left in the store is logged and reads as `None`.
    pub fn object(&self, oid: Oid) -> Option<ObjectMeta> {
        self.ensure_history(&[], &[oid]);
        self.shared.memory.read(|space| space.object(oid).cloned())
    }

    /// An object's payload as the host sees it: `None` if this runtime cannot materialize it
    /// (never checkpointed, and the runtime reopened since; or released). Reading as the host
    /// raises no process's context.
    pub fn payload(&self, oid: Oid) -> Result<Option<serde_json::Value>, ToolError> {
        match self.shared.memory.payload(self.shared.store.as_ref(), oid)? {
            memory::Lookup::Found(p) => Ok(Some(p.value)),
            memory::Lookup::NotMaterializable => Ok(None),
        }
    }

    /// A process's object memory: roots, handles, owned objects, context, skills, collected
    /// or not. A store fault while reading a collected memory from the history a reopen left in
    /// the store is logged and reads as `None`.
    pub fn memory(&self, pid: Pid) -> Option<MemoryReport> {
        self.ensure_history(&[pid], &[]);
        self.shared.memory.read(|space| MemoryReport::of(space, pid))
    }

    /// The object `pid` binds to `name` in its namespace (a collected memory names nothing).
    pub fn named(&self, pid: Pid, name: &str) -> Option<Oid> {
        self.shared.memory.read(|space| space.process(pid).and_then(|m| m.namespace.get(name).copied()))
    }

    fn ensure_history(&self, pids: &[Pid], oids: &[Oid]) {
        if let Err(e) = self.shared.memory.ensure(self.shared.store.as_ref(), pids, oids) {
            tracing::error!(?pids, ?oids, error = %e.message, "failed to read object memory from the store");
        }
    }

    /// A copy of the object memory this runtime holds (for tests and tools that check
    /// invariants; it costs a copy of the whole space). After a reopen that is the resident
    /// part ([`Store::object_space`]) and whatever was read since.
    pub fn object_space(&self) -> ObjectSpace {
        self.shared.memory.read(ObjectSpace::clone)
    }

    /// Subscribes to kernel telemetry from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<KernelEvent> {
        self.shared.telemetry.subscribe()
    }

    /// Waits until `pid` is terminal and returns its final row, or the store's failure if it
    /// fail-stops meanwhile (nothing can end after that).
    ///
    /// Cancel safety: dropping the future changes nothing.
    pub async fn wait_terminal(&self, pid: Pid) -> Result<ProcessRow, RuntimeError> {
        let mut events = self.subscribe();
        // A store that fail-stops can commit nothing more: no end will ever be reported, so
        // the wait ends with the failure instead of hanging.
        let mut failures = self.shared.store.failures();
        loop {
            if let Some(cause) = failures.as_ref().and_then(|f| f.borrow().clone()) {
                return Err(RuntimeError::Store(StoreError::FailStopped { cause }));
            }
            match self.shared.store.process(pid)? {
                None => return Err(RuntimeError::UnknownProcess(pid)),
                Some(row) if row.status.is_terminal() => return Ok(row),
                Some(_) => {}
            }
            if self.is_read_only() {
                return Err(RuntimeError::ReadOnly);
            }
            loop {
                let event = match failures.as_mut() {
                    Some(watch) => tokio::select! {
                        event = events.recv() => event,
                        changed = watch.changed() => {
                            if changed.is_err() {
                                failures = None;
                            }
                            break;
                        }
                    },
                    None => events.recv().await,
                };
                match event {
                    Ok(KernelEvent::ProcessTransition { pid: p, to, .. }) if p == pid && to.is_terminal() => {
                        break;
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Err(broadcast::error::RecvError::Closed) => return Err(RuntimeError::ReadOnly),
                }
            }
        }
    }

    /// Shuts down: stops every subtree leaves-first (a `running` process is paused with reason
    /// `shutdown`; waiting, paused and runnable rows keep their state), waits for their
    /// commits, and stops the supervisor. No `running` row is left behind.
    pub async fn shutdown(mut self) -> Result<(), RuntimeError> {
        let Some(supervisor) = self.supervisor.clone() else { return Ok(()) };
        let roots =
            self.shared.store.processes(ProcessQuery { roots_only: true, ..ProcessQuery::default() })?;
        actor::shut_down_all(&self.shared, roots.iter().map(|r| r.pid)).await;
        supervisor.stop_and_wait(None, None).await.map_err(|e| RuntimeError::Actor(e.to_string()))?;
        self.supervisor = None;
        Ok(())
    }
}

impl Drop for Runtime {
    /// A runtime dropped without a completed [`Runtime::shutdown`] ends as a crash does: its
    /// store takes no more writes (what was already submitted commits) and every process
    /// actor is killed, before the state directory's lock is released. Nothing it ran writes
    /// after the next owner opens the state, which recovers a `running` row as a stale
    /// execution. A read-only view has nothing to stop.
    fn drop(&mut self) {
        let Some(supervisor) = self.supervisor.take() else { return };
        self.shared.store.close();
        for entry in self.shared.registry.iter() {
            entry.value().kill();
        }
        supervisor.kill();
    }
}
