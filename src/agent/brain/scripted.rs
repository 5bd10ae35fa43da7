//! [`ScriptedBrain`]: a deterministic brain that plays a [`Script`] of turns.
//!
//! Each scripted turn is optional text and tool calls, optionally guarded by an [`Expect`]:
//! substrings that must appear in the tool results or other input since the model last spoke,
//! or in the system prompt slot. A guard that does not hold fails the turn with
//! [`BrainError::ScriptExpectation`] saying what was there, so a test fails where the run
//! diverged rather than several turns later. Usage is the token estimator's
//! ([`super::tokens`]), so it is reproducible too.
//!
//! A script is plain serde data (`{"turns": [{"text": …, "tool_calls": [{"name", "arguments"}],
//! "expect": {"tool_results_contain": […]}}]}`), loadable from JSON with
//! [`Script::from_json`] or embedded in any serde format.

use super::error::BrainError;
use super::limits::SCRIPT_TURNS_MAX;
use super::message::{AssistantMessage, Message, ToolCall, Usage};
use super::window::tail_since_assistant;
use super::{Brain, FinishReason, Turn, TurnFuture, TurnRequest, tokens};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{HashSet, VecDeque};
use std::sync::{Mutex, PoisonError};

/// How much of each message an expectation failure quotes.
const FOUND_EXCERPT_BYTES: usize = 200;

/// A list of turns to play in order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The turns, first played first.
    pub turns: Vec<ScriptedTurn>,
}

impl Script {
    /// A script of `turns`.
    pub fn new(turns: Vec<ScriptedTurn>) -> Script {
        Script { turns }
    }

    /// The same script without its first `turns` turns: what an incarnation that already took
    /// them plays next (after a restart).
    pub fn skip(&self, turns: u64) -> Script {
        let skip = usize::try_from(turns).unwrap_or(usize::MAX);
        Script { turns: self.turns.iter().skip(skip).cloned().collect() }
    }

