//! One ractor actor per live process.
//!
//! The actor owns its process's row and grants; it is the only writer of that row. Its
//! program runs in a separate task and reaches the actor through [`ProcessMsg::Call`], so
//! signals, child notices and waits stay responsive while the program works. A parent's actor
//! supervises its children's actors (`spawn_linked`), so the supervision tree is the process
//! tree.
//!
//! Ordering: every change is committed to the store before it is acknowledged, published, or
//! told to another actor. A terminal process first ends its live children, then commits its
//! own outcome, then tells its parent ([`ProcessMsg::ChildEnded`]), then stops its actor.

mod binding;
mod calls;
mod delivery;
mod launch_group;
mod lifecycle;
mod mailbox;
mod objects;
pub(crate) use delivery::{Origin, deliver};
pub(crate) use lifecycle::shut_down_all;
pub(crate) use objects::{children_of, release_children};
mod restart;
mod send_group;
pub use restart::SUPERVISION_CHANNEL;
mod signals;
mod wait_group;

use super::calls::{Call, CallOk, CallReply, ToolError};
use super::shared::Shared;
use crate::kernel::capability::Grant;
use crate::kernel::ids::Pid;
use crate::kernel::mailbox::{Message, Notice};
use crate::kernel::process::{Event, ProcessRow};
use crate::kernel::status::{FailureKind, Sender, SignalKind};
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use tokio::task::AbortHandle;

/// Where a call's answer goes. Answers carry the notices delivered with them.
pub struct Reply(RpcReplyPort<CallReply>);

impl Reply {
    pub(crate) fn new(port: RpcReplyPort<CallReply>) -> Self {
        Reply(port)
    }

    /// Answers with no notices (they stay pending for a later answer).
    pub(crate) fn send(self, result: Result<CallOk, ToolError>) -> Result<(), ()> {
        self.0.send(CallReply { result, notices: Vec::new() }).map_err(|_| ())
    }

    /// Answers with notices.
    pub(crate) fn send_with(self, result: Result<CallOk, ToolError>, notices: Vec<Notice>) -> Result<(), ()> {
        self.0.send(CallReply { result, notices }).map_err(|_| ())
    }
}

/// Messages a process actor handles: one closed enum for its one loop.
pub enum ProcessMsg {
    /// A tool call from this process's program (or from the host acting as it). Boxed: a
    /// launch request is large, and every message of the mailbox is as large as the largest.
    Call(Box<Call>, Reply),
    /// The program task finished.
    ProgramEnded {
        /// Which execution.
        run: u64,
        /// Its result; `Err` carries a panic message.
        result: Result<super::program::ProgramResult, String>,
    },
    /// A lifecycle signal aimed at this process.
    Signal {
        /// The signal.
        signal: SignalKind,
        /// Why.
        reason: Option<String>,
        /// Who sent it.
        sender: Sender,
        /// Where to answer, if anyone waits.
        reply: Option<Reply>,
    },
    /// The host sets (`Some`) or clears (`None`) the host-only resume gate.
    Gate {
        /// The gate's reason, or `None` to clear.
        reason: Option<String>,
        /// The row after the change.
        reply: RpcReplyPort<Result<ProcessRow, ToolError>>,
    },
    /// A direct child became terminal (its outcome is committed).
    ChildEnded(Box<ProcessRow>),
    /// Commits the row with the settlements of the children that ended since the last one
    /// (cast to itself by the first of them, so that the ends already queued share a commit).
    SettleChildren,
    /// The wall-time budget ran out.
    WallTimeExpired {
        /// Which execution set the timer.
        run: u64,
    },
    /// Stop the subtree for a clean shutdown: children first, then this process.
    Shutdown(RpcReplyPort<()>),
    /// Grants of this process were revoked (already committed).
    GrantsRevoked(Vec<crate::kernel::ids::GrantId>),
    /// The host gave the process a grant (`Runtime::grant`), already committed.
    GrantAdded(Box<Grant>),
    /// A message was committed into this process's mailbox.
    MessageArrived(Box<Message>),
    /// The host releases a runtime opened held (`RuntimeOptions::hold`): a recovered process
    /// enters the execution its row calls for (a start, a re-armed wait), as it would have at
    /// open.
    Release,
}

