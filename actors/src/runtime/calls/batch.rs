//! The tool-batch rule, the one place it is written: a blocking wait or receive that
//! suspended the caller ends the batch, and every later call of the batch answers
//! [`BATCH_ENDED`] without running. A refused call does not end the batch.

use super::{CallOk, ToolError};

/// The error code of a batch call that did not run because an earlier blocking wait
/// suspended the caller.
pub const BATCH_ENDED: &str = "batch_ended";

/// The ends-the-batch rule as a small state machine. Ask [`Self::admit`] before each call and
/// tell [`Self::observe`] each answer.
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
        self.ended |= suspended(result);
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

/// Whether an answer says its call suspended the caller (which ends a tool batch).
pub fn suspended(result: &Result<CallOk, ToolError>) -> bool {
    match result {
        Ok(CallOk::Waited(w)) => w.suspended,
        Ok(CallOk::Received(r)) => r.suspended,
        _ => false,
    }
}
