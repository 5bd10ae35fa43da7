//! The kernel calls a process makes.

use super::lifecycle::ready_result;
use super::objects::check_named_writes;
use super::{ProcessActor, ProcessMsg, ProcessState, Reply};
use crate::kernel::budget::Usage;
use crate::kernel::ids::Pid;
use crate::kernel::launch::{self, LaunchRequest, Parent};
use crate::kernel::objects::{ForkMode, ForkViewRequest, RootSelection, SpawnViewRequest};
use crate::kernel::process::{Event, ProcessRow};
use crate::kernel::status::Sender;
use crate::kernel::status::{FailureKind, Status, WaitState};
use crate::limits;
use crate::runtime::calls::{
    Call, CallOk, ChildList, ChildRow, Done, ForkRequest, GrantView, LaunchView, Launched, NamedWrite,
    ToolError, WaitResult,
};
use crate::runtime::ids::UuidV7Ids;
use crate::runtime::keys::{self, Keyed};
use crate::runtime::telemetry::KernelEvent;
use crate::store::KeyKind;
use crate::store::{Change, Envelope, ProcessQuery, StoreError};
use ractor::ActorRef;

impl ProcessActor {
    pub(crate) async fn on_call(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        call: Call,
        reply: Reply,
    ) {
        if state.row.status.is_terminal() {
            let _ = reply.send(Err(ToolError::terminal(state.pid(), state.row.status)));
            return;
        }
        if state.ending.is_some() {
            let _ = reply.send(Err(ToolError::process_ended(state.pid())));
            return;
        }
        if state.row.status == Status::Paused {
            state.held.push_back((call, reply));
            return;
        }
        if state.row.status != Status::Running {
            let _ = reply.send(Err(ToolError::new(
                "not_running",
                format!("{} is {}; only a running process makes calls", state.pid(), state.row.status),
            )));
            return;
        }
        let charged = call.charged_tool_calls();
        if charged > 0 {
            let usage = Usage { tool_calls: charged, ..Usage::default() };
            if let Err(e) = state.row.account.charge(&usage) {
                self.exhaust(myself, state, e.to_string(), reply).await;
                return;
            }
        }
        let message_call = call.is_message_call();
        let result = match call {
            Call::Spawn(request) => self.launch(myself, state, request, None).await,
            Call::SpawnGroup(requests) => {
                let (answers, exhausted) = self.launch_group(myself, state, requests).await;
                let group = (CallOk::SpawnedGroup(answers), exhausted);
                return self.answer_group(myself, state, group, message_call, reply).await;
            }
            Call::WaitGroup(children) => {
                let (answers, exhausted) = self.wait_group(state, children).await;
                let group = (CallOk::WaitedGroup(answers), exhausted);
                return self.answer_group(myself, state, group, message_call, reply).await;
            }
            Call::SendGroup(sends) => {
                let (answers, exhausted) = self.send_group(state, sends).await;
                let group = (CallOk::SentGroup(answers), exhausted);
                return self.answer_group(myself, state, group, message_call, reply).await;
            }
            Call::Fork(fork) => {
                let ForkRequest { launch, mode, roots } = *fork;
                self.launch(myself, state, launch, Some((mode, roots))).await
            }
            Call::Merge { child_pid, include_child_created } => {
                self.merge_child(state, child_pid, include_child_created).await
            }
            Call::CreateObject(request) => self.create_object(state, request).await,
            Call::WriteObject { target, payload } => self.write_object(state, target, payload).await,
            Call::ListObjects => self.list_objects(state),
            Call::CheckpointObject { target } => self.checkpoint_object(state, target).await,
            Call::LoadSkills(skills) => self.load_skills(state, skills).await,
            Call::BindProfileObject(request) => self.bind_profile_object(state, request).await,
            Call::UnbindName { name } => self.unbind_name(state, name).await,
            Call::DropObject { target } => self.drop_object(state, target).await,
            Call::DelegateObject { target, to, rights } => {
                self.delegate_object(state, target, to, rights).await
            }
            Call::Send(request) => self.send_message(state, request, None).await,
            Call::SendKeyed { message_key, request } => {
                self.send_message(state, *request, Some(message_key)).await
            }
            Call::Read { query, ack } => self.read_messages(state, query, ack).await,
            Call::Receive { query, ack, block } => {
                if let Some((result, reply)) = self.receive_messages(state, query, ack, block, reply).await {
                    let notices = Self::take_notices(state, true);
                    let _ = reply.send_with(result, notices);
                }
                return; // or suspended: answered when a match arrives
            }
            Call::List { include_terminal } => self.list(state, include_terminal),
            Call::Wait { child_pid, block } => {
                if let Some((result, reply)) = self.wait(state, child_pid, block, reply).await {
                    let notices = Self::take_notices(state, false);
                    let _ = reply.send_with(result, notices);
                }
                return; // or suspended: answered when the child ends
            }
            Call::Signal { child_pid, signal, reason } => {
                match ToolError::check_reason(reason.as_deref())
                    .and_then(|()| self.direct_child(state, child_pid))
                {
                    Err(e) => Err(e),
                    Ok(child) if child.status.is_terminal() => {
                        Err(ToolError::terminal(child.pid, child.status))
                    }
                    Ok(_) => {
                        // The child's actor applies the signal and answers the caller directly.
                        let message = ProcessMsg::Signal {
                            signal,
                            reason,
                            sender: crate::kernel::status::Sender::Process(state.pid()),
                            reply: Some(reply),
                        };
                        let actor = self.shared.registry.get(&child_pid).map(|a| a.clone());
                        let undelivered = match actor {
                            Some(actor) => match actor.cast(message) {
                                Ok(()) => None,
                                Err(ractor::MessagingErr::SendErr(message)) => Some(message),
                                Err(_) => None,
                            },
                            None => Some(message),
                        };
                        if let Some(ProcessMsg::Signal { reply: Some(reply), .. }) = undelivered {
                            let _ = reply.send(Err(ToolError::process_ended(child_pid)));
                        }
                        return;
                    }
                }
            }
            Call::Exit { payload } => {
                if let Some(Err(e)) = payload.as_ref().map(|p| {
                    super::objects::check_payload_size("the exit payload", p, limits::RESULT_BYTES_MAX)
                }) {
                    let _ = reply.send(Err(e));
                    return;
                }
                self.begin_ending(myself, state, Event::Exit { result_oid: None }, Some((payload, reply)))
                    .await;
                return;
            }
            Call::ReadObject { target } => self.read_object(state, target).await,
            Call::Charge(usage) => match state.row.account.charge(&usage) {
                Ok(()) => self.persist_row(state).await.map(|_| done(state)),
                Err(e) => {
                    self.exhaust(myself, state, e.to_string(), reply).await;
                    return;
                }
            },
            Call::Checkpoint { state: bytes, writes } => self.checkpoint(state, bytes, writes).await,
            Call::WriteNamed(writes) => match check_named_writes(&writes) {
                Ok(()) => self.write_named(state, writes, Vec::new()).await.map(|()| done(state)),
                Err(e) => Err(e),
            },
        };
        let notices = Self::take_notices(state, message_call);
        let _ = reply.send_with(result, notices);
    }

