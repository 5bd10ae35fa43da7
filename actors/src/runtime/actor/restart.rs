//! A parent restarting its children: the runtime half of `kernel::restart`.
//!
//! When a child ends, [`ProcessActor::supervise_end`] asks the child's policy whether it
//! restarts, the parent's supervision whether the intensity admits it, and the strategy which
//! live siblings go with it. Siblings are stopped (`terminate`, sent by the runtime) and the
//! whole group is relaunched once the last of them has ended, in launch order, in ONE change
//! set with the parent's row (account re-reserved, restart history, a wait moved to the new
//! incarnation): a crash leaves either no restart or all of it.

use super::calls::stage_launch;
use super::{PendingWait, ProcessActor, ProcessMsg, ProcessState};
use crate::kernel::launch::Parent;
use crate::kernel::process::{Event, ProcessRow};
use crate::kernel::restart::{ChildSpec, RestartRecord};
use crate::kernel::status::{FailureKind, Outcome, Sender, SignalKind, WaitState};
use crate::runtime::calls::{SendRequest, ToolError};
use crate::runtime::telemetry::KernelEvent;
use crate::store::{Change, ProcessQuery};
use ractor::ActorRef;
use std::collections::{HashMap, HashSet};

/// A group restart waiting for the siblings it stopped to end.
pub(crate) struct RestartGroup {
    /// The child id whose end needed the restart.
    pub(crate) trigger: crate::kernel::ids::Pid,
    /// When the restart was decided.
    pub(crate) at_ms: u64,
    /// Stopped siblings not yet ended.
    pub(crate) awaiting: HashSet<crate::kernel::ids::Pid>,
    /// The ended incarnations to relaunch (the trigger first).
    pub(crate) ended: Vec<ProcessRow>,
}

/// What a parent decided when a child ended, published as
/// [`KernelEvent::ChildSupervised`]'s `decision`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Decision {
    /// Its policy does not restart it after this end (or the parent is ending).
    NotRestarted,
    /// Relaunched as this pid.
    Restarted(crate::kernel::ids::Pid),
    /// A restart was due but not done (budget, grants); the parent was told.
    Refused,
    /// One restart too many: the parent is failing.
    IntensityExceeded,
    /// The parent is paused: the restart waits for its resume ([`ProcessActor::restart_pending`]).
    Deferred,
    /// Its siblings are being stopped; the group restarts when the last has ended.
    StoppingGroup,
    /// A sibling stopped for a group restart ended; the group restarts when the last has.
    GroupMember,
}

impl Decision {
    /// The lowercase word.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Decision::NotRestarted => "not_restarted",
            Decision::Restarted(_) => "restarted",
            Decision::Refused => "refused",
            Decision::IntensityExceeded => "intensity_exceeded",
            Decision::Deferred => "deferred",
            Decision::StoppingGroup => "stopping_group",
            Decision::GroupMember => "group_member",
        }
    }
}

/// The channel of the runtime's messages about restarts to a supervisor.
pub const SUPERVISION_CHANNEL: &str = "supervision";

/// Children read per statement when a process looks for restarts due
/// ([`ProcessActor::restart_pending`]).
const RESTART_SCAN_PAGE: usize = 1_000;

impl ProcessActor {
    /// A direct child ended (already settled): decides and acts. Anything but
    /// [`Decision::NotRestarted`] means supervision took the end: the child is being restarted
    /// (a wait on it moves to the new incarnation), was refused (a wait on it was completed),
    /// or the parent is failing for its intensity. The caller publishes the decision
    /// ([`Self::publish_decision`]) once what follows from it is committed.
    pub(crate) async fn supervise_end(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        child: &ProcessRow,
    ) -> Decision {
        self.decide(myself, state, child).await
    }

    /// Publishes what the parent decided for a child's end.
    pub(crate) fn publish_decision(
        &self,
        parent: crate::kernel::ids::Pid,
        child: crate::kernel::ids::Pid,
        decision: Decision,
    ) {
        self.shared.telemetry.publish(KernelEvent::ChildSupervised {
            parent,
            child,
            decision: decision.as_str(),
            restarted_as: match decision {
                Decision::Restarted(pid) => Some(pid),
                _ => None,
            },
        });
    }

