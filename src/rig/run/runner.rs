//! `RigRunner`: launches a rig's seats on their runtimes, persisting each seat's state
//! (declared → resolved → realized | failed) as it goes, and waits for native seats to end.
//!
//! Order: seats launch concurrently, except that a seat forked from another seat of the same
//! rig (`native_id: seat:<member>`) waits until that seat's session has ended, so it forks the
//! finished conversation. A seat counts as launched only once its new token is durably
//! written; a native seat whose token cannot be written is terminated and recorded failed,
//! and an external seat's new token that cannot be written is reported by value
//! ([`SeatOutcome::unrecorded_token`]), never dropped. Store writes are retried within a bound
//! (`persist.rs`).
//!
//! [`RigRunner::interrupt`] stops a run: every seat command still running is killed with its
//! whole process group, each seat not yet realized is recorded failed at step `interrupted`,
//! and a realized native seat's process is left to the runtime's shutdown, which pauses it
//! so that `agentvisor run --resume` continues it.

use super::delegation::Delegations;
use super::hosts::RigHosts;
use super::persist::{persist, record_usage};
use super::seat::SeatOutcome;
use super::settings::seat_cli;
use crate::actors::kernel::status::SignalKind;
use crate::actors::runtime::Runtime;
use crate::actors::{Outcome, Pid};
use crate::agent::brain::Usage;
use crate::agent::run::add_usage;
use crate::agent::run::persist::COST_OBJECT;
use crate::rig::adapter::{
    AdapterError, ClaudeCodeAdapter, CodexAdapter, SeatAdapter, SeatLaunch, TerminalAdapter,
};
use crate::rig::store::{SeatStatus, SeatStore};
use crate::rig::{Member, MemberId, NativeId, RigId, RigSpec, SeatRuntime, SessionSource};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The prefix of a native id naming a seat of the same rig: `seat:<member>`.
pub const SEAT_REF_PREFIX: &str = "seat:";

/// How long an external runtime's command may run before it is killed, when the member's
/// profile sets no `cli.timeout_ms`.
pub const EXTERNAL_COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// The failed step of a seat a run's interruption stopped before it was realized.
pub const INTERRUPTED_STEP: &str = "interrupted";

/// The adapters for the external runtimes.
pub struct Adapters {
    /// `claude-code`.
    pub claude: Arc<dyn SeatAdapter>,
    /// `codex`.
    pub codex: Arc<dyn SeatAdapter>,
    /// `terminal`.
    pub terminal: Arc<dyn SeatAdapter>,
    /// The bound on each external command.
    pub timeout: Duration,
}

impl Default for Adapters {
    fn default() -> Adapters {
        Adapters {
            claude: Arc::new(ClaudeCodeAdapter::default()),
            codex: Arc::new(CodexAdapter::default()),
            terminal: Arc::new(TerminalAdapter),
            timeout: EXTERNAL_COMMAND_TIMEOUT,
        }
    }
}

/// What a seat's progress looks like to a watcher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeatProgress {
    /// The member.
    pub member: String,
    /// Its state.
    pub status: SeatStatus,
    /// Its native process, once launched.
    pub pid: Option<Pid>,
    /// A short line on what it is doing.
    pub note: String,
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The seat store refused a write that the run needs (creating the rig, declaring).
    #[error("the seat store refused: {0}")]
    Store(#[from] crate::rig::store::StoreError),
}

/// Runs a rig's seats.
pub struct RigRunner {
    pub(super) rt: Arc<Runtime>,
    pub(super) hosts: Arc<RigHosts>,
    pub(super) store: Arc<dyn SeatStore>,
    pub(super) adapters: Arc<Adapters>,
    pub(super) base: PathBuf,
    pub(super) progress: watch::Sender<BTreeMap<String, SeatProgress>>,
    /// Native seats' processes by rig and member, once launched, and whether their session
    /// ended. Keyed by rig too: one runner may run several rigs with the same member ids, and
    /// `seat:<member>` names a seat of the forking seat's own rig.
    pub(super) ended: Arc<parking_lot::Mutex<HashMap<SeatKey, watch::Receiver<Option<Pid>>>>>,
    /// Cancelled when the run is interrupted.
    interrupt: CancellationToken,
    /// The native seats realized, for `delegates_to` grants.
    delegations: Arc<Delegations>,
}