    /// Answers a group of calls (a message call's group takes notices as a message call does),
    /// then ends this process if a charge of the group ran out (`exhausted` is its message),
    /// as an exhausting call does.
    async fn answer_group(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        (answers, exhausted): (CallOk, Option<String>),
        message_call: bool,
        reply: Reply,
    ) {
        let notices = Self::take_notices(state, message_call);
        let _ = reply.send_with(Ok(answers), notices);
        if let Some(message) = exhausted {
            let event = Event::Fail { kind: FailureKind::BudgetExhausted, message };
            self.begin_ending(myself, state, event, None).await;
        }
    }

    async fn exhaust(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        message: String,
        reply: Reply,
    ) {
        let _ = reply.send(Err(ToolError::new("budget_exhausted", message.clone())));
        let event = Event::Fail { kind: FailureKind::BudgetExhausted, message };
        self.begin_ending(myself, state, event, None).await;
    }

    /// Launches a child: `spawn_child_process` (`fork` is `None`: a goal-only view) or
    /// `fork_child_process`. The memory view is approved before the launch, so a denial of
    /// either takes no pid; the view, the child's row, its grants and the parent's account
    /// commit in one change set.
    pub(super) async fn launch(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        request: LaunchRequest,
        fork: Option<(ForkMode, RootSelection)>,
    ) -> Result<CallOk, ToolError> {
        let store = self.shared.store.as_ref();
        let caller = Sender::Process(state.pid());
        let key =
            match keys::lookup(store, caller, KeyKind::Launch, request.launch_key.clone(), "launch_key")? {
                Keyed::Answered(first) => return Ok(CallOk::Spawned(first)),
                Keyed::New(key) => key,
            };
        let elapsed_ms = state.wall_before_ms
            + state.started_at.map_or(0, |s| u64::try_from(s.elapsed().as_millis()).unwrap_or(u64::MAX));
        let me = state.pid();
        if fork.is_some() && request.restart != crate::kernel::restart::RestartPolicy::Temporary {
            return Err(ToolError::new(
                "restart_not_for_fork",
                format!(
                    "a fork cannot be restarted (its view is a copy of the parent's memory at the fork); \
                     launch it with restart \"temporary\", or spawn a {} child instead",
                    request.restart.as_str()
                ),
            ));
        }
        let memory = &self.shared.memory;
        let parent =
            Parent { row: &state.row, grants: &state.grants, elapsed_ms, children: state.children_total };
        let images = &self.shared.images;
        let staged = memory.plan(self.shared.store.as_ref(), |stage| {
            let (plan, view) = stage_launch(stage, images, parent, &request, fork.as_ref(), |_| {})?;
            let mut parent_row = parent.row.clone();
            parent_row.account = plan.parent_account;
            stage.push(Change::PutProcess(parent_row.clone()));
            let launched =
                launched_of(&plan.child, &plan.grants, &view, fork.as_ref().map(|(mode, _)| *mode));
            if let Some(key) = key {
                stage.push(keys::record(key, &launched)?);
            }
            Ok::<_, ToolError>((plan.child, plan.grants, launched, parent_row))
        });
        let ((child, grants, launched, parent_row), ticket) = match staged {
            Ok((planned, Some(ticket))) => (planned, ticket),
            Ok((_, None)) => return Err(ToolError::new("internal", "a launch staged no changes")),
            Err(denied) => {
                self.shared.telemetry.publish(KernelEvent::LaunchDenied {
                    parent: me,
                    code: denied.code.clone(),
                    message: denied.message.clone(),
                });
                return Err(denied);
            }
        };
        match memory.finish(ticket).await {
            Ok(_) => {}
            Err(StoreError::SourceGrantRevoked { source_grant }) => {
                memory.discard_launch(child.pid);
                // Revoked between our check and the commit: refresh and refuse.
                if let Ok(grants) = self.shared.store.grants_of(me) {
                    state.grants = grants;
                }
                return Err(ToolError::new(
                    "capability_revoked",
                    format!(
                        "launch denied: grant {source_grant} was revoked while the launch was committing"
                    ),
                ));
            }
            Err(e) => return Err(ToolError::store(&e)),
        }
        state.row = parent_row;
        state.children_total += 1;
        self.start_launched(myself, state, child, grants).await;
        Ok(CallOk::Spawned(launched))
    }

