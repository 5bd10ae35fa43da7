//! Telemetry: every transition as a `tracing` event and as a typed event on a broadcast stream.

use crate::kernel::ids::{ImageId, Pid};
use crate::kernel::status::{Outcome, Status};
use crate::limits;
use serde::Serialize;
use tokio::sync::broadcast;

/// One kernel event, published after the change it reports has committed.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum KernelEvent {
    /// A process was launched (`runnable`).
    ProcessLaunched {
        /// The new process.
        pid: Pid,
        /// Its parent.
        parent: Option<Pid>,
        /// Its image.
        image: ImageId,
        /// Its depth.
        depth: u32,
    },
    /// A process's row changed.
    ProcessTransition {
        /// The process.
        pid: Pid,
        /// The event's name (`start`, `begin_wait`, `pause`, `exit`, …).
        transition: &'static str,
        /// Status before.
        from: Status,
        /// Status after.
        to: Status,
        /// Generation after.
        state_generation: u64,
        /// The outcome, if it became terminal.
        outcome: Option<Outcome>,
    },
    /// A message was committed into a mailbox.
    MessageSent {
        /// The message.
        message_id: crate::kernel::mailbox::MessageId,
        /// Its sender.
        from: crate::kernel::status::Sender,
        /// Its recipient.
        to: Pid,
        /// `normal` or `interrupt`.
        kind: crate::kernel::mailbox::MessageKind,
    },
    /// A supervisor relaunched an ended child as a new incarnation (committed).
    ProcessRestarted {
        /// The supervisor.
        parent: Pid,
        /// The child's stable id (its first incarnation's pid).
        child_id: Pid,
        /// The incarnation that ended.
        old_pid: Pid,
        /// The new incarnation.
        new_pid: Pid,
        /// The new incarnation's number.
        incarnation: u32,
        /// Its first generation.
        state_generation: u64,
    },
    /// A parent handled a direct child's end: what its supervision decided (`not_restarted`,
    /// `restarted`, `refused`, `intensity_exceeded`, `stopping_group`, `group_member`).
    /// Published for every child end a live parent settles, after what it decided committed.
    ChildSupervised {
        /// The parent.
        parent: Pid,
        /// The child that ended.
        child: Pid,
        /// The decision.
        decision: &'static str,
        /// The new incarnation, for `restarted`.
        restarted_as: Option<Pid>,
    },
    /// A restart was not done (the parent's budget or grants could not cover it).
    RestartRefused {
        /// The supervisor.
        parent: Pid,
        /// The child's stable id.
        child_id: Pid,
        /// The incarnation that ended.
        old_pid: Pid,
        /// The launch rule's code.
        code: String,
        /// The message.
        message: String,
    },
    /// A launch was denied; no pid was issued.
    LaunchDenied {
        /// The would-be parent.
        parent: Pid,
        /// The rule's code.
        code: String,
        /// The message.
        message: String,
    },
}

/// The broadcast side of telemetry.
#[derive(Clone, Debug)]
pub struct Telemetry {
    tx: broadcast::Sender<KernelEvent>,
}

impl Default for Telemetry {
    fn default() -> Self {
        let (tx, _) = broadcast::channel(limits::TELEMETRY_BUFFER);
        Telemetry { tx }
    }
}

impl Telemetry {
    /// A new subscription; it sees events published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<KernelEvent> {
        self.tx.subscribe()
    }

    /// Publishes an event to subscribers and to `tracing`.
    pub fn publish(&self, event: KernelEvent) {
        match &event {
            KernelEvent::ProcessLaunched { pid, parent, image, depth } => {
                tracing::info!(target: "agentvisor::kernel", %pid, parent = ?parent, %image, depth, "process_launched");
            }
            KernelEvent::ProcessTransition { pid, transition, from, to, state_generation, .. } => {
                tracing::info!(target: "agentvisor::kernel", %pid, transition, %from, %to, state_generation, "process_transition");
            }
            KernelEvent::MessageSent { message_id, from, to, kind } => {
                tracing::info!(target: "agentvisor::kernel", %message_id, %from, %to, kind = kind.as_str(), "message_sent");
            }
            KernelEvent::ProcessRestarted {
                parent,
                child_id,
                old_pid,
                new_pid,
                incarnation,
                state_generation,
            } => {
                tracing::info!(target: "agentvisor::kernel", %parent, %child_id, %old_pid, %new_pid, incarnation, state_generation, "process_restarted");
            }
            KernelEvent::ChildSupervised { parent, child, decision, restarted_as } => {
                tracing::debug!(target: "agentvisor::kernel", %parent, %child, decision, ?restarted_as, "child_supervised");
            }
            KernelEvent::RestartRefused { parent, child_id, old_pid, code, message } => {
                tracing::warn!(target: "agentvisor::kernel", %parent, %child_id, %old_pid, code, message, "restart_refused");
            }
            KernelEvent::LaunchDenied { parent, code, message } => {
                tracing::info!(target: "agentvisor::kernel", %parent, code, message, "launch_denied");
            }
        }
        // No subscriber is not an error: telemetry is best-effort to observers.
        let _ = self.tx.send(event);
    }
}