/// A seat of one rig: its rig and member id.
pub(super) type SeatKey = (RigId, String);

/// Why a seat was not realized.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) step: String,
    pub(super) error: String,
    /// The runtime's standard error.
    pub(super) stderr: Option<String>,
    /// A new native token the runtime created that the store refused to record.
    pub(super) unrecorded_token: Option<String>,
}

impl RigRunner {
    /// A runner on `rt` (whose options registered `hosts`' images), keeping seat state in
    /// `store`; member paths are relative to `base` (the rig spec's directory).
    pub fn new(
        rt: Arc<Runtime>,
        hosts: RigHosts,
        store: Arc<dyn SeatStore>,
        adapters: Adapters,
        base: PathBuf,
    ) -> RigRunner {
        for host in hosts.all() {
            host.attach_store(rt.store());
        }
        RigRunner {
            rt,
            hosts: Arc::new(hosts),
            store,
            adapters: Arc::new(adapters),
            base,
            progress: watch::channel(BTreeMap::new()).0,
            ended: Arc::default(),
            interrupt: CancellationToken::new(),
            delegations: Arc::default(),
        }
    }

    /// Interrupts the run (SIGINT, SIGTERM): every seat command still running is killed with
    /// its whole process group, each seat not yet realized is recorded failed at step
    /// [`INTERRUPTED_STEP`], and every launch still waiting returns at once. A realized native
    /// seat's process keeps its state for the runtime's shutdown to pause. Seats launched after
    /// this are recorded interrupted without starting.
    pub fn interrupt(&self) {
        self.interrupt.cancel();
    }

    /// What [`Self::interrupt`] cancels, for a signal handler to hold.
    pub fn interruption(&self) -> CancellationToken {
        self.interrupt.clone()
    }

    /// Whether the run was interrupted.
    pub fn interrupted(&self) -> bool {
        self.interrupt.is_cancelled()
    }

    /// Seat progress as it changes.
    pub fn watch(&self) -> watch::Receiver<BTreeMap<String, SeatProgress>> {
        self.progress.subscribe()
    }

    /// The rig id this spec runs under in the store: its own id, or `<id>-2`, `<id>-3`, … if
    /// earlier runs took it (seats keep their identity; a run never reuses another's seats).
    pub fn instance_id(&self, spec: &RigSpec) -> Result<RigId, RunError> {
        let mut n = 1u32;
        loop {
            let candidate = instance(&spec.id, n);
            if self.store.rig(&candidate)?.is_none() {
                return Ok(candidate);
            }
            n += 1;
        }
    }

    /// Creates the rig (under [`Self::instance_id`]), declares its seats, launches every one,
    /// and returns each seat's outcome once every native seat's session has ended.
    pub async fn run(&self, spec: &RigSpec, spec_path: &str) -> Result<(RigId, Vec<SeatOutcome>), RunError> {
        let id = self.instance_id(spec)?;
        let spec = RigSpec { id: id.clone(), ..spec.clone() };
        self.store.create_rig(&spec, spec_path)?;
        let outcomes = self.launch_all(&id, &spec.members).await;
        Ok((id, outcomes))
    }

    /// Declares `members` as new seats of the existing rig `rig` and launches them.
    pub async fn expand(&self, rig: &RigId, members: &[Member]) -> Result<Vec<SeatOutcome>, RunError> {
        for member in members {
            self.store.declare(rig, member)?;
        }
        Ok(self.launch_all(rig, members).await)
    }

