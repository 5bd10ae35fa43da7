//! Signals and the host gate, as the target process handles them.

use super::lifecycle::signal_result;
use super::{ProcessActor, ProcessMsg, ProcessState, Reply};
use crate::kernel::process::{Event, ProcessRow};
use crate::kernel::status::{PauseReason, Sender, SignalKind, Status};
use crate::runtime::calls::{CallOk, ToolError};
use crate::runtime::program::StartKind;
use ractor::{ActorRef, RpcReplyPort};

impl ProcessActor {
    pub(crate) async fn on_signal(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        signal: SignalKind,
        reason: Option<String>,
        sender: Sender,
        reply: Option<Reply>,
    ) {
        if state.row.status.is_terminal() {
            if let Some(reply) = reply {
                let _ = reply.send(Err(ToolError::terminal(state.pid(), state.row.status)));
            }
            return;
        }
        match signal {
            SignalKind::Cancel | SignalKind::Terminate => {
                if let Some(ending) = state.ending.as_mut() {
                    // Already ending: the first end stands; answer when it commits.
                    if let Some(reply) = reply {
                        ending.signal_replies.push((signal, reply));
                    }
                    return;
                }
                let event = Event::Kill { signal, reason, sender };
                self.begin_ending(myself, state, event, None).await;
                if let Some(reply) = reply {
                    match state.ending.as_mut() {
                        Some(ending) => ending.signal_replies.push((signal, reply)),
                        None => {
                            let _ = reply.send(Ok(CallOk::Signalled(signal_result(state, signal))));
                        }
                    }
                }
            }
            SignalKind::Pause => {
                let refusal = self.shared.images.get(&state.row.image).and_then(|i| i.pause_refusal.clone());
                if let Some(reason) = refusal {
                    if let Some(reply) = reply {
                        let _ = reply.send(Err(ToolError::new(
                            "pause_unsupported",
                            format!("{} cannot be paused: {reason}", state.pid()),
                        )));
                    }
                    return;
                }
                let result = self
                    .transition(state, Event::Pause(PauseReason::Signal { sender, reason }), Vec::new())
                    .await
                    .map(|()| CallOk::Signalled(signal_result(state, signal)));
                if let Some(reply) = reply {
                    let _ = reply.send(result);
                }
            }
            SignalKind::Resume => {
                let result = self
                    .resume(myself, state)
                    .await
                    .map(|()| CallOk::Signalled(signal_result(state, signal)));
                if let Some(reply) = reply {
                    let _ = reply.send(result);
                }
            }
        }
    }

    /// Undoes a pause. Clears no wait and no host gate. A process with no live execution (a
    /// stale execution, or one stopped by shutdown) is restarted from its checkpoint with its
    /// generation claimed, so a crash during that restart fails it closed.
    async fn resume(&self, myself: &ActorRef<ProcessMsg>, state: &mut ProcessState) -> Result<(), ToolError> {
        let restart = state.run.is_none();
        if restart && state.row.status == Status::Paused && !self.shared.images.contains(&state.row.image) {
            return Err(ToolError::new(
                "image_unavailable",
                format!(
                    "{} runs image {:?}, which this runtime does not have; open the state directory with it (agentvisor recover reopens it with the recorded images) and resume again",
                    state.pid(),
                    state.row.image.0
                ),
            ));
        }
        let event = Event::Resume { epoch: self.shared.epoch, claim: restart };
        self.transition(state, event, Vec::new()).await?;
        match state.row.status {
            Status::Runnable => self.start_fresh(myself, state).await,
            Status::WaitingEvent if restart => {
                self.rearm_wait(myself, state).await;
            }
            Status::Running => {
                if let Some(event) = state.ended_while_paused.take() {
                    self.begin_ending(myself, state, *event, None).await;
                    return Ok(());
                }
                let deferred = state.deferred_wait.take().map(|deferred| *deferred);
                if restart {
                    let (completed_wait, completed_receive) = match deferred {
                        Some((CallOk::Waited(w), _)) => (Some(Box::new(w)), None),
                        Some((CallOk::Received(r), _)) => (None, Some(r)),
                        _ => (None, None),
                    };
                    let kind = StartKind::Restarted { completed_wait, completed_receive };
                    self.launch_program(myself, state, kind).await;
                } else {
                    if let Some((result, Some(reply))) = deferred {
                        let _ = reply.send(Ok(result));
                    }
                    for (call, reply) in state.held.drain(..) {
                        let _ = myself.cast(ProcessMsg::Call(Box::new(call), reply));
                    }
                }
            }
            _ => {}
        }
        // Restarts of children that ended while this process was paused.
        Box::pin(self.restart_pending(myself, state)).await;
        Ok(())
    }

    pub(crate) async fn on_gate(
        &self,
        _myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        reason: Option<String>,
        reply: RpcReplyPort<Result<ProcessRow, ToolError>>,
    ) {
        let event = match reason {
            Some(reason) => Event::SetGate { reason },
            None => Event::ClearGate,
        };
        let result = self.transition(state, event, Vec::new()).await.map(|()| state.row.clone());
        let _ = reply.send(result);
    }
}