    /// After a launch committed: announces it and starts the child's actor; a child whose
    /// actor cannot start ends failed, and this process hears of it as of any child's end.
    pub(super) async fn start_launched(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        child: ProcessRow,
        grants: Vec<crate::kernel::capability::Grant>,
    ) {
        self.shared.telemetry.publish(KernelEvent::ProcessLaunched {
            pid: child.pid,
            parent: child.parent,
            image: child.image.clone(),
            depth: child.depth,
        });
        let pid = child.pid;
        if let Err(e) = self.spawn_child_actor(myself, state, child, grants, false).await {
            let message = format!("its actor could not start: {e}");
            if let Some(row) = crate::runtime::recovery::end_orphaned_subtree(
                &self.shared,
                pid,
                &crate::runtime::recovery::OrphanEnd::Failed(message),
            )
            .await
            {
                state.live_children.insert(pid);
                self.on_child_ended(myself, state, row).await;
            }
        }
    }

    fn list(&self, state: &ProcessState, include_terminal: bool) -> Result<CallOk, ToolError> {
        let query = ProcessQuery {
            parent: Some(state.pid()),
            include_terminal,
            limit: Some(limits::LIST_ROWS_MAX + 1),
            ..ProcessQuery::default()
        };
        let mut rows = self.shared.store.processes(query).map_err(|e| ToolError::store(&e))?;
        let has_more = rows.len() > limits::LIST_ROWS_MAX;
        rows.truncate(limits::LIST_ROWS_MAX);
        Ok(CallOk::Listed(ChildList { children: rows.iter().map(ChildRow::from).collect(), has_more }))
    }