    /// Launches the declared seats `members` of `rig`, each in its own task, and gathers them.
    pub async fn launch_all(&self, rig: &RigId, members: &[Member]) -> Vec<SeatOutcome> {
        let mut senders = HashMap::new();
        {
            let mut ended = self.ended.lock();
            for member in members {
                let (tx, rx) = watch::channel(None);
                ended.insert((rig.clone(), member.id.to_string()), rx);
                senders.insert(member.id.to_string(), tx);
            }
        }
        let mut tasks = Vec::new();
        for member in members {
            let seat = SeatTask {
                rt: Arc::clone(&self.rt),
                hosts: Arc::clone(&self.hosts),
                store: Arc::clone(&self.store),
                adapters: Arc::clone(&self.adapters),
                base: self.base.clone(),
                progress: self.progress.clone(),
                ended: Arc::clone(&self.ended),
                rig: rig.clone(),
                member: member.clone(),
                forked_from: forks_from_seat(members, &member.id),
                done: senders.remove(member.id.as_str()),
                interrupt: self.interrupt.clone(),
                spawned: None,
                delegations: Arc::clone(&self.delegations),
            };
            tasks.push(tokio::spawn(seat.run()));
        }
        let mut outcomes = Vec::new();
        for (task, member) in tasks.into_iter().zip(members) {
            match task.await {
                Ok(outcome) => outcomes.push(outcome),
                Err(join) => outcomes.push(failed_outcome(member, "internal", &join.to_string())),
            }
        }
        outcomes
    }
}

/// Whether a member of `members` forks from the seat `member` of the same launch.
fn forks_from_seat(members: &[Member], member: &MemberId) -> bool {
    let reference = format!("{SEAT_REF_PREFIX}{member}");
    members.iter().any(|m| {
        matches!(&m.session_source, Some(SessionSource::Fork { native_id }) if native_id.as_str() == reference)
    })
}

/// One seat's launch, in its own task.
struct SeatTask {
    rt: Arc<Runtime>,
    hosts: Arc<RigHosts>,
    store: Arc<dyn SeatStore>,
    adapters: Arc<Adapters>,
    base: PathBuf,
    progress: watch::Sender<BTreeMap<String, SeatProgress>>,
    ended: Arc<parking_lot::Mutex<HashMap<SeatKey, watch::Receiver<Option<Pid>>>>>,
    rig: RigId,
    member: Member,
    /// Whether another seat launched with it forks from it (`seat:<member>`): its agent then
    /// leaves its checkpointed window in its host, and the fork starts from it in O(1).
    forked_from: bool,
    done: Option<watch::Sender<Option<Pid>>>,
    interrupt: CancellationToken,
    /// A native seat's held process, once spawned and until its token is recorded.
    spawned: Option<Pid>,
    delegations: Arc<Delegations>,
}

impl SeatTask {
    async fn run(mut self) -> SeatOutcome {
        let done = self.done.take();
        let interrupt = self.interrupt.clone();
        // Dropping the launch on an interruption kills any runtime command it runs, with its
        // process group.
        let launched = tokio::select! {
            biased;
            () = interrupt.cancelled() => None,
            launched = self.launch() => Some(launched),
        };
        let outcome = match launched {
            Some(Ok(outcome)) => outcome,
            Some(Err(failure)) => self.failed(failure).await,
            None => self.interrupted().await,
        };
        if let Some(done) = done {
            let pid = outcome.pid.as_deref().and_then(|p| p.parse().ok());
            // Receivers also learn of a seat that failed: `Some` only for a session that ran.
            let _ = done.send(pid.filter(|_| outcome.status == SeatStatus::Realized));
            drop(done);
        }
        outcome
    }

