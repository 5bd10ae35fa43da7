//! The process row and its transition function.
//!
//! [`ProcessRow::apply`] is the only way a row's status changes. It refuses illegal transitions
//! with a typed error and bumps `state_generation` by exactly one on every accepted change.

use super::budget::{Account, Budget};
use super::ids::{Epoch, ImageId, Oid, Pid};
use super::restart::RestartState;
use super::status::{FailureKind, Outcome, PauseReason, Sender, SignalKind, Status, WaitState, clip};
use crate::limits;
use serde::{Deserialize, Serialize};

/// One process: the durable row.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ProcessRow {
    /// Its id.
    pub pid: Pid,
    /// Its parent; `None` for a root launched by the host.
    pub parent: Option<Pid>,
    /// 0 for a root, parent's depth + 1 otherwise.
    pub depth: u32,
    /// What it executes.
    pub image: ImageId,
    /// Its absolute working directory.
    pub cwd: String,
    /// The goal it was launched with.
    pub goal: String,
    /// Its status.
    pub status: Status,
    /// Its saved action while suspended; kept across pause and resume.
    pub wait_state: Option<WaitState>,
    /// Why it is paused, while paused.
    pub pause_reason: Option<PauseReason>,
    /// A host-only resume gate: while set, no resume (from anyone) takes effect.
    pub host_gate: Option<String>,
    /// Its typed outcome once terminal.
    pub outcome: Option<Outcome>,
    /// The result object of an exit with a payload.
    pub result_oid: Option<Oid>,
    /// +1 on every accepted change. Durable.
    pub state_generation: u64,
    /// The runtime epoch that owns its current execution, while running.
    pub epoch: Option<Epoch>,
    /// A generation claimed for resume: set when an execution is restarted from durable state,
    /// cleared by the next change. A crash while it is set fails the process closed.
    pub resume_claim: Option<u64>,
    /// Whether its program was ever started.
    pub started: bool,
    /// Its budget account.
    pub account: Account,
    /// Its restart policy and launch spec as a child, its supervision and restart history as
    /// a parent.
    #[serde(default)]
    pub restart: RestartState,
}

/// A change to a process row.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Event {
    /// `runnable` → `running`.
    Start {
        /// The epoch that runs it.
        epoch: Epoch,
    },
    /// `running` → `waiting_event` with a saved action.
    BeginWait(WaitState),
    /// The saved action completed: `waiting_event` → `running`. A paused process keeps
    /// `paused` and only loses its wait. `claim` marks a restart from durable state.
    WaitSatisfied {
        /// The epoch that runs it now.
        epoch: Epoch,
        /// Whether this resumption restarts the program from durable state.
        claim: bool,
    },
    /// Any live status → `paused`.
    Pause(PauseReason),
    /// `paused` → the status it would have without the pause: `runnable` if never started,
    /// `waiting_event` if a wait is kept, else `running`. Refused while a host gate is set.
    Resume {
        /// The epoch that runs it now.
        epoch: Epoch,
        /// Whether this resumption restarts the program from durable state.
        claim: bool,
    },
    /// Sets the host-only resume gate; pauses a live process.
    SetGate {
        /// Why the host holds it.
        reason: String,
    },
    /// Clears the host gate; does not resume.
    ClearGate,
    /// The program made durable progress (a checkpoint); releases a resume claim.
    Progress,
    /// `running` → `exited`.
    Exit {
        /// The result object, if a payload was given.
        result_oid: Option<Oid>,
    },
    /// Any live status → `failed`.
    Fail {
        /// What kind.
        kind: FailureKind,
        /// What happened.
        message: String,
    },
    /// Any live status → `killed`.
    Kill {
        /// `cancel` or `terminate`.
        signal: SignalKind,
        /// The sender's reason.
        reason: Option<String>,
        /// Who sent it.
        sender: Sender,
    },
    /// Recovery: a `running` row owned by an earlier epoch → `paused` (`stale_execution`).
    RecoverStale,
}

