//! Process statuses, wait states and typed outcomes.

use super::ids::{Oid, Pid};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The status of a process. Exactly these seven lowercase strings on every surface.
///
/// `runnable` is launch, not success; `exited` is the only success; `exited`, `failed` and
/// `killed` are terminal and never change again.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Launched, not yet started.
    Runnable,
    /// Its program is executing.
    Running,
    /// Suspended on a saved action (a child wait, a message wait, a tool, a human).
    WaitingEvent,
    /// Stopped by a signal, a host gate, shutdown, or stale-execution recovery.
    Paused,
    /// Finished by `process_exit`: the only success.
    Exited,
    /// Ended by an error: panic, budget exhaustion, interrupted resume, launch failure.
    Failed,
    /// Ended by `cancel` or `terminate`.
    Killed,
}

impl Status {
    /// Every status, in declaration order.
    pub const ALL: [Status; 7] = [
        Status::Runnable,
        Status::Running,
        Status::WaitingEvent,
        Status::Paused,
        Status::Exited,
        Status::Failed,
        Status::Killed,
    ];

    /// The exact lowercase string.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Runnable => "runnable",
            Status::Running => "running",
            Status::WaitingEvent => "waiting_event",
            Status::Paused => "paused",
            Status::Exited => "exited",
            Status::Failed => "failed",
            Status::Killed => "killed",
        }
    }

    /// Parses the exact lowercase string.
    pub fn parse(text: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// `exited`, `failed` or `killed`.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Exited | Status::Failed | Status::Killed)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a suspended process is waiting for: its saved action. Orthogonal to `paused`: pausing a
/// waiting process keeps its wait, and resuming it returns it to `waiting_event`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WaitState {
    /// A blocking `wait_child_process` on one direct child.
    Child {
        /// The child waited on.
        child_pid: Pid,
    },
    /// A blocking receive on the process's own mailbox; the filter is kept by the mailbox layer.
    Message {
        /// An opaque, durable description of the saved receive.
        filter: String,
    },
    /// An external tool call in flight.
    Tool {
        /// The tool's name.
        tool: String,
    },
    /// A question to a human.
    Human {
        /// What was asked.
        prompt: String,
    },
}

impl WaitState {
    /// The wait's kind as a lowercase word: `child`, `message`, `tool` or `human`.
    pub fn kind(&self) -> &'static str {
        match self {
            WaitState::Child { .. } => "child",
            WaitState::Message { .. } => "message",
            WaitState::Tool { .. } => "tool",
            WaitState::Human { .. } => "human",
        }
    }
}

/// Why a process is paused.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PauseReason {
    /// A `pause` signal.
    Signal {
        /// Who sent it.
        sender: Sender,
        /// The sender's reason, if any.
        reason: Option<String>,
    },
    /// The runtime that owned its execution went away while it was `running`; it was not
    /// replayed. Inspect its effects before resuming it.
    StaleExecution {
        /// The epoch that owned the lost execution.
        epoch: u64,
    },
    /// The runtime shut down cleanly while it was running.
    Shutdown,
    /// The host set a resume gate on it.
    HostGate,
    /// Its image is not registered in the runtime that would run it, so its program cannot
    /// start. Nothing was lost: reopen the state directory with the image and resume it.
    ImageUnavailable {
        /// The image it needs.
        image: String,
    },
}

impl PauseReason {
    /// Whether the runtime itself paused it — its execution was lost (`stale_execution`), the
    /// runtime shut down, or its image is missing — rather than a signal or the host's gate:
    /// the pauses a host continues after a reopen (`agentvisor recover --resume`, `agentvisor
    /// run --resume`).
    pub fn left_by_the_runtime(&self) -> bool {
        matches!(
            self,
            PauseReason::StaleExecution { .. } | PauseReason::Shutdown | PauseReason::ImageUnavailable { .. }
        )
    }

    /// The reason as a lowercase word: `signal`, `stale_execution`, `shutdown`, `host_gate`
    /// or `image_unavailable`.
    pub fn kind(&self) -> &'static str {
        match self {
            PauseReason::Signal { .. } => "signal",
            PauseReason::StaleExecution { .. } => "stale_execution",
            PauseReason::Shutdown => "shutdown",
            PauseReason::HostGate => "host_gate",
            PauseReason::ImageUnavailable { .. } => "image_unavailable",
        }
    }
}