    async fn decide(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        child: &ProcessRow,
    ) -> Decision {
        if state.ending.is_some() {
            return Decision::NotRestarted;
        }
        if let Some(group) = state.restart_group.as_mut()
            && group.awaiting.remove(&child.pid)
        {
            group.ended.push(child.clone());
            if group.awaiting.is_empty()
                && let Some(group) = state.restart_group.take()
            {
                let done =
                    Box::pin(self.restart_rows(myself, state, group.ended, group.trigger, group.at_ms)).await;
                return done.get(&child.pid).copied().unwrap_or(Decision::GroupMember);
            }
            return Decision::GroupMember;
        }
        let (Some(outcome), Some(spec)) = (child.outcome.as_ref(), child.restart.spec.as_ref()) else {
            return Decision::NotRestarted;
        };
        if !child.restart.policy.restarts_after(outcome, state.pid()) {
            return Decision::NotRestarted;
        }
        if state.row.status == crate::kernel::status::Status::Paused {
            return Decision::Deferred;
        }
        let now_ms = self.shared.clock.now_ms();
        let supervision = state.row.restart.supervision();
        if let Err(exceeded) = supervision.admit(&state.row.restart.history, now_ms) {
            let message = format!(
                "restart_intensity_exceeded: child {} (incarnation {}, pid {}) ended ({}) and needed restart \
                 {} within {} ms; the intensity is {}",
                spec.child_id,
                spec.incarnation,
                child.pid,
                outcome_words(outcome),
                exceeded.count,
                exceeded.period_ms,
                exceeded.intensity
            );
            let event = Event::Fail { kind: FailureKind::RestartIntensityExceeded, message };
            Box::pin(self.begin_ending(myself, state, event, None)).await;
            return Decision::IntensityExceeded;
        }
        let siblings: Vec<ProcessRow> = state
            .live_children
            .iter()
            .filter_map(|pid| self.shared.store.process(*pid).ok().flatten())
            .collect();
        let group = supervision.strategy.group(spec.seq, siblings.iter());
        if group.is_empty() {
            let done =
                Box::pin(self.restart_rows(myself, state, vec![child.clone()], spec.child_id, now_ms)).await;
            return done.get(&child.pid).copied().unwrap_or(Decision::Refused);
        }
        // A group already stopping absorbs this one: one relaunch, in launch order, of both.
        let group: Vec<_> = match state.restart_group.as_mut() {
            Some(pending) => {
                pending.ended.push(child.clone());
                group.into_iter().filter(|pid| pending.awaiting.insert(*pid)).collect()
            }
            None => {
                state.restart_group = Some(Box::new(RestartGroup {
                    trigger: spec.child_id,
                    at_ms: now_ms,
                    awaiting: group.iter().copied().collect(),
                    ended: vec![child.clone()],
                }));
                group
            }
        };
        let reason = format!(
            "restart: {} after child {} ended ({})",
            supervision.strategy.as_str(),
            spec.child_id,
            outcome_words(outcome)
        );
        for sibling in group {
            let actor = self.shared.registry.get(&sibling).map(|a| a.clone());
            let message = ProcessMsg::Signal {
                signal: SignalKind::Terminate,
                reason: Some(reason.clone()),
                sender: Sender::Runtime,
                reply: None,
            };
            if actor.is_none_or(|actor| actor.cast(message).is_err()) {
                let end = crate::runtime::recovery::OrphanEnd::Failed(reason.clone());
                if let Some(row) =
                    crate::runtime::recovery::end_orphaned_subtree(&self.shared, sibling, &end).await
                {
                    Box::pin(self.on_child_ended(myself, state, row)).await;
                }
            }
        }
        Decision::StoppingGroup
    }