impl Event {
    /// A short lowercase name for telemetry and errors.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Start { .. } => "start",
            Event::BeginWait(_) => "begin_wait",
            Event::WaitSatisfied { .. } => "wait_satisfied",
            Event::Pause(_) => "pause",
            Event::Resume { .. } => "resume",
            Event::SetGate { .. } => "set_gate",
            Event::ClearGate => "clear_gate",
            Event::Progress => "progress",
            Event::Exit { .. } => "exit",
            Event::Fail { .. } => "fail",
            Event::Kill { .. } => "kill",
            Event::RecoverStale => "recover_stale",
        }
    }
}

/// A refused transition.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, Serialize, Deserialize)]
#[non_exhaustive]
pub enum TransitionError {
    /// The process is terminal; nothing changes it again.
    #[error("process {pid} is {status}: terminal processes never change")]
    Terminal {
        /// The process.
        pid: Pid,
        /// Its terminal status.
        status: Status,
    },
    /// The event does not apply to the current status.
    #[error("cannot {event} process {pid} while it is {status}")]
    Illegal {
        /// The process.
        pid: Pid,
        /// The event's name.
        event: &'static str,
        /// The current status.
        status: Status,
    },
    /// A resume was refused because the host holds a gate.
    #[error("process {pid} has a host-only resume gate ({reason}); only the host can clear it")]
    Gated {
        /// The process.
        pid: Pid,
        /// The gate's reason.
        reason: String,
    },
}

impl ProcessRow {
    /// A freshly launched row: `runnable`, generation 0.
    #[allow(clippy::too_many_arguments)]
    pub fn launched(
        pid: Pid,
        parent: Option<Pid>,
        depth: u32,
        image: ImageId,
        cwd: String,
        goal: String,
        budget: Budget,
    ) -> ProcessRow {
        ProcessRow {
            pid,
            parent,
            depth,
            image,
            cwd,
            goal,
            status: Status::Runnable,
            wait_state: None,
            pause_reason: None,
            host_gate: None,
            outcome: None,
            result_oid: None,
            state_generation: 0,
            epoch: None,
            resume_claim: None,
            started: false,
            account: Account::new(budget),
            restart: RestartState::default(),
        }
    }

    fn illegal(&self, event: &Event) -> TransitionError {
        TransitionError::Illegal { pid: self.pid, event: event.name(), status: self.status }
    }