    /// Records the seat failed (retrying a refused write within the bound) and its outcome.
    async fn failed(&self, failure: Failure) -> SeatOutcome {
        let Failure { step, mut error, stderr, unrecorded_token } = failure;
        let recorded =
            persist(|| self.store.fail(&self.rig, &self.member.id, &step, &error, stderr.as_deref())).await;
        if let Err((e, tries)) = recorded {
            error = format!("{error}; recording the failure was refused too ({tries} tries: {e})");
        }
        self.report(SeatStatus::Failed, None, format!("failed at {step}: {error}"));
        let mut outcome = failed_outcome(&self.member, &step, &error);
        outcome.stderr = stderr.filter(|text| !text.trim().is_empty());
        outcome.unrecorded_token = unrecorded_token;
        outcome
    }

    /// The seat's outcome once the run was interrupted while it launched or ran.
    async fn interrupted(&mut self) -> SeatOutcome {
        let seat = self.store.seat(&self.rig, &self.member.id).ok().flatten();
        if let Some(seat) = seat.filter(|seat| seat.status == SeatStatus::Realized) {
            // A running native seat: the runtime's shutdown pauses its process. An external
            // seat was realized (its command had ended) just before.
            let pid = seat.pid.as_deref().and_then(|p| p.parse().ok());
            let native = self.member.runtime == SeatRuntime::Native;
            let note = if native {
                "interrupted: its process is paused; `agentvisor run --resume` continues it"
            } else {
                "realized just before the interruption"
            };
            self.report(SeatStatus::Realized, pid, note.to_string());
            return SeatOutcome {
                member: self.member.id.to_string(),
                runtime: self.member.runtime.to_string(),
                status: SeatStatus::Realized,
                token: seat.token.map(|t| t.to_string()),
                source: source_value(&self.member),
                pid: seat.pid,
                process_status: native.then(|| "paused".to_string()),
                result: None,
                failed_step: None,
                error: Some(note.to_string()),
                usage: seat.usage,
                stderr: None,
                unrecorded_token: None,
                restored: false,
            };
        }
        if let Some(pid) = self.spawned.take() {
            // Held and never released: it never ran.
            let reason = Some("the run was interrupted before the seat was realized".to_string());
            let _ = self.rt.signal(pid, SignalKind::Terminate, reason).await;
            let _ = self.rt.wait_terminal(pid).await;
        }
        let error = format!(
            "the run was interrupted before this seat was realized; {}",
            match self.member.runtime {
                SeatRuntime::Native => "no agent of it ran",
                _ => "its runtime's command was killed with its whole process group",
            }
        );
        self.failed(failure(INTERRUPTED_STEP, error)).await
    }

    fn report(&self, status: SeatStatus, pid: Option<Pid>, note: String) {
        let member = self.member.id.to_string();
        self.progress.send_modify(|seats| {
            seats.insert(member.clone(), SeatProgress { member, status, pid, note });
        });
    }

    async fn launch(&mut self) -> Result<SeatOutcome, Failure> {
        self.report(SeatStatus::Declared, None, "declared".into());
        match self.member.runtime {
            SeatRuntime::Native => self.launch_native().await,
            runtime => self.launch_external(runtime).await,
        }
    }

