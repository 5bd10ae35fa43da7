//! Responses-as-code: a program the model wrote, run in an embedded JavaScript interpreter
//! whose only way out is the agent's own tools.
//!
//! A program is the body of an async function: `await` works at its top level and `return`
//! gives its value. Every tool the agent holds is an async function of the same name taking
//! the tool's arguments object (`await spawn_subagent({agent, prompt})`), also reachable as
//! `tools.<name>`; a call returns the tool's result as a value and a refusal throws an `Error`
//! whose `code` is the refusal's stable code. `console.log` writes the program's output and
//! `args` holds what `run_program` passed.
//!
//! The interpreter is QuickJS through `rquickjs` (see `docs/code.md` for why, with the
//! measurements). It runs on a thread of its own ([`start`]); each tool call leaves that thread
//! as a [`ToolRequest`] and the turn loop answers it through the same registry path as a tool
//! call of the turn, so the same refusals and the same turn finality hold. Limits: fuel
//! (interpreter steps), memory, compute time (waiting for tools excluded), console output,
//! result size and calls per program ([`CodeLimits`]); none of them kills the agent: a program
//! that hits one ends with a [`ProgramError`] the model reads.

mod engine;
mod outcome;

pub use outcome::{ProgramError, ProgramErrorKind, ProgramOutcome};

use crate::actors::runtime::calls::ToolError;
use crate::agent::limits::{
    CODE_FUEL_DEFAULT, CODE_MEMORY_BYTES_DEFAULT, CODE_OUTPUT_BYTES_DEFAULT, CODE_THREAD_STACK_BYTES,
    CODE_TIME_MS_DEFAULT,
};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::mpsc;

/// What one program may spend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeLimits {
    /// Interpreter steps.
    pub fuel: u64,
    /// Bytes the interpreter may allocate.
    pub memory_bytes: u64,
    /// Compute time in milliseconds, not counting time waiting for tool calls.
    pub time_ms: u64,
    /// Bytes of console output.
    pub output_bytes: usize,
}

impl Default for CodeLimits {
    fn default() -> Self {
        CodeLimits {
            fuel: CODE_FUEL_DEFAULT,
            memory_bytes: CODE_MEMORY_BYTES_DEFAULT,
            time_ms: CODE_TIME_MS_DEFAULT,
            output_bytes: usize::try_from(CODE_OUTPUT_BYTES_DEFAULT).unwrap_or(usize::MAX),
        }
    }
}

/// A tool call a running program made, waiting for its answer.
#[derive(Debug)]
pub struct ToolRequest {
    /// The tool's name.
    pub name: String,
    /// The arguments the program passed.
    pub arguments: Value,
    reply: std::sync::mpsc::SyncSender<Result<Value, ToolError>>,
}

impl ToolRequest {
    /// Answers the call; the program goes on with the value, or with the refusal thrown.
    pub fn answer(self, answer: Result<Value, ToolError>) {
        // The program thread waits for this; if it is gone, nobody needs the answer.
        let _ = self.reply.send(answer);
    }
}

/// What a running program asks of its caller.
#[derive(Debug)]
pub enum EngineEvent {
    /// A tool call to answer.
    Call(ToolRequest),
    /// The program ended.
    Done(ProgramOutcome),
}

/// A program running on its thread.
///
/// Cancel safety: dropping it stops the program at its next interrupt poll or tool call; the
/// thread then ends on its own. Nothing the program did is undone (its calls were the loop's).
pub struct Running {
    events: mpsc::Receiver<EngineEvent>,
    abandoned: Arc<AtomicBool>,
}

impl Running {
    /// The program's next request, or its end.
    pub async fn next(&mut self) -> EngineEvent {
        match self.events.recv().await {
            Some(event) => event,
            None => EngineEvent::Done(ProgramOutcome {
                result: Err(ProgramError::engine("the program's thread ended without an outcome".into())),
                output: String::new(),
                fuel: 0,
                calls: 0,
            }),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.abandoned.store(true, Ordering::Relaxed);
    }
}

/// Starts `source` with `args` and the functions `tools`, within `limits`.
pub fn start(
    source: String,
    args: Value,
    tools: Vec<String>,
    limits: CodeLimits,
) -> Result<Running, ProgramError> {
    // One request in flight at a time (the program blocks on each), plus its end.
    let (sender, events) = mpsc::channel(2);
    let abandoned = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&abandoned);
    std::thread::Builder::new()
        .name("agent-program".into())
        .stack_size(CODE_THREAD_STACK_BYTES)
        .spawn(move || engine::run(&source, &args, &tools, limits, sender, flag))
        .map_err(|e| ProgramError::engine(format!("cannot start the program's thread: {e}")))?;
    Ok(Running { events, abandoned })
}