    /// Parses a script from JSON and checks it: unknown fields are refused, explicit call ids
    /// are unique, at most [`SCRIPT_TURNS_MAX`] turns. The error names the field.
    pub fn from_json(text: &str) -> Result<Script, BrainError> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let script: Script = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
            let path = e.path().to_string();
            BrainError::InvalidConfig { detail: format!("invalid script at {path}: {}", e.into_inner()) }
        })?;
        script.check()?;
        Ok(script)
    }

    /// Checks what serde cannot: the turn limit and unique explicit call ids.
    pub fn check(&self) -> Result<(), BrainError> {
        if self.turns.len() > SCRIPT_TURNS_MAX {
            return Err(BrainError::InvalidConfig {
                detail: format!(
                    "the script has {} turns; at most {SCRIPT_TURNS_MAX} are allowed",
                    self.turns.len()
                ),
            });
        }
        let mut ids = HashSet::new();
        for (turn_index, turn) in self.turns.iter().enumerate() {
            for (call_index, call) in turn.tool_calls.iter().enumerate() {
                let id = call.id_at(turn_index, call_index);
                if !ids.insert(id.clone()) {
                    return Err(BrainError::InvalidConfig {
                        detail: format!(
                            "invalid script at turns[{turn_index}].tool_calls[{call_index}].id: \
                             the call id {id:?} is used twice"
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

/// One scripted turn: what to check, then what to say and call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedTurn {
    /// What the request must hold for this turn to play.
    #[serde(default, skip_serializing_if = "Expect::is_empty")]
    pub expect: Expect,
    /// The text the model says, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The tool calls it makes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedCall>,
    /// The finish reason; by default `tool_calls` if it calls tools, else `stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<FinishReason>,
}

impl ScriptedTurn {
    /// A turn that says `text`.
    pub fn text(text: impl Into<String>) -> ScriptedTurn {
        ScriptedTurn { text: Some(text.into()), ..ScriptedTurn::default() }
    }

    /// A turn that calls `name` with `arguments`.
    pub fn call(name: impl Into<String>, arguments: Value) -> ScriptedTurn {
        ScriptedTurn::default().with_call(name, arguments)
    }

    /// This turn, also calling `name` with `arguments` (the id is generated).
    pub fn with_call(mut self, name: impl Into<String>, arguments: Value) -> ScriptedTurn {
        self.tool_calls.push(ScriptedCall { id: None, name: name.into(), arguments });
        self
    }

    /// This turn, saying `text` too.
    pub fn with_text(mut self, text: impl Into<String>) -> ScriptedTurn {
        self.text = Some(text.into());
        self
    }

    /// This turn, played only if a tool result since the model last spoke contains `needle`.
    pub fn expect_tool_result(mut self, needle: impl Into<String>) -> ScriptedTurn {
        self.expect.tool_results_contain.push(needle.into());
        self
    }

    /// This turn, played only if a message since the model last spoke contains `needle`.
    pub fn expect_tail(mut self, needle: impl Into<String>) -> ScriptedTurn {
        self.expect.tail_contains.push(needle.into());
        self
    }

    /// This turn, played only if the system prompt slot contains `needle`.
    pub fn expect_system(mut self, needle: impl Into<String>) -> ScriptedTurn {
        self.expect.system_contains.push(needle.into());
        self
    }

    /// This turn, reporting `finish` as its finish reason.
    pub fn with_finish(mut self, finish: FinishReason) -> ScriptedTurn {
        self.finish = Some(finish);
        self
    }
}

/// One scripted tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The call id; by default `call_<turn>_<index>` (both from 0), the same on every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments; by default `{}`.
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

impl ScriptedCall {
    fn id_at(&self, turn: usize, index: usize) -> String {
        self.id.clone().unwrap_or_else(|| format!("call_{turn}_{index}"))
    }
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// What a request must hold for a scripted turn to play. Every listed substring must be found
/// (case-sensitive); the empty expectation always holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Each must appear in some tool result since the last assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results_contain: Vec<String>,
    /// Each must appear in some message since the last assistant message (user input, tool
    /// result or runtime note).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tail_contains: Vec<String>,
    /// Each must appear in the system prompt slot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system_contains: Vec<String>,
}

impl Expect {
    /// Whether it checks nothing.
    pub fn is_empty(&self) -> bool {
        self.tool_results_contain.is_empty()
            && self.tail_contains.is_empty()
            && self.system_contains.is_empty()
    }

    /// Checks the expectation against a request; the error says what was expected and found.
    fn check(&self, turn: usize, request: &TurnRequest<'_>) -> Result<(), BrainError> {
        let tail = tail_since_assistant(request.window);
        let results: Vec<&str> = tail
            .iter()
            .filter_map(|m| match m {
                Message::Tool { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let inputs: Vec<&str> = tail.iter().filter_map(|m| m.text()).collect();
        for needle in &self.tool_results_contain {
            if !results.iter().any(|r| r.contains(needle.as_str())) {
                return Err(BrainError::ScriptExpectation {
                    turn,
                    expected: format!("a tool result since the last assistant message containing {needle:?}"),
                    found: describe("tool results", &results),
                });
            }
        }
        for needle in &self.tail_contains {
            if !inputs.iter().any(|r| r.contains(needle.as_str())) {
                return Err(BrainError::ScriptExpectation {
                    turn,
                    expected: format!("a message since the last assistant message containing {needle:?}"),
                    found: describe("messages", &inputs),
                });
            }
        }
        for needle in &self.system_contains {
            if !request.system.contains(needle.as_str()) {
                return Err(BrainError::ScriptExpectation {
                    turn,
                    expected: format!("a system prompt containing {needle:?}"),
                    found: describe("system prompt", &[request.system]),
                });
            }
        }
        Ok(())
    }
}

fn describe(what: &str, texts: &[&str]) -> String {
    if texts.is_empty() {
        return format!("there were no {what}");
    }
    let quoted: Vec<String> =
        texts.iter().map(|t| format!("{:?}", super::error::excerpt(t, FOUND_EXCERPT_BYTES))).collect();
    format!("the {what} were [{}]", quoted.join(", "))
}

/// A brain that plays a [`Script`], one turn per request, the same way on every run.
///
/// It holds one cursor: give each agent its own `ScriptedBrain`. The cursor advances only when
/// a turn is returned, so a failed expectation is reported again if asked again.
#[derive(Debug)]
pub struct ScriptedBrain {
    cursor: Mutex<Cursor>,
}

/// Where a brain is in its script: a turn played is dropped, so a brain holds only the turns
/// ahead of it (a long script's memory goes as it is played, not all at once at the end).
#[derive(Debug)]
struct Cursor {
    played: usize,
    ahead: VecDeque<ScriptedTurn>,
}

impl ScriptedBrain {
    /// A brain at the start of `script`.
    pub fn new(script: Script) -> ScriptedBrain {
        ScriptedBrain { cursor: Mutex::new(Cursor { played: 0, ahead: script.turns.into() }) }
    }

    /// How many turns were played.
    pub fn played(&self) -> usize {
        self.cursor.lock().unwrap_or_else(PoisonError::into_inner).played
    }

    /// How many turns are left.
    pub fn remaining(&self) -> usize {
        self.cursor.lock().unwrap_or_else(PoisonError::into_inner).ahead.len()
    }

    /// Plays the next turn against `request`.
    pub fn play(&self, request: &TurnRequest<'_>) -> Result<Turn, BrainError> {
        // The lock is held only for this synchronous step, never across an await.
        let mut cursor = self.cursor.lock().unwrap_or_else(PoisonError::into_inner);
        let index = cursor.played;
        let Some(scripted) = cursor.ahead.pop_front() else {
            return Err(BrainError::ScriptExhausted { turns: index });
        };
        if let Err(failed) = scripted.expect.check(index, request) {
            // Not played: asked again, it is checked again.
            cursor.ahead.push_front(scripted);
            return Err(failed);
        }
        cursor.played = index + 1;
        drop(cursor);
        let finish = scripted.finish.clone();
        let message = AssistantMessage {
            text: scripted.text,
            tool_calls: scripted
                .tool_calls
                .into_iter()
                .enumerate()
                .map(|(i, call)| ToolCall {
                    id: call.id_at(index, i),
                    name: call.name,
                    arguments: call.arguments,
                })
                .collect(),
        };
        let usage = Usage {
            input_tokens: tokens::request_tokens(request),
            output_tokens: tokens::assistant_tokens(&message),
            cached_tokens: 0,
            cache_write_tokens: 0,
            cost_micros: None,
        };
        let finish = finish.unwrap_or_else(|| FinishReason::inferred(&message));
        Ok(Turn { message, usage, finish })
    }
}

impl Brain for ScriptedBrain {
    fn turn<'a>(&'a self, request: TurnRequest<'a>) -> TurnFuture<'a> {
        Box::pin(std::future::ready(self.play(&request)))
    }
}