    async fn launch_native(&mut self) -> Result<SeatOutcome, Failure> {
        let agent_ref = self.member.agent_ref.clone().unwrap_or_default();
        let host = self.hosts.get(&agent_ref).cloned().ok_or_else(|| {
            failure("resolve", format!("native: no agent configuration {agent_ref:?} is loaded for this rig"))
        })?;
        let profile = self.member.profile.clone().unwrap_or_default();
        let prompt = self.member.prompt.clone().unwrap_or_else(|| "Begin.".to_string());
        let source = match &self.member.session_source {
            Some(SessionSource::Fork { native_id }) => Some(self.resolve_native(native_id).await?),
            None => None,
        };
        if let Some(pid) = &source {
            // A seat of this run forked from: its window, kept by the host it ran on.
            if let Some(window) = self.hosts.all().find_map(|h| h.kept_window(*pid)) {
                host.offer_window(*pid, window);
            }
            host.check_source(&pid.to_string())
                .map_err(|e| failure("resolve", format!("native: the source session cannot be read: {e}")))?;
        }
        persist(|| self.store.resolve(&self.rig, &self.member.id))
            .await
            .map_err(|(e, _)| failure("persist", e.to_string()))?;
        self.report(SeatStatus::Resolved, None, "resolved".into());
        // Held: the agent does nothing until its token is durable and the runner releases it.
        let source_text = source.map(|pid| pid.to_string());
        let spec = host
            .held_root_spec(&profile, &prompt, source_text.as_deref())
            .map_err(|e| failure("launch", e.to_string()))?;
        // The seat's own new token, chosen before launch and never the source's.
        let token = NativeId(uuid::Uuid::now_v7().to_string());
        let pid = self.rt.spawn_root(spec).await.map_err(|e| failure("launch", e.to_string()))?;
        self.spawned = Some(pid);
        if self.forked_from {
            host.keep_window_of(pid);
        }
        let pid_text = pid.to_string();
        let realized =
            persist(|| self.store.realize(&self.rig, &self.member.id, &token, Some(&pid_text))).await;
        if let Err((e, tries)) = realized {
            self.spawned = None;
            // Not launched until its token is durable: end the held process, which never ran.
            let _ = self
                .rt
                .signal(pid, SignalKind::Terminate, Some("the seat's token could not be recorded".into()))
                .await;
            let _ = self.rt.wait_terminal(pid).await;
            return Err(failure(
                "persist",
                format!("the new seat's token could not be written durably ({tries} tries): {e}"),
            ));
        }
        self.spawned = None;
        // Before it runs: the rights its rig's `delegates_to` edges give it.
        self.delegations.seat_realized(&self.rt, self.store.as_ref(), &self.rig, &self.member.id, pid).await;
        host.release(&self.rt, pid).await.map_err(|e| failure("launch", e.to_string()))?;
        let origin = match &self.member.session_source {
            Some(SessionSource::Fork { native_id }) => format!("forked from source session {native_id}"),
            None => "fresh session".to_string(),
        };
        self.report(SeatStatus::Realized, Some(pid), format!("running ({origin})"));
        let row = self.rt.wait_terminal(pid).await.map_err(|e| failure("run", e.to_string()))?;
        self.report(SeatStatus::Realized, Some(pid), format!("{} ({origin})", row.status));
        let outcome = native_outcome(&self.rt, &self.member, &token, &row);
        if let Some(usage) = &outcome.usage {
            self.record_usage(usage).await;
        }
        Ok(outcome)
    }

    /// Records what the seat used (see [`record_usage`]).
    async fn record_usage(&self, usage: &Usage) {
        record_usage(self.store.as_ref(), &self.rig, &self.member.id, usage).await;
    }

    /// A native id: `seat:<member>` (a seat of this rig, once its session has ended), the
    /// token of a realized native seat of any rig, or an agent process id.
    async fn resolve_native(&self, native_id: &NativeId) -> Result<Pid, Failure> {
        let value = native_id.as_str();
        let not_found = || {
            failure(
                "resolve",
                format!(
                    "native: no agentvisor session has the native id {value:?}; no seat was launched in its place"
                ),
            )
        };
        if let Some(member) = value.strip_prefix(SEAT_REF_PREFIX) {
            let receiver = self.ended.lock().get(&(self.rig.clone(), member.to_string())).cloned();
            let Some(mut receiver) = receiver else {
                return self.realized_seat_pid(&MemberId(member.to_string())).ok_or_else(not_found);
            };
            self.report(SeatStatus::Declared, None, format!("waiting for seat {member} to end"));
            // Wait until the source seat's task is done (its sender is dropped then).
            while receiver.changed().await.is_ok() {}
            let pid = *receiver.borrow();
            return pid.ok_or_else(|| {
                failure(
                    "resolve",
                    format!("native: the source seat {member} did not realize a session; no seat was launched in its place"),
                )
            });
        }
        if let Some(pid) = self.token_pid(value) {
            return Ok(pid);
        }
        let pid: Pid = value.parse().map_err(|_| not_found())?;
        match self.rt.process(pid) {
            Ok(Some(_)) => Ok(pid),
            _ => Err(not_found()),
        }
    }

