//! Model-called compaction: `archive_thread(from_turn, to_turn, summary?)` and
//! `read_archive(turn)`.
//!
//! A turn's messages, in the window, are its assistant message and everything after it up to
//! the next turn's assistant message (its tool results, and any note or message that arrived
//! before the next turn). Messages before the first turn (the goal, an opening note) belong to
//! no turn. Turn numbers are the window's turn counter, which a fork carries and an exec keeps,
//! so a later `archive_thread` from either copy of a fork names the same turns.
//!
//! The call declares; the loop applies at the end of the turn, before anything else the turn
//! declared: the turns' messages leave the window for one note carrying the summary, and go to
//! the agent's archive (a second window, stored in the chunk store like the history, so an
//! archive costs what its new messages cost), where `read_archive` reads them back by number.
//! A fork is handed the archive with its copy of the window; an exec keeps it.

use super::calls::Dispatch;
use super::error::AgentError;
use super::program::Agent;
use super::turn::{Declarations, DeclaredArchive};
use crate::actors::runtime::calls::ToolError;
use crate::agent::brain::Message;
use crate::agent::compaction::summarize_messages;
use crate::agent::config::CompactionStrategy;
use crate::agent::limits::{ARCHIVE_RANGES_MAX, ARCHIVE_SUMMARY_BYTES_MAX};
use crate::agent::telemetry::AgentEvent;
use crate::agent::window::{Window, WindowSnapshot};
use crate::tools::agent::ArchiveThreadArgs;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// An agent's archive: the archived messages, and where each archived turn's are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Archive {
    /// The archived messages, in the order they were archived.
    pub window: WindowSnapshot<Message>,
    /// Each archived turn, in the order archived.
    pub turns: Vec<ArchivedTurn>,
}

impl Default for Archive {
    fn default() -> Self {
        Archive { window: WindowSnapshot::empty(0), turns: Vec::new() }
    }
}

/// One archived turn: its messages are the archive window's `start..start + len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchivedTurn {
    /// The turn's number.
    pub turn: u64,
    /// Its first message in the archive window.
    pub start: u64,
    /// How many messages it had.
    pub len: u64,
}

impl Archive {
    fn is_archived(&self, turn: u64) -> bool {
        self.turns.iter().any(|t| t.turn == turn)
    }
}

/// Where one turn's messages are in a window: `start..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnSpan {
    /// The turn's number.
    pub turn: u64,
    /// Its assistant message.
    pub start: usize,
    /// One past its last message.
    pub end: usize,
}

/// The turns a window holds, oldest first. `current` is the turn counter; every turn pushes
/// exactly one assistant message, so walking back from the newest assistant message counts
/// the turns down, stepping over the ones already archived (their messages left the window).
pub fn turn_spans(messages: &[&Message], current: u64, archived: &dyn Fn(u64) -> bool) -> Vec<TurnSpan> {
    let mut spans = Vec::new();
    let mut end = messages.len();
    let mut turn = current;
    for (index, message) in messages.iter().enumerate().rev() {
        if !matches!(message, Message::Assistant(_)) {
            continue;
        }
        while turn > 0 && archived(turn) {
            turn -= 1;
        }
        if turn == 0 {
            break;
        }
        spans.push(TurnSpan { turn, start: index, end });
        end = index;
        turn -= 1;
    }
    spans.reverse();
    spans
}

impl Agent {
    /// The turns the window holds now.
    fn spans(&self) -> Vec<TurnSpan> {
        let messages: Vec<&Message> = self.window.iter().collect();
        let archive = &self.state.archive;
        turn_spans(&messages, self.window.turn(), &|t| archive.is_archived(t))
    }

