//! Bounding what the model said in a turn before the window records it.
//!
//! The window's newest items travel inline in every turn checkpoint until their chunk seals,
//! and a checkpoint has a bound ([`CHECKPOINT_BYTES_MAX`]). A model that answers with
//! megabytes must not make the turn's checkpoint fail and the agent with it, so the turn is
//! bounded first: the text is cut to [`ASSISTANT_TEXT_BYTES_MAX`] with a note at the cut
//! saying so, and a call that would take the message past [`ASSISTANT_MESSAGE_BYTES_MAX`]
//! is recorded without its arguments and answered `arguments_too_large` without running.
//! The model reads both on its next turn and can say it again, shorter.
//!
//! [`CHECKPOINT_BYTES_MAX`]: crate::actors::limits::CHECKPOINT_BYTES_MAX

use crate::actors::runtime::calls::ToolError;
use crate::actors::text;
use crate::agent::brain::{AssistantMessage, ToolCall, tokens};
use crate::agent::limits::{ASSISTANT_MESSAGE_BYTES_MAX, ASSISTANT_TEXT_BYTES_MAX};
use serde_json::Value;

/// The code of a call whose arguments were left out of the window.
pub(crate) const ARGUMENTS_TOO_LARGE: &str = "arguments_too_large";

/// Longest call id or tool name kept of a call whose arguments were left out, in bytes:
/// provider ids and tool names are a few dozen bytes, so only a runaway one is cut.
const CALL_FIELD_BYTES_MAX: usize = 256;

/// The calls of a turn recorded without their arguments: each id with the size the call had.
#[derive(Debug, Default)]
pub(crate) struct Bounded {
    cut: Vec<(String, usize)>,
}

impl Bounded {
    /// The refusal `call` is answered with, if its arguments were left out.
    pub(crate) fn refusal(&self, call: &ToolCall) -> Option<ToolError> {
        let (_, bytes) = self.cut.iter().find(|(id, _)| *id == call.id)?;
        Some(ToolError::new(
            ARGUMENTS_TOO_LARGE,
            format!(
                "this call was {bytes} bytes, which would take your turn past the \
                 {ASSISTANT_MESSAGE_BYTES_MAX} bytes a turn may hold; it did not run and its \
                 arguments were left out of the conversation. Send less per call (put bulk data \
                 in objects, a piece per call)"
            ),
        ))
    }
}

/// Cuts `message` to the bounds above, in place, and says which calls lost their arguments.
pub(crate) fn bound_turn(message: &mut AssistantMessage) -> Bounded {
    if let Some(said) = message.text.as_mut()
        && said.len() > ASSISTANT_TEXT_BYTES_MAX
    {
        let kept = text::prefix(said, ASSISTANT_TEXT_BYTES_MAX);
        let cut = said.len() - kept.len();
        *said = format!(
            "{kept}… [{cut} bytes cut: the conversation keeps at most {ASSISTANT_TEXT_BYTES_MAX} \
             bytes of a turn's text]"
        );
    }
    let mut used = message.text.as_ref().map_or(0, String::len);
    let mut bounded = Bounded::default();
    for call in &mut message.tool_calls {
        let arguments = usize::try_from(tokens::json_len(&call.arguments)).unwrap_or(usize::MAX);
        let bytes = call.id.len().saturating_add(call.name.len()).saturating_add(arguments);
        if used.saturating_add(bytes) <= ASSISTANT_MESSAGE_BYTES_MAX {
            used += bytes;
            continue;
        }
        call.id = text::prefix(&call.id, CALL_FIELD_BYTES_MAX).to_string();
        call.name = text::prefix(&call.name, CALL_FIELD_BYTES_MAX).to_string();
        call.arguments = Value::Object(serde_json::Map::new());
        used += call.id.len() + call.name.len();
        bounded.cut.push((call.id.clone(), bytes));
    }
    bounded
}
