//! The tool-batch rule: a blocking wait that suspended the caller ends the batch.

use super::BATCH_ENDED;
use crate::actors::runtime::calls::{CallOk, ToolError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One call of a batch, as JSON: `{"tool": "...", "args": {...}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchCall {
    /// The tool's name.
    pub tool: String,
    /// Its arguments object (`{}` when omitted).
    #[serde(default)]
    pub args: Value,
}

/// The ends-the-batch rule as a small state machine, for callers that make the calls
/// themselves. Ask [`Self::admit`] before each call, tell [`Self::observe`] each answer; a
/// refused call does not end the batch, a wait that suspended the caller does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchRule {
    ended: bool,
}

impl BatchRule {
    /// A batch that has not ended.
    pub fn new() -> Self {
        Self::default()
    }

    /// `Ok` if `tool` may run; otherwise the `batch_ended` error it answers instead.
    pub fn admit(&self, tool: &str) -> Result<(), ToolError> {
        if self.ended {
            return Err(ToolError::new(
                BATCH_ENDED,
                format!("{tool} did not run: an earlier blocking wait ended this tool batch"),
            ));
        }
        Ok(())
    }

    /// Records a call's answer: a wait or receive whose result says `suspended: true` ends
    /// the batch.
    pub fn observe(&mut self, result: &Result<CallOk, ToolError>) {
        self.ended |= crate::actors::runtime::suspended(result);
    }

    /// Ends the batch: a call suspended the caller and has not answered yet.
    pub fn end(&mut self) {
        self.ended = true;
    }

    /// Whether the batch has ended.
    pub fn is_ended(&self) -> bool {
        self.ended
    }
}
