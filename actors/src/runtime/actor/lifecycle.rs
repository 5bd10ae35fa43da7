//! Starting, suspending, resuming and ending a process.

use super::{Ending, ProcessActor, ProcessMsg, ProcessState, Reply, Run};
use crate::kernel::ids::Pid;
use crate::kernel::process::Event;
use crate::kernel::process::ProcessRow;
use crate::kernel::status::{FailureKind, PauseReason, Sender, SignalKind, Status, WaitState};
use crate::runtime::calls::{CallOk, ExitResult, SignalResult, ToolError, WaitResult};
use crate::runtime::context::ProcessContext;
use crate::runtime::ids::UuidV7Ids;
use crate::runtime::memory::Stage;
use crate::runtime::program::{BoxFuture, ProgramResult};
use crate::runtime::program::{ProgramStart, StartKind};
use crate::runtime::shared::Shared;
use crate::runtime::telemetry::KernelEvent;
use crate::store::Change;
use ractor::ActorRef;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

impl ProcessActor {
    /// Commits one event (plus extra changes) and only then adopts the new row and publishes
    /// it. On refusal or store failure nothing changes in memory.
    pub(crate) async fn transition(
        &self,
        state: &mut ProcessState,
        event: Event,
        extra: Vec<Change>,
    ) -> Result<(), ToolError> {
        let (next, from, name) = self.next_row(state, event)?;
        let mut changes = extra;
        changes.push(Change::PutProcess(next.clone()));
        self.shared.store.submit(changes).await.map_err(|e| ToolError::store(&e))?;
        self.adopt(state, next, from, name);
        Ok(())
    }