    fn realized_seat_pid(&self, member: &MemberId) -> Option<Pid> {
        let seat = self.store.seat(&self.rig, member).ok().flatten()?;
        (seat.status == SeatStatus::Realized).then_some(())?;
        seat.pid.as_deref()?.parse().ok()
    }

    fn token_pid(&self, token: &str) -> Option<Pid> {
        let rigs = self.store.rigs().ok()?;
        rigs.iter().find_map(|rig| {
            let seats = self.store.seats(&rig.id).ok()?;
            seats
                .into_iter()
                .find(|s| {
                    s.runtime == SeatRuntime::Native
                        && s.status == SeatStatus::Realized
                        && s.token.as_ref().is_some_and(|t| t.as_str() == token)
                })
                .and_then(|s| s.pid?.parse().ok())
        })
    }

    async fn launch_external(&mut self, runtime: SeatRuntime) -> Result<SeatOutcome, Failure> {
        let adapter = self.adapters.for_runtime(runtime);
        let prompt = self.member.prompt.clone().unwrap_or_else(|| "Begin.".to_string());
        let launch = seat_launch(&self.hosts, &self.adapters, &self.base, &self.rig, &self.member, prompt)
            .map_err(|e| failure("resolve", e))?;
        // The external runtime resolves the source itself, as part of its fork command.
        let realized = match &self.member.session_source {
            Some(SessionSource::Fork { native_id }) => {
                self.report(SeatStatus::Declared, None, format!("forking from source session {native_id}"));
                adapter.fork(&launch, native_id).await
            }
            None => adapter.start(&launch).await,
        }
        .map_err(adapter_failure)?;
        let token = &realized.token;
        let recorded = match persist(|| self.store.resolve(&self.rig, &self.member.id)).await {
            Ok(_) => persist(|| self.store.realize(&self.rig, &self.member.id, token, None)).await,
            Err(refused) => Err(refused),
        };
        if let Err((e, tries)) = recorded {
            return Err(Failure {
                step: "persist".to_string(),
                error: format!(
                    "{runtime} created session {token} for this seat, but the seat store refused to record \
                     it ({tries} tries: {e}); the session exists in {runtime} under that token"
                ),
                stderr: None,
                unrecorded_token: Some(token.to_string()),
            });
        }
        if let Some(usage) = &realized.usage {
            self.record_usage(usage).await;
        }
        self.report(SeatStatus::Realized, None, format!("realized as {}", realized.token));
        Ok(external_outcome(&self.member, realized))
    }
}

/// The `n`th instance of rig `id` in a state directory: `id` itself, then `id-2`, `id-3`, ….
pub(super) fn instance(id: &RigId, n: u32) -> RigId {
    if n <= 1 { id.clone() } else { RigId(format!("{}-{n}", id.as_str())) }
}

impl Adapters {
    /// The adapter for an external `runtime`'s seats (`terminal` for anything not Claude Code
    /// or Codex).
    pub(super) fn for_runtime(&self, runtime: SeatRuntime) -> Arc<dyn SeatAdapter> {
        match runtime {
            SeatRuntime::ClaudeCode => Arc::clone(&self.claude),
            SeatRuntime::Codex => Arc::clone(&self.codex),
            _ => Arc::clone(&self.terminal),
        }
    }
}