/// Who caused a transition.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", content = "pid", rename_all = "snake_case")]
pub enum Sender {
    /// A process (a parent signalling its child, or a parent whose exit ended its children).
    Process(Pid),
    /// The embedding application or the command line.
    Host,
    /// The runtime itself.
    Runtime,
}

impl fmt::Display for Sender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sender::Process(pid) => write!(f, "{pid}"),
            Sender::Host => f.write_str("host"),
            Sender::Runtime => f.write_str("runtime"),
        }
    }
}

/// The lifecycle signals.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalKind {
    /// Stop running; keeps any wait.
    Pause,
    /// Undo a pause; clears no wait and no host gate.
    Resume,
    /// End the process `killed`; rolls nothing back.
    Cancel,
    /// End the process `killed`; rolls nothing back.
    Terminate,
}

impl SignalKind {
    /// Every signal, in the process-kernel specification's order.
    pub const ALL: [SignalKind; 4] =
        [SignalKind::Pause, SignalKind::Resume, SignalKind::Cancel, SignalKind::Terminate];

    /// The lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            SignalKind::Pause => "pause",
            SignalKind::Resume => "resume",
            SignalKind::Cancel => "cancel",
            SignalKind::Terminate => "terminate",
        }
    }

    /// Parses the lowercase word.
    pub fn parse(text: &str) -> Option<SignalKind> {
        [SignalKind::Pause, SignalKind::Resume, SignalKind::Cancel, SignalKind::Terminate]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// Why a process failed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Its program panicked.
    Panic,
    /// It tried to spend past its budget.
    BudgetExhausted,
    /// A crash happened after its generation was claimed for resume; failing closed instead of
    /// replaying an effect that may have completed.
    ResumeInterrupted,
    /// It could not be started (unknown image at start, program factory error).
    LaunchFailed,
    /// Its program returned an error.
    ProgramError,
    /// A kernel invariant was found broken for this process; it fails alone.
    InvariantViolation,
    /// As a supervisor, a child needed more restarts within the period than its intensity
    /// allows (OTP's supervisor shutdown).
    RestartIntensityExceeded,
}

impl FailureKind {
    /// The lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Panic => "panic",
            FailureKind::BudgetExhausted => "budget_exhausted",
            FailureKind::ResumeInterrupted => "resume_interrupted",
            FailureKind::LaunchFailed => "launch_failed",
            FailureKind::ProgramError => "program_error",
            FailureKind::InvariantViolation => "invariant_violation",
            FailureKind::RestartIntensityExceeded => "restart_intensity_exceeded",
        }
    }
}

/// The typed outcome of a terminal process.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// Success: `process_exit` was called.
    Exited {
        /// The PROCESS_RESULT object made from the exit payload, if one was given.
        result_oid: Option<Oid>,
    },
    /// Failure, with its kind and a message.
    Failed {
        /// What kind of failure.
        error_kind: FailureKind,
        /// What happened, for a person.
        message: String,
    },
    /// Killed by a signal.
    Killed {
        /// `cancel` or `terminate`.
        signal: SignalKind,
        /// The sender's reason, if any.
        reason: Option<String>,
        /// Who sent it.
        sender: Sender,
    },
}

impl Outcome {
    /// The terminal status this outcome ends in.
    pub fn status(&self) -> Status {
        match self {
            Outcome::Exited { .. } => Status::Exited,
            Outcome::Failed { .. } => Status::Failed,
            Outcome::Killed { .. } => Status::Killed,
        }
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary.
pub fn clip(text: &str, max: usize) -> String {
    crate::text::prefix(text, max).to_string()
}

/// A signal's schema is a plain string `enum` of the lowercase words, which every
/// function-calling client understands (a derived schema would be a `oneOf` of documented
/// constants).
#[cfg(feature = "schemars")]
impl schemars::JsonSchema for SignalKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SignalKind".into()
    }

    fn json_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<serde_json::Value> = SignalKind::ALL.iter().map(|s| s.as_str().into()).collect();
        let mut schema = serde_json::Map::new();
        schema.insert("type".into(), "string".into());
        schema.insert("enum".into(), names.into());
        schema.into()
    }
}