    /// Answers a wait now (`Some`) or suspends the caller and keeps the reply (`None`).
    async fn wait(
        &self,
        state: &mut ProcessState,
        child_pid: Pid,
        block: bool,
        reply: Reply,
    ) -> Option<(Result<CallOk, ToolError>, Reply)> {
        let child = match self.direct_child(state, child_pid) {
            Ok(child) => child,
            Err(e) => return Some((Err(e), reply)),
        };
        if child.status.is_terminal() {
            return Some((self.ready_wait(state, &child).await, reply));
        }
        if !block {
            let result = WaitResult { ready: false, ..ready_result(&child, false) };
            return Some((Ok(CallOk::Waited(result)), reply));
        }
        let event = Event::BeginWait(WaitState::Child { child_pid });
        if let Err(e) = self.transition(state, event, Vec::new()).await {
            return Some((Err(e), reply));
        }
        state.pending_wait = Some(Box::new((super::PendingWait::Child(child_pid), reply)));
        None
    }

    /// A wait on a terminal child: grants the result handle (one commit) and answers.
    async fn ready_wait(&self, state: &ProcessState, child: &ProcessRow) -> Result<CallOk, ToolError> {
        let result = self.grant_results(state.pid(), std::slice::from_ref(child)).await?.pop();
        result.map(CallOk::Waited).ok_or_else(|| ToolError::process_ended(child.pid))
    }

    async fn checkpoint(
        &self,
        state: &mut ProcessState,
        bytes: Vec<u8>,
        writes: Vec<NamedWrite>,
    ) -> Result<CallOk, ToolError> {
        if bytes.len() > limits::CHECKPOINT_BYTES_MAX {
            return Err(ToolError::new(
                "checkpoint_too_large",
                format!(
                    "the checkpoint is {} bytes; the limit is {}",
                    bytes.len(),
                    limits::CHECKPOINT_BYTES_MAX
                ),
            ));
        }
        check_named_writes(&writes)?;
        let put = Change::PutCheckpoint { pid: state.pid(), envelope: Envelope::bytes(bytes) };
        if state.row.resume_claim.is_some() {
            if !writes.is_empty() {
                self.write_named(state, writes, Vec::new()).await?;
            }
            self.transition(state, Event::Progress, vec![put]).await?;
        } else {
            let changes = vec![put, Change::PutProcess(state.row.clone())];
            self.write_named(state, writes, changes).await?;
        }
        Ok(done(state))
    }
}