    /// `archive_thread`: checks the range against the window and declares it.
    pub(crate) fn archive_call(
        &mut self,
        args: ArchiveThreadArgs,
        declared: &mut Declarations,
        turn: u64,
    ) -> Result<Value, Dispatch> {
        let ArchiveThreadArgs { from_turn, to_turn, summary } = args;
        if from_turn > to_turn {
            return Err(refuse(format!(
                "from_turn {from_turn} is after to_turn {to_turn}; name the earlier turn first"
            )));
        }
        if to_turn >= turn {
            return Err(refuse(format!(
                "turn {to_turn} is not over: this is turn {turn}, and only turns before it can be archived"
            )));
        }
        let spans = self.spans();
        let missing: Vec<u64> =
            (from_turn..=to_turn).filter(|t| !spans.iter().any(|s| s.turn == *t)).take(8).collect();
        if !missing.is_empty() {
            let held = match (spans.first(), spans.iter().rev().find(|s| s.turn < turn)) {
                (Some(first), Some(last)) if first.turn < turn => {
                    format!("the earlier turns your window holds are {} to {}", first.turn, last.turn)
                }
                _ => "your window holds no earlier turn".to_string(),
            };
            return Err(refuse(format!(
                "turn {} is not in your window (archived, compacted away, or never taken); {held}",
                missing[0]
            )));
        }
        if self.state.archive.turns.len() + (to_turn - from_turn + 1) as usize > ARCHIVE_RANGES_MAX {
            return Err(refuse(format!(
                "your archive holds {} turns, and at most {ARCHIVE_RANGES_MAX} can be archived",
                self.state.archive.turns.len()
            )));
        }
        if let Some(summary) = summary.as_ref().filter(|s| s.len() > ARCHIVE_SUMMARY_BYTES_MAX) {
            return Err(refuse(format!(
                "the summary is {} bytes; at most {ARCHIVE_SUMMARY_BYTES_MAX} fit in the note, so shorten it",
                summary.len()
            )));
        }
        if summary.is_none() && self.summarizer()?.is_none() {
            return Err(refuse(
                "give a summary: your profile's compaction strategy is truncate, so it has no summarizer \
                 to write one"
                    .to_string(),
            ));
        }
        declared.declare_archive(DeclaredArchive { from_turn, to_turn, summary })?;
        Ok(json!({
            "archive": {"from_turn": from_turn, "to_turn": to_turn},
            "note": "takes effect when this turn ends; read the turns back with read_archive"
        }))
    }

    /// The profile's summarizer brain id, if its compaction strategy has one.
    fn summarizer(&self) -> Result<Option<String>, AgentError> {
        Ok(match self.profile()?.compaction().strategy() {
            CompactionStrategy::Summarize { summarizer } => Some(summarizer.as_str().to_string()),
            CompactionStrategy::Truncate => None,
        })
    }

    /// Applies the turn's archive: the turns leave the window for a note and go to the archive.
    pub(crate) async fn apply_archive(
        &mut self,
        archive: &DeclaredArchive,
        turn: u64,
    ) -> Result<(), AgentError> {
        let spans = self.spans();
        let range: Vec<TurnSpan> =
            spans.into_iter().filter(|s| (archive.from_turn..=archive.to_turn).contains(&s.turn)).collect();
        let (Some(first), Some(last)) = (range.first().copied(), range.last().copied()) else {
            return Ok(());
        };
        let archived: Vec<Message> =
            self.window.iter().skip(first.start).take(last.end - first.start).cloned().collect();
        let summary = match &archive.summary {
            Some(summary) => summary.clone(),
            None => self.summarize_archived(&archived).await?,
        };
        let mut store = Window::restore(self.state.archive.window.clone(), &*self.host.chunks)?;
        let mut at = store.len() as u64;
        for span in &range {
            let len = (span.end - span.start) as u64;
            self.state.archive.turns.push(ArchivedTurn { turn: span.turn, start: at, len });
            at += len;
        }
        for message in &archived {
            store.push(message.clone())?;
        }
        self.state.archive.window = store.snapshot(&*self.host.chunks)?;
        let note = Message::note(format!(
            "Turns {} to {} are archived (read any of them with read_archive): {summary}",
            archive.from_turn, archive.to_turn
        ));
        self.window.replace_range(first.start, last.end, note)?;
        self.emit(AgentEvent::ThreadArchived {
            turn,
            from_turn: archive.from_turn,
            to_turn: archive.to_turn,
            messages: archived.len() as u64,
            summary,
        });
        Ok(())
    }

