//! Keeping a window under its profile's limit: when to compact, where to cut, and the two
//! strategies (`truncate`: drop the oldest messages; `summarize`: replace them with a note a
//! brain writes).
//!
//! Sizes are the documented estimate of [`crate::agent::brain::tokens`]: what a request costs
//! is its system slot, its tools and its window. Compaction starts when that exceeds the
//! profile's `trigger_percent` of its window, and cuts the oldest messages until the request
//! fits in half of that trigger, so the turns after it have room before the next compaction.
//!
//! A cut never leaves a tool result first: a tool result must follow the assistant message
//! that called it (providers refuse the window otherwise), so the cut moves forward past it.
//! The newest message always stays. A summary is written from a rendering of the cut messages
//! as one user message (their tool calls and results as text), so it never depends on the cut
//! being a well-formed conversation of its own. If the summarizer fails, the window is left
//! exactly as it was and the error is returned: nothing is lost.

use crate::agent::brain::tokens;
use crate::agent::brain::{Brain, BrainError, Message, TurnRequest, Usage, WindowView};
use crate::agent::window::{Window, WindowError};
use std::fmt::Write as _;
use std::num::NonZeroU32;

/// The system slot of a summarizing request.
pub const SUMMARIZER_PROMPT: &str = "You compact an agent's conversation. Summarize the \
conversation you are given so that the agent can continue its work from the summary alone: \
its goal, what it has done and found (with exact names, ids, paths and numbers), what it \
decided, what is still open. Write plain prose, no preamble.";

/// How a window over its limit is brought back under it.
#[derive(Clone, Copy)]
pub enum Strategy<'a> {
    /// Drop the oldest messages.
    Truncate,
    /// Replace the oldest messages by a note `brain` writes.
    Summarize(&'a dyn Brain),
}

/// What compaction did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compacted {
    /// How many of the oldest messages were cut.
    pub cut: usize,
    /// The window's estimated tokens before.
    pub tokens_before: u64,
    /// The window's estimated tokens after (the summary note included).
    pub tokens_after: u64,
    /// What the summary cost, for a `summarize` compaction.
    pub summary_usage: Option<Usage>,
}

/// Why compaction failed. The window is unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactionError {
    /// The summarizer failed.
    #[error("failed to summarize the window: {0}")]
    Summarizer(#[from] BrainError),
    /// The window refused the edit.
    #[error(transparent)]
    Window(#[from] WindowError),
}

impl WindowView for Window<Message> {
    fn len(&self) -> usize {
        Window::len(self)
    }

    fn messages(&self) -> Box<dyn Iterator<Item = &Message> + '_> {
        Box::new(self.iter())
    }

    /// Each step is O(log chunks) ([`Window::get`]), with no pass over the older messages.
    fn newest_first(&self) -> Box<dyn Iterator<Item = &Message> + '_> {
        Box::new((0..Window::len(self)).rev().filter_map(|index| self.get(index)))
    }

    fn tokens(&self) -> u64 {
        self.weight()
    }
}

/// The tokens at which a window of `limit` tokens is compacted: `trigger_percent` of it.
pub fn trigger_tokens(limit: NonZeroU32, trigger_percent: u8) -> u64 {
    u64::from(limit.get()) * u64::from(trigger_percent.min(100)) / 100
}

/// Whether a request of `request_tokens` must be compacted first.
pub fn needs_compaction(request_tokens: u64, limit: NonZeroU32, trigger_percent: u8) -> bool {
    request_tokens > trigger_tokens(limit, trigger_percent)
}

/// How many of the oldest messages to cut so that the rest, plus `fixed` tokens (the system
/// slot, the tools, room for a summary), fits in `target`: the fewest that do, moved past any
/// tool result the cut would leave first. `None` when nothing needs cutting; at most all but
/// the newest message is cut, even if the rest still does not fit.
pub fn plan_cut(window: &Window<Message>, fixed: u64, target: u64) -> Option<usize> {
    let sizes: Vec<u64> = window.iter().map(tokens::message_tokens).collect();
    let mut rest: u64 = fixed + sizes.iter().sum::<u64>();
    if rest <= target || sizes.len() < 2 {
        return None;
    }
    let newest = sizes.len() - 1;
    let mut cut = 0;
    while cut < newest && rest > target {
        rest -= sizes[cut];
        cut += 1;
    }
    while cut < newest && matches!(window.get(cut), Some(Message::Tool { .. })) {
        cut += 1;
    }
    Some(cut)
}

/// Compacts `window` so that it plus `fixed` tokens fits in `target`, with `strategy`.
/// `Ok(None)` when it already fits. On error the window is unchanged.
///
/// Cancel safety: the window is edited only after the summary has arrived, so dropping the
/// future leaves it as it was.
pub async fn compact(
    window: &mut Window<Message>,
    strategy: Strategy<'_>,
    fixed: u64,
    target: u64,
) -> Result<Option<Compacted>, CompactionError> {
    let tokens_before = tokens::window_tokens(window);
    let summary_allowance = match strategy {
        Strategy::Truncate => 0,
        // Room for the note that replaces the cut: a tenth of the target.
        Strategy::Summarize(_) => target / 10,
    };
    let Some(cut) = plan_cut(window, fixed + summary_allowance, target) else { return Ok(None) };
    let summary_usage = match strategy {
        Strategy::Truncate => {
            window.truncate_front(cut)?;
            None
        }
        Strategy::Summarize(brain) => {
            let (note, usage) = summarize(brain, window, cut).await?;
            window.replace_prefix(cut, note)?;
            Some(usage)
        }
    };
    let tokens_after = tokens::window_tokens(window);
    Ok(Some(Compacted { cut, tokens_before, tokens_after, summary_usage }))
}

/// Asks `brain` for a summary of the first `cut` messages; returns the note that replaces them.
async fn summarize(
    brain: &dyn Brain,
    window: &Window<Message>,
    cut: usize,
) -> Result<(Message, Usage), BrainError> {
    let (summary, usage) = summarize_messages(brain, window.iter().take(cut)).await?;
    let note =
        Message::note(format!("Summary of the {cut} earlier messages of this conversation: {summary}"));
    Ok((note, usage))
}

/// Asks `brain` for a summary of `messages`, rendered oldest first as one user message (their
/// tool calls and results as text); returns the summary's text and what it cost.
pub async fn summarize_messages<'a>(
    brain: &dyn Brain,
    messages: impl Iterator<Item = &'a Message>,
) -> Result<(String, Usage), BrainError> {
    let mut text = String::from("The conversation to summarize, oldest first:\n");
    for message in messages {
        render(&mut text, message);
    }
    let request = vec![Message::user(text)];
    let turn = brain.turn(TurnRequest::new(SUMMARIZER_PROMPT, &request, &[])).await?;
    Ok((turn.message.text.clone().unwrap_or_default(), turn.usage))
}

/// One message as a line of the summarizer's input.
fn render(out: &mut String, message: &Message) {
    let role = message.role().as_str();
    let _ = write!(out, "\n[{role}] {}", message.text().unwrap_or_default());
    for call in message.tool_calls() {
        let _ = write!(out, "\n[{role} calls {}] {}", call.name, call.arguments);
    }
}