    /// Restarts that are due by the committed rows but were never decided: an ended
    /// restartable child with no successor and no record in this process's history (a crash
    /// between the child's end and its restart's commit, or an end seen while paused). Runs
    /// when a recovered process enters execution and when a paused one resumes.
    pub(crate) async fn restart_pending(&self, myself: &ActorRef<ProcessMsg>, state: &mut ProcessState) {
        let live = matches!(
            state.row.status,
            crate::kernel::status::Status::Running
                | crate::kernel::status::Status::WaitingEvent
                | crate::kernel::status::Status::Runnable
        );
        if !live || state.ending.is_some() {
            return;
        }
        let me = state.pid();
        // The children are read a page at a time, keeping only the restartable ended ones and
        // the pids successors name, so a parent with a long history holds a page of it.
        let (mut successors, mut ended) = (HashSet::new(), Vec::new());
        let mut query = ProcessQuery { limit: Some(RESTART_SCAN_PAGE), ..ProcessQuery::children_of(me) };
        loop {
            let Ok(page) = self.shared.store.processes(query) else { return };
            let last_page = page.len() < RESTART_SCAN_PAGE;
            query.after = page.last().map(|c| c.pid);
            for c in page {
                successors.extend(c.restart.spec.as_ref().and_then(|s| s.restart_of));
                if c.status.is_terminal()
                    && c.restart.spec.is_some()
                    && c.outcome.as_ref().is_some_and(|o| c.restart.policy.restarts_after(o, me))
                {
                    ended.push(c);
                }
            }
            if last_page {
                break;
            }
        }
        let recorded: HashSet<_> = state.row.restart.history.iter().map(|r| r.old_pid).collect();
        let due = ended.into_iter().filter(|c| {
            !successors.contains(&c.pid)
                && !recorded.contains(&c.pid)
                && !state.restart_group.as_ref().is_some_and(|g| g.ended.iter().any(|e| e.pid == c.pid))
        });
        for child in due.collect::<Vec<_>>() {
            if state.ending.is_some() {
                return;
            }
            let decision = Box::pin(self.supervise_end(myself, state, &child)).await;
            self.publish_decision(me, child.pid, decision);
        }
    }

    /// Relaunches ended incarnations from their specs, in launch order, in one change set with
    /// the parent's row. A restart the parent's budget or live grants cannot cover is not
    /// done: it is recorded as refused and the parent is told by a message. Returns the
    /// decision for each ended pid.
    async fn restart_rows(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        mut ended: Vec<ProcessRow>,
        trigger: crate::kernel::ids::Pid,
        at_ms: u64,
    ) -> HashMap<crate::kernel::ids::Pid, Decision> {
        let mut decisions = HashMap::new();
        ended.sort_by_key(|row| row.restart.spec.as_ref().map_or(u64::MAX, |s| s.seq));
        let elapsed_ms = state.wall_before_ms
            + state.started_at.map_or(0, |s| u64::try_from(s.elapsed().as_millis()).unwrap_or(u64::MAX));
        let images = &self.shared.images;
        let staged = self.shared.memory.plan(self.shared.store.as_ref(), |stage| {
            let mut parent_row = state.row.clone();
            let mut started = Vec::new();
            let mut refused = Vec::new();
            for old in &ended {
                let Some(spec) = old.restart.spec.clone() else { continue };
                let parent = Parent {
                    row: &parent_row,
                    grants: &state.grants,
                    elapsed_ms,
                    children: state.children_total + started.len(),
                };
                let next = ChildSpec {
                    incarnation: spec.incarnation + 1,
                    restart_of: Some(old.pid),
                    ..(*spec).clone()
                };
                let generation = old.state_generation + 1;
                let shaped = stage_launch(stage, images, parent, &spec.request, None, |row| {
                    row.state_generation = generation;
                    row.restart.spec = Some(Box::new(next.clone()));
                });
                let mut record = RestartRecord {
                    at_ms,
                    child_id: spec.child_id,
                    old_pid: old.pid,
                    new_pid: None,
                    incarnation: next.incarnation,
                    state_generation: generation,
                    reason: old.outcome.as_ref().map_or_else(|| "ended".into(), outcome_words),
                    refused: None,
                    sibling_of: (spec.child_id != trigger).then_some(trigger),
                };
                match shaped {
                    Ok((plan, _view)) => {
                        parent_row.account = plan.parent_account;
                        record.new_pid = Some(plan.child.pid);
                        started.push((old.pid, plan.child, plan.grants));
                    }
                    Err(e) => {
                        record.refused = Some(format!("{}: {}", e.code, e.message));
                        refused.push((old.clone(), e));
                    }
                }
                parent_row.restart.record(record);
            }
            for (old, new, _) in &started {
                if parent_row.wait_state == Some(WaitState::Child { child_pid: *old }) {
                    parent_row.wait_state = Some(WaitState::Child { child_pid: new.pid });
                }
            }
            stage.push(Change::PutProcess(parent_row.clone()));
            Ok::<_, ToolError>((parent_row, started, refused))
        });
        let ((parent_row, started, refused), ticket) = match staged {
            Ok(planned) => planned,
            Err(e) => {
                tracing::error!(pid = %state.pid(), error = %e, "failed to plan a restart");
                return decisions;
            }
        };
        if let Some(ticket) = ticket
            && let Err(e) = self.shared.memory.finish(ticket).await
        {
            tracing::error!(pid = %state.pid(), error = %e, "failed to commit a restart");
            for (_, child, _) in &started {
                self.shared.memory.discard_launch(child.pid);
            }
            return decisions;
        }
        state.row = parent_row;
        state.children_total += started.len();
        let me = state.pid();
        for (old, child, grants) in started {
            if let Some((PendingWait::Child(waited), _)) = state.pending_wait.as_deref_mut()
                && *waited == old
            {
                *waited = child.pid;
            }
            let incarnation = child.restart.spec.as_ref().map_or(0, |s| s.incarnation);
            let child_id = child.restart.spec.as_ref().map_or(child.pid, |s| s.child_id);
            self.shared.telemetry.publish(KernelEvent::ProcessLaunched {
                pid: child.pid,
                parent: child.parent,
                image: child.image.clone(),
                depth: child.depth,
            });
            self.shared.telemetry.publish(KernelEvent::ProcessRestarted {
                parent: me,
                child_id,
                old_pid: old,
                new_pid: child.pid,
                incarnation,
                state_generation: child.state_generation,
            });
            let pid = child.pid;
            decisions.insert(old, Decision::Restarted(pid));
            if let Err(e) = self.spawn_child_actor(myself, state, child, grants, false).await {
                let end =
                    crate::runtime::recovery::OrphanEnd::Failed(format!("its actor could not start: {e}"));
                if let Some(row) =
                    crate::runtime::recovery::end_orphaned_subtree(&self.shared, pid, &end).await
                {
                    state.live_children.insert(pid);
                    Box::pin(self.on_child_ended(myself, state, row)).await;
                }
            }
        }
        for (old, error) in refused {
            decisions.insert(old.pid, Decision::Refused);
            self.restart_refused(myself, state, &old, &error).await;
        }
        decisions
    }