    /// The summarizer's summary of `archived`, charged like a compaction's. If it fails the
    /// archive still happens, and the note says no summary could be written.
    async fn summarize_archived(&mut self, archived: &[Message]) -> Result<String, AgentError> {
        let Some(id) = self.summarizer()? else {
            return Ok("(no summary was given)".to_string());
        };
        let brain = self.make_brain_after(&id, 0)?;
        match summarize_messages(brain.as_ref(), archived.iter()).await {
            Ok((summary, usage)) => {
                self.charge(&usage).await?;
                Ok(summary)
            }
            Err(e) => Ok(format!("(the summarizer failed, so there is no summary: {e})")),
        }
    }

    /// `read_archive`: an archived turn's messages, as they were.
    pub(crate) fn read_archive(&self, turn: u64) -> Result<Value, Dispatch> {
        let Some(entry) = self.state.archive.turns.iter().find(|t| t.turn == turn).copied() else {
            let archived: Vec<u64> = self.state.archive.turns.iter().map(|t| t.turn).collect();
            let why = if self.spans().iter().any(|s| s.turn == turn) {
                "it is in your window".to_string()
            } else if archived.is_empty() {
                "you have archived no turn".to_string()
            } else {
                format!("the archived turns are {}", ranges(&archived))
            };
            return Err(ToolError::new("not_archived", format!("turn {turn} is not archived; {why}")).into());
        };
        let store = Window::restore(self.state.archive.window.clone(), &*self.host.chunks)
            .map_err(|e| Dispatch::Failed(e.into()))?;
        let messages: Vec<&Message> =
            store.iter().skip(entry.start as usize).take(entry.len as usize).collect();
        Ok(json!({"turn": turn, "messages": messages}))
    }
}

fn refuse(message: String) -> Dispatch {
    ToolError::new("archive_refused", message).into()
}

/// Turn numbers as ranges: `2-5, 9`.
fn ranges(turns: &[u64]) -> String {
    let mut sorted = turns.to_vec();
    sorted.sort_unstable();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        out.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::{TurnSpan, ranges, turn_spans};
    use crate::agent::brain::Message;

    fn turn(n: usize) -> Vec<Message> {
        let mut out = vec![Message::assistant_text(format!("turn {n}"))];
        out.push(Message::tool_result(format!("c{n}"), "ok"));
        out
    }

    #[test]
    fn turns_are_counted_down_from_the_newest_stepping_over_archived_ones() {
        let mut messages = vec![Message::user("goal")];
        for n in 1..=3 {
            messages.extend(turn(n));
        }
        let refs: Vec<&Message> = messages.iter().collect();
        let spans = turn_spans(&refs, 3, &|_| false);
        assert_eq!(
            spans,
            vec![
                TurnSpan { turn: 1, start: 1, end: 3 },
                TurnSpan { turn: 2, start: 3, end: 5 },
                TurnSpan { turn: 3, start: 5, end: 7 },
            ]
        );
        // Turns 5 and 6 were archived: the window's newest assistant is turn 7, then 4.
        let spans = turn_spans(&refs[..5], 7, &|t| t == 5 || t == 6);
        assert_eq!(spans.iter().map(|s| s.turn).collect::<Vec<_>>(), vec![4, 7]);
    }

    #[test]
    fn archived_turns_read_as_ranges() {
        assert_eq!(ranges(&[9, 2, 3, 4, 5]), "2-5, 9");
        assert_eq!(ranges(&[1]), "1");
    }
}