    /// Applies one event. On success the generation is exactly one higher; on refusal the row
    /// is unchanged.
    pub fn apply(&mut self, event: Event) -> Result<(), TransitionError> {
        if self.status.is_terminal() {
            return Err(TransitionError::Terminal { pid: self.pid, status: self.status });
        }
        let before = self.state_generation;
        match &event {
            Event::Start { epoch } => {
                if self.status != Status::Runnable {
                    return Err(self.illegal(&event));
                }
                self.status = Status::Running;
                self.started = true;
                self.epoch = Some(*epoch);
                self.resume_claim = None;
            }
            Event::BeginWait(wait) => {
                if self.status != Status::Running {
                    return Err(self.illegal(&event));
                }
                self.status = Status::WaitingEvent;
                self.wait_state = Some(wait.clone());
                self.resume_claim = None;
            }
            Event::WaitSatisfied { epoch, claim } => {
                if self.wait_state.is_none() || !matches!(self.status, Status::WaitingEvent | Status::Paused)
                {
                    return Err(self.illegal(&event));
                }
                self.wait_state = None;
                if self.status == Status::WaitingEvent {
                    self.status = Status::Running;
                    self.epoch = Some(*epoch);
                    self.resume_claim = claim.then_some(before + 1);
                }
            }
            Event::Pause(reason) => {
                if !matches!(self.status, Status::Runnable | Status::Running | Status::WaitingEvent) {
                    return Err(self.illegal(&event));
                }
                self.status = Status::Paused;
                self.pause_reason = Some(reason.clone());
                self.resume_claim = None;
            }
            Event::Resume { epoch, claim } => {
                if self.status != Status::Paused {
                    return Err(self.illegal(&event));
                }
                if let Some(reason) = &self.host_gate {
                    return Err(TransitionError::Gated { pid: self.pid, reason: reason.clone() });
                }
                self.pause_reason = None;
                self.status = if !self.started {
                    Status::Runnable
                } else if self.wait_state.is_some() {
                    Status::WaitingEvent
                } else {
                    self.epoch = Some(*epoch);
                    Status::Running
                };
                self.resume_claim = (*claim && self.status == Status::Running).then_some(before + 1);
            }
            Event::SetGate { reason } => {
                self.host_gate = Some(clip(reason, limits::REASON_BYTES_MAX));
                if self.status != Status::Paused {
                    self.status = Status::Paused;
                    self.pause_reason = Some(PauseReason::HostGate);
                }
                self.resume_claim = None;
            }
            Event::ClearGate => {
                if self.host_gate.is_none() {
                    return Err(self.illegal(&event));
                }
                self.host_gate = None;
            }
            Event::Progress => {
                self.resume_claim = None;
            }
            Event::Exit { result_oid } => {
                if self.status != Status::Running {
                    return Err(self.illegal(&event));
                }
                self.terminate(Outcome::Exited { result_oid: *result_oid });
                self.result_oid = *result_oid;
            }
            Event::Fail { kind, message } => {
                self.terminate(Outcome::Failed {
                    error_kind: *kind,
                    message: clip(message, limits::REASON_BYTES_MAX),
                });
            }
            Event::Kill { signal, reason, sender } => {
                if !matches!(signal, SignalKind::Cancel | SignalKind::Terminate) {
                    return Err(self.illegal(&event));
                }
                self.terminate(Outcome::Killed {
                    signal: *signal,
                    reason: reason.as_deref().map(|r| clip(r, limits::REASON_BYTES_MAX)),
                    sender: *sender,
                });
            }
            Event::RecoverStale => {
                if self.status != Status::Running {
                    return Err(self.illegal(&event));
                }
                let epoch = self.epoch.map(|e| e.0).unwrap_or(0);
                self.status = Status::Paused;
                self.pause_reason = Some(PauseReason::StaleExecution { epoch });
                self.epoch = None;
            }
        }
        self.state_generation = before + 1;
        debug_assert!(self.check().is_ok(), "{:?}", self.check());
        Ok(())
    }

    fn terminate(&mut self, outcome: Outcome) {
        self.status = outcome.status();
        self.outcome = Some(outcome);
        self.wait_state = None;
        self.pause_reason = None;
        self.epoch = None;
        self.resume_claim = None;
    }

    /// Checks the row's internal invariants; used before writing and after reading back.
    pub fn check(&self) -> Result<(), String> {
        let terminal = self.status.is_terminal();
        if terminal != self.outcome.is_some() {
            return Err(format!("{}: terminal={terminal} but outcome={:?}", self.pid, self.outcome));
        }
        if let Some(o) = &self.outcome
            && o.status() != self.status
        {
            return Err(format!("{}: outcome {:?} under status {}", self.pid, o, self.status));
        }
        if self.status == Status::WaitingEvent && self.wait_state.is_none() {
            return Err(format!("{}: waiting_event without a saved action", self.pid));
        }
        if (self.status == Status::Paused) != self.pause_reason.is_some() {
            return Err(format!(
                "{}: status {} with pause reason {:?}",
                self.pid, self.status, self.pause_reason
            ));
        }
        if self.parent.is_none() != (self.depth == 0) {
            return Err(format!("{}: depth {} with parent {:?}", self.pid, self.depth, self.parent));
        }
        if self.host_gate.is_some() && matches!(self.status, Status::Running | Status::WaitingEvent) {
            return Err(format!("{}: gated but {}", self.pid, self.status));
        }
        Ok(())
    }
}