/// Startup arguments.
pub(crate) struct ProcessArgs {
    pub(crate) row: ProcessRow,
    pub(crate) grants: Vec<Grant>,
    /// True when the actor is being rebuilt from the store after a reopen.
    pub(crate) recovering: bool,
}

/// The actor type; all state is in [`ProcessState`].
pub(crate) struct ProcessActor {
    pub(crate) shared: Arc<Shared>,
}

/// What a suspended call waits for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PendingWait {
    /// A direct child's end.
    Child(Pid),
    /// A matching message.
    Receive(super::mailbox::ReceiveSpec),
}

/// A program execution in flight.
pub(crate) struct Run {
    pub(crate) id: u64,
    pub(crate) abort: AbortHandle,
}

/// An end in progress: waiting for live children to end before committing.
pub(crate) struct Ending {
    pub(crate) event: Event,
    pub(crate) payload: Option<serde_json::Value>,
    pub(crate) exit_reply: Option<Reply>,
    pub(crate) signal_replies: Vec<(SignalKind, Reply)>,
    /// The program task of an exit, ended once the outcome is committed and answered.
    pub(crate) exiting_run: Option<AbortHandle>,
}

/// A process actor's state.
pub(crate) struct ProcessState {
    pub(crate) row: ProcessRow,
    pub(crate) grants: Vec<Grant>,
    pub(crate) run: Option<Run>,
    pub(crate) runs: u64,
    /// When the current execution started (tokio's clock, so paused-time tests work).
    pub(crate) started_at: Option<tokio::time::Instant>,
    /// Wall time spent by earlier executions.
    pub(crate) wall_before_ms: u64,
    /// The reply owed to a suspended wait or receive. This, `deferred_wait`,
    /// `ended_while_paused`, `ending` and `restart_group` are rarely set and boxed: inline they
    /// were 784 of the state's 1,952 bytes, which every idle process carries.
    pub(crate) pending_wait: Option<Box<(PendingWait, Reply)>>,
    /// A wait or receive answer to deliver when a paused process is resumed.
    pub(crate) deferred_wait: Option<Box<(CallOk, Option<Reply>)>>,
    /// Notices of arrived messages not yet delivered with an answer.
    pub(crate) notices: VecDeque<Notice>,
    /// Calls received while paused.
    pub(crate) held: VecDeque<(Call, Reply)>,
    /// A program end observed while paused, applied on resume.
    pub(crate) ended_while_paused: Option<Box<Event>>,
    pub(crate) ending: Option<Box<Ending>>,
    pub(crate) live_children: HashSet<Pid>,
    pub(crate) children_total: usize,
    pub(crate) child_actors: HashMap<ActorId, Pid>,
    pub(crate) recovering: bool,
    /// Recovered under `hold` and not yet entered: [`ProcessMsg::Release`] enters it.
    pub(crate) held_entry: bool,
    /// A group restart waiting for the siblings it stopped.
    pub(crate) restart_group: Option<Box<restart::RestartGroup>>,
    /// Children whose ends are settled in the account but not yet committed with the row
    /// (see [`ProcessMsg::SettleChildren`]); their supervision decision is published after
    /// that commit.
    pub(crate) settling: Vec<Pid>,
}

impl ProcessState {
    pub(crate) fn pid(&self) -> Pid {
        self.row.pid
    }
}

impl Drop for ProcessState {
    /// The state goes with its actor, a killed one included (ractor runs no `post_stop` for a
    /// kill): the program's task, or an exiting program's, ends with it.
    fn drop(&mut self) {
        if let Some(run) = self.run.take() {
            run.abort.abort();
        }
        if let Some(task) = self.ending.as_mut().and_then(|ending| ending.exiting_run.take()) {
            task.abort();
        }
    }
}

