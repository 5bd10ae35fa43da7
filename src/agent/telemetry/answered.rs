//! [`CallAnswered`]: one tool call's answer as it is recorded, sent live to subscribers.

/// A tool call of a turn answered: the text recorded as its result in the window, sent to
/// [`subscribe_answered`](super::Telemetry::subscribe_answered) subscribers the moment it is
/// recorded, redacted like every event and never kept, written or logged (the turn's
/// `turn_completed` records every call once the turn is whole). A turn that suspends on a
/// wait has answered the calls before it long before its `turn_completed`: this is how an
/// observer sees them meanwhile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallAnswered {
    /// The process.
    pub pid: String,
    /// The incarnation.
    pub agent_id: String,
    /// The turn.
    pub turn: u64,
    /// The call's id, as the model gave it.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The result text recorded in the window (JSON for every tool the registry answers).
    pub result: String,
}
