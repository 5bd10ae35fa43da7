//! Brains: what turns a window into the model's next turn.
//!
//! A [`Brain`] takes a [`TurnRequest`] (the rendered system prompt slot, a [`WindowView`] of
//! the conversation, the offered [`ToolSpec`]s) and answers a [`Turn`]: one assistant message
//! with optional text and tool calls, its [`Usage`] and a [`FinishReason`]. It never writes the
//! window; the turn loop appends the message and runs the calls.
//!
//! Three kinds of brain ship:
//!
//! - [`ScriptedBrain`] plays a [`Script`] of turns, deterministically, optionally checking what
//!   the window holds before each one (tests, examples, the default demo).
//! - [`DrivenBrains`] makes brains whose every turn a [`DrivenDriver`] answers from outside
//!   (the scenario runner plays the model with it).
//! - [`OpenAiBrain`] posts to any OpenAI-compatible `/chat/completions` endpoint (hosted or a
//!   local server).
//! - [`AnthropicBrain`] posts to the Anthropic Messages API (`/v1/messages`).
//!
//! The HTTP brains retry failed calls ([`RetryPolicy`]), can stream, and report retries and
//! progress to a [`TurnObserver`].
//!
//! The system prompt is a slot, not a message: [`Message`] has no system role, so a history
//! cannot hold one, and a brain renders the slot first on every request. See `docs/brains.md`.

pub mod anthropic;
mod call;
mod driven;
mod error;
mod http;
pub mod limits;
mod message;
mod observe;
pub mod openai;
mod retry;
mod scripted;
mod settings;
pub mod tokens;
mod window;

pub use crate::tools::ToolSpec;
pub use anthropic::{AnthropicBrain, AnthropicConfig};
pub use driven::{DrivenBrains, DrivenDriver, TurnAbandoned, TurnAsk};
pub use error::BrainError;
pub use http::{RESERVED_HEADERS, install_tls_provider};
pub use message::{AssistantMessage, Message, Role, ToolCall, Usage};
pub use observe::{Progress, RetryNotice, TurnObserver};
pub use openai::{OpenAiBrain, OpenAiConfig, api_key_from_env};
pub use retry::{RetryPolicy, Sleeper, parse_retry_after};
pub use scripted::{Expect, Script, ScriptedBrain, ScriptedCall, ScriptedTurn};
pub use settings::{ModelSettings, Prices};
pub use window::{WindowView, tail_since_assistant};

use serde::{Deserialize, Serialize};
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// The future a [`Brain`] returns: boxed, `Send`, borrowing the brain and the request.
pub type TurnFuture<'a> = Pin<Box<dyn Future<Output = Result<Turn, BrainError>> + Send + 'a>>;

/// Produces the model's next turn from a window.
///
/// The method returns a boxed future rather than being an `async fn`: an `async fn` in a
/// trait makes the trait unusable as `dyn Brain`, and the runtime keeps brains as
/// `Arc<dyn Brain>` chosen per profile at run time. A hand-written boxed future needs no
/// macro crate, states the `Send` bound outright, and its one allocation per turn is nothing
/// next to a model call. Implement it as `Box::pin(async move { … })`.
///
/// # Cancel safety
///
/// Dropping the future abandons the turn: an HTTP request in flight is aborted and nothing is
/// recorded anywhere, so the caller may ask again. The provider may still have billed the
/// abandoned request. A [`ScriptedBrain`] advances only when it returns a turn, so a dropped
/// or failed turn is played again on the next request.
pub trait Brain: Send + Sync {
    /// Produces the next turn for `request`.
    fn turn<'a>(&'a self, request: TurnRequest<'a>) -> TurnFuture<'a>;
}

/// What a brain is asked: the rendered system prompt slot, the window and the offered tools,
/// and optionally who watches the turn's retries and progress.
#[derive(Clone, Copy)]
pub struct TurnRequest<'a> {
    /// The system prompt, rendered for this agent and this request. Empty means none.
    pub system: &'a str,
    /// The conversation, oldest message first.
    pub window: &'a dyn WindowView,
    /// The tools the model may call.
    pub tools: &'a [ToolSpec],
    /// Told of each retry and of the answer's progress (HTTP brains); `None` for nobody.
    pub observer: Option<&'a dyn TurnObserver>,
}

impl<'a> TurnRequest<'a> {
    /// A request over `window` with the system slot `system` and the tools `tools`.
    pub fn new(system: &'a str, window: &'a dyn WindowView, tools: &'a [ToolSpec]) -> TurnRequest<'a> {
        TurnRequest { system, window, tools, observer: None }
    }

    /// This request, watched by `observer`.
    pub fn with_observer(mut self, observer: &'a dyn TurnObserver) -> TurnRequest<'a> {
        self.observer = Some(observer);
        self
    }
}

impl fmt::Debug for TurnRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnRequest")
            .field("system_bytes", &self.system.len())
            .field("window_messages", &self.window.len())
            .field("tools", &self.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>())
            .finish()
    }
}

/// One turn of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    /// What the model said and called.
    pub message: AssistantMessage,
    /// What the turn cost.
    pub usage: Usage,
    /// Why the model stopped.
    pub finish: FinishReason,
}

impl Turn {
    /// The assistant message, ready to append to a window.
    pub fn into_message(self) -> Message {
        Message::Assistant(self.message)
    }
}

/// Why the model stopped writing.
///
/// Informational: the turn loop acts on the tool calls a message holds, whatever the reason
/// says (some servers answer `stop` with tool calls).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum FinishReason {
    /// It finished its answer (`stop`).
    Stop,
    /// It stopped to have its tool calls run (`tool_calls`, or the older `function_call`).
    ToolCalls,
    /// It ran into the output token limit (`length`); the message may be cut short.
    Length,
    /// A reason this crate does not know, as the provider spelled it.
    Other(String),
}

impl FinishReason {
    /// Reads a provider's reason (`stop`, `tool_calls`, `function_call`, `length`, …).
    pub fn parse(reason: &str) -> FinishReason {
        match reason {
            "stop" => FinishReason::Stop,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "length" => FinishReason::Length,
            other => FinishReason::Other(other.to_string()),
        }
    }

    /// The reason inferred from a message when the provider gave none: `tool_calls` if it
    /// calls tools, otherwise `stop`.
    pub fn inferred(message: &AssistantMessage) -> FinishReason {
        if message.tool_calls.is_empty() { FinishReason::Stop } else { FinishReason::ToolCalls }
    }

    /// The provider spelling (`stop`, `tool_calls`, `length`, or the unknown reason).
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Length => "length",
            FinishReason::Other(reason) => reason,
        }
    }
}

impl From<String> for FinishReason {
    fn from(reason: String) -> FinishReason {
        FinishReason::parse(&reason)
    }
}

impl From<FinishReason> for String {
    fn from(reason: FinishReason) -> String {
        reason.as_str().to_string()
    }
}

impl fmt::Display for FinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