/// Plans one launch into `stage`: the memory view is approved, then the kernel's launch
/// decision; only then are the view, the child's row (after `shape`) and its grants staged.
/// A denial stages nothing. The caller stages the parent's row with the plan's account.
pub(crate) fn stage_launch(
    stage: &mut crate::runtime::memory::Stage<'_>,
    images: &crate::runtime::program::ImageRegistry,
    parent: Parent<'_>,
    request: &LaunchRequest,
    fork: Option<&(ForkMode, RootSelection)>,
    shape: impl FnOnce(&mut ProcessRow),
) -> Result<(launch::LaunchPlan, crate::kernel::objects::ViewPlan), ToolError> {
    let me = parent.row.pid;
    let image_id = request.image.clone().unwrap_or_else(|| parent.row.image.clone());
    let child_image = images.child_image(&parent.row.image, &image_id);
    let clearance = request.clearance.clone();
    let approval = match fork {
        None => stage.space().plan_spawn_view(&SpawnViewRequest {
            parent: me,
            clearance,
            default_skills: child_image.default_skills,
        }),
        Some((mode, roots)) => stage.space().plan_fork_view(&ForkViewRequest {
            parent: me,
            mode: *mode,
            roots: roots.clone(),
            clearance,
            image: child_image,
        }),
    }?;
    let mut plan = launch::plan_launch(parent, request, &|id| images.contains(id), &mut UuidV7Ids)?;
    required_capabilities_covered(images, &plan.child.image, &plan.grants)?;
    let mut view = stage.space().materialize_view(approval, plan.child.pid, &mut UuidV7Ids)?;
    shape(&mut plan.child);
    stage.apply_view(&mut view, &plan.child.goal);
    stage.push(Change::PutProcess(plan.child.clone()));
    stage.extend(plan.grants.iter().cloned().map(Change::PutGrant));
    Ok((plan, view))
}

/// A launch's answer, built before its commit so that a keyed launch records it in the same
/// change set.
pub(super) fn launched_of(
    child: &ProcessRow,
    grants: &[crate::kernel::capability::Grant],
    view: &crate::kernel::objects::ViewPlan,
    mode: Option<ForkMode>,
) -> Launched {
    Launched {
        pid: child.pid,
        status: child.status,
        image: child.image.clone(),
        cwd: child.cwd.clone(),
        depth: child.depth,
        state_generation: child.state_generation,
        resource_budget: child.account.limit,
        capabilities: grants.iter().map(GrantView::from).collect(),
        view: LaunchView {
            goal_oid: Some(view.goal),
            roots: view.roots.clone(),
            mode,
            skills: view.skills.iter().map(|s| s.name.clone()).collect(),
            dropped_skills: view.dropped_skills.clone(),
            released_roots: view.released_roots.clone(),
        },
    }
}

fn done(state: &ProcessState) -> CallOk {
    CallOk::Done(Done { state_generation: state.row.state_generation })
}

/// An image's `required_capabilities` declare needs and grant nothing: a launch must delegate
/// each of them, or it is refused naming what is missing (`missing_required_capability`).
fn required_capabilities_covered(
    images: &crate::runtime::program::ImageRegistry,
    image: &crate::kernel::ids::ImageId,
    grants: &[crate::kernel::capability::Grant],
) -> Result<(), ToolError> {
    let Some(info) = images.get(image) else { return Ok(()) };
    let missing: Vec<&str> = info
        .required_capabilities
        .iter()
        .filter(|needed| !grants.iter().any(|g| &g.resource == *needed))
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(ToolError::new(
        "missing_required_capability",
        format!(
            "launch denied: image {image} requires [{}], which the launch does not delegate; add them to \
             inherit_capabilities (required capabilities declare needs and grant nothing)",
            missing.join(", ")
        ),
    ))
}