    /// A transition with object-memory changes: `objects` plans them under a memory stage and
    /// returns the event; the object changes and the new row commit in one change set. If the
    /// event is then refused, the staged object changes still commit (they are applied in
    /// memory already; `Memory::plan` submits whatever was staged) and the refusal is
    /// returned.
    pub(crate) async fn transition_staged<T>(
        &self,
        state: &mut ProcessState,
        objects: impl FnOnce(&mut Stage<'_>) -> (Event, T),
    ) -> Result<T, ToolError> {
        let memory = &self.shared.memory;
        let (((next, from, name), value), ticket) = memory.plan(self.shared.store.as_ref(), |stage| {
            let (event, value) = objects(stage);
            let next = self.next_row(state, event)?;
            stage.push(Change::PutProcess(next.0.clone()));
            Ok::<_, ToolError>((next, value))
        })?;
        if let Some(ticket) = ticket {
            memory.finish(ticket).await.map_err(|e| ToolError::store(&e))?;
        }
        self.adopt(state, next, from, name);
        Ok(value)
    }

    /// The row after `event`, with the wall time so far recorded.
    fn next_row(
        &self,
        state: &ProcessState,
        event: Event,
    ) -> Result<(ProcessRow, Status, &'static str), ToolError> {
        let mut next = state.row.clone();
        let from = next.status;
        let name = event.name();
        next.apply(event)?;
        // Wall time so far is recorded with every transition, so a restart continues from it
        // instead of granting the whole limit again.
        if let Some(started) = state.started_at {
            next.account.record_wall_time(state.wall_before_ms + elapsed_ms(started));
        }
        Ok((next, from, name))
    }

    /// Adopts a committed row and publishes the transition.
    fn adopt(&self, state: &mut ProcessState, next: ProcessRow, from: Status, name: &'static str) {
        state.row = next;
        self.shared.telemetry.publish(KernelEvent::ProcessTransition {
            pid: state.row.pid,
            transition: name,
            from,
            to: state.row.status,
            state_generation: state.row.state_generation,
            outcome: state.row.outcome.clone(),
        });
    }

    /// Commits the row as it is in memory (an account change; no transition).
    pub(crate) async fn persist_row(&self, state: &ProcessState) -> Result<(), ToolError> {
        self.shared
            .store
            .submit(vec![Change::PutProcess(state.row.clone())])
            .await
            .map(|_| ())
            .map_err(|e| ToolError::store(&e))
    }

    /// Brings a process whose actor just started into the execution its row calls for.
    pub(crate) async fn enter(&self, myself: &ActorRef<ProcessMsg>, state: &mut ProcessState) {
        if state.recovering && (self.shared.hold || self.shared.is_opening()) {
            // Held: nothing starts until the host signals this process or releases the hold,
            // or (without a hold) until every recovered actor has started.
            state.held_entry = true;
            return;
        }
        self.enter_now(myself, state).await;
    }

    /// Enters a held process when the host releases the hold, unless a signal already gave it
    /// an execution.
    pub(crate) async fn release(&self, myself: &ActorRef<ProcessMsg>, state: &mut ProcessState) {
        if !std::mem::take(&mut state.held_entry) || state.run.is_some() || state.ending.is_some() {
            return;
        }
        self.enter_now(myself, state).await;
    }

    async fn enter_now(&self, myself: &ActorRef<ProcessMsg>, state: &mut ProcessState) {
        match state.row.status {
            Status::Runnable => self.start_fresh(myself, state).await,
            Status::WaitingEvent => self.rearm_wait(myself, state).await,
            // Paused stays paused until a resume; terminal rows get no actor; a `running`
            // row was turned `paused` or `failed` by recovery before any actor started.
            _ => {}
        }
        if state.recovering {
            // A crash may have come between a child's end and its restart's commit.
            Box::pin(self.restart_pending(myself, state)).await;
        }
    }

    pub(crate) async fn start_fresh(&self, myself: &ActorRef<ProcessMsg>, state: &mut ProcessState) {
        if !self.shared.images.contains(&state.row.image) {
            return self.pause_for_image(state).await;
        }
        let epoch = self.shared.epoch;
        if let Err(e) = self.transition(state, Event::Start { epoch }, Vec::new()).await {
            tracing::error!(pid = %state.pid(), error = %e, "failed to start a process");
            return;
        }
        self.launch_program(myself, state, StartKind::Fresh).await;
    }

    /// The process's image is not registered here: pause it (`image_unavailable`) instead of
    /// failing it. Its row, wait and checkpoint are kept; a runtime opened with the image
    /// resumes it.
    pub(crate) async fn pause_for_image(&self, state: &mut ProcessState) {
        let image = state.row.image.0.clone();
        tracing::warn!(pid = %state.pid(), %image, "the process's image is not registered; pausing it");
        let event = Event::Pause(PauseReason::ImageUnavailable { image });
        if let Err(e) = self.transition(state, event, Vec::new()).await {
            tracing::error!(pid = %state.pid(), error = %e, "failed to pause a process whose image is missing");
        }
    }

    /// A durable child wait with no live execution behind it (after a reopen): completes it
    /// now if the child already ended, or when its end is reported.
    pub(crate) async fn rearm_wait(&self, myself: &ActorRef<ProcessMsg>, state: &mut ProcessState) {
        let child_pid = match state.row.wait_state.clone() {
            Some(WaitState::Child { child_pid }) => child_pid,
            Some(WaitState::Message { filter }) => return self.rearm_receive(myself, state, &filter).await,
            _ => return,
        };
        match self.shared.store.process(child_pid) {
            Ok(Some(child)) if child.status.is_terminal() => {
                self.complete_wait(myself, state, &child).await;
            }
            Ok(Some(_)) => {}
            _ => {
                let event = Event::Fail {
                    kind: FailureKind::InvariantViolation,
                    message: format!("its saved wait names {child_pid}, which has no row"),
                };
                self.begin_ending(myself, state, event, None).await;
            }
        }
    }

    /// The waited child is terminal: resume the saved action.
    pub(crate) async fn complete_wait(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        child: &crate::kernel::process::ProcessRow,
    ) {
        let restart = state.run.is_none();
        let was_paused = state.row.status == Status::Paused;
        if restart && !was_paused && !self.shared.images.contains(&state.row.image) {
            // No program could take the answer: keep the wait (pausing keeps it), so a
            // runtime that has the image completes it on resume.
            return self.pause_for_image(state).await;
        }
        let pending = state.pending_wait.take().map(|wait| wait.1);
        let event = Event::WaitSatisfied { epoch: self.shared.epoch, claim: restart };
        let me = state.pid();
        let staged = self
            .transition_staged(state, |stage| {
                let mut result = ready_result(child, true);
                super::objects::grant_result(stage, me, &mut result);
                (event, result)
            })
            .await;
        let result = match staged {
            Ok(result) => result,
            Err(e) => {
                if let Some(reply) = pending {
                    let _ = reply.send(Err(e));
                }
                return;
            }
        };
        if was_paused {
            state.deferred_wait = Some(Box::new((CallOk::Waited(result), pending)));
            return;
        }
        if restart {
            if state.started_at.is_none() {
                state.started_at = Some(tokio::time::Instant::now());
            }
            let kind =
                StartKind::Restarted { completed_wait: Some(Box::new(result)), completed_receive: None };
            self.launch_program(myself, state, kind).await;
        } else if let Some(reply) = pending {
            let _ = reply.send(Ok(CallOk::Waited(result)));
        }
    }

    /// Starts a program execution in its own task.
    pub(crate) async fn launch_program(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        kind: StartKind,
    ) {
        let pid = state.pid();
        let checkpoint = match self.shared.store.checkpoint(pid) {
            Ok(c) => c.map(|e| e.body),
            Err(e) => {
                tracing::warn!(%pid, error = %e, "failed to read a checkpoint");
                None
            }
        };
        let start =
            ProgramStart { goal: state.row.goal.clone(), cwd: state.row.cwd.clone(), kind, checkpoint };
        let Some(image) = self.shared.images.get(&state.row.image) else {
            return self.pause_for_image(state).await;
        };
        let program = (image.factory)(&start).map_err(|e| e.0);
        let program = match program {
            Ok(p) => p,
            Err(message) => {
                let event = Event::Fail { kind: FailureKind::LaunchFailed, message };
                self.begin_ending(myself, state, event, None).await;
                return;
            }
        };
        state.runs += 1;
        let run = state.runs;
        if state.started_at.is_none() {
            state.started_at = Some(tokio::time::Instant::now());
        }
        let ctx = ProcessContext::new(pid, start, myself.clone());
        let me = myself.clone();
        // One task per execution: the program, with its panic caught, then its end reported.
        let task = tokio::spawn(async move {
            let result = CatchUnwind(program.run(ctx)).await;
            let _ = me.cast(ProcessMsg::ProgramEnded { run, result });
        });
        let abort = task.abort_handle();
        state.run = Some(Run { id: run, abort });
        if let Some(limit) = state.row.account.limit.wall_time_ms {
            let spent = state.wall_before_ms;
            let left = limit.saturating_sub(spent);
            myself.send_after(Duration::from_millis(left), move || ProcessMsg::WallTimeExpired { run });
        }
    }

    pub(crate) async fn on_program_ended(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        run: u64,
        result: Result<crate::runtime::program::ProgramResult, String>,
    ) {
        if state.run.as_ref().is_none_or(|r| r.id != run) || state.ending.is_some() {
            return;
        }
        state.run = None;
        let event = match result {
            Ok(Ok(())) => Event::Exit { result_oid: None },
            Ok(Err(crate::runtime::program::ProgramError(message, failure))) => {
                let kind = match failure {
                    crate::runtime::program::ProgramFailure::Error => FailureKind::ProgramError,
                    crate::runtime::program::ProgramFailure::BudgetExhausted => FailureKind::BudgetExhausted,
                };
                Event::Fail { kind, message }
            }
            Err(panic) => Event::Fail { kind: FailureKind::Panic, message: format!("panicked: {panic}") },
        };
        if state.row.status == Status::Paused && matches!(event, Event::Exit { .. }) {
            state.ended_while_paused = Some(Box::new(event));
            return;
        }
        let event = match (event, state.row.status) {
            // A program that returned while its wait was pending abandoned the wait.
            (Event::Exit { .. }, Status::WaitingEvent) => Event::Fail {
                kind: FailureKind::ProgramError,
                message: "the program returned while its wait was pending".into(),
            },
            (event, _) => event,
        };
        self.begin_ending(myself, state, event, None).await;
    }

    /// Starts ending the process: stops its program, ends its live children, and commits the
    /// outcome once the last of them has ended. `exit_reply` is answered after that commit.
    pub(crate) async fn begin_ending(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        event: Event,
        exit: Option<(Option<serde_json::Value>, Reply)>,
    ) {
        if state.ending.is_some() {
            if let Some((_, reply)) = exit {
                let _ = reply.send(Err(ToolError::process_ended(state.pid())));
            }
            return;
        }
        let is_exit = matches!(event, Event::Exit { .. });
        let mut exiting_run = None;
        if let Some(run) = state.run.take() {
            if is_exit {
                // An exiting program gets its answer first; its task is ended after the
                // outcome commits (a program driven by the host may never return by itself).
                exiting_run = Some(run.abort);
            } else {
                run.abort.abort();
            }
        }
        let ended = ToolError::process_ended(state.pid());
        if let Some(wait) = state.pending_wait.take() {
            let _ = wait.1.send(Err(ended.clone()));
        }
        for (_, reply) in state.held.drain(..) {
            let _ = reply.send(Err(ended.clone()));
        }
        let (payload, exit_reply) = match exit {
            Some((payload, reply)) => (payload, Some(reply)),
            None => (None, None),
        };
        state.ending =
            Some(Box::new(Ending { event, payload, exit_reply, signal_replies: Vec::new(), exiting_run }));
        if state.live_children.is_empty() {
            self.finish_ending(myself, state).await;
            return;
        }
        let me = state.pid();
        for child in state.live_children.clone() {
            let actor = self.shared.registry.get(&child).map(|a| a.clone());
            let message = ProcessMsg::Signal {
                signal: SignalKind::Terminate,
                reason: Some(format!("parent {me} ended")),
                sender: Sender::Process(me),
                reply: None,
            };
            let sent = actor.is_some_and(|actor| actor.cast(message).is_ok());
            if !sent {
                // No live actor: settle from the committed row, failing it closed if needed.
                let end = crate::runtime::recovery::OrphanEnd::ParentEnded(me);
                if let Some(row) =
                    crate::runtime::recovery::end_orphaned_subtree(&self.shared, child, &end).await
                {
                    Box::pin(self.on_child_ended(myself, state, row)).await;
                }
            }
        }
    }

    /// Commits the outcome, answers everyone, tells the parent, stops the actor.
    pub(crate) async fn finish_ending(&self, myself: &ActorRef<ProcessMsg>, state: &mut ProcessState) {
        let Some(ending) = state.ending.take().map(|ending| *ending) else { return };
        let me = state.pid();
        let children = super::objects::children_of(self.shared.store.as_ref(), me);
        let (event, payload) = (ending.event, ending.payload);
        // Exit is only legal from `running`; a process told to exit in any other live status
        // (it cannot be, calls are held while paused) would be an internal error. The result
        // object, the release of unmerged children's memory and the outcome are one commit.
        let result = self
            .transition_staged(state, |stage| {
                let event = match (event, payload) {
                    (Event::Exit { .. }, Some(payload)) => {
                        match stage.space().plan_exit_result(me, &mut UuidV7Ids) {
                            Ok(plan) => {
                                stage.apply(plan.changes);
                                // A result's payload is durable: it is the evidence a parent reads.
                                stage.put_payload(plan.oid, payload, true);
                                Event::Exit { result_oid: Some(plan.oid) }
                            }
                            Err(e) => Event::Fail {
                                kind: FailureKind::InvariantViolation,
                                message: format!("its exit result could not be recorded: {e}"),
                            },
                        }
                    }
                    (event, _) => event,
                };
                super::objects::release_children(stage, me, &children);
                (event, ())
            })
            .await;
        match &result {
            Ok(()) => {
                if let Some(reply) = ending.exit_reply {
                    let _ = reply.send(Ok(CallOk::Exited(ExitResult {
                        pid: state.pid(),
                        status: state.row.status,
                        result_oid: state.row.result_oid,
                        state_generation: state.row.state_generation,
                    })));
                }
                for (signal, reply) in ending.signal_replies {
                    let _ = reply.send(Ok(CallOk::Signalled(signal_result(state, signal))));
                }
                if let Some(task) = ending.exiting_run {
                    task.abort();
                }
            }
            Err(e) => {
                tracing::error!(pid = %state.pid(), error = %e, "failed to commit a process's end");
                if let Some(reply) = ending.exit_reply {
                    let _ = reply.send(Err(e.clone()));
                }
                for (_, reply) in ending.signal_replies {
                    let _ = reply.send(Err(e.clone()));
                }
                // Without a durable outcome the process cannot be reported ended; stop its
                // actor so nothing else runs, and leave the committed row to recovery.
                myself.stop(Some(format!("failed to commit its end: {e}")));
                return;
            }
        }
        self.publish_settled(state);
        if let Some(parent) = state.row.parent
            && let Some(actor) = self.shared.registry.get(&parent)
        {
            let _ = actor.cast(ProcessMsg::ChildEnded(Box::new(state.row.clone())));
        }
        myself.stop(None);
    }

    pub(crate) async fn on_child_ended(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        child: crate::kernel::process::ProcessRow,
    ) {
        if !state.live_children.remove(&child.pid) {
            return; // already settled
        }
        state.row.account.settle_child(&child.account.limit, &child.account.total_spent());
        let me = state.pid();
        let decision = self.supervise_end(myself, state, &child).await;
        if decision != super::restart::Decision::NotRestarted {
            // Restarted (the restart's commit carries the settled account), refused, deferred
            // or failing for its intensity; a wait on it moved to the new incarnation.
            self.publish_decision(me, child.pid, decision);
            if state.ending.is_some() && state.live_children.is_empty() {
                Box::pin(self.finish_ending(myself, state)).await;
            }
            return;
        }
        let waited = state
            .pending_wait
            .as_deref()
            .is_some_and(|(wait, _)| *wait == super::PendingWait::Child(child.pid))
            || (state.run.is_none()
                && state.row.wait_state == Some(WaitState::Child { child_pid: child.pid }));
        if waited && state.ending.is_none() {
            // The wait's commit carries the settled account too.
            self.complete_wait(myself, state, &child).await;
        } else if state.ending.is_none() {
            // Committed by `SettleChildren`, once for every end queued before it: children
            // ending together (a fan-out) would otherwise wait for one commit each, one after
            // another, in this actor.
            if state.settling.is_empty() {
                let _ = myself.cast(ProcessMsg::SettleChildren);
            }
            state.settling.push(child.pid);
            return;
        }
        self.publish_decision(me, child.pid, decision);
        if state.ending.is_some() && state.live_children.is_empty() {
            self.finish_ending(myself, state).await;
        }
    }

    /// Commits the row with the settlements of the children in `state.settling` (unless an
    /// ending commits it), then publishes their supervision decisions.
    pub(crate) async fn settle_children(&self, state: &mut ProcessState) {
        if state.settling.is_empty() {
            return;
        }
        if state.ending.is_none()
            && !state.row.status.is_terminal()
            && let Err(e) = self.persist_row(state).await
        {
            tracing::error!(pid = %state.pid(), error = %e, "failed to record the settlement of children");
        }
        self.publish_settled(state);
    }

    /// Publishes the supervision decisions of the children settled since the last commit of
    /// the row (a child that was not restarted), once that commit is made.
    pub(crate) fn publish_settled(&self, state: &mut ProcessState) {
        let me = state.pid();
        for child in std::mem::take(&mut state.settling) {
            self.publish_decision(me, child, super::restart::Decision::NotRestarted);
        }
    }

    /// Clean shutdown of this subtree: children first, then this process, which is paused
    /// (`shutdown`) if it was running so that no `running` row is left behind.
    pub(crate) async fn on_shutdown(&self, myself: &ActorRef<ProcessMsg>, state: &mut ProcessState) {
        // Children before their parent, siblings at once: their pauses share commits.
        shut_down_all(&self.shared, state.live_children.iter().copied()).await;
        if let Some(run) = state.run.take() {
            run.abort.abort();
        }
        if state.row.status == Status::Running
            && let Err(e) = self.transition(state, Event::Pause(PauseReason::Shutdown), Vec::new()).await
        {
            tracing::error!(pid = %state.pid(), error = %e, "failed to pause a process for shutdown");
        }
        // Settlements not yet committed by a transition are committed here.
        self.settle_children(state).await;
        let ended = ToolError::new("runtime_shutdown", "the runtime shut down before the call completed");
        if let Some(wait) = state.pending_wait.take() {
            let _ = wait.1.send(Err(ended.clone()));
        }
        for (_, reply) in state.held.drain(..) {
            let _ = reply.send(Err(ended.clone()));
        }
        myself.stop(Some("shutdown".into()));
    }
}

/// Shuts down the actors of `pids` at once and waits for each to have paused its subtree.
pub(crate) async fn shut_down_all(shared: &Shared, pids: impl IntoIterator<Item = Pid>) {
    let actors: Vec<ActorRef<ProcessMsg>> =
        pids.into_iter().filter_map(|pid| shared.registry.get(&pid).map(|a| a.clone())).collect();
    futures_util::future::join_all(actors.iter().map(|actor| actor.call(ProcessMsg::Shutdown, None))).await;
}

/// A ready wait answer from a terminal child's row.
pub(crate) fn ready_result(child: &crate::kernel::process::ProcessRow, suspended: bool) -> WaitResult {
    WaitResult {
        child_pid: child.pid,
        ready: child.status.is_terminal(),
        status: child.status,
        state_generation: child.state_generation,
        wait_state: child.wait_state.clone(),
        outcome: child.outcome.clone(),
        result_oid: child.result_oid,
        suspended,
        result_handle: false,
        result_denied: None,
    }
}

pub(crate) fn signal_result(state: &ProcessState, signal: SignalKind) -> SignalResult {
    SignalResult {
        child_pid: state.pid(),
        signal,
        status: state.row.status,
        state_generation: state.row.state_generation,
        wait_state: state.row.wait_state.clone(),
    }
}

fn elapsed_ms(since: tokio::time::Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Runs a program future, turning a panic inside it into an `Err` with the panic's message.
struct CatchUnwind(BoxFuture<ProgramResult>);

impl Future for CatchUnwind {
    type Output = Result<ProgramResult, String>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match std::panic::catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(Ok(result)),
            Err(panic) => Poll::Ready(Err(panic_message(panic))),
        }
    }
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".into()
    }
}
