//! Why a scenario cannot be parsed or run.

use std::path::PathBuf;

/// A scenario that cannot be parsed, or a run that cannot go on. A tool refusal or a failed
/// host action is not an error of this kind: it is printed as the step's `error` and the run
/// goes on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The text is not JSON.
    #[error("failed to parse the scenario: {message}")]
    Json {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// serde_json's message (it names the line and column).
        message: String,
    },
    /// The top level is not `{"steps": [...]}`.
    #[error("invalid scenario: {0}")]
    Shape(String),
    /// A step's kind is not one of [`super::STEP_KINDS`].
    #[error("steps[{step}]: unknown step kind {kind:?}; the kinds are {}", super::STEP_KINDS.join(", "))]
    UnknownStep {
        /// The step's index.
        step: usize,
        /// The kind given.
        kind: String,
    },
    /// A step's body is malformed.
    #[error("steps[{step}] ({kind}): {}{message}", field_prefix(field))]
    InvalidStep {
        /// The step's index.
        step: usize,
        /// The step's kind.
        kind: String,
        /// The field at fault (`.` for the body itself).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A step names a process or value that no earlier step bound.
    #[error("steps[{step}]: name {name:?} is not bound{detail}")]
    UnknownName {
        /// The step's index.
        step: usize,
        /// The name.
        name: String,
        /// Why, if known (e.g. the binding step's call was refused).
        detail: String,
    },
    /// A step names a handle that no earlier call left pending.
    #[error("steps[{step}]: no pending call has handle {handle:?}{detail}")]
    UnknownHandle {
        /// The step's index.
        step: usize,
        /// The handle.
        handle: String,
        /// Why, if known.
        detail: String,
    },
    /// A name used as a process is bound to something that is not a pid.
    #[error("steps[{step}]: name {name:?} is bound to {value}, which is not a pid")]
    NotAPid {
        /// The step's index.
        step: usize,
        /// The name.
        name: String,
        /// Its value, as JSON.
        value: String,
    },
    /// `restart` on a run without a state directory.
    #[error(
        "steps[{step}]: restart needs a state directory (the command line's --state); this run is in memory"
    )]
    RestartWithoutStateDir {
        /// The step's index.
        step: usize,
    },
    /// The runtime could not be opened.
    #[error("failed to open the runtime{}: {message}", path.as_ref().map(|p| format!(" on {}", p.display())).unwrap_or_default())]
    Open {
        /// The state directory, if any.
        path: Option<PathBuf>,
        /// What happened.
        message: String,
    },
    /// Another live runtime owns the state directory.
    #[error("the state directory {} is owned by another live runtime; stop it or pass another --state", path.display())]
    StateDirBusy {
        /// The directory.
        path: PathBuf,
    },
    /// The runtime failed in a way the run cannot go on from (shutdown failed, …).
    #[error("steps[{step}]: {message}")]
    Runtime {
        /// The step's index (the step count for the final shutdown).
        step: usize,
        /// What happened.
        message: String,
    },
    /// The scenario's agent configuration cannot be loaded (unreadable, malformed, or refused
    /// by the launch check, whose problems the message lists).
    #[error("failed to load the agent configuration {}: {message}", path.display())]
    AgentConfig {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The window store for agents could not be opened.
    #[error("failed to open the agent window store: {message}")]
    AgentStore {
        /// What happened.
        message: String,
    },
    /// An agent step names a process that does not run the agent image.
    #[error(
        "steps[{step}]: {name:?} is process {pid} of image {image:?}, not an agent; agent steps take a name bound by spawn_agent or a subagent's or fork's id"
    )]
    NotAnAgent {
        /// The step's index.
        step: usize,
        /// The name.
        name: String,
        /// Its pid.
        pid: String,
        /// The image it runs.
        image: String,
    },
    /// Writing the output failed. (Not a `source`: the message already says it.)
    #[error("failed to write the scenario output: {0}")]
    Output(std::io::Error),
}

impl From<std::io::Error> for ScenarioError {
    fn from(e: std::io::Error) -> Self {
        ScenarioError::Output(e)
    }
}

/// `"field: "`, or nothing for the step's body itself (whose messages name their field).
fn field_prefix(field: &str) -> String {
    if field == "." { String::new() } else { format!("{field}: ") }
}