impl Actor for ProcessActor {
    type Msg = ProcessMsg;
    type State = ProcessState;
    type Arguments = ProcessArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<ProcessMsg>,
        args: ProcessArgs,
    ) -> Result<ProcessState, ActorProcessingErr> {
        let pid = args.row.pid;
        self.shared.registry.insert(pid, myself.clone());
        let mut live_children = HashSet::new();
        let mut children_total = 0;
        let mut row = args.row;
        let mut live_rows = Vec::new();
        if args.recovering {
            let children = self.shared.children_at_start(pid)?;
            children_total = children.total();
            row.account.rebuild_children(children.shares());
            live_rows = children.live;
            live_children = live_rows.iter().map(|c| c.pid).collect();
        }
        let mut state = ProcessState {
            wall_before_ms: row.account.self_spent.wall_time_ms,
            row,
            grants: args.grants,
            run: None,
            runs: 0,
            started_at: None,
            pending_wait: None,
            deferred_wait: None,
            notices: VecDeque::new(),
            held: VecDeque::new(),
            ended_while_paused: None,
            ending: None,
            live_children,
            children_total,
            child_actors: HashMap::new(),
            recovering: args.recovering,
            held_entry: false,
            restart_group: None,
            settling: Vec::new(),
        };
        if state.recovering && self.shared.may_have_unread_at_start(pid) {
            self.reload_notices(&mut state);
        }
        if state.recovering {
            // Here rather than in post_start: `spawn` returns after pre_start, so when a
            // recovered root's actor is spawned its whole live subtree is registered, and the
            // host can address any recovered process as soon as the runtime is open.
            Box::pin(self.respawn_children(&myself, &mut state, live_rows)).await;
        }
        Ok(state)
    }

    async fn post_start(
        &self,
        myself: ActorRef<ProcessMsg>,
        state: &mut ProcessState,
    ) -> Result<(), ActorProcessingErr> {
        Box::pin(self.enter(&myself, state)).await;
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ProcessMsg>,
        state: &mut ProcessState,
    ) -> Result<(), ActorProcessingErr> {
        // The program's task ends with the state (`Drop for ProcessState`).
        self.shared.registry.remove(&state.pid());
        Ok(())
    }

    // Both handlers return their future boxed. Ractor keeps an actor's message loop in one
    // allocation for the actor's life, as large as the largest future a handler returns: a
    // pointer here instead of the handler's state machine (measured: 1.1 KiB per idle process
    // for the supervision handler, tens of KiB before each arm of `on_message` was boxed too).
    fn handle(
        &self,
        myself: ActorRef<ProcessMsg>,
        message: ProcessMsg,
        state: &mut ProcessState,
    ) -> impl Future<Output = Result<(), ActorProcessingErr>> + Send {
        Box::pin(self.on_message(myself, message, state))
    }

    // The default handler stops the supervisor when any child stops; a process must outlive
    // its children's actors, so every event is handled here.
    fn handle_supervisor_evt(
        &self,
        myself: ActorRef<ProcessMsg>,
        event: SupervisionEvent,
        state: &mut ProcessState,
    ) -> impl Future<Output = Result<(), ActorProcessingErr>> + Send {
        Box::pin(self.on_supervision_event(myself, event, state))
    }
}