    /// Tells the parent a restart was not done, and completes a wait on the child with the
    /// end it had.
    async fn restart_refused(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        old: &ProcessRow,
        error: &ToolError,
    ) {
        let child_id = old.restart.spec.as_ref().map_or(old.pid, |s| s.child_id);
        self.shared.telemetry.publish(KernelEvent::RestartRefused {
            parent: state.pid(),
            child_id,
            old_pid: old.pid,
            code: error.code.clone(),
            message: error.message.clone(),
        });
        let request = SendRequest {
            to: state.pid(),
            body: format!(
                "restart_refused: child {child_id} (pid {}) was not restarted: {}: {}",
                old.pid, error.code, error.message
            ),
            payload: None,
            channel: Some(SUPERVISION_CHANNEL.into()),
            correlation_id: Some(format!("restart:{}", old.pid)),
            reply_to: None,
            kind: crate::kernel::mailbox::MessageKind::Normal,
        };
        if let Err(e) =
            super::deliver(&self.shared, super::Origin::nobody(Sender::Runtime), request, None).await
        {
            tracing::warn!(pid = %state.pid(), error = %e, "failed to tell a supervisor of a refused restart");
        }
        let waited =
            state.pending_wait.as_deref().is_some_and(|(wait, _)| *wait == PendingWait::Child(old.pid))
                || (state.run.is_none()
                    && state.row.wait_state == Some(WaitState::Child { child_pid: old.pid }));
        if waited {
            self.complete_wait(myself, state, old).await;
        }
    }
}

/// An outcome in a few words, for restart records and messages.
pub(crate) fn outcome_words(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Exited { .. } => "exited".into(),
        Outcome::Failed { error_kind, .. } => format!("failed: {}", error_kind.as_str()),
        Outcome::Killed { signal, sender, .. } => format!("killed: {} by {sender}", signal.as_str()),
    }
}