/// The launch of `member`'s seat on its external runtime: its directory, its prompt, and its
/// profile's command settings (program, flags, environment, timeout).
pub(super) fn seat_launch(
    hosts: &RigHosts,
    adapters: &Adapters,
    base: &std::path::Path,
    rig: &RigId,
    member: &Member,
    prompt: String,
) -> Result<SeatLaunch, String> {
    let cli = seat_cli(hosts, member)?;
    Ok(SeatLaunch {
        rig: rig.clone(),
        member: member.clone(),
        cwd: base.join(&member.cwd),
        prompt,
        timeout: cli.timeout.unwrap_or(adapters.timeout),
        env: cli.env,
        program: cli.program,
        flags: cli.flags,
    })
}

/// A realized external seat's outcome: its token, what its runtime reported and used.
pub(super) fn external_outcome(member: &Member, realized: crate::rig::adapter::Realized) -> SeatOutcome {
    SeatOutcome {
        member: member.id.to_string(),
        runtime: member.runtime.to_string(),
        status: SeatStatus::Realized,
        token: Some(realized.token.to_string()),
        source: source_value(member),
        pid: None,
        process_status: None,
        result: Some(realized.detail),
        failed_step: None,
        error: None,
        usage: realized.usage,
        stderr: None,
        unrecorded_token: None,
        restored: false,
    }
}

pub(super) fn failure(step: &str, error: String) -> Failure {
    Failure { step: step.to_string(), error, stderr: None, unrecorded_token: None }
}

pub(super) fn adapter_failure(e: AdapterError) -> Failure {
    Failure {
        step: e.step().as_str().to_string(),
        error: e.to_string(),
        stderr: e.stderr().map(str::to_string),
        unrecorded_token: None,
    }
}

pub(super) fn source_value(member: &Member) -> Option<String> {
    member.session_source.as_ref().map(|SessionSource::Fork { native_id }| native_id.to_string())
}

pub(super) fn failed_outcome(member: &Member, step: &str, error: &str) -> SeatOutcome {
    SeatOutcome {
        member: member.id.to_string(),
        runtime: member.runtime.to_string(),
        status: SeatStatus::Failed,
        token: None,
        source: source_value(member),
        pid: None,
        process_status: None,
        result: None,
        failed_step: Some(step.to_string()),
        error: Some(error.to_string()),
        usage: None,
        stderr: None,
        unrecorded_token: None,
        restored: false,
    }
}

/// A realized native seat's outcome from its ended process's row: its result and its
/// subtree's usage.
pub(super) fn native_outcome(
    rt: &Runtime,
    member: &Member,
    token: &NativeId,
    row: &crate::actors::kernel::process::ProcessRow,
) -> SeatOutcome {
    let result = match &row.outcome {
        Some(Outcome::Exited { result_oid: Some(oid) }) => {
            rt.payload(*oid).ok().flatten().and_then(|p| p.get("result").cloned())
        }
        _ => None,
    };
    SeatOutcome {
        member: member.id.to_string(),
        runtime: member.runtime.to_string(),
        status: SeatStatus::Realized,
        token: Some(token.to_string()),
        source: source_value(member),
        pid: Some(row.pid.to_string()),
        process_status: Some(row.status.to_string()),
        result,
        failed_step: None,
        error: None,
        usage: Some(subtree_usage(rt, row.pid)),
        stderr: None,
        unrecorded_token: None,
        restored: false,
    }
}

/// Usage over a native seat's subtree, from its root's cost record.
fn subtree_usage(rt: &Runtime, pid: Pid) -> Usage {
    let Some(oid) = rt.named(pid, COST_OBJECT) else {
        return Usage::default();
    };
    let cost = rt.payload(oid).ok().flatten().unwrap_or(Value::Null);
    let by: BTreeMap<String, Usage> =
        serde_json::from_value(cost["subtree_by_profile"].clone()).unwrap_or_default();
    by.values().fold(Usage::default(), |sum, u| add_usage(&sum, u))
}