impl ProcessActor {
    async fn on_message(
        &self,
        myself: ActorRef<ProcessMsg>,
        message: ProcessMsg,
        state: &mut ProcessState,
    ) -> Result<(), ActorProcessingErr> {
        // Each arm's future is boxed too: this future then holds a pointer, not the largest of
        // every arm's state machine.
        match message {
            ProcessMsg::Call(call, reply) => Box::pin(self.on_call(&myself, state, *call, reply)).await,
            ProcessMsg::ProgramEnded { run, result } => {
                Box::pin(self.on_program_ended(&myself, state, run, result)).await
            }
            ProcessMsg::Signal { signal, reason, sender, reply } => {
                Box::pin(self.on_signal(&myself, state, signal, reason, sender, reply)).await
            }
            ProcessMsg::Gate { reason, reply } => Box::pin(self.on_gate(&myself, state, reason, reply)).await,
            ProcessMsg::ChildEnded(row) => Box::pin(self.on_child_ended(&myself, state, *row)).await,
            ProcessMsg::SettleChildren => Box::pin(self.settle_children(state)).await,
            ProcessMsg::WallTimeExpired { run } => {
                if state.run.as_ref().is_some_and(|r| r.id == run) && state.ending.is_none() {
                    let limit = state.row.account.limit.wall_time_ms.unwrap_or(0);
                    let event = Event::Fail {
                        kind: FailureKind::BudgetExhausted,
                        message: format!("budget wall_time_ms exhausted: the limit was {limit} ms"),
                    };
                    Box::pin(self.begin_ending(&myself, state, event, None)).await;
                }
            }
            ProcessMsg::MessageArrived(message) => {
                Box::pin(self.on_message_arrived(&myself, state, *message)).await
            }
            ProcessMsg::GrantsRevoked(ids) => {
                for grant in state.grants.iter_mut().filter(|g| ids.contains(&g.id)) {
                    grant.live = false;
                }
            }
            ProcessMsg::GrantAdded(grant) => state.grants.push(*grant),
            ProcessMsg::Release => Box::pin(self.release(&myself, state)).await,
            ProcessMsg::Shutdown(reply) => {
                Box::pin(self.on_shutdown(&myself, state)).await;
                let _ = reply.send(());
            }
        }
        Ok(())
    }

    async fn on_supervision_event(
        &self,
        myself: ActorRef<ProcessMsg>,
        event: SupervisionEvent,
        state: &mut ProcessState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(cell, error) => {
                if let Some(child) = state.child_actors.remove(&cell.get_id()) {
                    let end = super::recovery::OrphanEnd::Failed(format!("process actor failed: {error}"));
                    let failed = Box::pin(super::recovery::end_orphaned_subtree(&self.shared, child, &end));
                    if let Some(row) = failed.await {
                        Box::pin(self.on_child_ended(&myself, state, row)).await;
                    }
                }
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                state.child_actors.remove(&cell.get_id());
            }
            _ => {}
        }
        Ok(())
    }

    /// Spawns a child's actor linked under this one.
    pub(crate) async fn spawn_child_actor(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        row: ProcessRow,
        grants: Vec<Grant>,
        recovering: bool,
    ) -> Result<(), String> {
        let pid = row.pid;
        let actor = ProcessActor { shared: self.shared.clone() };
        let args = ProcessArgs { row, grants, recovering };
        match Actor::spawn_linked(None, actor, args, myself.get_cell()).await {
            Ok((child_ref, _join)) => {
                state.child_actors.insert(child_ref.get_id(), pid);
                state.live_children.insert(pid);
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    async fn respawn_children(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        live: Vec<ProcessRow>,
    ) {
        for row in live {
            let pid = row.pid;
            let grants = self.shared.grants_at_start(pid).unwrap_or_default();
            if let Err(e) = self.spawn_child_actor(myself, state, row, grants, true).await {
                tracing::error!(%pid, error = %e, "failed to restart a process actor");
                let message = format!("failed to restart its actor: {e}");
                if let Some(row) = super::recovery::end_orphaned_subtree(
                    &self.shared,
                    pid,
                    &super::recovery::OrphanEnd::Failed(message),
                )
                .await
                {
                    self.on_child_ended(myself, state, row).await;
                }
            }
        }
    }

    /// Whether `pid` is a direct child, by its committed row.
    pub(crate) fn direct_child(&self, state: &ProcessState, pid: Pid) -> Result<ProcessRow, ToolError> {
        match self.shared.store.process(pid) {
            Ok(Some(row)) if row.parent == Some(state.pid()) => Ok(row),
            Ok(Some(_)) => Err(ToolError::not_direct_child(state.pid(), pid)),
            Ok(None) => Err(ToolError::unknown_process(pid)),
            Err(e) => Err(ToolError::store(&e)),
        }
    }
}
